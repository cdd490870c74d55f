"""The data model on SQLite and PostgreSQL: constraints that keep every trial stored once."""
import json
from datetime import datetime, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask_migrate import downgrade, upgrade
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from webapp.extensions import db
from webapp.models import ModelRun, Session, SourceClip, Stimulus, Study, Subject, Trial


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


class _StubBackend:
    """Answers "F" to everything: enough for execute_run to write a whole manifest."""

    name = "stub"
    min_frames = 1  # the fewest frames a backend answers from (analysis.vlm.backends.base)

    def __init__(self, model, **options):
        self.model = model

    def describe(self):
        return {"backend": "stub", "model": self.model, "dtype": "bfloat16",
                "weights_sha256": "ab" * 32, "versions": {"transformers": "4.57.1"}}

    def check(self, params, kinds):
        pass

    def render(self, request):
        return "prompt"

    def generate(self, requests, params):
        from analysis.vlm.backends.base import Generation

        return [Generation("F", n_prompt_tokens=3, n_new_tokens=1) for _ in requests]

    def close(self):
        pass


def _written_manifest(tmp_path, monkeypatch) -> dict:
    """A model session's ``device_info`` before model_run: the whole manifest
    ``analysis.vlm.run.execute_run`` writes (status, cache, host, n_rows, every config field
    down to batch_size, limit and backend_options), with run key and failures."""
    from analysis.vlm import run
    from analysis.vlm.backends.base import GenerationParams, Request
    from analysis.vlm.items import Item
    from analysis.vlm.run_config import RunConfig
    from analysis.vlm.tasks import TaskSpec
    from experiments.catalog_records import StimulusRecord

    item = Item("aot:1:FB", "aot", StimulusRecord(1, "p1", "clip", direction="forward"),
                Request([{"role": "user", "content": []}]), ("F", "B"), "F", {})
    monkeypatch.setattr(run, "build_items", lambda *args, **kwargs: [item])
    monkeypatch.setattr(run, "load_backend", lambda name, model, **options:
                        _StubBackend(model, **options))
    config = RunConfig("hf", "Qwen/Qwen2.5-VL-7B-Instruct", TaskSpec(fps=2.0, seed=5),
                       GenerationParams(seed=5), scoring="generate", batch_size=3, limit=7,
                       backend_options={"device": "cpu", "dtype": "bfloat16"})
    result = run.execute_run(config, [], {}, tmp_path / "cache.sqlite3", tmp_path / "runs",
                             progress=False)
    manifest = json.loads((result.folder / "manifest.json").read_text())
    assert {"status", "cache", "host", "n_rows"} <= set(manifest)
    return {**manifest, "run_key": result.run_key, "failures": []}


def test_the_model_run_migration_moves_a_model_sessions_provenance_into_its_own_table(
        any_db_app, tmp_path, monkeypatch):
    # A model session stored before model_run kept its manifest in device_info and its item
    # keys in schedule; after the upgrade both are in model_run and the session's are empty,
    # and the downgrade puts back exactly what was there.
    manifest = _written_manifest(tmp_path, monkeypatch)
    with any_db_app.app_context():
        db.drop_all()
        upgrade(revision="9b3f5e2d8c14")
        with db.engine.begin() as connection:
            connection.exec_driver_sql(
                "INSERT INTO study (slug, title, design, design_snapshot, stimulus_set, status, "
                "created_at) VALUES ('a', 'A', 'arrow-of-time', '{}', 's', 'open', "
                "'2026-01-01 00:00:00')")
            connection.exec_driver_sql(
                "INSERT INTO subject (study_id, kind, external_id, recruitment, created_at) "
                "VALUES (1, 'model', 'Qwen/Qwen2.5-VL-7B-Instruct', '{}', '2026-01-01 00:00:00'),"
                " (1, 'human', 'P1', '{}', '2026-01-01 00:00:00')")
            for subject_id, token, schedule, info in (
                    (1, "m", '["aot:1:FB", "aot:2:FB"]', json.dumps(manifest)),
                    (2, "h", "[]", '{"device": {"refresh_hz": 60}}')):
                connection.exec_driver_sql(
                    "INSERT INTO session (subject_id, token, session_number, seed, status, "
                    "schedule, condition, device_info, started_at, last_seen_at, excluded, "
                    "exclusion_reasons, simulated) VALUES (%s, '%s', 1, 5, 'completed', '%s', "
                    "'{}', '%s', '2026-11-01 00:00:00', '2026-11-01 01:00:00', false, '[]', "
                    "false)" % (subject_id, token, schedule, info.replace("'", "''")))
        upgrade()
        run = db.session.scalars(select(ModelRun)).one()
        model_session, human_session = db.session.scalars(select(Session).order_by(Session.id))
        assert run.session_id == model_session.id and run.run_key == manifest["run_key"]
        assert run.item_keys == ["aot:1:FB", "aot:2:FB"] and run.failures == []
        assert run.model == "Qwen/Qwen2.5-VL-7B-Instruct" and run.revision == "ab" * 6
        assert run.weights_sha256 == "ab" * 32 and run.backend["dtype"] == "bfloat16"
        assert run.params == manifest["config"]["params"] and run.sampling["fps"] == 2.0
        assert run.counts["computed"] == 1 and "build_items_s" in run.timing
        assert (run.run_id, run.git_commit, run.scoring) == (
            manifest["run_id"], manifest["git_commit"], "generate")
        assert run.manifest == manifest  # status, cache, host, n_rows, batch_size ... kept
        assert model_session.device_info == {} and model_session.schedule == []
        assert human_session.device_info == {"device": {"refresh_hz": 60}}
        db.session.remove()
        downgrade(revision="9b3f5e2d8c14")  # and back: the session holds them again, exactly
        with db.engine.connect() as connection:
            info, schedule = connection.exec_driver_sql(
                "SELECT device_info, schedule FROM session WHERE token = 'm'").one()
        info, schedule = (json.loads(v) if isinstance(v, str) else v for v in (info, schedule))
        assert info == manifest
        assert schedule == ["aot:1:FB", "aot:2:FB"]


