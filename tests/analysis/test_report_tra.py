"""The TRA-sweep report section on simulated observers whose parameters are known."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import columns as C
from analysis import csv_cells, loading, simulate
from analysis.report import build
from analysis.report import tra as report_tra
from analysis.sweep_fits import STEP_BETWEEN_LEVELS, WIDTH_ALPHA, WIDTH_UPPER_ONLY

RESTITUTIONS = np.round(np.linspace(0.1, 1.0, 10), 1)
DAMPINGS = np.array([0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0])
# Known parameters: people and the VLM lose the arrow as the ball gets elastic (falling with
# restitution) and gain it with the pendulum's damping; chance is 0.5.
TRUE = {"bouncing_ball": {"threshold": 0.6, "width": 0.5, "direction": -1},
        "pendulum": {"threshold": 1.5, "width": 2.0, "direction": 1}}
VLM_TRUE = {"bouncing_ball": {"threshold": 0.45, "width": 0.4, "direction": -1},
            "pendulum": {"threshold": 2.5, "width": 3.0, "direction": 1}}
TRA_PEAKS = {"bouncing_ball": (0.5, 0.0027), "pendulum": (2.0, 0.0068)}  # the paper's peaks


def _levels():
    rows = [("bouncing_ball", "restitution", e) for e in RESTITUTIONS] + \
           [("pendulum", "damping", d) for d in DAMPINGS]
    return pd.DataFrame([{"source_clip_id": f"tra-{s}-{v:.1f}", "scenario": s, "parameter": p,
                          "parameter_value": v} for s, p, v in rows])


def _p_correct(x, true):
    s = true["width"] / (stats.norm.ppf(1 - WIDTH_ALPHA) - stats.norm.ppf(WIDTH_ALPHA))
    return 0.5 + 0.5 * stats.norm.cdf(true["direction"] * (x - true["threshold"]) / s)


def _row(subject, kind, clip, direction, correct, index, extra=None):
    answer = "F" if direction == C.FORWARD else "B"
    response = answer if correct else ("B" if answer == "F" else "F")
    return {"subject_id": subject, "subject_kind": kind, "session_id": f"{subject}-1",
            "session_status": C.SESSION_COMPLETED, "experiment": "tra-sweep",
            "trial_index": index, "trial_type": C.AOT, "block": "main-1",
            "stimulus_id": f"{clip}/{direction}", "source_clip_id": clip, "categories": [],
            "direction": direction, "correct_response": answer, "response": response,
            "correct": float(correct), "rt_ms": 900.0 if kind == C.HUMAN else np.nan,
            "onset_method": "rvfc" if kind == C.HUMAN else None, "dropped_frames": 0,
            "excluded": False, "exclusion_reasons": [], "extra": extra or {}}


def _people(rng, n_people=12, per_level=24):
    rows = []
    for person in range(n_people):
        index = 0
        for clip in _levels().itertuples():
            p = _p_correct(clip.parameter_value, TRUE[clip.scenario])
            for k in range(per_level):
                direction = C.FORWARD if k % 2 else C.BACKWARD
                rows.append(_row(f"p{person:02d}", C.HUMAN, clip.source_clip_id, direction,
                                 rng.random() < p, index))
                index += 1
    return rows


def _vlm(name="vlm-a", orders=("FB", "BF")):
    """P(forward) from logits set so that P(correct) per clip is the VLM's true curve."""
    rows, index = [], 0
    for clip in _levels().itertuples():
        p = _p_correct(clip.parameter_value, VLM_TRUE[clip.scenario])
        for direction in C.DIRECTIONS:
            for order in orders:
                p_forward = p if direction == C.FORWARD else 1 - p
                extra = {C.EXTRA_P_FORWARD: p_forward, C.EXTRA_LABEL_ORDER: order,
                         C.EXTRA_SETTING: "zero-shot", C.EXTRA_PARSE_STATUS: "ok"}
                rows.append(_row(name, C.MODEL, clip.source_clip_id, direction, p > 0.5,
                                 index, extra))
                index += 1
    return rows


