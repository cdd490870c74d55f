"""Every test's data comes from here, reached through the fixtures of tests/conftest.py:
``factory`` (rows in the test's own database) and ``site`` (the live site of
tests/live_site.py, with its tiny stimuli and studies made below).

Factories follow CTFd's habit (defaults + ``**overrides``).  The stored stimulus sets and open
studies are bench/harness/stored_study.py's, which the benchmarks' sites share (bench sits
below tests: it never imports this module).
"""
import itertools
import tempfile
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
from flask import current_app, has_app_context

from bench.harness import stored_study
from experiments.categories import CATEGORIES
from webapp import auth, create_app
from webapp.extensions import db
from webapp.models import Session, SourceClip, Stimulus, Study, Subject, Trial, access

RESEARCHER = "ada"
RESEARCHER_PASSWORD = "correct horse battery"


_EMPTY_SQLITE: list[bytes] = []  # the schema's empty SQLite file, made once a test process


def make_app(tmp_path: Path, database_url: str, **overrides):
    """The app on an empty database at ``database_url``, files under ``tmp_path``.

    A new SQLite file is a copy of the first one this process made with ``create_all``
    (creating the schema took about half of each test app's 75 ms)."""
    config = {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "INSTANCE_PATH": str(tmp_path / "instance"),
        "DATABASE_URL": database_url,
        "STIMULUS_ROOT": str(tmp_path / "stimuli"),
        # The test client is one address for every participant a test makes; the limits
        # themselves are tested with their own values (tests/webapp/test_participant_lifecycle.py).
        "NEW_SESSIONS_PER_ADDRESS": "1000000 per second",
        "NEW_SESSIONS_PER_STUDY": "1000000 per second",
        "NEW_SESSIONS_PER_ADDRESS_PER_STUDY": "1000000 per second",
        **overrides,
    }
    sqlite_file = Path(database_url.removeprefix("sqlite:///"))
    fresh_file = (database_url.startswith("sqlite:///") and sqlite_file.is_absolute()
                  and not sqlite_file.exists())
    if fresh_file and _EMPTY_SQLITE:
        sqlite_file.write_bytes(_EMPTY_SQLITE[0])
        return create_app(config)
    app = create_app(config)
    with app.app_context():
        db.create_all()
        if fresh_file:
            db.engine.dispose()
            _EMPTY_SQLITE.append(sqlite_file.read_bytes())
    return app


class Factory:
    """Makes rows with sensible defaults in ``app``'s database; every keyword overrides.

    Each call runs in an app context of its own and hands its rows back detached with their
    columns loaded: a context held open through the test would be reused by the test
    client's requests (sharing ``g`` and the database session with them).
    """

    def __init__(self, app):
        self.app = app
        self._n = itertools.count(1)

    # Participant side: stored stimulus sets and open studies (bench/harness/stored_study.py).
    def stimulus_set(self, name: str = "synthetic", per_category: int = 1,
                     files: bool = False) -> str:
        """A stimulus set both shipped designs can schedule (clips in both directions, frame
        sets); with ``files``, small stand-in files under STIMULUS_ROOT, enough for media."""
        self._stored(stored_study.add_stimulus_set, name, per_category=per_category,
                     root=self._root(files))
        return name

    def sweep_set(self, name: str = "tiny", files: bool = False, clips_per_level: int = 1):
        """Both sweeps of the built-in set (split tra-sweep) in set ``name``."""
        return self._stored(stored_study.add_sweep_set, name, root=self._root(files),
                            clips_per_level=clips_per_level)

    def length_set(self, name: str = "tiny", files: bool = False, **kwargs):
        """Clip-length cuts (split length-sweep) in set ``name`` (stored_study.add_length_set)."""
        return self._stored(stored_study.add_length_set, name, root=self._root(files), **kwargs)

    def catch_set(self, keys=("f", "j"), files: bool = False) -> list[SourceClip]:
        """A catch set with one video per key of ``keys``."""
        return self._stored(stored_study.add_catch_set, root=self._root(files), keys=keys)

    def open_study(self, design="arrow-of-time", slug="study", stimulus_set="tiny",
                   status="open", **changes) -> Study:
        """A study of ``design`` with ``changes`` to its settings (Design.with_changes)."""
        return self._stored(stored_study.open_study, design, slug, stimulus_set, status,
                            **changes)

    def aot_study(self, files: bool = False) -> Study:
        """The usual participant-side set-up: the ``tiny`` stimulus set (two clips per
        category), the catch set and an open arrow-of-time study ``study`` with two blocks."""
        return self._stored(stored_study.add_aot_study, root=self._root(files))

    # Researcher side: single rows.
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

    def _root(self, files: bool) -> Path | None:
        return Path(self.app.config["STIMULUS_ROOT"]) if files else None

    def _stored(self, make, *args, **kwargs):
        # Inside the test's own app context, write through its session: a second context has
        # its own session, and the test's open read transaction would not see the new rows.
        if has_app_context() and current_app._get_current_object() is self.app:
            return make(*args, **kwargs)
        with self.app.app_context():
            # Rows keep their loaded columns after commit and once the context closes.
            db.session().expire_on_commit = False
            return make(*args, **kwargs)

    def _add(self, row):
        def add():
            db.session.add(row)
            db.session.commit()
            return row
        return self._stored(add)


