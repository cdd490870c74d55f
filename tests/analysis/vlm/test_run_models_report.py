"""People and a real ``run-models`` run in one study, then ``report``: the people's results
must not depend on whether a model ran, and the human-vs-model comparison must be there.

A new lab's first study (two people and one model run) once read "human / nan" everywhere:
people's missing task variant came back from pandas 3 as NaN beside the model's "full",
so the people's observer was renamed, their test switched to the models' sign test, and
human_model_gap.csv, category_gap.csv and difficulty_correlation.csv lost their rows.
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

from analysis.report.labels import LABELLED_COLUMNS
from tests.factories import moving_square

pytestmark = pytest.mark.slow  # a model run and two reports: about 20 s of CPU

CATEGORIES = ("Fall", "Proceed", "Diffusion", "Put")
PEOPLE = 5  # enough for every interval and fit over participants (MIN_PARTICIPANTS)
REPEATS = 3  # answers per person and stimulus
# People's tables: every row is the people's; mixed tables are compared on people's rows.
PEOPLE_TABLES = ("sdt_participant_summary", "sdt_by_participant", "rt_median",
                 "rt_answer_speed", "rt_lmm", "accuracy_model", "accuracy_glmm")
MIXED_TABLES = ("aot_overall", "aot_by_category", "aot_by_direction", "aot_by_subject",
                "binomial_tests")
FAMILY_COLUMNS = ("p_holm",)  # Holm's adjustment grows with the family, by design


@pytest.fixture
def study(app, tmp_path):
    """Four tiny clips of four categories, a study on them, and people's answers."""
    from experiments.media import encode_browser_mp4
    from experiments.stimuli import ClipSpec
    from webapp.researcher import studies
    from webapp.stimuli import catalog

    specs = []
    for i, category in enumerate(CATEGORIES):
        path = tmp_path / f"src{i}.mp4"
        encode_browser_mp4(moving_square(seed=i), path, fps=12)
        specs.append(ClipSpec(f"clip{i}", path, [category], annotation_brief="A square."))
    with app.app_context():
        catalog.import_clips(specs, "four", Path(app.config["STIMULUS_ROOT"]))
        studies.create_study("four-study", "arrow-of-time", "four")
        _store_people(app, "four-study")
    return "four-study"


def _store_people(app, slug):
    """Completed sessions of ``PEOPLE`` people on every clip stimulus, in the data model
    (as tests/analysis/test_analysis_cli.py stores people)."""
    from webapp.extensions import db
    from webapp.models import Session, SourceClip, Stimulus, Study, Subject, Trial

    rng = np.random.default_rng(4)
    study = db.session.scalar(select(Study).where(Study.slug == slug))
    stimuli = db.session.scalars(select(Stimulus).join(SourceClip).where(
        SourceClip.stimulus_set == study.stimulus_set, Stimulus.kind == "clip")).all()
    for s in range(PEOPLE):
        subject = Subject(study=study, kind="human", external_id=f"person{s}")
        session = Session(subject=subject, token=f"{slug}-{s}", seed=s, status="completed")
        db.session.add_all([subject, session])
        for i, stimulus in enumerate(stimuli * REPEATS):
            truth = "B" if stimulus.direction == "backward" else "F"
            answer = truth if rng.random() < 0.75 else "FB".replace(truth, "")
            db.session.add(Trial(session=session, client_uuid=f"{slug}-{s}-{i}",
                                 trial_index=i, trial_type="aot", block="main",
                                 stimulus=stimulus, direction=stimulus.direction,
                                 correct_response=truth, response=answer,
                                 correct=answer == truth, rt_ms=float(rng.uniform(400, 900))))
    db.session.commit()


def _cli(runner, *args):
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _tables(out: Path) -> dict:
    return {p.stem: pd.read_csv(p) for p in sorted((out / "tables").glob("*.csv"))}


def _people_rows(table: pd.DataFrame) -> pd.DataFrame:
    rows = table[table["observer"] == "human"] if "observer" in table else table
    return rows.drop(columns=[c for c in FAMILY_COLUMNS if c in rows]).reset_index(drop=True)


def test_a_model_run_leaves_the_peoples_results_as_they_were(app, runner, study, tiny_model,
                                                             tmp_path):
    alone, beside = tmp_path / "people", tmp_path / "with-model"
    _cli(runner, "report", study, "--out", str(alone), "--n-boot", "200")
    _cli(runner, "run-models", "--study", study, "--model", tiny_model("qwen2_5_vl"),
         "--no-progress", "--max-new-tokens", "4", "--fps", "4")
    _cli(runner, "report", study, "--out", str(beside), "--n-boot", "200")
    before, after = _tables(alone), _tables(beside)

    for name in ("human_model_gap", "category_gap", "difficulty_correlation"):
        assert name in after and not after[name].empty, name
    assert set(after["category_gap"]["category"]) == set(CATEGORIES)
    for name in PEOPLE_TABLES:
        pd.testing.assert_frame_equal(before[name], after[name], obj=name)
    for name in MIXED_TABLES:
        assert len(_people_rows(before[name])), name
        if name in ("aot_overall", "aot_by_category", "binomial_tests"):  # intervals too
            assert _people_rows(before[name]).filter(like="ci_low").notna().any().any(), name
        pd.testing.assert_frame_equal(_people_rows(before[name]), _people_rows(after[name]),
                                      obj=name)
    for name, table in after.items():  # no label of any observer is missing or "nan"
        for col in [c for c in (*LABELLED_COLUMNS, "label") if c in table]:
            labels = table[col]
            assert labels.notna().all(), (name, col)
            assert not labels.astype(str).str.contains(r"(?:^|/ )nan$").any(), (name, col)