def _chance_vlm():
    """Answers "backward" on every clip; P(correct) per level 0.503-0.523, like a tiny random
    VLM of the walkthrough on the full TRA set (0.503-0.530 over 880 items)."""
    rows, index = [], 0
    for clip in _levels().itertuples():
        t = clip.parameter_value / (5.0 if clip.scenario == "pendulum" else 1.0)
        for direction in C.DIRECTIONS:
            p_correct = 0.48 - 0.01 * t if direction == C.FORWARD else 0.526 + 0.05 * t
            p_forward = p_correct if direction == C.FORWARD else 1 - p_correct
            for order in ("FB", "BF"):
                extra = {C.EXTRA_P_FORWARD: p_forward, C.EXTRA_LABEL_ORDER: order,
                         C.EXTRA_SETTING: "zero-shot", C.EXTRA_PARSE_STATUS: "ok"}
                rows.append(_row("vlm-chance", C.MODEL, clip.source_clip_id, direction,
                                 direction == C.BACKWARD, index, extra))
                index += 1
    return rows


def _tra(rng, clips_per_level=8, noise=0.0005):
    rows = []
    for clip in _levels().itertuples():
        mu, height = TRA_PEAKS[clip.scenario]
        sigma = 0.2 if clip.scenario == "bouncing_ball" else 1.0
        for k in range(clips_per_level):
            value = height * np.exp(-0.5 * ((clip.parameter_value - mu) / sigma) ** 2)
            rows.append({"model": "vjepa2-sim", "clip_id": f"{clip.source_clip_id}-{k}",
                         "scenario": clip.scenario, "process": "dissipative",
                         "parameter": clip.parameter, "parameter_value": clip.parameter_value,
                         "context_frames": 12, "loss_forward": 1.0,
                         "loss_reversed": 1.0 + value, "tra": value + noise * rng.normal()})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def built():
    rng = np.random.default_rng(42)
    trials = loading.normalize_trials(pd.DataFrame(_people(rng) + _vlm() + _chance_vlm()
                                                   + _vlm("vlm-fb-only", ("FB",))))
    report = build.build_report(trials, n_boot=300, tra_data=_tra(rng),
                                  sweep_levels=_levels())
    return report


def _fit(report, kind, scenario, observer=None):
    fits = report.tables["tra_sweep_fits"]
    mine = fits["observer"] == observer if observer else True
    return fits[(fits["observer_kind"] == kind) & (fits["scenario"] == scenario) & mine
                & (fits["source"] == "measured")].iloc[0]


@pytest.mark.parametrize("scenario", sorted(TRUE))
def test_people_pooled_fit_recovers_the_simulated_curve(built, scenario):
    row = _fit(built, "people", scenario)
    assert row["location_lo"] <= TRUE[scenario]["threshold"] <= row["location_hi"]
    assert row["width_lo"] <= TRUE[scenario]["width"] <= row["width_hi"]
    participants = built.tables["tra_sweep_participants"]
    assert (participants["scenario"] == scenario).sum() == 12


@pytest.mark.parametrize("scenario", sorted(VLM_TRUE))
def test_vlm_fit_from_logits_recovers_its_curve(built, scenario):
    row = _fit(built, "vlm", scenario, "vlm-a")
    # Noise-free P(correct) per clip: the fit is exact up to the optimiser's tolerance.
    assert row["location"] == pytest.approx(VLM_TRUE[scenario]["threshold"], abs=0.02)
    assert row["width"] == pytest.approx(VLM_TRUE[scenario]["width"], rel=0.05)


@pytest.mark.parametrize("scenario", sorted(TRA_PEAKS))
def test_tra_peak_recovered_beside_the_published_one(built, scenario):
    row = _fit(built, "self_supervised", scenario)
    mu, height = TRA_PEAKS[scenario]
    assert row["location_lo"] <= mu <= row["location_hi"]
    assert row["peak_tra_pct_lo"] <= 100 * height <= row["peak_tra_pct_hi"]
    fits = built.tables["tra_sweep_fits"]
    published = fits[fits["source"] == "published"]
    assert set(published["peak_tra_pct"]) == {0.27, 0.68, 0.01}
    assert set(fits["source"]) == {"measured", "published"}


