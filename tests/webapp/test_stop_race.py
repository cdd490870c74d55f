"""A trial posted in the instant a study is stopped is never stored after the stop.

The stop is made to land exactly between the trial's read of its session and its write,
by a hook on the step in between (the row the trial will insert is being built), so the
test never depends on timing luck.  SQLite and PostgreSQL.
"""
import pytest
from sqlalchemy import func, select

from tests.webapp.test_participant_lifecycle import answer, session_row, start, store_practice
from webapp.extensions import db
from webapp.models import Session, Trial
from webapp.participant import progress
from webapp.researcher import lifecycle


@pytest.fixture
def stop_study_app(any_db_app, factory):
    factory.aot_study()
    return any_db_app


def test_a_trial_posted_as_the_study_stops_is_not_stored(stop_study_app, monkeypatch):
    app, client = stop_study_app, stop_study_app.test_client()
    api = start(client)
    store_practice(client, app, api)
    with app.app_context():
        stored = db.session.scalar(select(func.count(Trial.id)))
    build_row = progress._row

    def stop_then_build(*args):
        # The trial has read its session (in progress) and passed every check: stop now.
        with app.app_context():
            lifecycle.transition("study", "stop")
        return build_row(*args)

    monkeypatch.setattr(progress, "_row", stop_then_build)
    main = next(t for t in session_row(app, api).schedule if t["block"] != "practice")
    late = client.post(f"{api}/trials", json=answer(main))
    assert late.status_code == 409, late.json
    assert late.json["error"] == "not_in_progress" and late.json["status"] == "stopped"
    assert late.json["completion_code"]
    with app.app_context():
        assert db.session.scalar(select(func.count(Trial.id))) == stored
        assert db.session.scalar(select(Session.status)) == "stopped"
