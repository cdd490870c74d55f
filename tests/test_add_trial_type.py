"""The recipe of ARCHITECTURE.md ("Adding a trial type: the recipe"), followed for a toy type.

tests/toy_trial_type/ holds the files a newcomer writes for ``still`` (one frame, answered F
or B, no playback direction): the module ``still.py`` with its texts ``still.toml``, the
browser module ``still.js`` and the shipped study file ``still-frames.toml``.  The fixtures
make the recipe's edits of existing files, on the running registries and on copies of the
shipped folders: one line each in ``TRIAL_TYPES`` and ``TASKS``, the design in ``DESIGNS``,
the study file in experiments/studies/, the browser module and its line in
static/js/trials/index.js.  Nothing else is patched: the type goes from entry to analysis,
and through a trial in Chromium; and with any one step left out, the recipe's checks
(tests/trial_type_recipe.py, which the registry tests run on every type) name it.
"""
import importlib.util
import io
import re
import shutil
import threading
import uuid
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd
import pytest
from werkzeug.serving import make_server

from experiments import designs, study_file, texts, trial_types
from experiments.trial_types.contract import TaskType, members
from tests.factories import make_app, preload
from tests.trial_type_recipe import design_problems, module_problems, text_problems
from webapp.researcher import dashboard, lifecycle, studies
from webapp.researcher.exports import build_export

TOY = Path(__file__).parent / "toy_trial_type"
NAME = "still"
# The design around it, as its entry in DESIGNS would be.
DESIGN = dict(name="still-frames", title="Still frames", task=NAME, sessions=1, main_blocks=2,
              max_clips=6, practice=designs.PracticeSpec(n_trials=0), catch_per_block=0)
# The Python steps of the recipe, each of which a test below leaves out, and what the
# recipe's checks then say.
STEPS = {"TRIAL_TYPES": "'still' is not in TRIAL_TYPES",
         "TASKS": "design 'still-frames': task must be one of",
         "DESIGNS": "'still': no design in DESIGNS is built around it",
         "texts": "'still': no de text 'consent_task_still'",
         "study file": "'still-frames' has no shipped study file still-frames.toml"}