def test_one_figure_per_sweep_with_the_normalisation_in_its_caption(built):
    for scenario in TRUE:
        fig = built.figures[f"tra_sweep_{scenario}"]
        names = {trace.name for trace in fig.data}
        assert {"people (pooled)", "participants", "people, 95% band"} <= names
        assert any("TRA, context 12" in n for n in names) and any("vlm" in n for n in names)
        captions = [a.text.replace("<br>", " ") for a in fig.layout.annotations]
        assert any("2·P(correct) − 1" in c and "largest |level mean|" in c
                   and "cannot be compared with the accuracy scale" in c for c in captions)
        # wrapped by hand (plotly does not), so that no line runs off the figure
        assert all(len(line) <= 150 for a in fig.layout.annotations
                   for line in a.text.split("<br>"))
        assert any("vlm-fb-only — one label order" in n for n in names)
        assert any("published" in a.text for a in fig.layout.annotations)
    curves = built.tables["tra_sweep_curves"]
    drawn = curves["value_normalised"].dropna()
    assert drawn.between(-0.2, 1).all()  # TRA level means near 0 may dip below it
    pooled = curves[curves["subject_id"] == "pooled"]
    assert (pooled["band_lo"] <= pooled["value_normalised"] + 1e-9).all()
    assert (pooled["band_hi"] >= pooled["value_normalised"] - 1e-9).all()


@pytest.mark.parametrize("scenario", sorted(TRUE))
def test_near_chance_vlm_stays_near_zero_and_people_span_the_axis(built, scenario):
    # The walkthrough's tiny random VLM: min-max rescaling drew its 0.50-0.53 as a full 0->1
    # curve. Above-chance accuracy 2 P(correct) - 1 keeps it under 0.06.
    curves = built.tables["tra_sweep_curves"]
    sweep = curves[curves["scenario"] == scenario]
    chance = sweep[sweep["observer"] == "vlm-chance"]["value_normalised"]
    assert len(chance) and chance.abs().max() < 0.1
    pooled = sweep[sweep["subject_id"] == "pooled"]["value_normalised"]
    assert pooled.max() - pooled.min() > 0.8 and pooled.min() > -0.05
    tra = sweep[sweep["observer_kind"] == "self_supervised"]["value_normalised"]
    assert tra.max() == pytest.approx(1.0)  # the one model with a clear peak sets the scale


def test_fit_table_shows_direction_bounds_method_and_label_orders(built):
    fits = built.tables["tra_sweep_fits"]
    for column in ("direction", "at_bound", "at_step", "interval", "n_clusters",
                   "peak_height_pct", "peak_height_pct_lo", "peak_height_pct_hi", "n_label_orders",
                   "ends_at_limit", "distinguishable"):
        assert column in fits.columns
    measured = fits[fits["source"] == "measured"]
    vlm = measured[measured["observer_kind"] == "vlm"].set_index(["observer", "scenario"])
    assert (vlm.loc["vlm-a", "n_label_orders"] == 2).all()
    assert (vlm.loc["vlm-fb-only", "n_label_orders"] == 1).all()
    people = measured[measured["observer_kind"] == "people"]
    assert people["interval"].str.contains("jackknife").all() and (people["n_clusters"] > 1).all()
    assert (people["asymptotes"] == "guess 0.5; lapse estimated in [0, 0.06]").all()
    fitted = vlm[vlm["status"] != "flat"]
    assert (fitted["asymptotes"] == "both estimated (least squares)").all()
    # one clip a level in this set: too few source clips to resample as blocks
    assert fitted["interval"].str.contains("over trials (or clips)", regex=False).all()
    # the near-chance VLM's rise cannot be told from none: drawn flat, no threshold
    assert (vlm.loc["vlm-chance", "status"] == "flat").all()
    assert vlm.loc["vlm-chance", "location"].isna().all()
    tra = measured[measured["observer_kind"] == "self_supervised"]
    assert tra["interval"].str.contains("bootstrap over clips").all()
    assert tra["peak_height_pct"].notna().all() and tra["distinguishable"].all()
    at_bound = measured["at_bound"].astype(bool)
    at_step = measured["at_step"].fillna(False).astype(bool)  # a TRA bump has no step
    assert measured.loc[at_step, "status"].str.endswith(STEP_BETWEEN_LEVELS).all()
    at_limit = ~at_bound & ~at_step & (measured["ends_at_limit"].fillna("") != "")
    assert (measured.loc[at_bound, "status"] == "at bound").all()
    limited = measured[at_limit]
    only_width = limited["ends_at_limit"] == "width_lo"  # the level step: an upper bound only
    assert (limited.loc[only_width, "status"] == WIDTH_UPPER_ONLY).all()
    assert limited.loc[~only_width, "status"].str.startswith("at limit: ").all()
    assert measured.loc[~at_bound & ~at_step & ~at_limit, "status"].isin(["ok", "flat"]).all()


