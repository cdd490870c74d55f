"""When session 2 opens is the promise made at the end of session 1: the gap of the version
session 1 ran, in the end screen, the calendar file, the entry check and the researchers'
allowlist alike, even after the study's gap changes (webapp/participant/calendar.py
opens_after)."""
import csv
import io
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from tests.webapp.test_next_session import complete, move_completion, read_ics
from webapp.extensions import db
from webapp.models import Study
from webapp.models.study import StudyVersion
from webapp.researcher import exports

# Session 1 is answered at a person's pace: an implausibly fast one is left out of the
# allowlist (experiments/plausibility.py).
pytestmark = pytest.mark.usefixtures("person_pace")


@pytest.fixture
def study(app, factory):
    study = factory.aot_study()
    with app.app_context():
        study = db.session.merge(study)
        study.design_snapshot = {**study.design_snapshot, "session_gap_hours": 20}
        db.session.add(StudyVersion(study_id=study.id, version=1, stimulus_set=study.stimulus_set,
                                    design_snapshot=study.design_snapshot))
        db.session.commit()


def _make_version_two(app, gap_hours):
    with app.app_context():
        study = db.session.scalar(select(Study).where(Study.slug == "study"))
        study.design_snapshot = {**study.design_snapshot, "session_gap_hours": gap_hours}
        study.config_version = 2
        db.session.add(StudyVersion(study_id=study.id, version=2, stimulus_set=study.stimulus_set,
                                    design_snapshot=study.design_snapshot))
        db.session.commit()


def test_a_later_version_never_moves_a_promised_opening(app, client, study):
    api = complete(client, app, "p-promised")
    completed = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=21)
    move_completion(app, api, completed)
    _make_version_two(app, 72)
    promised = completed + timedelta(hours=20)
    stamp = promised.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert client.get(api).json["next_session"]["opens_at"] == stamp
    ics = {name: value for name, _, value in read_ics(client.get(f"{api}/calendar.ics").data)}
    assert ics["DTSTART"] == promised.strftime("%Y%m%dT%H%M%SZ")
    with app.app_context():
        allowlist = exports.next_session_export("study", "next_session_start_times.csv")
    rows = list(csv.DictReader(io.StringIO(allowlist.decode())))
    assert [r["earliest_start_utc"] for r in rows] == [stamp]
    # Coming back when told (21 h later, not 72 h) opens session 2.
    entry = client.get("/p/study", query_string={"PROLIFIC_PID": "p-promised"})
    assert entry.status_code == 303, entry.get_data(as_text=True)[:300]
    assert entry.location.rsplit("/", 1)[-1] != api.rsplit("/", 1)[-1]


def test_the_calendar_link_ignores_the_requests_host(app, client, study):
    api = complete(client, app, "p-host")
    ics = client.get(f"{api}/calendar.ics", headers={"Host": "evil.example"}).data.decode()
    unfolded = ics.replace("\r\n ", "")
    assert "evil.example" not in unfolded
    url = next(line for line in unfolded.split("\r\n") if line.startswith("URL:"))
    assert url.startswith("URL:" + app.config["PUBLIC_URL"].rstrip("/") + "/p/study?")
