"""Study files: validation with file, line and field; sanitised texts; shipped files; round trip."""
from pathlib import Path

import pytest

from experiments import study_file, texts
from experiments.designs import DESIGNS

SHIPPED = Path(study_file.__file__).parent / "studies"

CARELESS = '''\
[study]
title = "Pilot"
languages = ["en", "de"]

[blocks]
count = 4
trials_per_block = "ten"
clips_per_session = 40
catch_per_blok = 1

[timing]
fixation_ms = 500
response_timeout_ms = -200

[responses]
keys = ["f", "f"]

[texts.de]
consent = "Dauer: {duraton_minutes} Minuten"
'''


def problems(source, name="study.toml"):
    return [str(p) for p in study_file.check(source, name)[1]]


def test_a_careless_file_gets_every_error_with_line_and_field():
    assert problems(CARELESS) == [
        'study.toml:7: blocks.trials_per_block: expected a positive integer, got "ten"',
        "study.toml:9: blocks.catch_per_blok: unknown key (did you mean 'catch_per_block'?); "
        "expected one of catch_per_block, clips_per_session, count, repeats_per_direction, "
        "trials_per_block",
        "study.toml:13: timing.response_timeout_ms: expected a non-negative integer, got -200",
        'study.toml:16: responses.keys: expected two different keys such as ["f", "j"], '
        'got ["f", "f"]',
        f"study.toml:1: study.design: required: expected one of {', '.join(DESIGNS)}, "
        "got nothing",
        "study.toml:1: study.stimulus_set: required: expected the name of a stimulus set, "
        "got nothing",
        "study.toml:19: texts.de.consent: unknown placeholder {duraton_minutes}; "
        "expected ['duration_minutes']",
    ]


def test_colliding_settings_and_keys_written_twice_are_errors():
    source = ('[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'
              '[blocks]\ntrials_per_block = 5\nclips_per_session = 20\n')
    assert problems(source) == ["study.toml:5: blocks.trials_per_block: collides with "
                                "blocks.clips_per_session: give one of them"]
    twice = '[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\ndesign = "frame-ordering"\n'
    assert problems(twice) == ["study.toml:4: study.design: defined twice (first on line 2)"]


def test_a_language_with_missing_texts_is_a_warning_naming_its_table():
    source = ('[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\nlanguages = ["en", "fr"]\n'
              '\n[texts.fr]\nconsent = "Consentement ({duration_minutes} minutes)"\n')
    config, errors, warnings = study_file.check(source)
    assert errors == [] and config.resolved_texts("fr")["consent_yes"] == "I consent"
    missing = len(texts.text_keys()) - 1  # every key but the one given
    assert str(warnings[0]).startswith(f"study.toml:6: texts.fr: {missing} text(s) missing, "
                                       "shown in English: consent_title, ")


def test_a_text_from_a_file_beside_the_study(tmp_path):
    (tmp_path / "consent.de.md").write_text("# Einwilligung\n\nEtwa {duration_minutes} Minuten.")
    (tmp_path / "s.toml").write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'
                                     'languages = ["en", "de"]\n[texts.de]\n'
                                     'consent = {file = "consent.de.md"}\n'
                                     'debrief = {file = "missing.md"}\n')
    with pytest.raises(study_file.StudyFileError) as error:
        study_file.load(tmp_path / "s.toml")
    assert str(error.value).startswith("s.toml:7: texts.de.debrief: expected a readable Markdown "
                                       "file, got 'missing.md'")


@pytest.mark.parametrize("hostile", [
    "<script>alert(1)</script>Hi",
    '<img src=x onerror="alert(1)">Hi',
    "[click](javascript:alert(1)) Hi",
    '<a href="javascript:alert(1)" onclick="x()">Hi</a>',
    "<iframe src='https://evil.example'></iframe>Hi",
    '<p style="background:url(javascript:x)">Hi</p>',
])
def test_hostile_texts_are_sanitised(hostile):
    html = texts.render("consent", hostile)
    lowered = html.lower()
    assert "Hi" in html
    # A refused link stays as harmless text: what must never appear is a live one.
    for bad in ("<script", "onerror", "onclick", "href=\"javascript", "<iframe", "style="):
        assert bad not in lowered


