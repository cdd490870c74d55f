"""Whole participant sessions, written once and run in all three engines: Chromium
(Playwright), Firefox ESR (Gecko) and WebKitGTK (WebKit, the engine behind Safari).

For both shipped designs an attentive participant answers every screen by hand (real clicks
and key presses; catch videos with the key they name, read from the schedule), and the
session is reloaded mid-block and then loses the network for a while (Chromium and Firefox:
the browser's own offline switch; WebKit: the live site drops the connections, as WebDriver
classic has no offline switch).  It proves that in each engine the runner resumes at the
first unsaved trial, keeps running trials offline from the preloaded stimuli with their
answers waiting in the queue, sends them once the network is back, and completes, never
failing the attentive participant, with every scheduled trial stored exactly once and no
trial post refused except to the reloaded-away page (no trial run twice); that a real key
press is the response, its RT taken from the key event; that every video trial's onset was
timed by the method that engine must use; and that no script error happened.
"""
import pytest

from tests.browser.participant import assert_every_trial_once, stored
from tests.engines.conftest import EVERY_ENGINE
from tests.engines.participant import SWALLOWED, enter, run_by_hand, run_until

# Selenium 4.51's own WebKitGTK driver class still passes remote_server_addr.
pytestmark = [pytest.mark.engines,
              pytest.mark.filterwarnings("ignore:setting remote_server_addr:DeprecationWarning"),
              pytest.mark.parametrize("tab", EVERY_ENGINE, indirect=True)]

KINDS = ["aot", "frame_order"]
# Chromium times the onset with Element Timing (unrounded: the site is cross-origin
# isolated); neither Gecko nor WebKit has it, so there the onset is the animation frame after
# the reveal (static/js/onset.js).  The tiny clips fit in memory, so the canvas presenter
# shows them (static/js/present.js), which prefixes its methods with "canvas-".
ONSET_METHOD = {"chromium": "canvas-element-timing", "firefox": "canvas-raf-next",
                "webkit": "canvas-raf-next"}
# How often a trial whose key the engine keeps from the page in fullscreen (participant.py
# SWALLOWED) is presented.
MAX_PRESENTATIONS = 3  # the first and MAX_REOFFERS = 2 more (static/js/runner.js)
ELEMENT_TIMING = 'return import("/static/js/onset.js").then((m) => m.elementTimingSupported());'
PENDING = "return window.chronoscope.queue.pending().map((t) => t.trial_index);"
# Counts the trial posts that fail without an answer (the queue's sends while offline).
COUNT_FAILED_POSTS = """if (!window.__failedPosts) {
  window.__failedPosts = {n: 0};
  const send = window.fetch;
  window.fetch = (url, options) => send(url, options).catch((error) => {
    if (new URL(url, location.href).pathname.endsWith("/trials")) window.__failedPosts.n += 1;
    throw error;
  });
}"""
QUEUED_SINCE = """const q = window.chronoscope.queue.pending().map((t) => t.trial_index)
    .filter((i) => i >= {index});
return q.length ? q : null;"""


def assert_catch_trials_as_instructed(engine: str, data: dict) -> None:
    """Every catch trial answered with its key is correct; where the engine swallows that key
    in fullscreen, every presentation times out out of fullscreen and the trial is stored
    technical after the last re-offer (static/js/runner.js MAX_REOFFERS), never missed."""
    keys = {t["trial_index"]: t.get("instructed_key") for t in data["schedule"]}
    catches = [t for t in data["trials"] if t["trial_type"] == "catch"]
    assert catches, "the design put no catch trial in the session"
    for row in catches:
        key = keys[row["trial_index"]]
        if key in SWALLOWED.get(engine, ()):
            assert row["response"] is None and row["extra"]["technical"] is True, row
            assert len(row["extra"]["technical_events"]) == MAX_PRESENTATIONS, row
        else:
            assert row["response"] is not None and row["correct"] is True, row
            assert row["extra"]["technical"] is False, row
    if engine not in SWALLOWED:
        assert not any(t["extra"]["technical"] for t in data["trials"])


def on_trial(index: int):
    """Whether a state shows trial ``index`` or a later one."""
    return lambda state: state["trial"] is not None and int(state["trial"]) >= index


