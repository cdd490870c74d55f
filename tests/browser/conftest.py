"""Fixtures for whole-session browser tests: headless Debian Chromium driven by Playwright
against the real app, served by werkzeug in a thread on a free port.

One site (database, tiny stimulus set, two open studies) for the whole test session; every
test is its own participant, so tests stay independent without paying for a new site each
time.
"""
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest
from werkzeug.serving import make_server

from tests.browser.stimuli import tiny_specs
from tests.conftest import _make_app

STIMULUS_SET = "tiny"
# What the shipped frame-ordering design needs: 2, 4 and 8 frames over two thirds of the
# clip, and 4 frames over the middle third and over the whole clip.
FRAME_SETS = ((2, "medium"), (4, "medium"), (8, "medium"), (4, "short"), (4, "long"))


@dataclass
class Site:
    app: object
    base_url: str
    slugs: dict


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


def _store_stimuli(app) -> None:
    from webapp import catalog

    with tempfile.TemporaryDirectory() as sources, app.app_context():
        catalog.import_clips(tiny_specs(Path(sources)), STIMULUS_SET,
                             Path(app.config["STIMULUS_ROOT"]), frame_set_sizes=FRAME_SETS)
        _store_catch(app, Path(sources))


def _store_catch(app, folder: Path) -> None:
    """The catch videos ("press F" / "press J") that the designs put in every block."""
    from experiments.catch import catch_specs
    from webapp import catalog

    catalog.import_clips(catch_specs(folder / "catch"), "catch",
                         Path(app.config["STIMULUS_ROOT"]), frame_set_sizes=())


def _open_studies(app) -> dict:
    from webapp import studies
    from webapp.extensions import db

    slugs = {}
    with app.app_context():
        for kind, design in tiny_designs().items():
            slug = f"tiny-{kind.replace('_', '-')}"
            study = studies.create_study(slug, design.name, STIMULUS_SET)
            study.design_snapshot = design.to_dict()
            db.session.commit()
            studies.transition(slug, "open")
            slugs[kind] = slug
    return slugs


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site")
    app = _make_app(tmp, f"sqlite:///{tmp / 'site.db'}")
    _store_stimuli(app)
    slugs = _open_studies(app)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Site(app=app, base_url=f"http://127.0.0.1:{server.server_port}", slugs=slugs)
    server.shutdown()
    thread.join(timeout=5)
    from webapp.extensions import db

    with app.app_context():
        db.engine.dispose()
