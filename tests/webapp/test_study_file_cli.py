"""``manage.py study create --from / validate / export-config``."""
import re
from pathlib import Path

from experiments import study_file
from experiments.designs import DESIGNS, STUDY_CONFIG_KEY, Design
from webapp.researcher import studies

SHIPPED = Path(study_file.__file__).parent / "studies"


def test_validate_prints_a_summary_or_every_error(runner, tmp_path):
    result = runner.invoke(args=["study", "validate", str(SHIPPED / "arrow-of-time.toml")])
    assert result.exit_code == 0, result.output
    assert "arrow-of-time.toml: valid." in result.output
    # No stimuli here: validate says what it could not check (create will).
    assert "is not stored in this database; the file was checked, not whether the set can " \
        "run it" in " ".join(result.output.split())
    for shipped in sorted(SHIPPED.glob("*.toml")):  # tra-sweep-pybullet.toml among them
        result = runner.invoke(args=["study", "validate", str(shipped)])
        assert result.exit_code == 0 and f"{shipped.name}: valid." in result.output, result.output
    bad = tmp_path / "study.toml"
    bad.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'
                   '[blocks]\ncount = "four"\n[timing]\nfixation = 500\n')
    result = runner.invoke(args=["study", "validate", str(bad)])
    assert result.exit_code != 0
    assert 'study.toml:5: blocks.count: expected a positive integer, got "four"' in result.output
    assert "study.toml:7: timing.fixation: unknown key (did you mean 'fixation_ms'?)" in result.output



def test_validate_shows_a_files_hidden_characters_escaped_never_raw(runner, tmp_path):
    # A key of ESC ] 0 ; ... BEL retitled the terminal that printed its problem; a value's
    # U+202E reversed the rest of the line.
    bad = tmp_path / "study.toml"
    bad.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'
                   '[timing]\n"\\u001b]0;pwned\\u0007" = 1\n'
                   '[blocks]\ncount = "\\u202eruof"\n')
    result = runner.invoke(args=["study", "validate", str(bad)])
    assert result.exit_code != 0
    assert "timing.\\u001b]0;pwned\\u0007: unknown key" in result.output
    assert 'blocks.count: expected a positive integer, got "\\u202eruof"' in result.output
    assert not {"\x1b", "\x07", "\u202e"} & set(result.output)

def test_create_from_a_file_stores_the_configuration_and_exports_it_back(app, runner, factory,
                                                                          tmp_path):
    factory.stimulus_set()
    source = tmp_path / "pilot.toml"
    source.write_text('[study]\ntitle = "Pilot"\ndesign = "arrow-of-time"\n'
                      'stimulus_set = "synthetic"\nlanguages = ["en", "de"]\n'
                      '[timing]\nfixation_ms = 400\n[participants]\nplaces = 30\n'
                      '[texts.de]\nconsent = "Etwa {duration_minutes} Minuten."\n')
    result = runner.invoke(args=["study", "create", "pilot", "--from", str(source)])
    assert result.exit_code == 0, result.output
    with app.app_context():
        study = studies.require_study("pilot")
        assert (study.title, study.max_participants) == ("Pilot", 30)
        assert Design.from_snapshot(study).fixation_ms == 400
        stored = study.design_snapshot[STUDY_CONFIG_KEY]
        assert stored["own_texts"]["de"]["consent"] == "Etwa {duration_minutes} Minuten."
        assert stored["estimate"]["session_minutes"] >= 1
    exported = runner.invoke(args=["study", "export-config", "pilot"])
    assert exported.exit_code == 0, exported.output
    (tmp_path / "again.toml").write_text(exported.output)
    result = runner.invoke(args=["study", "create", "again", "--from", str(tmp_path / "again.toml")])
    assert result.exit_code == 0, result.output
    with app.app_context():
        first, second = (studies.study_config(studies.require_study(s)) for s in ("pilot", "again"))
        assert first == second == study_file.load(source)


