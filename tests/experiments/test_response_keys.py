import doctest

from experiments import response_keys
from experiments.designs import DESIGNS
from experiments.response_keys import RESERVED_KEYS, reserved_key_warnings
from experiments.study_file import DEFAULT_BROWSERS


def test_safe_keys_give_no_warning():
    assert reserved_key_warnings(["j", "k"]) == []
    assert reserved_key_warnings([]) == []


def test_escape_f_and_f11_are_reserved_whatever_their_spelling():
    assert {r.key for r in RESERVED_KEYS} == {"escape", "f", "f11"}
    for keys in (["Escape", "j"], ["Esc", "j"], ["F", "j"], ["F11", "j"]):
        warnings = reserved_key_warnings(keys)
        assert len(warnings) == 1 and "never reaches the page" in warnings[0]
    assert len(reserved_key_warnings(["f", "F", "escape"])) == 2  # one warning per key


def test_every_warning_names_its_browser_and_source():
    for reserved in RESERVED_KEYS:
        warning = reserved_key_warnings([reserved.key])[0]
        assert reserved.where in warning and reserved.source in warning


def test_the_shipped_designs_default_f_key_is_warned_about_only_where_webkit_may_run():
    # Both shipped designs answer with f / j: f is lost in WebKitGTK fullscreen.
    for design in DESIGNS.values():
        warnings = reserved_key_warnings(design.response_keys)
        assert len(warnings) == 1 and "'f'" in warnings[0] and "WebKitGTK" in warnings[0]
        assert reserved_key_warnings(design.response_keys, ["chromium", "webkit"]) == warnings
        # The default study refuses WebKit: its f is safe in every engine it accepts.
        assert reserved_key_warnings(design.response_keys, DEFAULT_BROWSERS) == []


def test_each_reserved_key_warns_for_its_own_engines_only():
    assert len(reserved_key_warnings(["escape"], ["firefox"])) == 1  # every engine
    assert reserved_key_warnings(["f11"], ["webkit"]) == []
    assert len(reserved_key_warnings(["f11"], ["chromium"])) == 1


def test_docstring_examples():
    assert doctest.testmod(response_keys).failed == 0
