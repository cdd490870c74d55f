"""The data model on SQLite and PostgreSQL: constraints that keep every trial stored once."""
from datetime import datetime, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask_migrate import upgrade
from sqlalchemy.exc import IntegrityError

from webapp.extensions import db
from webapp.models import Study, Session, SourceClip, Stimulus, Subject, Trial


def _session_with_stimulus():
    study = Study(slug="aot-1", title="AoT", design="arrow-of-time", stimulus_set="synthetic")
    clip = SourceClip(stimulus_set="synthetic", clip_key="fall-00", categories=["Fall", "Diffusion"],
                      duration_s=3.0, fps=30.0, frame_count=90, width=320, height=240)
    stimulus = Stimulus(public_id="opaque1", source_clip=clip, kind="clip", direction="backward",
                        path="synthetic/fall-00/backward.mp4", sha256="0" * 64)
    subject = Subject(study=study, kind="human", external_id="P1")
    session = Session(subject=subject, token="t" * 40, seed=7)
    db.session.add_all([study, clip, stimulus, subject, session])
    db.session.commit()
    return session, stimulus


def _trial(session, stimulus, uuid, index):
    return Trial(session_id=session.id, client_uuid=uuid, trial_index=index, trial_type="aot",
                 stimulus_id=stimulus.id, direction="backward", correct_response="B",
                 response="F", correct=False, rt_ms=812.25, extra={"key": "f"})


def test_trial_round_trip_keeps_types(any_db_app):
    with any_db_app.app_context():
        session, stimulus = _session_with_stimulus()
        db.session.add(_trial(session, stimulus, "u-1", 0))
        db.session.commit()
        db.session.expire_all()
        trial = db.session.get(Trial, 1)
        assert trial.rt_ms == 812.25
        assert trial.extra == {"key": "f"}
        assert trial.stimulus.source_clip.categories == ["Fall", "Diffusion"]
        assert trial.created_at.tzinfo == timezone.utc


@pytest.mark.parametrize("uuid, index", [("u-1", 1), ("u-2", 0)])
def test_a_trial_is_stored_at_most_once(any_db_app, uuid, index):
    with any_db_app.app_context():
        session, stimulus = _session_with_stimulus()
        db.session.add(_trial(session, stimulus, "u-1", 0))
        db.session.commit()
        db.session.add(_trial(session, stimulus, uuid, index))
        with pytest.raises(IntegrityError):
            db.session.commit()
        db.session.rollback()
        assert db.session.query(Trial).count() == 1


def test_naive_datetimes_are_refused(any_db_app):
    with any_db_app.app_context():
        session, _ = _session_with_stimulus()
        session.completed_at = datetime(2026, 1, 1)
        with pytest.raises(Exception, match="naive datetime"):
            db.session.commit()
        db.session.rollback()


def test_migrations_build_exactly_the_models(any_db_app):
    with any_db_app.app_context():
        db.drop_all()
        upgrade()
        with db.engine.connect() as connection:
            diff = compare_metadata(MigrationContext.configure(connection), db.metadata)
        assert diff == []


def test_the_security_migration_keeps_every_researcher_on_the_studies_they_had(any_db_app):
    # Before study ownership every researcher saw every study: after the upgrade each is an
    # owner of each existing study, and a study closed then reads "let participants finish".
    with any_db_app.app_context():
        db.drop_all()
        upgrade(revision="5d0e6c1f2a47")
        with db.engine.begin() as connection:
            connection.exec_driver_sql(
                "INSERT INTO researcher (username, password_hash, created_at) VALUES "
                "('ada', 'x', '2026-01-01 00:00:00'), ('bob', 'x', '2026-01-01 00:00:00')")
            connection.exec_driver_sql(
                "INSERT INTO experiment (slug, title, design, design_snapshot, stimulus_set, "
                "status, created_at) VALUES ('a', 'A', 'arrow-of-time', '{}', 's', 'closed', "
                "'2026-01-01 00:00:00'), ('b', 'B', 'arrow-of-time', '{}', 's', 'open', "
                "'2026-01-01 00:00:00')")
        upgrade()
        with db.engine.connect() as connection:
            members = connection.exec_driver_sql(
                "SELECT e.slug, r.username, m.role FROM study_member m JOIN study e ON "
                "e.id = m.study_id JOIN researcher r ON r.id = m.researcher_id "
                "ORDER BY 1, 2").all()
            modes = dict(connection.exec_driver_sql("SELECT slug, close_mode FROM study").all())
            admins = connection.exec_driver_sql("SELECT count(*) FROM researcher WHERE is_admin")
            assert admins.scalar() == 0
    assert [tuple(m) for m in members] == [("a", "ada", "owner"), ("a", "bob", "owner"),
                                           ("b", "ada", "owner"), ("b", "bob", "owner")]
    assert modes == {"a": "finish", "b": None}