def test_create_with_a_design_still_works_and_exports_its_defaults(app, runner, factory):
    factory.stimulus_set()
    result = runner.invoke(args=["study", "create", "plain", "--design", "frame-ordering",
                                 "--stimulus-set", "synthetic"])
    assert result.exit_code == 0, result.output
    exported = study_file.loads(runner.invoke(args=["study", "export-config", "plain"]).output)
    assert exported.design.to_dict() == DESIGNS["frame-ordering"].to_dict()
    assert runner.invoke(args=["study", "create", "x"]).exit_code != 0


def test_keys_the_stored_catch_set_lacks_are_refused_at_creation_not_a_traceback(app, runner,
                                                                                  factory, tmp_path):
    # Issue 15: any two keys may check attention, as the catch set has a video for every key
    # a study file accepts; a set stored before it did (F and J only) is found at creation.
    factory.stimulus_set()
    factory.catch_set()
    source = tmp_path / "keys.toml"
    source.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      '[responses]\nkeys = ["d", "k"]\n')
    for command in (["validate"], ["create", "keys", "--from"]):  # validate checks the set too
        result = runner.invoke(args=["study", *command, str(source)])
        assert result.exit_code == 1 and not isinstance(result.exception, KeyError)
        assert ("the catch set 'catch' has no video for response key 'd' or 'k' (it holds f, j): "
                "run `python manage.py stimuli generate`") in " ".join(result.output.split()), \
            result.output


def test_create_refuses_more_clips_than_the_set_has_at_the_files_line(app, runner, factory,
                                                                      tmp_path):
    # Issue 19 review: 500 trials per block validated, and participants silently got the
    # dozen clips the set has; the export still said 2000.
    factory.stimulus_set()
    source = tmp_path / "many.toml"
    source.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      '[blocks]\ncount = 4\ntrials_per_block = 500\n')
    # Issue 28: validate passed the file that create refused, and create's refusal came
    # under a usage header; both now say just this, at the file's line.
    for command in (["validate"], ["create", "many", "--from"]):
        result = runner.invoke(args=["study", *command, str(source)])
        output = " ".join(result.output.split())
        found = re.search(r"(?:^| )Error: many\.toml:6: blocks\.trials_per_block: expected at most "
                          r"the (\d+) clip\(s\) per session that stimulus set 'synthetic' has "
                          r"for design 'arrow-of-time', got 2000 \(blocks\.trials_per_block × "
                          r"blocks\.count\)$", output)
        assert result.exit_code == 1 and found and 0 < int(found.group(1)) < 2000, output
        assert "Usage:" not in output
    with app.app_context():
        assert studies.get_study("many") is None
    source.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      '[blocks]\nclips_per_session = 2000\n')
    result = runner.invoke(args=["study", "create", "many", "--from", str(source)])
    assert "many.toml:5: blocks.clips_per_session: expected at most the" in \
        " ".join(result.output.split()), result.output


def test_create_names_the_stimulus_set_line_when_the_design_cannot_run_on_it(app, runner,
                                                                            factory, tmp_path):
    factory.stimulus_set()
    factory.catch_set()
    source = tmp_path / "catch.toml"
    source.write_text('[study]\ntitle = "T"\ndesign = "arrow-of-time"\nstimulus_set = "catch"\n')
    refused = runner.invoke(args=["study", "validate", str(source)])
    assert refused.exit_code == 1 and "catch.toml:4: study.stimulus_set" in refused.output
    result = runner.invoke(args=["study", "create", "c", "--from", str(source)])
    assert result.exit_code != 0
    assert "catch.toml:4: study.stimulus_set: design 'arrow-of-time' cannot run on stimulus " \
        "set 'catch'" in " ".join(result.output.split()), result.output


