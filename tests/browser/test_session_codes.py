"""The end of a session of a multi-day study recruited outside Prolific: session 1 keeps the
study's purpose for the last session, the participant's own code comes with a copy button
that works without the clipboard API, and the return URL is the study file's, filled in."""
import pytest
from sqlalchemy import select

from experiments.texts import defaults
from tests.browser.participant import WAITING, answer, enter, screen_state, stored, wait_change
from tests.factories import open_site_study, tiny_designs
from webapp.extensions import db
from webapp.models import Session
from webapp.participant import sessions

pytestmark = pytest.mark.browser
RETURN = "http://localhost:9/back?worker={participant}&code={code}&day={session}"


def open_generic(site) -> str:
    kind = "aot_generic"
    if kind not in site.slugs:
        open_site_study(site.app, "tiny-aot-generic", tiny_designs()["aot"],
                        platform="generic", return_urls={"completed": RETURN})
        site.slugs[kind] = "tiny-aot-generic"
    return kind


def test_session_one_ends_with_its_own_text_code_copy_button_and_return_url(page, site):
    # Issue 28: the full debrief (the study's purpose) came after session 1; codes were one
    # per outcome for everyone; there was no copy button; ?participant= links had no return.
    kind = open_generic(site)
    token = enter(page, site, kind, "worker:7@pool")
    en = defaults("en")
    ends = []
    state = screen_state(page)
    while state["screen"] != "done":
        if state["screen"] == "debrief":
            ends.append(page.inner_text("#stage"))
        if state["screen"] not in WAITING:
            answer(page, state, site=site, token=token)
        state = wait_change(page, state, timeout_s=30)
    assert len(ends) == 1 and en["session_end_title"] in ends[0], ends
    assert "session 1 of 2" in ends[0] and en["debrief_title"] not in ends[0]
    assert stored(site.app, token)["status"] == "completed"
    with site.app.app_context():
        session_id = db.session.scalar(select(Session.id).where(Session.token == token))
        own = sessions.participant_code(site.slugs[kind], session_id, "completed")
        shared = sessions.completion_codes(site.slugs[kind])["completed"]
    assert page.inner_text("#completion-code") == own != shared and len(own) == 10
    assert page.get_attribute("#redirect", "href") == \
        f"http://localhost:9/back?worker=worker%3A7%40pool&code={own}&day=1"

    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("#copy-code")
    page.wait_for_function(
        "() => document.getElementById('copy-code').dataset.copied === 'clipboard'")
    assert page.evaluate("() => navigator.clipboard.readText()") == own
    assert page.inner_text("#copy-code-status") == en["copy_code_done"]
    # A lab server on plain http (no secure context) has no clipboard API: the code is
    # selected for the participant to copy.
    page.evaluate("() => Object.defineProperty(navigator, 'clipboard', {value: undefined})")
    page.click("#copy-code")
    page.wait_for_function(
        "() => document.getElementById('copy-code').dataset.copied === 'selected'")
    assert page.evaluate("() => getSelection().toString()") == own
    assert page.inner_text("#copy-code-status") == en["copy_code_selected"]
