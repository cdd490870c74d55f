"""What the server records for the plausibility rules, and the rules on stored sessions:
each trial's receive time (stored, exported), when each position's media was first served,
and the client timestamps of issue 25's payload."""
import csv
import io
from datetime import datetime, timezone

import pytest
from sqlalchemy import select

from tests.webapp.test_api import answer, schedule_of, start, study  # noqa: F401 (fixture)
from webapp.extensions import db
from webapp.models import MediaServed, Session, Trial
from webapp.researcher import exports


def test_each_trial_keeps_the_servers_receive_time_and_exports_it(app, client, study):  # noqa: F811
    api = start(client)
    first = schedule_of(app, api)[0]
    before = datetime.now(timezone.utc)
    assert client.post(f"{api}/trials", json=answer(first)).status_code == 201
    after = datetime.now(timezone.utc)
    with app.app_context():
        received = db.session.scalar(select(Trial.received_at))
        files = exports.build_export("study")
    assert before <= received <= after
    row = next(csv.DictReader(io.StringIO(files["trials.csv"].decode())))
    assert row["received_at"] == received.isoformat()


def test_a_positions_media_is_noted_the_first_time_it_is_served(app, client, study):  # noqa: F811
    api = start(client, consent=None)  # nothing fetched yet
    token = api.rsplit("/", 1)[-1]
    client.get(f"/media/{token}/0").close()
    with app.app_context():
        first = db.session.scalar(select(MediaServed.served_at))
    client.get(f"/media/{token}/0").close()
    assert client.get(f"/media/{token}/999").status_code == 404
    with app.app_context():
        rows = db.session.execute(select(MediaServed.trial_index, MediaServed.served_at)).all()
    assert rows == [(0, first)]


@pytest.mark.usefixtures("person_pace")
def test_issue_25s_timestamps_flag_the_trial_and_the_session(app, client, study):  # noqa: F811
    api = start(client)
    schedule = schedule_of(app, api)
    for trial in schedule:
        body = answer(trial)
        if trial["trial_index"] == schedule[-1]["trial_index"]:
            body.update(rt_ms=800.0, onset_time_ms=999_999_999_999.0, key_time_ms=5.0)
        assert client.post(f"{api}/trials", json=body).status_code == 201
    assert client.post(f"{api}/complete").json["status"] == "completed"
    with app.app_context():
        session = db.session.scalar(select(Session))
        last = db.session.scalar(select(Trial).where(
            Trial.trial_index == schedule[-1]["trial_index"]))
    assert last.excluded and "clock_inconsistent" in last.exclusion_reasons
    assert session.exclusion_reasons == ["implausible_clock"]