def test_create_and_validate_warn_about_a_consent_without_the_labs_facts(app, runner, factory,
                                                                         tmp_path):
    factory.stimulus_set()
    result = runner.invoke(args=["study", "create", "plain", "--design", "arrow-of-time",
                                 "--stimulus-set", "synthetic"])
    assert result.exit_code == 0, result.output
    for fact in ("contact", "ethics", "data_retention"):
        assert f"Warning: study.{fact}: not given: the consent (en, de)" in result.output
    source = tmp_path / "lab.toml"
    source.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      'contact = "Dr. A, <a@example.org>"\nethics = "Board X, ref. 7"\n')
    for args in (["validate", str(source)], ["create", "lab", "--from", str(source)]):
        result = runner.invoke(args=["study", *args])
        assert result.exit_code == 0, result.output
        assert "Warning: lab.toml:1: study.data_retention: not given" in result.output
        assert "study.contact" not in result.output and "study.ethics" not in result.output
    shipped = runner.invoke(args=["study", "validate", str(SHIPPED / "arrow-of-time.toml")])
    assert "arrow-of-time.toml:11: study.contact: an example value" in shipped.output


def test_a_study_with_del_in_a_text_exports_a_file_validate_accepts(app, runner, factory,
                                                                    tmp_path, logged_in):
    # Issue 25: U+007F was written unescaped: export-config wrote a file validate refused,
    # and the study's edit page (which reads its study file back) gave a 500.
    factory.stimulus_set()
    source = tmp_path / "del.toml"
    source.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      'contact = "Room 7\\u007f"\n[texts.en]\nconsent = "Hi\\u007f"\n')
    created = runner.invoke(args=["study", "create", "del", "--from", str(source),
                                  "--owner", "ada"])
    assert created.exit_code == 0, created.output
    exported = runner.invoke(args=["study", "export-config", "del"])
    (tmp_path / "again.toml").write_text(exported.output)
    validated = runner.invoke(args=["study", "validate", str(tmp_path / "again.toml")])
    assert validated.exit_code == 0, validated.output
    assert logged_in.get("/researcher/studies/del/edit").status_code == 200


def test_validate_and_create_warn_about_texts_the_design_never_shows(app, runner, factory,
                                                                     tmp_path):
    """Frame-ordering texts in an arrow-of-time study, or a later session's text in a
    one-session design, are kept but warned about at their line (issue 28)."""
    factory.stimulus_set()
    source = tmp_path / "lab.toml"
    source.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      '[texts.en]\nconsent_title = "Agreement"\n'
                      'order_done_button = "Finished"\n'
                      'instructions_frame_order = """\nOrder them.\n"""\n')
    for args in (["validate", str(source)], ["create", "lab", "--from", str(source)]):
        result = runner.invoke(args=["study", *args])
        assert result.exit_code == 0, result.output
        assert ("Warning: lab.toml:6: texts.en.order_done_button: never shown to participants: "
                "a text of frame_order trials") in result.output
        assert "Warning: lab.toml:7: texts.en.instructions_frame_order: never shown" \
            in result.output
        assert "consent_title" not in result.output
    one_session = tmp_path / "one.toml"
    one_session.write_text('[study]\ndesign = "frame-ordering"\nstimulus_set = "synthetic"\n'
                           '[texts.en]\nsession_end_title = "Done for today"\n')
    result = runner.invoke(args=["study", "validate", str(one_session)])
    assert result.exit_code == 0, result.output
    assert ("Warning: one.toml:5: texts.en.session_end_title: never shown to participants: "
            "the design has one session") in result.output


def test_a_plural_form_the_language_lacks_is_warned_about_at_its_line(runner, factory,
                                                                       tmp_path):
    # Persian has only "one" and "other": Arabic's _two, pasted into a Persian study, was
    # accepted silently and never shown.
    factory.stimulus_set()
    source = tmp_path / "fa.toml"
    source.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      'languages = ["fa"]\n[texts.fa]\n'
                      'redirect_countdown_one = "{seconds} ثانیه"\n'
                      'redirect_countdown_two = "{seconds} ثانیه"\n')
    result = runner.invoke(args=["study", "validate", str(source)])
    assert result.exit_code == 0, result.output
    assert ("Warning: fa.toml:7: texts.fa.redirect_countdown_two: never shown to participants: "
            "fa has no 'two' plural form (CLDR gives it one, other)") in result.output
    assert "redirect_countdown_one" not in result.output
