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
from tests.waiting import hold

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
        with page.expect_response(lambda r: r.request.method == "GET" and urlsplit(r.url).path.endswith(api)) as state, \
                page.expect_request(lambda r: r.method == "POST" and urlsplit(r.url).path.endswith("/trials")) as first:
            page.reload()
        resumed_at = state.value.json()["next_trial_index"]
        stored_before = set(state.value.json()["stored_indices"])
        assert resumed_at == min(i for i in range(10_000) if i not in stored_before)
        assert first.value.post_data_json["trial_index"] == resumed_at
        assert wait_done(page)
        assert_every_trial_once(stored(site.app, token))
    finally:
        context.close()