def resume_and_go_offline(tab, site, token) -> None:
    """Reloads once trial 3 has started, then takes the network away as the runner resumes,
    and answers until the resumed trial waits in the queue."""
    run_until(tab, on_trial(3), site=site, token=token)
    tab.reload()  # through the runner's leave prompt, confirmed as a participant would
    index = int(run_until(tab, on_trial(0), site=site, token=token)["trial"])
    # Queue first: a trial sent in between is then in the database.
    done = set(tab.evaluate(PENDING)) | stored(site.app, token)["per_index"].keys()
    assert index not in done and done >= set(range(index)), "not resumed at the first unsaved"
    tab.evaluate(COUNT_FAILED_POSTS)
    tab.set_offline(True)
    try:
        # The trial running when the network went down ends offline, and waits in the queue.
        queued_since = QUEUED_SINCE.format(index=index)
        run_until(tab, lambda _: tab.evaluate(queued_since), site=site, token=token)
        queued = set(tab.evaluate(queued_since))
        # The first send and a few retries fail in the meantime.
        tab.wait_for("return window.__failedPosts.n >= 3;")
        unsent = set(tab.evaluate(PENDING))
        assert queued <= unsent
        assert not unsent & stored(site.app, token)["per_index"].keys()
    finally:
        tab.set_offline(False)


@pytest.mark.parametrize("kind", KINDS)
def test_session_survives_a_reload_and_an_outage(tab, site, kind):
    token = enter(tab, site, kind, f"{tab.name}-{kind}")
    # Every trial with its correct key, f too: in WebKitGTK the swallowed key's re-offers
    # then meet the reload and the outage on whichever trials the seed gives f.
    resume_and_go_offline(tab, site, token)
    run_by_hand(tab, site=site, token=token, limit_s=300)
    assert tab.evaluate(PENDING) == []
    # Every trial post of the session, as the server answered it: stored, or refused to the
    # reloaded-away page (409 other_tab: its last answer, sent as it went, may arrive after
    # the new page claimed the session; the new page sends it again from its queue). A 409
    # trial_index_taken would be a trial run twice; a 5xx, a crash.
    answers = [(status, error) for path, status, error in site.faults.trial_posts
               if f"/{token}/" in path]
    assert any(status < 300 for status, _ in answers), answers
    assert all(status < 300 or error == "other_tab" for status, error in answers), answers

    data = stored(site.app, token)
    print(f"\n{tab.name} {kind}: {len(data['trials'])} of {len(data['schedule'])} scheduled "
          f"trials stored, status {data['status']}, "
          f"{sum(t['extra']['technical'] for t in data['trials'])} technical")
    assert data["status"] == "completed", "the attentive participant did not complete"
    assert_every_trial_once(data)
    assert_catch_trials_as_instructed(tab.name, data)
    assert tab.evaluate(ELEMENT_TIMING) == (tab.name == "chromium"), "Element Timing changed"
    videos = [t for t in data["trials"] if t["trial_type"] != "frame_order"]
    assert videos and {t["onset_method"] for t in videos} == {ONSET_METHOD[tab.name]}
    # All three engines (WebKitGTK 2.50 too) have OffscreenCanvas and worker animation frames:
    # the worker draws the clips (static/js/present.js), but each trial starts its own worker,
    # whose script cannot be fetched offline: a clip shown during the outage falls back to the
    # main-thread canvas. Before the reload at trial 3 the network is up: an arrow-of-time
    # session's clips there are the worker's (a frame-ordering session's first clip, its
    # attention check, may come only after the outage has begun).
    presenters = [(t["trial_index"], t["extra"]["presenter"]) for t in videos]
    before = [p for i, p in presenters if i < 3]
    assert (before or kind != "aot") and set(before) <= {"worker"}, presenters
    assert {p for _, p in presenters} <= {"worker", "canvas"}, presenters
    # Answered clips (the attention checks among them: a frame-ordering session has no other);
    # a key the engine swallows in fullscreen leaves its trial technical (WebKitGTK takes f),
    # so a frame-ordering session whose one attention check asks for f may have none.
    answered = [t for t in videos if not t["extra"]["technical"]]
    assert answered or kind != "aot"
    for trial in answered:
        assert trial["response"] is not None, "a real key press was not taken as the response"
        # RT is the key event's own timeStamp minus the onset from the onset module, unrounded.
        extra = trial["extra"]
        assert trial["rt_ms"] == pytest.approx(extra["key_time_ms"] - extra["onset_time_ms"],
                                               abs=1e-6)
        assert trial["rt_ms"] > 0
    practice = [t for t in data["trials"] if t["block"] == "practice"]
    assert practice and (kind != "aot" or all(t["correct"] for t in practice if t in answered))
    # A frame-ordering trial's clock starts when its frames are shown, with no method.
    assert all(t["onset_method"] is None for t in data["trials"] if t not in videos)
    assert tab.errors() == []