def test_old_frame_order_rows_lose_their_direction_and_the_downgrade_restores_it(any_db_app):
    # People's frame-ordering rows used to store direction "forward" (models' stored none).
    # Plain SQL: the ORM models describe the head, not this older revision.
    with any_db_app.app_context():
        db.drop_all()
        upgrade(revision="e5b8a1c3d702")
        with db.engine.begin() as connection:
            for statement in (
                    "INSERT INTO study (id, slug, title, design, design_snapshot, stimulus_set, "
                    "status, created_at) VALUES (1, 'aot-1', 'AoT', 'arrow-of-time', '{}', "
                    "'synthetic', 'open', '2026-01-01 00:00:00')",
                    "INSERT INTO subject (id, study_id, kind, external_id, recruitment, "
                    "created_at) VALUES (1, 1, 'human', 'P1', '{}', '2026-01-01 00:00:00')",
                    "INSERT INTO session (id, subject_id, token, session_number, seed, status, "
                    "schedule, condition, device_info, started_at, last_seen_at, excluded, "
                    "exclusion_reasons, simulated) VALUES (1, 1, 'tok', 1, 7, 'completed', "
                    "'[]', '{}', '{}', '2026-01-01 00:00:00', '2026-01-01 00:00:00', false, "
                    "'[]', false)"):
                connection.exec_driver_sql(statement)
            for index, (trial_type, direction) in enumerate((("frame_order", "forward"),
                                                             ("aot", "backward"))):
                connection.exec_driver_sql(
                    "INSERT INTO trial (session_id, client_uuid, trial_index, trial_type, "
                    "direction, excluded, exclusion_reasons, extra, created_at) VALUES "
                    f"(1, 'u-{index}', {index}, '{trial_type}', '{direction}', false, '[]', "
                    "'{}', '2026-01-01 00:00:00')")

        def directions():
            with db.engine.connect() as connection:
                return [tuple(row) for row in connection.exec_driver_sql(
                    "SELECT trial_type, direction FROM trial ORDER BY trial_index")]

        upgrade(revision="f1a2b3c4d5e6")
        assert directions() == [("frame_order", None), ("aot", "backward")]
        downgrade(revision="e5b8a1c3d702")
        assert directions() == [("frame_order", "forward"), ("aot", "backward")]
        upgrade()


def test_migrated_postgres_names_match_a_database_built_from_the_models(any_db_app):
    # PostgreSQL names constraints and sequences after the table: the study rename must
    # carry those names over, or a migrated database and a new one differ.
    with any_db_app.app_context():
        if db.engine.dialect.name != "postgresql":
            pytest.skip("PostgreSQL names only")

        def names():
            with db.engine.connect() as connection:
                constraints = connection.exec_driver_sql(
                    "SELECT conname FROM pg_constraint c JOIN pg_namespace n ON "
                    "n.oid = c.connamespace WHERE n.nspname = current_schema() "
                    "AND conname <> 'alembic_version_pkc'").scalars()
                sequences = connection.exec_driver_sql(
                    "SELECT sequencename FROM pg_sequences "
                    "WHERE schemaname = current_schema()").scalars()
                return sorted(constraints), sorted(sequences)

        db.drop_all()
        db.create_all()
        built = names()
        db.drop_all()
        with db.engine.begin() as connection:
            connection.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
        upgrade()
        migrated = names()
        db.drop_all()
        with db.engine.begin() as connection:
            connection.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
        db.create_all()
    assert [n for n in migrated[0] if "experiment" in n] == []
    assert migrated == built
