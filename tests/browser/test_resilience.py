"""A tab closed while offline and opened again resumes: every trial stored once and no trial
run twice (a re-run would be answered 409 by the server).  A reload mid-block and a network
outage are whole-session scenarios written once for the three engines
(tests/engines/test_sessions.py), the long outage is F4 (tests/reliability/test_offline_browser.py)."""
from urllib.parse import urlsplit

import pytest

from tests.browser.participant import assert_every_trial_once, enter, stored, wait_done
from tests.factories import site_study, tiny_designs

pytestmark = pytest.mark.browser

KINDS = ["aot", "frame_order"]


@pytest.fixture(scope="module")
def site(site):
    """The live site with an arrow-of-time study one main block long beside its own (after
    the practice, two clips and a catch video: trials 0-4): the tab closes by trial 4, inside
    that block, and the checks read every trial stored once whatever the session's length;
    the site's second block added three trials and a break (about 3 s a session)."""
    site_study(site, "aot_one_block", tiny_designs()["aot"].with_changes(max_clips=2,
                                                                          main_blocks=1))
    return site


def slug_kind(kind: str) -> str:
    return "aot_one_block" if kind == "aot" else kind


def is_trial_post(request) -> bool:
    return request.method == "POST" and urlsplit(request.url).path.endswith("/trials")


class TrialPosts:
    """Status of every POST /trials answered, to prove that no trial was run twice."""

    def __init__(self, page):
        self.statuses = []
        page.on("response", self.seen)

    def seen(self, response):
        if is_trial_post(response.request):
            self.statuses.append(response.status)

    def check(self):
        assert self.statuses and set(self.statuses) <= {200, 201}, self.statuses


def wait_trial(page, index: int) -> None:
    page.wait_for_function(f"() => Number(document.body.dataset.trialIndex) >= {index}", polling=20)


@pytest.mark.parametrize("kind", KINDS)
def test_tab_closed_offline_and_reopened_resumes(browser, site, kind):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        posts = TrialPosts(page)
        token = enter(page, site, slug_kind(kind), f"reopen-{kind}", simulate=True)
        run_url = page.url
        wait_trial(page, 2)
        page.route(f"{site.base_url}/api/**", lambda route: route.abort("internetdisconnected"))
        wait_trial(page, 4)
        page.wait_for_function("() => window.chronoscope.queue.pending().length >= 1", polling=50)
        # With run_before_unload, close() does not wait: without this the old tab could still
        # run a trial after the new one has taken the session over (a real race, answered
        # 409 trial_index_taken, but not the one this test is about).
        with page.expect_event("close"):
            page.close(run_before_unload=True)

        reopened = context.new_page()
        reopened.add_init_script("window.CHRONOSCOPE_SIMULATE = true")
        posts_after = TrialPosts(reopened)
        reopened.goto(run_url)
        assert wait_done(reopened)
        data = stored(site.app, token)
        assert_every_trial_once(data)
        posts_after.check()
        assert set(posts.statuses) <= {200, 201}
    finally:
        context.close()
