"""Whole frame-ordering sessions in headless Chromium: drag with the mouse, keyboard moves,
hint frames that stay put, and every trial stored exactly once."""
import pytest

from tests.browser.participant import (assert_every_trial_once, enter, order_with_keyboard,
                                       run_by_hand, stored, wait_done)

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
    source, target = frames.first, frames.last
    box_s, box_t = source.bounding_box(), target.bounding_box()
    page.mouse.move(box_s["x"] + box_s["width"] / 2, box_s["y"] + box_s["height"] / 2)
    page.mouse.down()
    for step in range(1, 11):  # Sortable needs intermediate moves to follow the pointer
        x = box_s["x"] + (box_t["x"] - box_s["x"]) * step / 10 + box_t["width"] / 2
        page.mouse.move(x, box_t["y"] + box_t["height"] / 2)
        page.wait_for_timeout(15)
    page.mouse.up()
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
        page.wait_for_timeout(15)
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
