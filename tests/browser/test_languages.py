"""Languages in the browser (issue 28): a whole session in Hebrew, right to left, with no
stray English; emphasis kept in the direction words; the note of a study's sessions before
the consent question; a frame-ordering session's attention check says what it asks."""
import pytest

from experiments import texts
from tests.browser.participant import WAITING, answer, enter, screen_state, stored, wait_change
from tests.factories import open_site_study, tiny_designs

pytestmark = pytest.mark.browser
# A few texts in real Hebrew (the ones these tests read); the rest of the test's translation
# is Hebrew-script filler with the English text's placeholders, so that any English on a
# screen is a text the runner did not take from the study's language.
HEBREW = {
    "consent": "{task}\n\nהמחקר נמשך כ-{duration_minutes} דקות.\n\nהאם אתם מסכימים להשתתף?\n",
    "consent_sessions": "במחקר זה {sessions} מפגשים בימים שונים, כל אחד כ-{duration_minutes} דקות.",
    "direction_forward_upper": "**קדימה**",
    "direction_backward_upper": "**אחורה**",
    "instructions_aot_key": "{key} = הסרטון מתנגן {direction}",
    # Hebrew's "two" plural form, which the tiny design's two main blocks ask for
    "main_intro_two": "עבודה טובה. המשימה העיקרית מתחילה עכשיו.\n\nיש שני בלוקים עם הפסקה קצרה ביניהם.\n",
}
QUESTION = "האם אתם מסכימים להשתתף?"


def hebrew_texts() -> dict[str, str]:
    english = texts.defaults("en")
    filler = {}
    for key in texts.language_keys("he"):
        fields = " ".join("{%s}" % name for name in sorted(texts.allowed_placeholders(key)))
        line = f"טקסט {key.count('_')} {fields}".strip()
        filler[key] = f"{line}\n\nעוד פסקה.\n" if "\n" in english.get(texts.plural_base(key), "") \
            else line
    return {**filler, **HEBREW}


# English sentences a Hebrew screen must not show (long enough not to match by chance).
ENGLISH = sorted({text.strip() for text in texts.defaults("en").values()
                  if len(text) > 16 and "{" not in text})


@pytest.fixture(scope="module")
def hebrew(site):
    if "aot_he" not in site.slugs:
        open_site_study(site.app, "tiny-aot-he", tiny_designs()["aot"], languages=("he",),
                        texts={"he": hebrew_texts()})
        site.slugs["aot_he"] = "tiny-aot-he"
    return "aot_he"


def test_a_hebrew_session_runs_right_to_left_with_no_english(page, site, hebrew):
    token = enter(page, site, hebrew, "he-1")
    seen, intros, state = set(), [], screen_state(page)
    while state["screen"] != "done":
        if state["screen"] == "block-intro":
            intros.append(page.inner_text("#stage"))
        if state["screen"] not in WAITING and state["screen"] not in seen:
            seen.add(state["screen"])
            assert page.evaluate("() => [document.documentElement.lang, "
                                 "document.documentElement.dir]") == ["he", "rtl"]
            shown = page.inner_text("#stage")
            assert not [e for e in ENGLISH if e in shown], (state, shown)
            if state["screen"] == "consent":
                paragraphs = page.locator("#stage p").all_inner_texts()
                note = next(i for i, p in enumerate(paragraphs) if "מפגשים" in p)
                # the sessions' note was printed after the question
                assert note < paragraphs.index(QUESTION), paragraphs
            if state["screen"] == "instructions":
                # the direction words' emphasis was stripped (plain text of the word)
                assert sorted(page.locator("#stage strong").all_inner_texts()) == \
                    ["אחורה", "קדימה"]
        if state["screen"] not in WAITING:
            answer(page, state, site=site, token=token)
        state = wait_change(page, state, timeout_s=30)
    assert {"consent", "instructions", "block-intro", "clip", "debrief"} <= seen
    assert [i for i in intros if "שני בלוקים" in i]  # CLDR's "two" for two blocks
    assert not [e for e in ENGLISH if e in page.inner_text("#stage")]
    assert stored(site.app, token)["status"] == "completed"
    assert page.js_errors == []


def test_a_frame_ordering_attention_check_shows_its_own_instruction(page, site):
    # It showed the arrow-of-time legend ("F = Forward"), meaningless in an ordering session.
    english = texts.defaults("en")
    token = enter(page, site, "frame_order", "order-catch-1")
    state = screen_state(page)
    while state["screen"] != "clip":
        assert state["screen"] != "done", "the session ended without its attention check"
        if state["screen"] not in WAITING:
            answer(page, state, site=site, token=token)
        state = wait_change(page, state, timeout_s=30)
    legend = page.inner_text(".key-legend")
    assert legend == english["instructions_attention"]
    assert english["key_label_forward"] not in page.inner_text("#stage")