def test_level_means_are_tabled_and_drawn_under_their_curves(built):
    means = built.tables["tra_sweep_level_means"]
    people = means[means["observer_kind"] == "people"]
    assert set(people["scenario"]) == set(TRUE) and (people["subject_id"] == "pooled").all()
    assert np.allclose(people["value_normalised"], 2 * people["p_correct"] - 1)
    assert {"vlm-a", "vlm-chance", "vlm-fb-only"} <= set(means["observer"])
    for scenario in TRUE:
        fig = built.figures[f"tra_sweep_{scenario}"]
        markers = {t.name: t for t in fig.data if t.mode == "markers"}
        assert {"people, level means", "vlm-a, level means"} <= set(markers)
        sweep = means[(means["scenario"] == scenario) & (means["observer"] == "vlm-a")]
        assert list(markers["vlm-a, level means"].y) == pytest.approx(
            list(sweep["value_normalised"]))


def test_relation_column_is_words_not_a_formula(built):
    fits = built.tables["tra_sweep_fits"]
    published = fits[fits["source"] == "published"]
    assert set(published["relation"]) == {"equals", "below"}
    pd.testing.assert_frame_equal(csv_cells.escape_cells(fits), fits)  # nothing to guard


def test_a_report_without_sweep_trials_is_unchanged():
    spec = simulate.StudySpec(n_participants=6, trials_per_participant=40, n_clips=20,
                              models={"m": simulate.Observer(d_prime=0.5)},
                              practice_gate_fail_rate=0.0, fast_trial_rate=0.0)
    data = loading.normalize_trials(simulate.simulate_study(spec, np.random.default_rng(3)))
    plain = build.build_report(data, n_boot=50)
    tra = _tra(np.random.default_rng(0))
    with_tra = build.build_report(data, n_boot=50, tra_data=tra, sweep_levels=_levels())
    without_tra = build.build_report(data, n_boot=50, tra_data=tra)
    assert not report_tra.has_sweep_trials(loading.aot_trials(data), tra, _levels())
    assert not any(name.startswith("tra_sweep") for name in with_tra.tables)
    for other in (with_tra, without_tra):
        assert set(other.figures) == set(plain.figures)
        metrics = {k: v for k, v in other.metrics.items() if k != "timings_s"}
        assert metrics == {k: v for k, v in plain.metrics.items() if k != "timings_s"}
        for name, table in plain.tables.items():
            pd.testing.assert_frame_equal(other.tables[name], table)


def test_pooled_people_get_no_interval_or_band_below_the_minimum_of_participants():
    # Jackknife t intervals over 3 people were printed as if a population's curve.
    rng = np.random.default_rng(7)
    trials = loading.normalize_trials(pd.DataFrame(_people(rng, n_people=3, per_level=8)))
    tables = report_tra.sweep_tables(trials, levels=_levels(), n_boot=50)
    fits = tables["tra_sweep_fits"]
    pooled = fits[fits["observer_kind"] == report_tra.PEOPLE]
    assert len(pooled) == 2 and pooled["location"].notna().all()
    ends = ["location_lo", "location_hi", "width_lo", "width_hi"]
    assert pooled[ends].isna().all().all()
    assert (pooled["interval"] == "not estimated: needs at least 5 participants "
            "(the study has 3)").all()
    curves = tables["tra_sweep_curves"]
    assert curves.loc[curves["observer_kind"] == report_tra.PEOPLE, "band_lo"].isna().all()


def test_people_s_curves_run_the_way_the_sweep_s_physics_says():
    # The adaptive design places levels for the sweep's known direction (QUEST+); the report
    # fits both designs' participants with that model: one whose answers fall along the
    # pendulum's damping (harder with more dissipation) gets a rising curve, not a falling one.
    rows, index = [], 0
    for clip in _levels().itertuples():
        for k in range(12):
            direction = C.FORWARD if k % 2 else C.BACKWARD
            wrong_way = clip.parameter_value < 2.5 if clip.scenario == "pendulum" else \
                clip.parameter_value < 0.6
            rows.append(_row("p00", C.HUMAN, clip.source_clip_id, direction,
                             wrong_way or k % 3 == 0, index))
            index += 1
    trials = loading.normalize_trials(pd.DataFrame(rows))
    people = report_tra.sweep_tables(trials, levels=_levels(), n_boot=20)[
        "tra_sweep_participants"].set_index("scenario")
    assert people.loc["pendulum", "direction"] == 1
    assert people.loc["bouncing_ball", "direction"] == -1