def test_placeholder_values_are_escaped_and_markdown_renders():
    html = texts.render("consent", "**About {duration_minutes} minutes**",
                        {"duration_minutes": "<b>5</b>"})
    assert html == "<p><strong>About &lt;b&gt;5&lt;/b&gt; minutes</strong></p>"


@pytest.mark.parametrize("name", sorted(DESIGNS))
def test_shipped_study_files_give_exactly_todays_designs(name):
    config = study_file.load(SHIPPED / f"{name}.toml")
    assert config.design.to_dict() == DESIGNS[name].to_dict()
    assert config.languages == ("en", "de")


def test_shipped_languages_have_every_key_and_only_known_placeholders():
    english, german = texts.defaults("en"), texts.defaults("de")
    assert list(german) == list(english)
    for key, text in german.items():
        assert texts.placeholders(text) <= texts.allowed_placeholders(key), key
    # The consent's duration is computed, never typed ("about 15 minutes" before).
    assert "{duration_minutes}" in english["consent"] and "15" not in english["consent"]


def test_round_trip_gives_the_same_configuration():
    source = ('[study]\ntitle = "Lab pilot"\ndesign = "frame-ordering"\nstimulus_set = "s"\n'
              'languages = ["en", "de"]\n[blocks]\ncount = 2\ntrials_per_block = 6\n'
              '[timing]\ninter_trial_ms = 250\n[participants]\nplaces = 40\n'
              'browsers = ["chromium", "firefox"]\n[texts.de]\n'
              'consent = """\nHallo ''\'\'\n\nEtwa {duration_minutes} Minuten.\n"""\n')
    config = study_file.loads(source)
    assert config.design.max_clips == 12 and config.places == 40
    again = study_file.loads(study_file.to_toml(config))
    assert again == config and again.design.to_dict() == config.design.to_dict()


def test_session_minutes_come_from_the_schedule():
    design = DESIGNS["arrow-of-time"]
    trials = [{"trial_type": "aot", "block": "main-1"}] * 60
    # 60 clips x (0.5 s fixation + 3 s clip + 1 s answer) + 120 + 60 + 3 breaks x 30 s = 540 s
    assert study_file.estimate_session_minutes(design, trials, clip_s=3.0) == 9


MINIMAL = '[study]\ndesign = "{design}"\nstimulus_set = "s"\n'


def test_webkit_is_refused_by_default_and_an_opt_in_is_warned_with_the_measured_error():
    config, errors, warnings = study_file.check(MINIMAL.format(design="arrow-of-time"))
    assert errors == [] and warnings == [] and config.browsers == ("chromium", "firefox")
    assert study_file.DEFAULT_BROWSERS == ("chromium", "firefox")
    opted_in = MINIMAL.format(design="arrow-of-time") + \
        '[participants]\nbrowsers = ["chromium", "firefox", "webkit"]\n'
    config, errors, warnings = study_file.check(opted_in)
    assert errors == [] and "webkit" in config.browsers
    # bench/rt_engines.py, README "Three browser engines": WebKitGTK 2.50, 9.19 / 4.01 ms.
    assert [str(w) for w in warnings] == [
        "study.toml:5: participants.browsers: webkit (Safari) is allowed, but its measured onset "
        "error (mean 9.2 ms, SD 4.0 ms in WebKitGTK, bench/rt_engines.py) misses the goal "
        "(|mean| < 5 ms, SD < 3 ms); the default is ['chromium', 'firefox']"]


def test_repeats_per_direction_sets_a_sweep_design_and_round_trips():
    source = MINIMAL.format(design="tra-sweep") + "[blocks]\nrepeats_per_direction = 6\n"
    config = study_file.loads(source)
    assert config.design.repeats_per_direction == 6
    written = study_file.to_toml(config)
    assert "repeats_per_direction = 6" in written
    assert study_file.loads(written) == config
    # A design that shows each clip once never writes the key, so its file loads again.
    plain = study_file.loads(MINIMAL.format(design="arrow-of-time"))
    assert "repeats_per_direction" not in study_file.to_toml(plain)
    assert study_file.loads(study_file.to_toml(plain)) == plain


@pytest.mark.parametrize(("design", "value", "message"), [
    ("tra-sweep", "0", "expected a positive integer, got 0"),
    ("tra-sweep", '"twelve"', 'expected a positive integer, got "twelve"'),
    ("arrow-of-time", "3", "only for a sweep design (one with included_splits, such as "
                           "tra-sweep); arrow-of-time shows each clip once per session"),
])
def test_repeats_per_direction_is_a_positive_integer_of_a_sweep_design(design, value, message):
    source = MINIMAL.format(design=design) + f"[blocks]\nrepeats_per_direction = {value}\n"
    assert problems(source) == [f"study.toml:5: blocks.repeats_per_direction: {message}"]


