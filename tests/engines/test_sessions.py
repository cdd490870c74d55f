"""Whole participant sessions in Firefox ESR (Gecko) and WebKitGTK (WebKit, the engine
behind Safari), not only in Chromium.

For both shipped designs, a simulated participant's session is reloaded mid-block and then
loses the network for a while (Firefox: the browser's own offline switch; WebKit: the live
site drops the connections, as WebDriver classic has no offline switch).  It proves that in
each engine the runner resumes at the first unsaved trial, keeps running trials offline from
the preloaded stimuli with their answers waiting in the queue, sends them once the network is
back, and completes with every scheduled trial stored exactly once; that every video trial
records how its onset was timed; and that no script error or console error happened.
"""
import time

import pytest

from tests.browser.participant import assert_every_trial_once, stored
from tests.engines.participant import enter, wait_done, wait_trial

# Selenium 4.51's own WebKitGTK driver class still passes remote_server_addr.
pytestmark = [pytest.mark.engines,
              pytest.mark.filterwarnings("ignore:setting remote_server_addr:DeprecationWarning")]

KINDS = ["aot", "frame_order"]
# The onset methods the runner itself declares, read from the page's own module.
ONSET_METHODS = 'return import("/static/js/onset.js").then((onset) => onset.ONSET_METHODS);'
PENDING = "return window.chronoscope.queue.pending().map((t) => t.trial_index);"
QUEUED_SINCE = """const q = window.chronoscope.queue.pending().map((t) => t.trial_index)
    .filter((i) => i >= {index});
return q.length ? q : null;"""


@pytest.mark.parametrize("kind", KINDS)
def test_session_survives_a_reload_and_an_outage(tab, site, kind):
    token = enter(tab, site, kind, f"{tab.name}-{kind}", simulate=True)
    wait_trial(tab, 3)
    tab.reload()
    index = wait_trial(tab, 0)  # the first trial after the reload has just started
    # Queue first: a trial sent in between is then in the database.
    done = set(tab.evaluate(PENDING)) | stored(site.app, token)["per_index"].keys()
    assert index not in done and done >= set(range(index)), "not resumed at the first unsaved"
    tab.set_offline(True)
    try:
        # The trial running when the network went down ends offline, and waits in the queue.
        queued = set(tab.wait_for(QUEUED_SINCE.format(index=index)))
        time.sleep(1.5)  # a few retries fail in the meantime
        unsent = set(tab.evaluate(PENDING))
        assert queued <= unsent
        assert not unsent & stored(site.app, token)["per_index"].keys()
    finally:
        tab.set_offline(False)
    assert wait_done(tab)
    assert tab.evaluate(PENDING) == []

    data = stored(site.app, token)
    assert data["status"] in ("completed", "failed_attention")
    assert_every_trial_once(data)
    # The server stores an onset method for video trials (arrow of time and catch videos);
    # a frame-ordering trial's clock starts when its frames are shown, with no method.
    videos = [t for t in data["trials"] if t["trial_type"] != "frame_order"]
    methods = {t["onset_method"] for t in videos}
    print(f"\n{tab.name} {kind}: {len(data['trials'])} of {len(data['schedule'])} scheduled "
          f"trials stored, status {data['status']}, onset methods {sorted(methods)}")
    assert videos and methods <= set(tab.evaluate(ONSET_METHODS))
    assert tab.errors() == []
