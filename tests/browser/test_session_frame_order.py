"""Frame ordering in headless Chromium, what only Playwright can do: a simulated Prolific
session, a finger's drag (CDP touch events), and Done's guard as it looks.  Mouse drags and a
double-click on Done run in every engine (tests/engines/test_frame_order_input.py)."""
import pytest

from tests.browser.participant import (
    assert_every_trial_once,
    enter,
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