# A participant the test client plays at a person's pace, by the plausibility rules
# (experiments/plausibility.py), without the test waiting a person's time.
class PersonClock:
    """A server clock that moves on ``step`` at every reading: two trials posted back to
    back arrive as far apart as a person's would (the ``person_pace`` fixture)."""

    def __init__(self, step: timedelta = timedelta(seconds=3)):
        self.time = datetime.now(timezone.utc)
        self.step = step

    def __call__(self) -> datetime:
        self.time += self.step
        return self.time


def preload(client, api: str) -> int:
    """Fetch every stimulus of the session at ``api`` (``/api/session/<token>``), as the
    runner does before a block; returns how many were asked for."""
    trials = client.get(api).get_json()["trials"]
    urls = [url for t in trials for url in (t["stimulus"]["url"], *t["stimulus"]["frames"])
            if url]
    for url in urls:
        client.get(url).close()
    return len(urls)


# The live site's tiny stimuli: short, small clips a participant can tell apart (a square
# moving and growing), encoded for real and stored through the real catalog.
FPS = 30
N_FRAMES = 18  # 0.6 s: trials stay fast, and 8-frame sets and thirds still fit
SIZE = (48, 64)
STIMULUS_SET = "tiny"
# What the shipped frame-ordering design needs: 2, 4 and 8 frames over two thirds of the
# clip, and 4 frames over the middle third and over the whole clip.
FRAME_SETS = stored_study.FRAME_SETS
# Long enough to order the frames by hand, short enough to wait out in a test.
QUICK_ORDERING_MS = 4000
# Keys no engine keeps from the page in fullscreen (WebKitGTK leaves it on f, F and Escape and
# swallows the key): the engine tests' own studies below, and tests/engines/test_fullscreen.py's.
SAFE_KEYS = ("d", "k")
# The catch videos of the keys the site's studies answer with (the shipped f and j, and d and
# k of tests/engines/test_fullscreen.py), not of all 36 a study may choose: rendering and
# importing those took most of the site's set-up.
SITE_CATCH_KEYS = ("f", "j", "d", "k")


