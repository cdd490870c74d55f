"""A setting added to the declaration, and nothing else, is validated with its bounds, is a
field of the dashboard's form in its group, and is in the settings reference."""
import html
import re

import pytest

from experiments import study_file, study_settings
from experiments.study_settings import RESPONSES, STUDY, FormField, Setting
from webapp.researcher import studies, study_form

# A newcomer's new setting, one entry; it sets a field the design already has (its use in the
# design is the other half of a new setting, and not what is tested here).
ADDED = Setting("int", "a positive integer", "max_ordering_ms", 1, 90_000,
                bound=" of at most 90000", help="The time to order a trial's frames (ms).",
                form=FormField(RESPONSES, "Ordering time limit (ms)"))
MINIMAL = '[study]\ndesign = "frame-ordering"\nstimulus_set = "s"\n[timing]\n'
FORM = {"slug": "pilot", "design": "arrow-of-time", "stimulus_set": "synthetic"}
TOO_LONG = "timing.ordering_limit_ms: expected a positive integer of at most 90000, got 90001"


@pytest.fixture
def added(monkeypatch):
    monkeypatch.setitem(study_settings.SETTINGS["timing"], "ordering_limit_ms", ADDED)


def test_an_added_setting_is_validated_with_its_bounds_and_sets_the_design(added):
    problems = study_file.check(MINIMAL + "ordering_limit_ms = 90001\n")[1]
    assert [str(p) for p in problems] == [f"study.toml:5: {TOO_LONG}"]
    problems = study_file.check(MINIMAL + "ordering_limit_ms = 0\n")[1]
    assert [str(p) for p in problems] == [
        "study.toml:5: timing.ordering_limit_ms: expected a positive integer, got 0"]
    config = study_file.loads(MINIMAL + "ordering_limit_ms = 5000\n")
    assert config.design.max_ordering_ms == 5000
    assert "ordering_limit_ms = 5000" in study_file.to_toml(config)


def test_an_unknown_key_is_still_refused_without_it():
    problems = study_file.check(MINIMAL + "ordering_limit_ms = 5000\n")[1]
    assert "unknown key" in problems[0].message


def test_an_added_setting_is_in_the_reference(added):
    assert ("| `ordering_limit_ms` | The time to order a trial's frames (ms). | a positive "
            "integer of at most 90000 | 120000 | Responses and timing: Ordering time limit (ms) |"
            ) in study_settings.reference_markdown()


def test_an_added_setting_is_a_form_field_in_its_group(app, logged_in, factory, added):
    factory.stimulus_set()
    page = logged_in.get("/researcher/").get_data(as_text=True)
    group = page[page.index("<legend>Responses and timing</legend>"):]
    group = group[:group.index("</fieldset>")]
    assert "Ordering time limit (ms)" in group and 'name="ordering_limit_ms"' in group
    assert "The time to order a trial&#39;s frames (ms). A positive integer of at most 90000." \
        in group
    response = logged_in.post("/researcher/studies", data={**FORM, "ordering_limit_ms": "90001"})
    assert response.status_code == 400
    assert TOO_LONG in html.unescape(response.get_data(as_text=True))
    response = logged_in.post("/researcher/studies", data={**FORM, "ordering_limit_ms": "5000"})
    assert response.status_code == 303, response.get_data(as_text=True)
    with app.app_context():
        assert studies.study_config(studies.get_study("pilot")).design.max_ordering_ms == 5000


def test_the_form_shows_each_declared_form_setting_in_its_group(logged_in, factory):
    factory.stimulus_set()
    page = logged_in.get("/researcher/").get_data(as_text=True)
    fieldsets = re.findall(r"<legend>(.*?)</legend>(.*?)</fieldset>", page, re.S)
    shown = {legend: re.findall(r'name="(\w+)"', body) for legend, body in fieldsets}
    expected = {STUDY: ["slug"]}
    for name, field in study_form.form_fields().items():
        expected.setdefault(field.form.group, []).append(name)
    assert shown == {**expected, "Texts": ["study_file"]}
