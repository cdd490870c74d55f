"""The settings' one declaration (experiments/study_settings.py): the shipped study files keep
to it, every setting is documented, and the reference lists them all."""
import tomllib
from dataclasses import fields
from pathlib import Path

import pytest

from experiments import study_file
from experiments.designs import DESIGNS
from experiments.exclusions import ExclusionRules
from experiments.platforms import URL_OUTCOMES, url_key
from experiments.study_settings import RULE_HELP, SETTINGS, reference_markdown

SHIPPED = sorted((Path(study_file.__file__).parent / "studies").glob("*.toml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda path: path.name)
def test_a_shipped_study_file_validates_and_names_only_declared_settings(path):
    _, errors, _ = study_file.check(path.read_text("utf-8"), path.name, path.parent)
    assert errors == []
    written = tomllib.loads(path.read_text("utf-8"))
    undeclared = [f"{section}.{key}" for section, values in written.items() if section != "texts"
                  for key in values if key not in SETTINGS.get(section, {})]
    assert undeclared == []


def test_every_setting_says_what_it_is():
    assert [f"{section}.{key}" for section, settings in SETTINGS.items()
            for key, setting in settings.items() if not setting.help.strip()] == []
    # An exclusion rule added to ExclusionRules becomes a setting: its help is declared too.
    assert set(RULE_HELP) == {rule.name for rule in fields(ExclusionRules)}


def test_the_reference_has_a_row_for_every_setting():
    reference = reference_markdown()
    for section, settings in SETTINGS.items():
        assert f"## [{section}]" in reference
        for key, setting in settings.items():
            assert f"| `{key}` | {setting.help} | {setting.expected}{setting.bound}" in reference


def test_the_reference_gives_each_designs_default_of_a_design_setting():
    reference = reference_markdown()
    sessions = reference[reference.index("## [sessions]"):reference.index("## [blocks]")]
    each = "; ".join(f"{name}: {design.sessions}" for name, design in DESIGNS.items())
    assert f"| {each} | Sessions and blocks: Sessions (on different days) |" in sessions
    assert "| none | Study: Places" in reference  # a study-level setting's declared default


def test_a_setting_that_sets_no_design_field_is_one_the_study_reads():
    # study_checks.build passes study-level keys to StudyConfig from [study] and
    # [participants] only, and reads [recruitment] as the platform and its return URLs; a
    # study-level key declared anywhere else would validate and then be dropped unread (or,
    # in [recruitment], be taken for a URL). [blocks] trials_per_block is the one other:
    # build turns it into max_clips.
    recruitment = {"platform", *(url_key(outcome) for outcome in URL_OUTCOMES)}
    unread = [f"{section}.{key}" for section, settings in SETTINGS.items()
              if section not in ("study", "participants")
              for key, setting in settings.items()
              if not setting.design_field and not (section == "recruitment" and key in recruitment)]
    assert unread == ["blocks.trials_per_block"]
