"""Key release in headless Chromium: every answered clip trial stores how long its answering
key was held (key_duration_ms, as jsPsych 8.3's rt_key_duration), null when the window lost
focus before the key came up."""
import pytest

from tests.browser.participant import (
    WAITING,
    answer,
    answer_key,
    assert_every_trial_once,
    enter,
    screen_state,
    stored,
    wait_change,
)
from tests.waiting import hold

pytestmark = pytest.mark.browser

HOLD_MS = 150


def test_the_answering_keys_hold_is_stored_and_null_after_focus_loss(page, site):
    token = enter(page, site, "aot", "key-release-1")
    answered = []
    state = screen_state(page)
    while state["screen"] != "done":
        if state["screen"] == "clip" and state["onset"] is not None:
            index = int(state["trial"])
            key = answer_key(site.app, token, index)
            page.keyboard.down(key)
            if not answered:  # the first answer: the window loses focus while the key is down
                page.evaluate("() => window.dispatchEvent(new Event('blur'))")
            hold(HOLD_MS, page)  # how long the key is held is the stimulus
            page.keyboard.up(key)
            answered.append(index)
        elif state["screen"] not in WAITING:
            answer(page, state, site=site, token=token)
        state = wait_change(page, state)
    data = stored(site.app, token)
    assert_every_trial_once(data)
    durations = {t["trial_index"]: t["extra"]["key_duration_ms"] for t in data["trials"]}
    assert len(answered) == len(durations) >= 2
    assert durations[answered[0]] is None
    for index in answered[1:]:
        # Event times: the hold the test made, plus whatever the loaded machine added.
        assert HOLD_MS - 5 <= durations[index] < HOLD_MS + 2000, (index, durations)
    assert not page.js_errors
