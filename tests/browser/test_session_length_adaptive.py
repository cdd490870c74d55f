"""A whole aot-length-adaptive session in Chromium through the real runner, on a length set
cut from the site's real tiny clips (manage.py stimuli lengths' function): each trial's video
is asked for once the answers before it are stored, it holds exactly the chosen number of
frames, and the lengths follow from the stored answers."""
from pathlib import Path

import pytest

from experiments import media
from experiments.adaptive_schedule import KEY
from experiments.designs import DESIGNS, PracticeSpec
from tests.browser.participant import assert_every_trial_once, run_side_by_side, stored
from tests.factories import STIMULUS_SET, open_site_study, replayed_levels
from webapp.extensions import db
from webapp.participant import store

pytestmark = pytest.mark.browser
SET = "tiny-length"
LEVELS = (2, 6, 18)


@pytest.fixture(scope="module")
def length_site(site):
    from webapp.stimuli.length_sets import import_length_set

    if "length" not in site.slugs:
        with site.app.app_context():
            import_length_set(STIMULUS_SET, SET, LEVELS, Path(site.app.config["STIMULUS_ROOT"]))
        design = DESIGNS["aot-length-adaptive"].with_changes(
            adaptive_trials=5, main_blocks=1, fixation_ms=300,
            practice=PracticeSpec(n_trials=0))
        open_site_study(site.app, "tiny-length", design, stimulus_set=SET)
        site.slugs["length"] = "tiny-length"
    return site


def _lengths_follow_the_stored_answers(site, token):
    data = stored(site.app, token)
    assert data["status"] in ("completed", "failed_attention")
    assert_every_trial_once(data)
    schedule = data["schedule"]
    slots = [t for t in schedule if KEY in t]
    assert len(slots) == 5 and all(t[KEY].get("level") in LEVELS for t in slots)
    assert replayed_levels(schedule, data["trials"]) == schedule
    with site.app.app_context(), db.engine.connect() as connection:
        session = store.session_by_token(connection, token)
        served = store.media_served(connection, session.id)
        received = {t.trial_index: t.received_at for t in store.stored_trials(connection, session.id)}
        files = {t["trial_index"]: store.stimulus_file(connection, t["stimulus_id"]) for t in slots}
    root = Path(site.app.config["STIMULUS_ROOT"])
    for t in slots:  # the file served holds the level's frames, no more
        assert media.probe(root / files[t["trial_index"]].path).frame_count == t[KEY]["level"]
    own = [t["trial_index"] for t in slots]
    for before, after in zip(own, own[1:]):
        assert served[after] >= received[before]


@pytest.fixture(scope="module")
def finished(browser, length_site):
    """The module's two simulated sessions, run side by side (each is about 11 s alone and
    they share nothing but the site), the second reloaded once it has reached trial 2."""
    return run_side_by_side(browser, length_site, {"whole": ("length", "sim-length-1"),
                                                   "reload": ("length", "sim-length-reload")},
                            reload=("reload", 2))


def test_a_length_adaptive_session_runs_to_the_end(length_site, finished):
    token, errors = finished["whole"]
    _lengths_follow_the_stored_answers(length_site, token)
    assert not errors


def test_a_reload_mid_session_goes_on_with_the_stored_lengths(length_site, finished):
    token, errors = finished["reload"]  # reloaded at trial 2
    _lengths_follow_the_stored_answers(length_site, token)
    assert not errors
