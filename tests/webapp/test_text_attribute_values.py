"""A placeholder value inside a raw-HTML attribute of a text (experiments/texts render)."""
from experiments.texts import render

HOSTILE = "javascript:alert(document.cookie)"


def test_a_hostile_value_never_lands_in_an_href():
    html = render("next_session", '<a href="{link}">open</a> or copy {link}', {"link": HOSTILE})
    assert 'href="javascript' not in html and "href=\"\"" in html
    # In text it is harmless, escaped text.
    assert "copy javascript:alert(document.cookie)" in html


def test_a_web_address_fills_an_href_escaped():
    html = render("next_session", '<a href="{link}">open</a>',
                  {"link": 'https://example.org/p/s?a=1&b="2'})
    assert 'href="https://example.org/p/s?a=1&amp;b=&quot;2"' in html
