"""The participant path's SQL (webapp.participant.store): the one trial writer."""
import json
import uuid

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from webapp.database import write_transaction
from webapp.extensions import db
from webapp.models import Trial
from webapp.participant import store


def _row(session_id, index, **overrides):
    """A canonical row as a model run makes it: no client_uuid, lists for frame orders."""
    return {"session_id": session_id, "trial_index": index, "trial_type": "frame_order",
            "block": None, "stimulus_id": None, "direction": None,
            "correct_response": [2, 1, 3], "response": [1, 2, 3], "correct": False,
            "rt_ms": None, "onset_method": None, "dropped_frames": None, "excluded": False,
            "exclusion_reasons": [], "extra": {"raw_text": "1, 2, 3"},
            "source_clip_id": "ignored: not a Trial column", **overrides}


def _insert(app, rows):
    with app.app_context(), db.engine.connect() as connection:
        with write_transaction(connection):
            store.insert_trials(connection, rows)


def test_insert_trials_stores_lists_as_json_text_and_makes_client_uuids(app, factory):
    session = factory.session()
    _insert(app, [_row(session.id, 0),
                  _row(session.id, 1, trial_type="aot", direction="forward",
                       correct_response="F", response=None, client_uuid=str(uuid.uuid4()))])
    with app.app_context():
        first, second = db.session.scalars(select(Trial).order_by(Trial.trial_index))
    assert (first.correct_response, first.response) == ("[2, 1, 3]", "[1, 2, 3]")
    assert json.loads(first.correct_response) == [2, 1, 3]
    assert uuid.UUID(first.client_uuid) and first.extra == {"raw_text": "1, 2, 3"}
    assert (second.correct_response, second.response, second.direction) == ("F", None, "forward")
    assert first.created_at is not None


def test_insert_trials_of_nothing_inserts_nothing(app, factory):
    factory.session()
    _insert(app, [])
    with app.app_context():
        assert db.session.scalar(select(db.func.count()).select_from(Trial)) == 0


def test_insert_trials_refuses_a_second_row_for_a_trial_index(app, factory):
    session = factory.session()
    _insert(app, [_row(session.id, 0)])
    with pytest.raises(IntegrityError):
        _insert(app, [_row(session.id, 0)])
