"""Whole frame-ordering sessions in headless Chromium: drag with the mouse, keyboard moves,
hint frames that stay put, and every trial stored exactly once."""
import pytest

from experiments.texts import defaults
from tests.browser.participant import (
    assert_every_trial_once,
    enter,
    mouse_drag,
    order_with_keyboard,
    run_by_hand,
    stored,
    wait_done,
)
from tests.waiting import hold

pytestmark = pytest.mark.browser

SLOT_ORDER = "() => [...document.querySelectorAll('.frame')].map((f) => Number(f.dataset.position))"


def test_simulated_prolific_session_stores_every_trial_once(page, site):
    token = enter(page, site, "frame_order", "5f0c0ffee0000000000000a1", simulate=True,
                  prolific=True)
    code = wait_done(page)
    # The way back to Prolific appears only with the code, i.e. after POST /complete said 200.
    assert page.get_attribute("#redirect", "href") == \
        f"https://app.prolific.com/submissions/complete?cc={code}"
    data = stored(site.app, token)
    assert data["status"] in ("completed", "failed_attention")
    assert_every_trial_once(data)
    orders = [t for t in data["trials"] if t["trial_type"] == "frame_order"]
    assert orders and all(t["rt_ms"] > 0 for t in orders)
    assert not page.js_errors


def drag_first_onto_last(page, state, dragged):
    """A real mouse drag: the first movable frame onto the last movable one (a swap)."""
    frames = page.locator(".frame:not(.hint)")
    dragged.append(int(state["trial"]))
    before = page.evaluate(SLOT_ORDER)
    mouse_drag(page, frames.first.bounding_box(), frames.last.bounding_box())
    page.wait_for_function(f"(before) => ({SLOT_ORDER})().join() !== before.join()", arg=before)
    order_with_keyboard(page)


def test_mouse_drag_and_keyboard_moves_are_recorded(page, site):
    token = enter(page, site, "frame_order", "hand-order-1")
    dragged = []
    run_by_hand(page, on_trial=lambda page, state: drag_first_onto_last(page, state, dragged),
                site=site, token=token)
    data = stored(site.app, token)
    assert_every_trial_once(data)
    for trial in (t for t in data["trials"] if t["trial_type"] == "frame_order"):
        extra = trial["extra"]
        moves = extra["moves"]
        vias = {m["via"] for m in moves}
        assert trial["trial_index"] in dragged
        assert vias == {"mouse", "keyboard"}, moves
        # Replaying the recorded swaps on the initial order gives the final order.
        order = list(extra["initial_order"])
        for move in moves:
            order[move["from"]], order[move["to"]] = order[move["to"]], order[move["from"]]
        assert order == extra["final_order"]
    assert not page.js_errors


def touch_drag(page, state, cdp):
    """A finger drag (CDP touch events) of the first movable frame onto the last one."""
    frames = page.locator(".frame:not(.hint)")
    before = page.evaluate(SLOT_ORDER)
    box_s, box_t = frames.first.bounding_box(), frames.last.bounding_box()
    y = box_s["y"] + box_s["height"] / 2
    x0, x1 = box_s["x"] + box_s["width"] / 2, box_t["x"] + box_t["width"] / 2

    def touch(kind, x):
        points = [] if kind == "touchEnd" else [{"x": x, "y": y}]
        cdp.send("Input.dispatchTouchEvent", {"type": kind, "touchPoints": points})

    touch("touchStart", x0)
    for step in range(1, 11):
        touch("touchMove", x0 + (x1 - x0) * step / 10)
        hold(15, page)  # the pace of a finger is the stimulus, not a wait
    touch("touchEnd", x1)
    page.wait_for_function(f"(before) => ({SLOT_ORDER})().join() !== before.join()", arg=before)


def test_touch_drag_is_recorded_as_touch(browser, site):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, has_touch=True)
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        token = enter(page, site, "frame_order", "touch-order-1")
        run_by_hand(page, on_trial=lambda page, state: touch_drag(page, state, cdp),
                    site=site, token=token)
        data = stored(site.app, token)
        assert_every_trial_once(data)
        for trial in (t for t in data["trials"] if t["trial_type"] == "frame_order"):
            assert [m["via"] for m in trial["extra"]["moves"]] == ["touch"], trial["extra"]["moves"]
    finally:
        context.close()


def test_a_double_click_on_done_never_answers_the_next_trial(page, site):
    # The red team's bug: the second click of a double-click landed on the next trial's Done
    # and submitted it in its initial order (rt_ms 128-180, timed_out false).
    token = enter(page, site, "frame_order", "double-clicker")
    run_by_hand(page, until="frame_order", site=site, token=token)  # the practice trial
    seen = {}

    def on_trial(page, state):
        index = int(state["trial"])
        schedule = stored(site.app, token)["schedule"]
        followed_by_order = index + 1 < len(schedule) and \
            schedule[index + 1]["trial_type"] == "frame_order"
        if seen or schedule[index]["block"] == "practice" or not followed_by_order:
            return order_with_keyboard(page)
        seen["first"] = index
        order_with_keyboard(page)
        page.click("#order-done")
        # The next trial appears: click its Done at once, as the second click of a double-click.
        page.wait_for_function(f"() => Number(document.body.dataset.trialIndex) > {index} && "
                               "document.body.dataset.screen === 'frame_order'", polling=5)
        box = page.locator("#order-done").bounding_box()  # a raw click: no waiting for enabled
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        seen["next"] = int(page.evaluate("document.body.dataset.trialIndex"))
        # Not silently: the participant is told the click came too early (issue 28).
        page.wait_for_function("() => document.getElementById('order-done-early')"
                               ".textContent.length > 0", polling=5)
        seen["told"] = page.inner_text("#order-done-early")
        # The participant orders this trial's frames 600 ms later: the stray click must not
        # have answered it by then (an absence, which no state shows), and its RT exceeds it.
        hold(600, page)
        assert int(page.evaluate("document.body.dataset.trialIndex")) == seen["next"]
        order_with_keyboard(page)

    run_by_hand(page, on_trial=on_trial, site=site, token=token)
    assert seen, "no two frame-ordering trials in a row"
    data = stored(site.app, token)
    assert_every_trial_once(data)
    answered = next(t for t in data["trials"] if t["trial_index"] == seen["next"])
    assert answered["rt_ms"] > 600 and answered["extra"]["moves"]
    assert [i["kind"] for i in answered["extra"]["ignored_inputs"]] == ["click"]
    assert answered["extra"]["ignored_inputs"][0]["t_ms"] < 300
    assert seen["told"] == defaults("en")["order_done_too_early"]


def test_dones_guard_is_visible_until_it_ends(page, site):
    """Done is greyed out while it takes no click, and looks pressable once it does."""
    enter(page, site, "frame_order", "guard-watcher")
    run_by_hand(page, until="frame_order")
    look = """() => { const done = document.getElementById('order-done');
        return [done.getAttribute('aria-disabled'), Number(getComputedStyle(done).opacity)]; }"""
    page.wait_for_function(f"() => ({look})()[0] === null")
    assert page.evaluate(look) == [None, 1]
    page.evaluate("document.getElementById('order-done').setAttribute('aria-disabled', 'true')")
    assert page.evaluate(look)[1] < 0.5
