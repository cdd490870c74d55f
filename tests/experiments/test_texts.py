"""The shipped texts (experiments/texts): a trial type's own texts (its texts file) join them
while it is registered, and a text renders as paragraphs when it is written over several
lines, whatever its key."""
import types

import pytest

from experiments import texts
from experiments.trial_types import TRIAL_TYPES
from tests.toy_trial_type import still


def test_a_text_written_over_several_lines_renders_as_paragraphs_any_other_inline():
    english = texts.defaults(texts.DEFAULT_LANGUAGE)
    for language in texts.SHIPPED_LANGUAGES:
        for key, text in texts.defaults(language).items():
            html = texts.render(key, text)
            if "\n\n" in english[key].strip():
                assert html.count("<p>") >= 2, (language, key)
            assert html.startswith("<p>") == ("\n" in english[key]), (language, key)


def test_a_registered_types_texts_join_the_shipped_texts(monkeypatch):
    assert "instructions_still" not in texts.defaults("de")
    monkeypatch.setitem(TRIAL_TYPES, still.NAME, still)
    for language in texts.SHIPPED_LANGUAGES:
        assert texts.defaults(language)["instructions_still"] == \
            texts.type_texts(still)[language]["instructions_still"]
    # Its paragraphs render as paragraphs, with no list of such keys to add it to.
    html = texts.render("instructions_still", texts.defaults("de")["instructions_still"])
    assert html.count("<p>") == 2 and "Standbild" in html


def test_a_types_texts_may_not_repeat_a_shared_key(monkeypatch, tmp_path):
    (tmp_path / "clash.toml").write_text('[en]\nconsent_title = "Mine"\n')
    clash = types.ModuleType("clash")
    clash.__file__ = str(tmp_path / "clash.py")
    clash.NAME = "clash"
    monkeypatch.setitem(TRIAL_TYPES, "clash", clash)
    with pytest.raises(ValueError, match=r"'clash': its texts repeat the keys \['consent_title'\]"):
        texts.defaults("en")
