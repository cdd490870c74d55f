"""The Content-Security-Policy breaks nothing: participants run whole sessions (clips and frames
played from blob: URLs, frames dragged with the mouse), and a researcher signs in, lists the
studies, watches a study page draw its plotly figures and is asked before closing a study,
while Chromium reports no CSP violation and no script error."""
import pytest

from tests.browser.participant import enter, mouse_drag, run_by_hand, watching
from webapp import auth

pytestmark = pytest.mark.browser

USERNAME, PASSWORD = "csp-admin", "a long enough password"


@pytest.fixture
def watched(browser):
    with watching(browser) as page:
        yield page


def drag_first_frame_onto_last(page, state):
    """A real mouse drag through Sortable, which moves the ghost frame with inline styles."""
    frames = page.locator(".frame:not(.hint)")
    mouse_drag(page, frames.first.bounding_box(), frames.last.bounding_box())


def policy_of(page) -> str:
    """The Content-Security-Policy the current page was served with (so that a test cannot
    pass because the policy is missing)."""
    return page.evaluate("async () => (await fetch(location.href))"
                         ".headers.get('content-security-policy') || ''")


def test_participant_sessions_run_under_the_policy(watched, site, simulated_aot):
    token = enter(watched, site, "frame_order", "csp-order")
    assert "script-src 'self'" in policy_of(watched)
    run_by_hand(watched, on_trial=drag_first_frame_onto_last, site=site, token=token)
    # the simulated arrow-of-time session (tests/browser/conftest.py) ran under it too
    assert watched.problems + simulated_aot.problems == [], \
        "\n".join(watched.problems + simulated_aot.problems)


def test_researcher_pages_work_under_the_policy(watched, site, simulated_aot):
    slug = site.slugs["aot"]  # simulated_aot: counted trials, so the study page has figures
    with site.app.app_context():
        auth.create_researcher(USERNAME, PASSWORD, is_admin=True)

    watched.goto(f"{site.base_url}/researcher/")
    watched.fill("#username", USERNAME)
    watched.fill("#password", PASSWORD)
    watched.click("#login-form button[type=submit]")  # form-action 'self'
    watched.wait_for_url("**/researcher/")
    watched.click(f"a[href='/researcher/studies/{slug}']")
    watched.wait_for_selector("#figure-flow .main-svg")  # plotly drew, from our own origin
    assert "frame-ancestors 'none'" in policy_of(watched)
    # plotly's own stylesheet applies (it stacks a figure's layers), and its mode bar shows.
    assert watched.eval_on_selector("#figure-flow .main-svg",
                                    "(svg) => getComputedStyle(svg).position") == "absolute"
    watched.hover("#figure-flow")
    watched.wait_for_selector("#figure-flow .modebar-btn")

    asked = []
    watched.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    with watched.expect_event("dialog"):
        watched.click("#action-close")  # the confirmation is researcher.js's, not inline
    assert len(asked) == 1 and asked[0].startswith("Close this study")
    assert watched.text_content("#study-status") == "open"  # dismissed: nothing was closed
    assert watched.problems + simulated_aot.problems == [], \
        "\n".join(watched.problems + simulated_aot.problems)
