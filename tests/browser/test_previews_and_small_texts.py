"""A researcher's robot preview reaches the end, plural texts, and the bare study link
(static/js/simulate.js, static/js/screens.js, templates/participant/ask_id.html)."""
import pytest

from tests.browser.participant import stored, wait_done
from webapp.participant.entry import Admission, enter

pytestmark = pytest.mark.browser


def test_the_robot_preview_passes_the_attention_checks(page, site):
    # A preview as the dashboard makes it; the robot answers catch trials by the key the
    # preview (and only a preview) is told, so it reaches the debrief and the code.
    from webapp.extensions import db

    with site.app.app_context(), db.engine.connect() as connection:
        entry = enter(connection, site.slugs["aot"], {"participant": "preview-robot"},
                      Admission(preview=True))
    page.goto(f"{site.base_url}/run/{entry.token}")
    assert page.locator("#preview-banner").is_visible()
    assert wait_done(page) == "PREVIEW"  # never the study's code, which would pay anyone
    assert page.locator("#preview-banner").is_visible()
    data = stored(site.app, entry.token)
    assert any(t["trial_type"] == "catch" for t in data["schedule"])
    assert data["status"] == "completed"
    assert not page.js_errors


def test_a_countdown_of_one_second_is_singular(page, site):
    page.goto(f"{site.base_url}/static/css/runner.css")
    got = page.evaluate("""async () => {
        const m = await import('/static/js/screens.js');
        const say = (lang, texts) => { m.setTexts(texts, lang);
          return [1, 2, 0].map((seconds) => m.plain('redirect_countdown', { seconds })); };
        return [say('en', { redirect_countdown: 'in {seconds} seconds',
                             redirect_countdown_one: 'in {seconds} second' }),
                say('de', { redirect_countdown: 'in {seconds} Sekunden',
                             redirect_countdown_one: 'in {seconds} Sekunde' }),
                say('en', { redirect_countdown: 'in {seconds} s' })];
    }""")
    assert got == [["in 1 second", "in 2 seconds", "in 0 seconds"],
                   ["in 1 Sekunde", "in 2 Sekunden", "in 0 Sekunden"],
                   ["in 1 s", "in 2 s", "in 0 s"]]


def test_the_bare_link_form_opens_the_study(page, site):
    missing = []
    page.on("response", lambda r: missing.append(r.url) if r.status >= 400 else None)
    page.goto(f"{site.base_url}/p/{site.slugs['aot']}")  # the bare link: asks for the id
    page.fill("#participant", "typed-1")
    page.click("#ask-id-continue")
    page.wait_for_url("**/run/**")
    page.wait_for_selector("body[data-screen]")
    assert not missing and not page.js_errors
