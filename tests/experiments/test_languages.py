"""Languages done properly (issue 28): codes CLDR knows, plural forms by the language's CLDR
categories, and line breaks inside Chinese or Japanese paragraphs."""
import pytest

from experiments import languages, study_checks, study_file, texts
from experiments.designs import DESIGNS

MINIMAL = '[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'


def problems(source):
    _config, errors, warnings = study_file.check(source)
    return [str(p) for p in errors], [str(p) for p in warnings]


@pytest.mark.parametrize(("code", "meant"), [("jp", "ja"), ("cn", "zh"), ("kr", "ko"), ("eg", "ar"),
                                             ("iw", "he"), ("en_US", "en"), ("xq", None)])
def test_a_code_cldr_does_not_know_is_an_error_saying_which_was_meant(code, meant):
    errors, _ = problems(MINIMAL + f'languages = ["{code}"]\n')
    assert len(errors) == 1 and errors[0].startswith("study.toml:4: study.languages: ")
    assert code in errors[0]
    if meant:
        assert errors[0].endswith(f"(did you mean {meant!r}?)")


@pytest.mark.parametrize("code", ["ja", "pt-BR", "zh-Hant", "ar", "he", "fa"])
def test_bcp47_codes_cldr_knows_are_accepted(code):
    assert problems(MINIMAL + f'languages = ["{code}"]\n')[0] == []


def test_japanese_is_not_asked_for_a_plural_form_it_does_not_have():
    # Japanese has one plural category ("other"): KEY_one was demanded, a warning no lab
    # could ever fix.
    aot = DESIGNS["arrow-of-time"]  # MINIMAL's: the texts it shows, not frame ordering's
    full = "".join(f'{key} = "x"\n' for key in texts.language_keys("ja")
                   if study_checks.unused_text_reason(key, aot) is None)
    assert languages.plural_categories("ja") == {"other"}
    assert "redirect_countdown_one" not in texts.language_keys("ja")
    errors, warnings = problems(MINIMAL + 'languages = ["en", "ja"]\n[texts.ja]\n' + full)
    assert errors == [] and not [w for w in warnings if "texts.ja" in w]


def test_arabic_is_asked_for_each_of_its_plural_forms_and_may_give_them():
    assert {"redirect_countdown_zero", "redirect_countdown_two", "redirect_countdown_few",
            "redirect_countdown_many"} <= set(texts.language_keys("ar"))
    errors, warnings = problems(MINIMAL + 'languages = ["en", "ar"]\n[texts.ar]\n'
                                'redirect_countdown_few = "سيُعاد توجيهك خلال {seconds} ثوانٍ."\n')
    [missing] = [w for w in warnings if "texts.ar" in w]
    assert errors == [] and "redirect_countdown_few" not in missing
    assert "redirect_countdown_many" in texts.language_keys("ar")


def test_a_plural_form_may_use_only_its_counted_texts_placeholders():
    errors, _ = problems(MINIMAL + 'languages = ["en", "ar"]\n[texts.ar]\n'
                         'redirect_countdown_few = "{code}"\n')
    assert errors == ["study.toml:6: texts.ar.redirect_countdown_few: unknown placeholder "
                      "{code}; expected ['seconds']"]


@pytest.mark.parametrize(("language", "count", "form"), [
    ("en", 1, "main_intro_one"), ("en", 3, "main_intro"), ("de", 1, "main_intro_one"),
    ("ja", 1, "main_intro")])
def test_one_block_is_not_announced_as_blocks(language, count, form):
    # "There are 1 blocks": English had no singular form of the main task's introduction.
    shipped = texts.resolve({}, language)
    assert texts.plural_key(shipped, "main_intro", language, {"n": count}) == form
    if form == "main_intro_one":
        assert "blocks" not in shipped[form] and "Blöcke" not in shipped[form]


def test_a_count_the_server_fills_picks_the_languages_plural_form():
    own = {"ar": {"redirect_countdown": "خلال {seconds} ثانية", "redirect_countdown_two":
                  "خلال ثانيتين", "redirect_countdown_few": "خلال {seconds} ثوانٍ"}}
    assert texts.render_all(own, "ar", {"seconds": 2})["redirect_countdown"] == "خلال ثانيتين"
    assert texts.render_all(own, "ar", {"seconds": 5})["redirect_countdown"] == "خلال 5 ثوانٍ"
    assert texts.render_all(own, "ar", {"seconds": 11})["redirect_countdown"] == "خلال 11 ثانية"
    assert texts.render_all({}, "en", {"seconds": 1})["redirect_countdown"] == \
        "You will be taken back in 1 second."


def test_an_english_plural_form_never_stands_in_for_a_translated_text():
    # A Hebrew study giving only redirect_countdown read "in 1 second" in English for 1.
    own = {"he": {"redirect_countdown": "תועברו בעוד {seconds} שניות."}}
    resolved = texts.resolve(own, "he")
    assert "redirect_countdown_one" not in resolved
    assert texts.render_all(own, "he", {"seconds": 1})["redirect_countdown"] == \
        "תועברו בעוד 1 שניות."
    assert texts.resolve({}, "de")["redirect_countdown_one"] == \
        texts.defaults("de")["redirect_countdown_one"]


def test_a_line_break_between_japanese_characters_is_no_space():
    html = texts.render("consent", "データは保存され、\nお名前とは\n**別に**\n管理されます。")
    assert html == "<p>データは保存され、お名前とは<strong>別に</strong>管理されます。</p>"


@pytest.mark.parametrize(("source", "expected"), [
    ("中文\n文本", "中文文本"),                     # Chinese: joined
    ("kept\nhere", "kept\nhere"),                  # English: a space as ever
    ("日本語\nEnglish", "日本語\nEnglish"),        # one side not wide: kept
    ("한국어\n문장", "한국어\n문장"),               # Korean separates words with spaces
    ("ｶﾀｶﾅ\nｶﾀｶﾅ", "ｶﾀｶﾅｶﾀｶﾅ"),                    # halfwidth katakana: joined
])
def test_css_text_3_segment_break_rules(source, expected):
    assert texts.render("consent", source) == f"<p>{expected}</p>"


ANNOTATED = MINIMAL.replace("arrow-of-time", "frame-ordering") + 'languages = ["en", "ja"]\n'


def test_a_study_file_gives_its_own_clip_annotations_by_language():
    source = ANNOTATED + ('[annotations.ja]\n"fold-shirt" = "人がシャツをたたむ。"\n'
                          '"pour" = {brief = "水を注ぐ。"}\n')
    config = study_file.loads(source)
    assert config.annotations == {"ja": {
        "fold-shirt": {"brief": "人がシャツをたたむ。", "comprehensive": "人がシャツをたたむ。"},
        "pour": {"brief": "水を注ぐ。"}}}
    assert study_file.loads(study_file.to_toml(config)).annotations == config.annotations
    assert config.settings()["annotations"] == config.annotations


@pytest.mark.parametrize(("table", "message"), [
    ('[annotations.de]\n"a" = "x"\n', "annotations.de: expected a language of study.languages"),
    ('[annotations.ja]\n"a" = 3\n', "annotations.ja.a: expected a text of at most 2000"),
    ('[annotations.ja]\n"a" = {short = "x"}\n', "by level (brief, comprehensive)"),
])
def test_a_wrong_annotation_is_an_error_with_its_path(table, message):
    errors, _ = problems(ANNOTATED + table)
    assert len(errors) == 1 and message in errors[0]