def _frames(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    h, w = SIZE
    background = rng.integers(40, 200, size=3, dtype=np.uint8)
    colour = rng.integers(0, 255, size=3, dtype=np.uint8)
    frames = np.empty((N_FRAMES, h, w, 3), np.uint8)
    for t in range(N_FRAMES):
        frames[t] = background
        side = 6 + t // 2
        x = 2 + 2 * t
        frames[t, 8:8 + side, x:x + side] = colour
    return frames


def tiny_specs(folder: Path, per_category: int = 2) -> list:
    from experiments import media
    from experiments.stimuli import ClipSpec

    specs = []
    for c, category in enumerate(CATEGORIES):
        for k in range(per_category):
            key = f"{category.lower()}-{k}"
            path = folder / f"{key}.mp4"
            media.encode_browser_mp4(_frames(100 * c + k), path, fps=FPS)
            specs.append(ClipSpec(
                clip_key=key, path=path, categories=[category],
                annotation_brief=f"A square moves ({category}).",
                annotation_comprehensive=f"A {category} square grows and moves right."))
    return specs


def store_tiny_stimuli(app) -> None:
    """The tiny set and the catch videos of SITE_CATCH_KEYS, encoded and imported through the
    catalog into ``app``'s STIMULUS_ROOT."""
    from experiments.catch import catch_specs
    from webapp.stimuli import catalog

    root = Path(app.config["STIMULUS_ROOT"])
    with tempfile.TemporaryDirectory() as sources, app.app_context():
        catalog.import_clips(tiny_specs(Path(sources)), STIMULUS_SET, root,
                             frame_set_sizes=FRAME_SETS)
        # as long as the clips, as a catch set is made to be: a catch variant is never
        # shorter than its catch clip (webapp.stimuli.presentations)
        catalog.import_clips(catch_specs(Path(sources) / "catch", keys=SITE_CATCH_KEYS,
                                         fps=FPS, duration_s=N_FRAMES / FPS), "catch", root,
                             frame_set_sizes=())


def tiny_designs() -> dict:
    """The shipped designs, cut down to a few trials per session."""
    from experiments.designs import ARROW_OF_TIME, FRAME_ORDERING, OrderingCondition, PracticeSpec

    aot = ARROW_OF_TIME.with_changes(
        max_clips=4, fixation_ms=300, main_blocks=2,
        practice=PracticeSpec(n_trials=2, min_accuracy=0.5, max_attempts=2))
    ordering = FRAME_ORDERING.with_changes(
        max_clips=3, main_blocks=1,
        practice=PracticeSpec(n_trials=1, min_accuracy=0.0, max_attempts=1),
        conditions=(OrderingCondition("4 frames"),
                    OrderingCondition("hint 1&3", hint_positions=(0, 2)),
                    OrderingCondition("2 frames", n_frames=2)))
    return {"aot": aot, "frame_order": ordering}


def open_site_study(app, slug: str, design, **settings) -> None:
    """Create and open a study of ``design`` on the tiny stimulus set, as a study file would
    (``settings``: other StudyConfig fields).  It opts in every engine, webkit too, which the
    default refuses (docs/measurements.md "Onset timing per engine"): tests/engines runs whole sessions in
    WebKitGTK on these studies."""
    from experiments.study_file import BROWSERS, StudyConfig
    from webapp.researcher import lifecycle, studies

    config = StudyConfig(design=design, **{"stimulus_set": STIMULUS_SET, "browsers": BROWSERS,
                                           **settings})
    with app.app_context():
        studies.create_study_from_config(slug, config)
        lifecycle.transition(slug, "open")


def site_study(site, kind: str, design, **settings) -> str:
    """Opens a study of ``design`` (``settings``: as open_site_study) on the live site as
    ``kind`` (slug ``tiny-`` and the kind with hyphens), once per site, next to the site's own
    studies; returns ``kind`` for ``enter``."""
    if kind not in site.slugs:
        slug = "tiny-" + kind.replace("_", "-")
        open_site_study(site.app, slug, design, **settings)
        site.slugs[kind] = slug
    return kind


def open_quick_ordering(site) -> str:
    """A frame-ordering study whose trials time out after QUICK_ORDERING_MS (the shipped
    design waits 120 s), its catch trial answered with SAFE_KEYS (see open_safe_ordering)."""
    return site_study(site, "frame_order_quick", tiny_designs()["frame_order"].with_changes(
        max_ordering_ms=QUICK_ORDERING_MS, response_keys=SAFE_KEYS))


def open_short_aot(site, keys: tuple[str, str] = SAFE_KEYS) -> str:
    """The site's arrow-of-time study cut to one clip and one catch trial per main block (the
    practice as it is), by default with the keys SAFE_KEYS: for fullscreen tests that check
    one trial and then only need the session to complete.  With f, every WebKitGTK trial
    whose answer is f replays three timed-out presentations (~9 s) that no such test reads."""
    return site_study(site, f"aot_short_{''.join(keys)}", tiny_designs()["aot"].with_changes(
        max_clips=2, response_keys=keys))


def open_safe_ordering(site) -> str:
    """The site's frame-ordering study with the keys SAFE_KEYS for its catch trial, for tests
    of the ordering itself: with f, a WebKitGTK session whose catch trial asks for f replays
    three timed-out presentations (~9 s) that no such test reads."""
    return site_study(site, "frame_order_safe_keys",
                      tiny_designs()["frame_order"].with_changes(response_keys=SAFE_KEYS))


# Tiny clips drawn with numpy (nothing is downloaded): stimulus preparation's, 32x32 and
# 12 frames over a gradient, and the model tests', over noise.
TINY_FRAMES, TINY_SIZE = 12, 32


def moving_square_frames(count: int = TINY_FRAMES, size: int = TINY_SIZE, width=None) -> np.ndarray:
    """A bright square sliding over a gradient: every frame differs clearly from the next."""
    width = width or size
    ys, xs = np.mgrid[0:size, 0:width]
    frames = np.empty((count, size, width, 3), np.uint8)
    for k in range(count):
        img = np.stack([xs * 4 + 40, ys * 4 + 40, np.full_like(xs, 90)], axis=-1).astype(float)
        x0 = 2 + 2 * k
        img[8:20, x0:x0 + 8] = (240, 230, 40)
        frames[k] = np.clip(img, 0, 255).astype(np.uint8)
    return frames


def moving_square(n_frames=24, height=32, width=48, seed=0):
    """A bright square moving right over a noisy background (uint8 RGB), for the models."""
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 60, (n_frames, height, width, 3)).astype(np.uint8)
    for t in range(n_frames):
        frames[t, 8:16, 2 + t:10 + t] = 250
    return frames


