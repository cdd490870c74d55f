"""Placeholders the browser fills (static/js/screens.js text()) never become markup: an
owner's text and a value are joined as DOM nodes, so the server's sanitiser holds in the
browser too, whatever the CSP does."""
import pytest

from tests.factories import open_site_study, tiny_designs

pytestmark = pytest.mark.browser

# An owner's texts that turn the screen-out page into an attack if the browser builds HTML
# from them: the reason (sanitised text with quotes) lands inside the title attribute.
HOSTILE = 'A phone " onfocus="document.body.dataset.pwned=1" autofocus x="'
SCREEN_OUT = ('Why: <a href="https://example.org/" title="{reasons}">details</a>\n\n'
              '{reasons} **{code}**')
PHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 " \
        "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
# What a page may not hold after a text was filled in: handlers, autofocus, stray elements.
INJECTED = """(root) => [...root.querySelectorAll('*')].flatMap((e) => [...e.attributes]
    .filter((a) => a.name.startsWith('on') || a.name === 'autofocus' || a.name === 'x')
    .map((a) => `${e.tagName} ${a.name}`))"""


def test_a_hostile_reason_stays_text_on_the_screen_out_page(browser, site):
    slug = "hostile-texts"
    if slug not in site.slugs.values():
        open_site_study(site.app, slug, tiny_designs()["aot"], devices=("desktop",),
                   texts={"en": {"screen_out": SCREEN_OUT, "device_problem_desktop": HOSTILE}})
        site.slugs["hostile"] = slug
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True, user_agent=PHONE)
    page = context.new_page()
    try:
        page.goto(f"{site.base_url}/p/{slug}?participant=phone-hostile")
        page.click("#device-give-up")  # asked to switch to a computer: this one cannot
        page.wait_for_function("() => document.body.dataset.status === 'screened_out'")
        why = page.locator(".why")
        assert page.evaluate(INJECTED, why.element_handle()) == []
        assert page.evaluate("() => document.body.dataset.pwned") is None
        assert why.inner_text().count(HOSTILE) == 1  # shown as the participant's reason
        assert page.get_attribute(".why a", "title") == ""  # no value fills an attribute
        assert page.locator(".why strong").inner_text() != "{code}"
    finally:
        context.close()


def test_values_and_nested_texts_are_filled_as_text(page, site):
    page.goto(f"{site.base_url}/static/css/runner.css")
    got = page.evaluate("""async () => {
        const m = await import('/static/js/screens.js');
        m.setTexts({outer: '<p title="{why}"><a href="{link}">{why}</a> {n} {why}</p>',
                    inner: 'a " onfocus="x()" autofocus x="'});
        const box = document.createElement('div');
        box.append(m.text('outer', { n: '<img src=x onerror=alert(1)> {why}', link: 'javascript:alert(1)' },
                          { why: m.text('inner') }));
        const attributes = [...box.querySelectorAll('*')].flatMap((e) => [...e.attributes]
            .map((a) => `${e.tagName} ${a.name}=${a.value}`));
        return {attributes, text: box.textContent,
                elements: [...box.querySelectorAll('*')].map((e) => e.tagName)};
    }""")
    # Only the text's own elements and attributes, the href and title left empty (no value
    # but an http(s) URL fills an attribute); every value is there as characters.
    assert got["elements"] == ["P", "A"] and got["attributes"] == ["P title=", "A href="], got
    assert got["text"] == ('a " onfocus="x()" autofocus x=" <img src=x onerror=alert(1)> {why} '
                           'a " onfocus="x()" autofocus x="')