def test_response_keys_the_catch_videos_do_not_instruct_are_refused_while_catch_trials_run():
    from experiments.catch import KEYS  # the keys the shipped catch videos instruct
    assert KEYS == ("f", "j")
    source = MINIMAL.format(design="arrow-of-time") + '[responses]\nkeys = ["d", "k"]\n'
    assert problems(source) == [
        "study.toml:5: responses.keys: the catch videos instruct f and j; with other keys set "
        "blocks.catch_per_block = 0 or use keys f and j"]
    assert problems(source + "[blocks]\ncatch_per_block = 0\n") == []
    assert problems(MINIMAL.format(design="arrow-of-time") + '[responses]\nkeys = ["j", "f"]\n') == []


def test_the_practice_exclusion_follows_the_practice_gate_unless_both_are_set():
    gate = MINIMAL.format(design="arrow-of-time") + "[practice]\npass_accuracy = 0.5\n"
    design = study_file.loads(gate).design
    assert design.practice.min_accuracy == design.exclusions.min_practice_accuracy == 0.5
    looser = gate + "[exclusions]\nmin_practice_accuracy = 0.25\n"
    assert study_file.loads(looser).design.exclusions.min_practice_accuracy == 0.25
    assert problems(gate + "[exclusions]\nmin_practice_accuracy = 0.75\n") == [
        "study.toml:7: exclusions.min_practice_accuracy: expected at most "
        "practice.pass_accuracy (0.5): a participant the practice gate lets through must not "
        "be excluded by it, got 0.75"]
    # Only the exclusion set: checked against the design's own gate (0.75 for arrow-of-time).
    assert len(problems(MINIMAL.format(design="arrow-of-time")
                        + "[exclusions]\nmin_practice_accuracy = 0.9\n")) == 1


def test_a_design_error_names_the_setting_and_its_line():
    source = '[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n\n[sessions]\ncount = 3\n'
    assert problems(source) == ["study.toml:6: sessions.count: an arrow-of-time design has one "
                                "session or two (one per direction)"]


def test_an_unterminated_string_is_reported_where_it_is():
    source = MINIMAL.format(design="arrow-of-time") + '\n[study2]\ntitle = "Pilot\n'
    assert problems(source) == ["study.toml:6: (file): not valid TOML: Illegal character '\\n' "
                                "(at line 6, column 15)"]
    open_end = MINIMAL.format(design="arrow-of-time") + '\n[texts.en]\nconsent = """Hi\n\nmore\n'
    assert problems(open_end) == ["study.toml:6: (file): not valid TOML: Unterminated string "
                                  "(at end of document)"]


@pytest.mark.parametrize(("extra", "message"), [
    ("[practice]\ntrials = 100000000\n",
     "5: practice.trials: expected a non-negative integer of at most 200, got 100000000"),
    ("[timing]\nfixation_ms = 1e17\n",
     "5: timing.fixation_ms: expected a non-negative integer of at most 600000 (10 minutes), "
     "got 1e+17"),
    ("[timing]\ninter_trial_ms = 600001\n",
     "5: timing.inter_trial_ms: expected a non-negative integer of at most 600000 "
     "(10 minutes), got 600001"),
    ("[blocks]\ntrials_per_block = 2001\n",
     "5: blocks.trials_per_block: expected a positive integer of at most 2000, got 2001"),
    ("[blocks]\ntrials_per_block = 2\ncatch_per_block = 20\n",
     "6: blocks.catch_per_block: expected fewer catch trials than trials per block (2), got 20"),
])
def test_values_past_sane_bounds_are_refused(extra, message):
    assert problems(MINIMAL.format(design="arrow-of-time") + extra) == [f"study.toml:{message}"]


def test_shipped_study_files_use_the_default_browsers():
    for path in sorted(SHIPPED.glob("*.toml")):
        config, errors, warnings = study_file.check(path.read_text("utf-8"), path.name, SHIPPED)
        assert errors == [] and warnings == [], path.name
        assert config.browsers == study_file.DEFAULT_BROWSERS, path.name
