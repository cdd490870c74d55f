"""The recipe of ARCHITECTURE.md ("Adding a trial type"), proved on a toy type.

``still`` (one frame, answered F or B, no playback direction) is a module object built here
with the attributes the recipe names, put in the registries as its one line in
``TRIAL_TYPES`` and ``TASKS`` would, with a design built around it as ``DESIGNS`` would hold
it.  Nothing else is patched: the participant path (entry, schedule, trials), the stored row,
the export and ``manage.py analyze`` must all take the type from the registries.
"""
import io
import types
import uuid

import pandas as pd
import pytest

from experiments import designs, trial_types
from experiments.trial_types.video import (
    VIDEO_FIELDS,
    validate_video,
    video_params,
    video_public_view,
    video_row_parts,
)
from tests.factories import preload
from webapp.researcher import dashboard
from webapp.researcher.exports import build_export

NAME = "still"


def _still_module() -> types.ModuleType:
    """The toy type: every declared attribute and function of the recipe's step 1."""
    still = types.ModuleType(f"experiments.trial_types.{NAME}")

    def build_trial(design, clip):
        stimulus = clip.clip("forward")  # its first frame stands for the still
        return {"trial_type": NAME, "stimulus_id": stimulus.id, "public_id": stimulus.public_id,
                "source_clip_id": clip.id, "clip_key": clip.clip_key,
                "categories": list(clip.categories), "direction": None,
                "correct_response": "F" if clip.id % 2 else "B",
                "params": {**video_params(design), "server_only": clip.clip_key}}

    def trials(design, clips, *_):
        return [build_trial(design, clip) for clip in clips]

    still.__dict__.update(
        NAME=NAME, TITLE="still frame 2AFC", PARAMETERS=("fixation_ms",), FIELDS=VIDEO_FIELDS,
        ANSWERS=("F", "B"), DIRECTIONS=(), METRICS=("analysis.loading.included",),
        MODEL_TASK=None,
        validate=lambda payload, trial=None, key_mapping=None: validate_video(payload, NAME,
                                                                           key_mapping),
        build_trial=build_trial,
        public_view=lambda scheduled, media_url: video_public_view(scheduled, media_url, NAME),
        row_parts=video_row_parts,
        duration_s=lambda design, clip_s: design.fixation_ms / 1000 + 1.0,
        # A design's task also builds whole sessions:
        check_design=lambda design: None,
        read_conditions=lambda data: (),
        usable=lambda design, clip: clip.clip("forward") is not None,
        rotations=lambda design: 1,
        practice_trials=trials,
        feedback_answer=lambda scheduled: scheduled["correct_response"],
        main_trials=lambda design, plan: trials(design, plan.clips),
        block_factors=lambda scheduled: (tuple(scheduled["categories"][:1]), ""),
        design_trials=trials,
    )
    return still


@pytest.fixture
def still(monkeypatch):
    module = _still_module()
    monkeypatch.setitem(trial_types.TRIAL_TYPES, NAME, module)
    monkeypatch.setitem(trial_types.TASKS, NAME, module)
    design = designs.Design(name="still-frames", title="Still frames", task=NAME, sessions=1,
                            main_blocks=2, max_clips=6,
                            practice=designs.PracticeSpec(n_trials=0), catch_per_block=0)
    monkeypatch.setitem(designs.DESIGNS, design.name, design)
    return design


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
    assert "analysis.loading.included" in codebook  # its METRICS

    path = tmp_path / "trials.csv"
    path.write_bytes(files["trials.csv"])
    result = runner.invoke(args=["analyze", "--trials", str(path), "--out",
                                 str(tmp_path / "report"), "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    assert "Analysed 3 of 3 participants" in result.output
