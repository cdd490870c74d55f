"""A whole tra-adaptive session in Chromium through the real runner: each main trial's video
is asked for only once the answers before it are stored, and the server's levels follow from
the stored answers."""
import tempfile
from pathlib import Path

import pytest

from experiments.adaptive_schedule import KEY, skipped
from experiments.designs import DESIGNS, PracticeSpec
from experiments.stimuli import ClipSpec
from tests.browser.participant import assert_every_trial_once, run_side_by_side, stored
from tests.factories import FPS, _frames, open_site_study, replayed_levels
from webapp.extensions import db
from webapp.participant import store

pytestmark = pytest.mark.browser
SET = "tiny-sweep"
LEVELS = {"bouncing_ball": ("restitution", (0.2, 0.4, 0.6, 0.8)),
          "pendulum": ("damping", (0.0, 1.0, 2.0, 3.0))}


@pytest.fixture(scope="module")
def adaptive_site(site):
    """The live site with a small sweep set (real clips) and an adaptive study on it."""
    from experiments import media
    from webapp.stimuli import catalog

    if "adaptive" not in site.slugs:
        specs = []
        with tempfile.TemporaryDirectory() as folder:
            for s, (scenario, (parameter, levels)) in enumerate(LEVELS.items()):
                for j, level in enumerate(levels):
                    key = f"tra-{scenario}-{level:.1f}"
                    path = Path(folder) / f"{key}.mp4"
                    media.encode_browser_mp4(_frames(500 + 10 * s + j), path, fps=FPS)
                    specs.append(ClipSpec(key, path, ["Fall"], split="tra-sweep",
                                          params={"scenario": scenario, parameter: level}))
            with site.app.app_context():
                catalog.import_clips(specs, SET, Path(site.app.config["STIMULUS_ROOT"]),
                                     frame_set_sizes=())
        design = DESIGNS["tra-adaptive"].with_changes(
            adaptive_trials=4, main_blocks=1, fixation_ms=300,
            practice=PracticeSpec(n_trials=0))
        open_site_study(site.app, "tiny-adaptive", design, stimulus_set=SET)
        site.slugs["adaptive"] = "tiny-adaptive"
        # a stopping rule any posterior within the sweep's levels meets (10 level steps
        # either side), which the robot's random answers never bring there
        open_site_study(site.app, "tiny-adaptive-stop", design.with_changes(
            adaptive_stop_halfwidth=10.0), stimulus_set=SET)
        site.slugs["adaptive-stop"] = "tiny-adaptive-stop"
    return site


def _levels_follow_the_stored_answers(site, token):
    data = stored(site.app, token)
    assert data["status"] in ("completed", "failed_attention")
    assert_every_trial_once(data)
    schedule = data["schedule"]
    slots = [t for t in schedule if KEY in t]
    assert len(slots) == 8 and all(t[KEY].get("level") is not None for t in slots)
    # the levels follow from the seed's slots and the stored answers
    assert replayed_levels(schedule, data["trials"]) == schedule
    # each slot's video was first asked for after the answer before it had arrived
    with site.app.app_context(), db.engine.connect() as connection:
        session = store.session_by_token(connection, token)
        served = store.media_served(connection, session.id)
        received = {t.trial_index: t.received_at for t in store.stored_trials(connection, session.id)}
    for sweep in LEVELS:
        own = [t["trial_index"] for t in slots if t[KEY]["sweep"] == sweep]
        for before, after in zip(own, own[1:]):
            assert served[after] >= received[before]


# The module's three simulated sessions: (study kind, participant). The reloaded one is
# entered last, so that its wait for trial 3 starts as it enters.
SESSIONS = {"whole": ("adaptive", "sim-adaptive-1"),
            "stop": ("adaptive-stop", "sim-adaptive-stop"),
            "reload": ("adaptive", "sim-adaptive-reload")}


@pytest.fixture(scope="module")
def finished(browser, adaptive_site):
    """The three sessions, run side by side (each is about 11 s alone and they share nothing
    but the site), the last reloaded once it has reached trial 3."""
    return run_side_by_side(browser, adaptive_site, SESSIONS, reload=("reload", 3))


def test_an_adaptive_session_runs_one_trial_at_a_time_to_the_end(adaptive_site, finished):
    token, errors = finished["whole"]
    _levels_follow_the_stored_answers(adaptive_site, token)
    assert not errors


def test_a_reload_mid_session_goes_on_with_the_stored_levels(adaptive_site, finished):
    token, errors = finished["reload"]  # reloaded at trial 3
    _levels_follow_the_stored_answers(adaptive_site, token)
    assert not errors


def test_a_robot_at_chance_never_stops_a_sweep_however_loose_the_target(adaptive_site, finished):
    # The robot answers main trials at random: its posterior piles at the sweep's edge, a
    # quarter step wide, which stopped sweeps after 6-28 trials before the stopping rule
    # refused an interval reaching past the levels. Every slot is run, and the session
    # completes. (The server's stopping and skipping: tests/webapp/test_adaptive_sessions.py.)
    token, errors = finished["stop"]
    data = stored(adaptive_site.app, token)
    assert data["status"] in ("completed", "failed_attention")
    assert not any(skipped(t) for t in data["schedule"])
    assert sorted(data["per_index"]) == sorted(t["trial_index"] for t in data["schedule"])
    assert not errors
