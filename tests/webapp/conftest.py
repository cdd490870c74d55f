"""Web-app fixtures: factories for stored studies and trials, and a signed-in researcher.

Factories follow CTFd's habit (defaults + ``**overrides``) but are reached through the
``factory`` fixture, so everything they make lives in the test's temporary database.
"""
import itertools
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from webapp import auth
from webapp.extensions import db
from webapp.models import Session, SourceClip, Stimulus, Study, Subject, Trial, access

RESEARCHER = "ada"
RESEARCHER_PASSWORD = "correct horse battery"


class Factory:
    """Makes model rows with sensible defaults; every keyword overrides a column.

    Each row is committed in an app context of its own and handed back detached with its
    columns loaded: a context held open through the test would be reused by the test
    client's requests (sharing ``g`` and the database session with them).
    """

    def __init__(self, app):
        self.app = app
        self._n = itertools.count(1)

    def study(self, owner: str | None = RESEARCHER, **overrides) -> Study:
        """A study owned by the researcher ``owner`` if that account exists: by default the
        ``researcher`` fixture's, so ask for ``logged_in`` before a fixture that makes studies."""
        from experiments.designs import DESIGNS

        design = overrides.pop("design", "arrow-of-time")
        values = {"slug": f"study-{next(self._n)}", "title": "A study", "design": design,
                  "design_snapshot": DESIGNS[design].to_dict(), "stimulus_set": "synthetic",
                  "status": "open",
                  "exclusion_rules_version": DESIGNS[design].exclusions.version, **overrides}
        study = self._add(Study(**values))
        with self.app.app_context():
            if owner is not None and auth.find_researcher(owner) is not None:
                access.share(db.session.get(Study, study.id), owner, "owner")
        return study

    def researcher(self, username: str, role_in: dict | None = None, **overrides):
        """An account with the fixture password; ``role_in`` maps study slugs to its roles."""
        with self.app.app_context():
            researcher = auth.create_researcher(username, RESEARCHER_PASSWORD, **overrides)
            for slug, role in (role_in or {}).items():
                study = db.session.scalar(db.select(Study).filter_by(slug=slug))
                access.share(study, username, role)
            return researcher.id

    def stimulus_set(self, name: str = "synthetic", per_category: int = 1) -> str:
        """A stimulus set both shipped designs can schedule (clips in both directions, frame
        sets), as rows only: no files are written."""
        from bench.harness.stored_study import add_stimulus_set

        with self.app.app_context():
            add_stimulus_set(name, per_category=per_category)
        return name

    def clip(self, **overrides) -> SourceClip:
        n = next(self._n)
        values = {"stimulus_set": "synthetic", "clip_key": f"clip-{n:02d}",
                  "categories": ["Fall"], "duration_s": 3.0, "fps": 30.0, "frame_count": 90,
                  "width": 64, "height": 48, **overrides}
        return self._add(SourceClip(**values))

    def stimulus(self, clip: SourceClip | None = None, **overrides) -> Stimulus:
        clip = clip or self.clip()
        direction = overrides.get("direction", "forward")
        values = {"public_id": uuid.uuid4().hex[:16], "source_clip": clip, "kind": "clip",
                  "direction": direction, "path": f"{clip.stimulus_set}/{clip.clip_key}/{direction}.mp4",
                  "sha256": uuid.uuid4().hex * 2, **overrides}
        return self._add(Stimulus(**values))

    def session(self, study: Study | None = None, **overrides) -> Session:
        """A session of a new human subject (``subject_id`` names the subject)."""
        study = study or self.study()
        external_id = overrides.pop("subject_id", f"P{next(self._n):04d}")
        kind = overrides.pop("kind", "human")
        subject = overrides.pop("subject", None) or self._add(
            Subject(study=study, kind=kind, external_id=external_id,
                    recruitment={"PROLIFIC_PID": external_id}))
        values = {"subject": subject, "token": uuid.uuid4().hex, "seed": next(self._n),
                  "status": "in_progress", "schedule": [{"trial_index": i} for i in range(8)],
                  "condition": {"key_mapping": {"f": "F", "j": "B"}}, **overrides}
        return self._add(Session(**values))

    def trial(self, session: Session, stimulus: Stimulus | None = None, **overrides) -> Trial:
        stimulus = stimulus or self.stimulus()
        direction = overrides.get("direction", stimulus.direction)
        truth = "F" if direction == "forward" else "B"
        index = overrides.pop("trial_index", None)
        if index is None:
            with self.app.app_context():
                index = db.session.query(Trial).filter_by(session_id=session.id).count()
        values = {"session": session, "client_uuid": str(uuid.uuid4()), "trial_index": index,
                  "trial_type": "aot", "block": "main-1", "stimulus": stimulus,
                  "direction": direction, "correct_response": truth, "response": truth,
                  "correct": True, "rt_ms": 812.125 + index, "onset_method": "rvfc",
                  "dropped_frames": 0, "extra": {"key": "f"}, **overrides}
        return self._add(Trial(**values))

    def _add(self, row):
        with self.app.app_context():
            # Rows keep their loaded columns after commit and once the context closes.
            db.session().expire_on_commit = False
            db.session.add(row)
            db.session.commit()
        return row


@pytest.fixture
def factory(app):
    return Factory(app)


@pytest.fixture
def researcher(app):
    # A cheap hash keeps sign-in fast in tests; production uses scrypt (test_auth checks it).
    app.config["PASSWORD_HASH_METHOD"] = "pbkdf2:sha256:1000"
    with app.app_context():
        auth.create_researcher(RESEARCHER, RESEARCHER_PASSWORD)
    return {"username": RESEARCHER, "password": RESEARCHER_PASSWORD}


@pytest.fixture
def login(client, researcher):
    """Sign ``client`` in as the researcher (CSRF is off under TESTING unless a test enables it)."""
    def sign_in(username=researcher["username"], password=researcher["password"]):
        return client.post("/auth/login", data={"username": username, "password": password})
    return sign_in


@pytest.fixture
def logged_in(client, login):
    response = login()
    assert response.status_code == 302
    return client


def minutes_ago(minutes: float) -> datetime:
    return datetime.now(timezone.utc) - timedelta(minutes=minutes)
