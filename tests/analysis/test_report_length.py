"""The clip-length section: simulated adaptive people and a model with known length
thresholds, fitted by the TRA section's fitter and tabled side by side."""
import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis import loading
from analysis.report import build
from analysis.report import registry as R
from experiments import adaptive, length_sweep
from tests.analysis.test_report_tra import _p_correct, _row

LEVELS = (2, 3, 4, 6, 8, 12, 16, 24, 32)
SOURCES = ("fall-0", "put-0", "proceed-0")
PEOPLE_TRUE = {"threshold": 7.0, "width": 8.0, "direction": 1}  # frames
MODEL_TRUE = {"threshold": 14.0, "width": 12.0, "direction": 1}
TRIALS = 80


def _levels():
    return pd.DataFrame([{"source_clip_id": length_sweep.clip_key(s, n), "scenario": "length",
                          "parameter": "n_frames", "parameter_value": float(n)}
                         for s in SOURCES for n in LEVELS])


def _people(rng, n_people=6, trials=TRIALS):
    """Participants whose levels QUEST+ chose from their own answers, as the server does."""
    rows = []
    grid = adaptive.parameter_grid(LEVELS)
    for person in range(n_people):
        answers = []
        for slot in range(trials):
            level, posterior = adaptive.next_level(grid, answers)
            clip = length_sweep.clip_key(SOURCES[slot % len(SOURCES)], int(level))
            right = bool(rng.random() < _p_correct(level, PEOPLE_TRUE))
            rows.append(_row(f"h{person:02d}", C.HUMAN, clip,
                             C.FORWARD if slot % 2 else C.BACKWARD, right, slot, {
                                 "adaptive": {"sweep": "length", "slot": slot, "level": level,
                                              "posterior": posterior}}))
            answers.append((level, right))
    return rows


def _model():
    """Every cut both ways (design_trials), P(forward) from its known curve."""
    rows, index = [], 0
    for clip in _levels().itertuples():
        p = _p_correct(clip.parameter_value, MODEL_TRUE)
        for direction in C.DIRECTIONS:
            for order in ("FB", "BF"):
                extra = {C.EXTRA_P_FORWARD: p if direction == C.FORWARD else 1 - p,
                         C.EXTRA_LABEL_ORDER: order, C.EXTRA_SETTING: "zero-shot",
                         C.EXTRA_PARSE_STATUS: "ok"}
                rows.append(_row("model-a", C.MODEL, clip.source_clip_id, direction, p > 0.5,
                                 index, extra))
                index += 1
    return rows


@pytest.fixture(scope="module")
def built():
    trials = loading.normalize_trials(pd.DataFrame(_people(np.random.default_rng(5)) + _model()))
    return build.build_report(trials, n_boot=100, sweep_levels=_levels())


def test_people_s_and_the_model_s_length_thresholds_side_by_side(built):
    fits = built.tables[R.LENGTH_THRESHOLDS].set_index("subject_id", drop=False)
    pooled = fits[(fits["observer_kind"] == "people") & (fits["subject_id"] == "pooled")].iloc[0]
    model = fits[fits["observer_kind"] == "vlm"].iloc[0]
    assert abs(pooled["threshold_frames"] - PEOPLE_TRUE["threshold"]) <= 2, pooled
    assert abs(model["threshold_frames"] - MODEL_TRUE["threshold"]) <= 2, model
    assert model["observer"] == "model-a" and model["n_label_orders"] == 2
    # thresholds that mean different things are not side by side silently: the asymptotes
    # say where each curve levels off (a model's both estimated, people's guess at chance)
    assert pooled["guess"] == 0.5 and np.isnan(pooled["curve_max"])  # a median, no curve
    assert 0.4 <= model["guess"] <= 0.6 and model["curve_max"] > 0.9
    assert (fits.loc[fits["subject_id"].str.startswith("h", na=False), "guess"] == 0.5).all()
    participants = fits[(fits["observer_kind"] == "people") & (fits["subject_id"] != "pooled")]
    assert len(participants) == 6 and (participants["n"] == TRIALS).all()
    # no TRA section for cuts: they are not a physical sweep
    assert R.TRA_SWEEP_FITS not in built.tables


def test_each_participant_s_sequence_and_the_curves_are_drawn(built):
    sequence = built.tables[R.LENGTH_SEQUENCE]
    assert len(sequence) == 6 * TRIALS and set(sequence["scenario"]) == {"length"}
    assert set(sequence["level"]) <= set(map(float, LEVELS))
    curves = built.tables[R.LENGTH_CURVES]
    assert {"people", "vlm"} <= set(curves["observer_kind"])
    assert {"length_curves", "length_sequences"} <= set(built.figures)
    assert built.figures["length_curves"].layout.xaxis.title.text == \
        "Frames shown (clip's middle)"


def test_people_at_ceiling_get_a_status_not_a_lost_section():
    """Everyone right at every length (the first browser runs did this): the threshold table
    says why there is no threshold, and the model's curve is still drawn."""
    people = [dict(r, correct=1.0, response=r["correct_response"])
              for r in _people(np.random.default_rng(1), n_people=2, trials=20)]
    trials = loading.normalize_trials(pd.DataFrame(people + _model()))
    tables = build.build_report(trials, n_boot=20, sweep_levels=_levels()).tables
    fits = tables[R.LENGTH_THRESHOLDS]
    assert fits.loc[fits["observer_kind"] == "people", "status"].str.contains(
        "does not vary").all()
    assert set(tables[R.LENGTH_CURVES]["observer_kind"]) == {"vlm"}


def test_a_participant_at_chance_has_no_length_threshold_and_people_s_row_is_their_median():
    """An outside psychophysicist (length_report.py): one participant at chance among
    adaptive people gave a pooled threshold of 108 frames, direction -1, status "ok"."""
    from analysis import participant_thresholds as T
    from analysis.report import length

    people = _people(np.random.default_rng(5), n_people=6, trials=40)
    chance = [dict(r, subject_id="h99", session_id="h99-1", correct=float(r["trial_index"] // 2
                                                                             % 2 == 0))
              for r in people if r["subject_id"] == "h00"]
    for r in chance:  # the response that goes with the answer's correctness
        other = "B" if r["correct_response"] == "F" else "F"
        r["response"] = r["correct_response"] if r["correct"] else other
    trials = loading.normalize_trials(pd.DataFrame(people + chance))
    fits = length.length_tables(trials, _levels(), n_boot=0)[R.LENGTH_THRESHOLDS].set_index(
        "subject_id")
    assert fits.loc["h99", "status"] == T.NOT_ABOVE_CHANCE
    assert np.isnan(fits.loc["h99", "threshold_lo"])
    # more frames never hide the earlier ones: every participant's curve rises
    assert (fits.drop("pooled")["direction"] == 1).all()
    pooled = fits.loc["pooled"]
    assert pooled["status"] == T.MEDIAN and np.isnan(pooled["width_frames"])
    assert abs(pooled["threshold_frames"] - PEOPLE_TRUE["threshold"]) <= 2, pooled
