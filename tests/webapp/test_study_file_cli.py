"""``manage.py study create --from / validate / export-config``."""
from pathlib import Path

from experiments import study_file
from experiments.designs import DESIGNS, STUDY_CONFIG_KEY
from webapp.participant import sessions
from webapp.researcher import studies

SHIPPED = Path(study_file.__file__).parent / "studies"


def test_validate_prints_a_summary_or_every_error(runner, tmp_path):
    result = runner.invoke(args=["study", "validate", str(SHIPPED / "arrow-of-time.toml")])
    assert result.exit_code == 0, result.output
    assert "arrow-of-time.toml: valid." in result.output
    bad = tmp_path / "study.toml"
    bad.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'
                   '[blocks]\ncount = "four"\n[timing]\nfixation = 500\n')
    result = runner.invoke(args=["study", "validate", str(bad)])
    assert result.exit_code != 0
    assert 'study.toml:5: blocks.count: expected a positive integer, got "four"' in result.output
    assert "study.toml:7: timing.fixation: unknown key (did you mean 'fixation_ms'?)" in result.output


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
        assert sessions.study_design(study).fixation_ms == 400
        stored = study.design_snapshot[STUDY_CONFIG_KEY]
        assert stored["texts"]["de"]["consent"] == "Etwa {duration_minutes} Minuten."
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


def test_keys_the_catch_videos_do_not_instruct_are_refused_not_a_traceback(runner, factory,
                                                                          tmp_path):
    factory.stimulus_set()
    source = tmp_path / "keys.toml"
    source.write_text('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
                      '[responses]\nkeys = ["d", "k"]\n')
    expected = ("keys.toml:5: responses.keys: the catch videos instruct f and j; with other "
                "keys set blocks.catch_per_block = 0 or use keys f and j")
    for args in (["study", "validate", str(source)],
                 ["study", "create", "keys", "--from", str(source)]):
        result = runner.invoke(args=args)
        assert result.exit_code != 0 and not isinstance(result.exception, KeyError), args
        assert expected in result.output, result.output