def follow_recipe(monkeypatch, folder: Path, leave_out: str | None = None) -> list[str]:
    """The recipe's Python steps for the toy, but ``leave_out``; returns what the recipe's
    checks say is missing."""
    folder.mkdir()
    shutil.copy(TOY / "still.py", folder)
    if leave_out != "texts":
        shutil.copy(TOY / "still.toml", folder)  # its texts live beside its module
    spec = importlib.util.spec_from_file_location(NAME, folder / "still.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if leave_out != "TRIAL_TYPES":
        monkeypatch.setitem(trial_types.TRIAL_TYPES, NAME, module)
    if leave_out != "TASKS":
        monkeypatch.setitem(trial_types.TASKS, NAME, module)
    problems = []
    if leave_out != "DESIGNS":
        try:
            monkeypatch.setitem(designs.DESIGNS, DESIGN["name"], designs.Design(**DESIGN))
        except ValueError as error:  # a design's task must be in TASKS
            problems.append(str(error))
    shipped = folder / "studies"
    shutil.copytree(studies.SHIPPED_STUDIES, shipped)
    if leave_out != "study file":
        shutil.copy(TOY / "still-frames.toml", shipped)
    monkeypatch.setattr(studies, "SHIPPED_STUDIES", shipped)
    problems += module_problems(NAME)
    if NAME in trial_types.TRIAL_TYPES:
        problems += text_problems(NAME)
    return problems + design_problems(DESIGN["name"])


@pytest.fixture
def still(monkeypatch, tmp_path) -> designs.Design:
    """The toy, every step of the recipe followed: its design."""
    assert follow_recipe(monkeypatch, tmp_path / "toy") == []
    return designs.DESIGNS[DESIGN["name"]]


@pytest.mark.parametrize("step, said", STEPS.items())
def test_the_recipes_checks_name_a_step_left_out(monkeypatch, tmp_path, step, said):
    problems = follow_recipe(monkeypatch, tmp_path / "toy", leave_out=step)
    assert any(problem.startswith(said) for problem in problems), problems


@pytest.mark.parametrize("member", members(TaskType))
def test_the_recipes_checks_name_a_member_the_module_lacks(monkeypatch, tmp_path, member):
    follow_recipe(monkeypatch, tmp_path / "toy")
    monkeypatch.delattr(trial_types.TRIAL_TYPES[NAME], member)
    assert module_problems(NAME) == [f"{NAME!r} lacks {member}"]


def test_its_texts_are_shown_in_every_language_and_its_paragraphs_as_paragraphs(still):
    for language in texts.SHIPPED_LANGUAGES:
        shipped = texts.defaults(language)
        config = study_file.StudyConfig(design=still, stimulus_set="s", languages=(language,))
        own = study_file.study_texts(config.settings(), still.task, language)
        shown = texts.render_all(own, language)
        assert texts.render("consent_task_still", shipped["consent_task_still"]) in shown["consent"]
        assert shown["instructions_still"].count("<p>") == 2, language


def test_its_payload_needs_the_participant_api_description_regenerated(still):
    from webapp.openapi import SCHEMA_FILE, participant_schema, schema_text

    trials = participant_schema()["paths"]["/api/session/{token}/trials"]["post"]
    variants = trials["requestBody"]["content"]["application/json"]["schema"]["oneOf"]
    assert [NAME] in [variant["properties"]["trial_type"]["enum"] for variant in variants]
    # tests/reliability/test_media_and_openapi.py fails until python -m webapp.openapi runs.
    assert SCHEMA_FILE.read_text() != schema_text()


def _take_part(client, participant: str) -> None:
    """Enter, consent, answer every trial "F" (right about half the time), complete."""
    entered = client.get("/p/still", query_string={"participant": participant})
    assert entered.status_code == 303, entered.data
    api = "/api/session/" + entered.headers["Location"].rsplit("/", 1)[-1]
    assert client.post(f"{api}/consent", json={"consent": True}).status_code == 200
    state = client.get(api).json
    shown = state["trials"]
    key = next(k for k, label in state["key_mapping"].items() if label == "F")
    assert shown and {t["trial_type"] for t in shown} == {NAME}
    assert all(set(t["params"]) == {"fixation_ms"} for t in shown)  # server_only stays home
    preload(client, api)
    for n, trial in enumerate(shown):
        posted = client.post(f"{api}/trials", json={
            "client_uuid": str(uuid.uuid4()), "trial_index": trial["trial_index"],
            "trial_type": NAME, "rt_ms": 700.0 + 10 * n, "timed_out": False,
            "response": "F", "key": key, "onset_method": "raf-next",
            "onset_time_ms": 5000.0, "key_time_ms": 5700.0 + 10 * n})
        assert posted.status_code == 201, posted.json
    assert client.post(f"{api}/complete").json["status"] == "completed"


@pytest.mark.usefixtures("person_pace")  # a person's pace, as the plausibility rules ask
def test_a_registered_trial_type_goes_from_entry_to_analysis(app, client, runner, still,
                                                             tmp_path, factory):
    factory.stimulus_set("tiny", per_category=2)
    factory.open_study(design=still.name, slug="still")
    for n in range(3):
        _take_part(client, f"p-{n}")

    with app.app_context():
        panel = dashboard.study_panel("still")  # the study page
        files = build_export("still")
    assert all(row["accuracy"] is not None for row in panel["participants"])
    accuracy = panel["figures"]["category_accuracy"]
    assert accuracy and {trace["name"] for trace in accuracy["data"]} == {"still frame 2AFC"}
    trials = pd.read_csv(io.BytesIO(files["trials.csv"]))
    assert len(trials) == 18 and set(trials["trial_type"]) == {NAME}
    assert trials["direction"].isna().all()  # DIRECTIONS == (): no playback direction
    assert set(trials["correct_response"]) <= {"F", "B"}
    codebook = files["codebook.md"].decode()
    assert '"still"' in codebook and "still frame 2AFC" in codebook
    assert "report sections: exclusions" in codebook  # its METRICS

    path = tmp_path / "trials.csv"
    path.write_bytes(files["trials.csv"])
    result = runner.invoke(args=["analyze", "--trials", str(path), "--out",
                                 str(tmp_path / "report"), "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    assert "Analysed 3 of 3 participants" in result.output


def with_browser_module(static: Path, folder: Path) -> Path:
    """A copy of static/ with the toy's browser module and its line in trials/index.js."""
    shutil.copytree(static, folder)
    shutil.copy(TOY / "still.js", folder / "js" / "trials")
    index = folder / "js" / "trials" / "index.js"
    # The registry's list, whatever types it holds (a newcomer's own type among them).
    source, n = re.subn(r"Object\.fromEntries\(\[([^\]]*)\]",
                        r"Object.fromEntries([\1, still]", index.read_text())
    assert n == 1, "static/js/trials/index.js: no `TRIAL_TYPES = Object.fromEntries([...])` list"
    index.write_text('import still from "./still.js";\n' + source)
    return folder


@pytest.fixture
def still_site(still, tmp_path):
    """The app serving the toy's study, created from its shipped study file on the tiny
    stimulus set, with the toy's browser module in its static files."""
    from tests.factories import STIMULUS_SET, tiny_specs
    from tests.live_site import Site
    from webapp.stimuli import catalog

    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'still.db'}")
    app.static_folder = str(with_browser_module(Path(app.static_folder), tmp_path / "static"))
    with app.app_context():  # its clips only: its study has no catch trials, no frame sets
        catalog.import_clips(tiny_specs(tmp_path / "clips"), STIMULUS_SET,
                             Path(app.config["STIMULUS_ROOT"]), frame_set_sizes=())
    config = study_file.load(studies.SHIPPED_STUDIES / f"{still.name}.toml")
    with app.app_context():
        studies.create_study_from_config("still", replace(
            config, stimulus_set=STIMULUS_SET, browsers=study_file.BROWSERS))
        lifecycle.transition("still", "open")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield Site(app=app, base_url=f"http://127.0.0.1:{server.server_port}",
               slugs={NAME: "still"}, faults=None)
    server.shutdown()
    thread.join(timeout=5)


@pytest.mark.browser
def test_a_trial_of_the_new_type_runs_in_chromium(page, still_site):
    from tests.browser.participant import WAITING, answer, enter, screen_state, stored, wait_change

    token = enter(page, still_site, NAME, "still-1")
    state, seen = screen_state(page), {}
    while state["screen"] != "still":
        # Without its module in the browser's registry, the runner ends on its error screen.
        assert state["screen"] != "error", page.inner_text("#stage")
        if state["screen"] not in WAITING:
            seen[state["screen"]] = page.inner_html("#stage")
            answer(page, state)
        state = wait_change(page, state)
    english = texts.defaults("en")
    assert english["consent_task_still"] in seen["consent"]
    assert texts.render("instructions_still", english["instructions_still"]) in seen["instructions"]
    with page.expect_response(lambda r: urlsplit(r.url).path.endswith("/trials")
                              and r.request.method == "POST") as posted:
        page.keyboard.press("f")
    assert posted.value.status == 201, posted.value.text()
    first = stored(still_site.app, token)["trials"][0]
    assert first["trial_type"] == NAME and first["response"] in ("F", "B")
    assert first["onset_method"] is None and first["rt_ms"] >= 0
    assert not page.js_errors
