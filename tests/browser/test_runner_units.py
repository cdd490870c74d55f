"""The runner's pure helpers, run in the real browser (ES modules imported on a plain page)."""
import json
import re

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture
def blank(page, site):
    page.goto(f"{site.base_url}/static/css/runner.css")  # any same-origin page
    return page


def run_module(page, path: str, body: str):
    return page.evaluate(f"async () => {{ const m = await import('{path}'); {body} }}")


def test_trials_to_run_skips_stored_and_queued_and_puts_practice_first(blank):
    session = {"stored_indices": [0, 1],
               "trials": [{"trial_index": i, "block": b} for i, b in
                          enumerate(["practice", "practice", "main-1", "main-1", "practice"])]}
    got = run_module(blank, "/static/js/runner.js",
                     f"return m.trialsToRun({json.dumps(session)}, new Set([2]))"
                     ".map((t) => t.trial_index);")
    assert got == [4, 3]


def test_initial_order_puts_hints_in_their_own_slot(blank):
    got = run_module(blank, "/static/js/trials/frame_order.js",
                     "return [m.initialOrder([3, 1, 0, 2], [0, 2]), m.initialOrder([1, 0], [])];")
    assert got == [[0, 3, 2, 1], [1, 0]]


def test_uuid4_fallback_and_backoff_bounds(blank):
    got = run_module(blank, "/static/js/api.js", """
        const saved = crypto.randomUUID;
        Object.defineProperty(crypto, 'randomUUID', {value: undefined, configurable: true});
        const fallback = Array.from({length: 50}, () => m.uuid4());
        Object.defineProperty(crypto, 'randomUUID', {value: saved, configurable: true});
        const waits = Array.from({length: 200}, (_, i) => m.backoffMs(i % 12));
        return {fallback, max: Math.max(...waits), min: Math.min(...waits),
                retry: [0, 408, 429, 500, 400, 404, 409].map(
                    (s) => m.isRetryable(new m.ApiError(s, {})))};""")
    pattern = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    assert all(pattern.match(u) for u in got["fallback"]) and len(set(got["fallback"])) == 50
    assert 0 <= got["min"] and got["max"] <= 20000
    assert got["retry"] == [True, True, True, True, False, False, False]


def test_key_name_is_the_physical_key_on_any_layout(blank):
    got = run_module(blank, "/static/js/trials/aot.js", """
        return [m.keyName({key: 'F', code: 'KeyF'}), m.keyName({key: 'а', code: 'KeyF'}),
                m.keyName({key: 'Dead', code: 'KeyJ'})];""")
    assert got == ["f", "f", "j"]


def test_a_practice_the_browser_could_not_measure_is_not_called_a_low_accuracy(blank):
    """Issue 28: practice re-run after an all-technical attempt says so, not "practise again"."""
    got = run_module(blank, "/static/js/flow.js", """
        const screens = await import('/static/js/screens.js');
        screens.setTexts({practice_again_title: 'AGAIN', practice_again: 'low accuracy',
            practice_technical_title: 'TECHNICAL', practice_technical: 'could not measure',
            practice_title: 'FIRST', practice_intro: 'intro', practice_button: 'go'}, 'en');
        document.body.append(Object.assign(document.createElement('div'), {id: 'stage'}));
        const shown = [];
        for (const rerun of ['technical', 'failed', null]) {
          m.blockIntro('practice', {practiceAttempts: rerun ? 1 : 0, practiceRerun: rerun});
          shown.push(document.getElementById('stage').innerText.replace(/\\s+/g, ' ').trim());
        }
        return shown;""")
    assert got == ["TECHNICAL could not measure go", "AGAIN low accuracy go", "FIRST intro go"]


def test_a_key_never_released_has_no_hold_once_the_wait_ends(blank):
    """keyRelease: null when no keyup comes within its wait (KEY_HOLD_MAX_MS in a trial, 50 ms
    here), else the hold from the press to the keyup of the same physical key."""
    got = run_module(blank, "/static/js/trials/aot.js", """
        const began = performance.now();
        const never = await m.keyRelease({key: 'f', code: 'KeyF', time: began}, 50);
        const waited = performance.now() - began;
        const released = m.keyRelease({key: 'f', code: 'KeyF', time: performance.now()}, 5000);
        dispatchEvent(new KeyboardEvent('keyup', {key: 'j', code: 'KeyJ'}));  // another key
        dispatchEvent(new KeyboardEvent('keyup', {key: 'f', code: 'KeyF'}));
        return {never, waited, held: await released};""")
    assert got["never"] is None and got["waited"] >= 45, got
    assert got["held"] is not None and 0 <= got["held"] < 1000, got


def test_a_release_after_the_bound_has_no_hold_even_if_its_timer_is_late(blank):
    """A keyup past KEY_HOLD_MAX_MS that comes before the late timer fires (a busy page) is
    null too: the server refuses a hold over the bound, and with it the trial."""
    got = run_module(blank, "/static/js/trials/aot.js", """
        const released = m.keyRelease({key: 'f', code: 'KeyF', time: performance.now() - 80}, 50);
        dispatchEvent(new KeyboardEvent('keyup', {key: 'f', code: 'KeyF'}));
        return await released;""")
    assert got is None

def test_a_key_released_before_the_answer_is_taken_keeps_its_hold(blank):
    """Issue 30, finding 7: a press and release while stage.start() still waits for the onset
    (up to 1 s for Element Timing) lost the release (null after a 5-s wait), and a second
    press of the key paired the first press with the second release. Each press listens for
    its own release from its keydown."""
    got = run_module(blank, "/static/js/trials/aot.js", """
        const key = (type) => new KeyboardEvent(type, {key: 'f', code: 'KeyF', cancelable: true});
        const collector = m.keyCollector(['f']);
        const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
        const down = key('keydown');
        dispatchEvent(down);
        await frame();  // a hold of about a refresh
        const up = key('keyup');
        dispatchEvent(up);
        const down2 = key('keydown');
        dispatchEvent(down2);
        collector.stop();
        const began = performance.now();  // the answer is taken now, after the release
        const first = await collector.presses[0].release;
        const waited = performance.now() - began;
        const up2 = key('keyup');
        dispatchEvent(up2);
        const second = await collector.presses[1].release;
        return {first, waited, second, gap: up.timeStamp - down.timeStamp,
                gap2: up2.timeStamp - down2.timeStamp};""")
    assert got["gap"] > 0 and got["waited"] < 1000, got
    assert got["first"] == pytest.approx(got["gap"]), got
    assert got["second"] == pytest.approx(got["gap2"]), got