def write_lossless(frames, path, fps=12):
    """An FFV1 (lossless) file: decoded frames equal the written ones exactly."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=fps)
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], "bgr0"
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode(None))
    return str(path)


def replayed_levels(schedule: list[dict], trials) -> list[dict]:
    """``schedule`` with its adaptive slots cleared as first made and their levels chosen
    again from the stored ``trials`` alone (rows or dicts with ``trial_index``, ``response``,
    ``correct`` and ``exclusion_reasons``): equal to the stored schedule when the levels
    follow from the stored answers.  An answer a trial rule excluded (under load: too many
    dropped frames) counts as none, as the server read it when it chose the next level
    (webapp/participant/adaptive.py stored_answers); the session's own reasons, added to
    every trial at completion (posted_early, ...), came later."""
    from experiments.adaptive_schedule import KEY, resolve
    from experiments.exclusions import TRIAL_REASONS

    def read(t, name):
        return t[name] if isinstance(t, dict) else getattr(t, name)

    answers = {read(t, "trial_index"): None if read(t, "response") is None
               or set(read(t, "exclusion_reasons") or ()) & set(TRIAL_REASONS)
               else bool(read(t, "correct")) for t in trials}
    fresh = [dict(t) for t in schedule]
    for t in fresh:
        if KEY in t:
            t.update(stimulus_id=None, source_clip_id=None)
            t[KEY] = {k: t[KEY][k] for k in ("sweep", "slot", "pool", "curve_direction")}
    for t in schedule:
        if KEY in t:
            fresh = resolve(fresh, t["trial_index"], answers)
    return fresh
