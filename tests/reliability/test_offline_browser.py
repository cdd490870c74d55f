"""F4: headless Chromium goes offline mid-block (``context.set_offline``), keeps running
trials, and after reconnecting every queued trial arrives exactly once; a reload then resumes
at the first unsaved trial.

CI uses a short offline period (CHRONOSCOPE_OFFLINE_S, default 5 s) to stay fast; the 30-second
version is ``python bench/offline_browser.py`` (the same test with CHRONOSCOPE_OFFLINE_S=30).
The site and the browser come from tests/conftest.py.
"""
import os
from urllib.parse import urlsplit

import pytest

from tests.browser.participant import assert_every_trial_once, enter, stored, wait_done
from tests.conftest import VIEWPORT
from tests.waiting import hold, wait_until

pytestmark = pytest.mark.browser
OFFLINE_S = float(os.environ.get("CHRONOSCOPE_OFFLINE_S", "5"))


def test_offline_mid_block_then_reconnect_loses_nothing(browser, site):
    context = browser.new_context(viewport=VIEWPORT)
    statuses = []
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.on("response", lambda r: statuses.append(r.status) if r.request.method == "POST"
                and urlsplit(r.url).path.endswith("/trials") else None)
        token = enter(page, site, "aot", "offline-f4", simulate=True)
        # Predicates are functions: Playwright evals a bare expression in the page, and the
        # Content-Security-Policy refuses eval.
        page.wait_for_function("() => Number(document.body.dataset.trialIndex) >= 3", polling=20)
        context.set_offline(True)
        hold(OFFLINE_S * 1000, page)  # being offline this long is the stimulus
        queued = page.evaluate("() => window.chronoscope.queue.pending().map(t => t.trial_index)")
        stored_while_offline = set(stored(site.app, token)["per_index"])
        assert stored_while_offline.isdisjoint(queued)
        context.set_offline(False)
        page.wait_for_function("() => window.chronoscope.queue.pending().length === 0",
                               polling=100, timeout=60_000)
        data = stored(site.app, token)
        assert set(queued) <= set(data["per_index"])  # every queued trial arrived
        assert all(n == 1 for n in data["per_index"].values())
        assert wait_done(page)
        data = stored(site.app, token)
        assert_every_trial_once(data)
        assert statuses and set(statuses) <= {200, 201}, statuses
        print(f"F4: offline {OFFLINE_S:.0f} s, {len(queued)} trial(s) queued while offline, "
              f"{len(data['per_index'])} stored once each, POST statuses {sorted(set(statuses))}")
    finally:
        context.close()


def test_reload_after_reconnect_resumes_at_the_next_trial(browser, site):
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        token = enter(page, site, "aot", "offline-reload", simulate=True)
        api = f"/api/session/{token}"
        page.wait_for_function("() => Number(document.body.dataset.trialIndex) >= 2", polling=20)
        context.set_offline(True)
        page.wait_for_function("() => window.chronoscope.queue.pending().length >= 1", polling=50)
        context.set_offline(False)
        page.wait_for_function("() => window.chronoscope.queue.pending().length === 0", polling=50)
        # The next answer reaches the server, which stores it, but its acknowledgement is
        # held from the page, which reloads meanwhile: the new page re-sends it from its
        # stored queue (the server keeps one row per trial) and resumes after it. Every
        # trial POST from here on is noted; the resumed trial is the first fresh answer.
        held, posts = [], []

        def hold_acknowledgement(route):
            if held:
                return route.continue_()
            held.append((route, route.fetch()))

        page.route("**/trials*", hold_acknowledgement)
        page.on("request", lambda r: posts.append(r.post_data_json) if r.method == "POST"
                and urlsplit(r.url).path.endswith("/trials") else None)
        # (route handlers run while Playwright waits)
        wait_until(lambda: page.wait_for_timeout(20) or held, 60, "no answer was posted")
        page.unroute("**/trials*")
        with page.expect_response(lambda r: r.request.method == "GET" and urlsplit(r.url).path.endswith(api)) as state:
            page.reload()
        resumed_at = state.value.json()["next_trial_index"]
        stored_before = set(state.value.json()["stored_indices"])
        assert resumed_at == min(i for i in range(10_000) if i not in stored_before)
        assert wait_done(page)
        data = stored(site.app, token)
        assert_every_trial_once(data)
        kept = {t["trial_index"]: t["client_uuid"] for t in data["trials"]}
        fresh = [p["trial_index"] for p in posts
                 if not (p["trial_index"] in stored_before
                         and p["client_uuid"] == kept[p["trial_index"]])]
        assert fresh and fresh[0] == resumed_at, (resumed_at, posts)
    finally:
        context.close()
