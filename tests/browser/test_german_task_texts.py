"""A German frame-ordering session explains frame ordering only (its catch videos are
presented as clips, which must not bring in the arrow-of-time paragraphs), and an error
screen in a German session is German, with the API's error code instead of its English
message."""
import pytest

from experiments.texts import defaults
from tests.browser.participant import enter
from tests.browser.test_participant_screens import run_until
from tests.factories import open_site_study, tiny_designs

pytestmark = pytest.mark.browser


def open_german_frame_order(site) -> str:
    kind = "frame_order_de"
    if kind not in site.slugs:
        open_site_study(site.app, "tiny-frame-order-de", tiny_designs()["frame_order"],
                   languages=("de",), devices=("desktop", "tablet"))
        site.slugs[kind] = "tiny-frame-order-de"
    return kind


def test_german_frame_ordering_instructions_explain_frame_ordering_only(page, site):
    token = enter(page, site, open_german_frame_order(site), "fo-de-1")
    run_until(page, site, token, lambda s: s["screen"] == "instructions")
    shown = page.inner_text("#stage")
    de = defaults("de")
    assert de["instructions_attention"] in shown
    assert "In Ordnungsdurchgängen sehen Sie gemischte Standbilder" in shown
    # aot.toml's German instructions_aot and instructions_aot_key: the clip task's paragraphs.
    assert "Jeder Durchgang beginnt mit einem Kreuz" not in shown
    assert "vorwärts" not in shown.lower() and "rückwärts" not in shown.lower()


def test_a_german_error_screen_shows_a_code_not_the_english_message(page, site):
    token = enter(page, site, open_german_frame_order(site), "fo-de-2")
    run_until(page, site, token, lambda s: s["screen"] == "instructions")
    body = '{"error": "bad_thing", "message": "an English server message"}'
    # The session (and its texts) still loads; the next write is refused.
    page.route("**/api/**", lambda route: route.continue_() if route.request.method == "GET"
               else route.fulfill(status=400, content_type="application/json", body=body))
    page.reload()
    page.wait_for_function("() => document.body.dataset.screen === 'error'")
    shown = page.inner_text("#stage")
    assert "an English server message" not in shown
    assert "Fehlercode: bad_thing" in shown
    assert defaults("en")["error_title"] not in shown
