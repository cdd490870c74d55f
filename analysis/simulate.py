"""Simulated studies with known biases: participants and models as signal-detection observers.

A simulated observer sees evidence ``x ~ N(+-d'/2 * s, 1)`` for a clip shown backward (+) or
forward (-), where ``s`` is the clip's strength (low for Reciprocal clips), and answers "B"
when ``x > c``. So a positive criterion ``c`` is a forward bias, exactly the quantity
:func:`analysis.aot.aot_metrics` estimates. The output has the canonical trial columns, so
metrics, reports, the bench and the tests run on it unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import columns as C


@dataclass(frozen=True)
class Observer:
    """Parameters of one simulated kind of subject (a population of people or a model)."""

    d_prime: float = 1.6          # sensitivity with "backward" as the signal
    criterion: float = 0.5        # > 0: forward bias (Hanyu et al. 2023: c ~ +0.53)
    d_prime_sd: float = 0.3       # between-participant spread
    criterion_sd: float = 0.2
    timeout_rate: float = 0.01
    rt_log_mean: float = 6.9      # ~1 s
    rt_forward_speedup: float = 0.08  # "F" answers are faster by this much in log RT
    label_position_bias: float = 0.0  # models: logit shift toward the first-named label


@dataclass(frozen=True)
class StudySpec:
    """Shape of a simulated study."""

    n_participants: int = 40
    trials_per_participant: int = 120
    n_clips: int = 120
    practice_gate_fail_rate: float = 0.05
    fast_trial_rate: float = 0.005
    ordering_share: float = 0.0   # share of each participant's trials that are frame ordering
    n_frames: int = 4
    human: Observer = field(default_factory=Observer)
    models: dict = field(default_factory=dict)  # name -> Observer
    experiment: str = "simulated"


CATEGORY_STRENGTH = {"Reciprocal": 0.25}  # cyclic motion looks plausible both ways


def simulate_clips(n_clips: int, rng: np.random.Generator) -> pd.DataFrame:
    """Clips with 1-2 categories each and a strength per clip."""
    cats = np.array(C.CATEGORIES)
    first = rng.integers(0, len(cats), n_clips)
    second = rng.integers(0, len(cats), n_clips)
    two = (rng.random(n_clips) < 0.15) & (second != first) & (cats[first] != "Reciprocal") \
        & (cats[second] != "Reciprocal")
    categories = [[cats[a], cats[b]] if t else [cats[a]] for a, b, t in zip(first, second, two)]
    strength = np.array([min(CATEGORY_STRENGTH.get(c, 1.0) for c in cs) for cs in categories])
    strength = strength * rng.uniform(0.8, 1.2, n_clips)
    return pd.DataFrame({"source_clip_id": [f"clip{i:05d}" for i in range(n_clips)],
                         "categories": categories, "strength": strength})


def _sdt_answers(direction_b: np.ndarray, strength: np.ndarray, d_prime: np.ndarray,
                 criterion: np.ndarray, rng: np.random.Generator):
    """Evidence and "B"-answers of equal-variance observers."""
    sign = np.where(direction_b, 0.5, -0.5)
    evidence = rng.standard_normal(len(sign)) + sign * d_prime * strength
    return evidence, evidence > criterion


def _aot_block(clips: pd.DataFrame, subj: np.ndarray, n_per: int, obs: Observer,
               rng: np.random.Generator) -> dict:
    """Arrow-of-time trials: ``n_per`` per subject, clip and direction drawn at random."""
    n = len(subj) * n_per
    subject_idx = np.repeat(np.arange(len(subj)), n_per)
    d_sub = np.maximum(rng.normal(obs.d_prime, obs.d_prime_sd, len(subj)), 0.0)
    c_sub = rng.normal(obs.criterion, obs.criterion_sd, len(subj))
    clip_idx = rng.integers(0, len(clips), n)
    backward = rng.random(n) < 0.5
    strength = clips["strength"].to_numpy()[clip_idx]
    evidence, said_b = _sdt_answers(backward, strength, d_sub[subject_idx],
                                    c_sub[subject_idx], rng)
    response = np.where(said_b, "B", "F").astype(object)
    response[rng.random(n) < obs.timeout_rate] = None
    clip_rt = rng.normal(0, 0.1, len(clips))[clip_idx]
    subj_rt = rng.normal(0, 0.2, len(subj))[subject_idx]
    log_rt = obs.rt_log_mean + subj_rt + clip_rt - 0.1 * np.abs(evidence) \
        - obs.rt_forward_speedup * (response == "F") + rng.normal(0, 0.25, n)
    return {"subject_idx": subject_idx, "clip_idx": clip_idx,
            "direction": np.where(backward, C.BACKWARD, C.FORWARD),
            "correct_response": np.where(backward, "B", "F"), "response": response,
            "rt_ms": np.exp(log_rt), "evidence": evidence, "trial_type": C.AOT}


def simulate_study(spec: StudySpec, rng: np.random.Generator) -> pd.DataFrame:
    """A whole study: people (with exclusions) and models, in the canonical trial shape.

    Parameters
    ----------
    spec : StudySpec
        Sizes, observer parameters, exclusion rates and the models to simulate.
    rng : numpy.random.Generator
        All randomness comes from here.

    Returns
    -------
    pandas.DataFrame
        Canonical trial columns (:data:`analysis.columns.TRIAL_COLUMNS`) with Python
        objects in ``categories``, ``exclusion_reasons`` and ``extra``.

    Examples
    --------
    >>> import numpy as np
    >>> df = simulate_study(StudySpec(n_participants=3, trials_per_participant=10),
    ...                     np.random.default_rng(0))
    >>> len(df), sorted(df.subject_kind.unique())
    (30, ['human'])
    """
    clips = simulate_clips(spec.n_clips, rng)
    parts = [_human_trials(spec, clips, rng)]
    for name, obs in spec.models.items():
        parts.append(_model_trials(name, obs, clips, rng, spec.experiment))
    return pd.concat(parts, ignore_index=True)


def _human_trials(spec: StudySpec, clips: pd.DataFrame, rng) -> pd.DataFrame:
    from analysis.simulate_ordering import ordering_block

    subjects = np.array([f"p{i:05d}" for i in range(spec.n_participants)], dtype=object)
    n_order = int(round(spec.trials_per_participant * spec.ordering_share))
    frames = [_frame(_aot_block(clips, subjects, spec.trials_per_participant - n_order,
                                spec.human, rng), clips, subjects, C.HUMAN, spec.experiment)]
    if n_order:
        block = ordering_block(clips, len(subjects), n_order, spec.n_frames, rng)
        frames.append(_frame(block, clips, subjects, C.HUMAN, spec.experiment))
    df = pd.concat(frames, ignore_index=True)
    df = df.sort_values(["subject_id", "trial_index"], kind="stable", ignore_index=True)
    df["trial_index"] = df.groupby("subject_id").cumcount()
    return _add_exclusions(df, spec, rng)


def _frame(block: dict, clips, subjects, kind: str, experiment: str) -> pd.DataFrame:
    subject_idx, clip_idx = block["subject_idx"], block["clip_idx"]
    n = len(subject_idx)
    direction = block["direction"]
    clip_ids = clips["source_clip_id"].to_numpy()[clip_idx]
    df = pd.DataFrame({
        "subject_id": subjects[subject_idx], "subject_kind": kind,
        "session_id": [f"{s}-s1" for s in subjects[subject_idx]] if kind == C.HUMAN
        else subjects[subject_idx],
        "session_status": C.SESSION_COMPLETED, "session_number": 1,
        "experiment": experiment, "trial_index": np.arange(n), "trial_type": block["trial_type"],
        "block": "main", "stimulus_id": pd.Series(clip_ids).str.cat(pd.Series(direction), "/"),
        "source_clip_id": clip_ids,
        "categories": clips["categories"].to_numpy()[clip_idx],
        "direction": direction, "correct_response": block["correct_response"],
        "response": block["response"], "rt_ms": block["rt_ms"],
        "onset_method": "rvfc" if kind == C.HUMAN else None,
        "dropped_frames": 0, "excluded": False,
    })
    df["correct"] = np.where(pd.isna(df["response"]), 0.0,
                             (df["response"] == df["correct_response"]).astype(float))
    df["exclusion_reasons"] = [[] for _ in range(n)]
    df["extra"] = block.get("extra", [{} for _ in range(n)])
    return df


def _add_exclusions(df: pd.DataFrame, spec: StudySpec, rng) -> pd.DataFrame:
    """Practice-gate failures exclude a whole participant; too-fast trials exclude one trial."""
    subjects = df["subject_id"].unique()
    failed = set(subjects[rng.random(len(subjects)) < spec.practice_gate_fail_rate])
    gate = df["subject_id"].isin(failed).to_numpy()
    fast = rng.random(len(df)) < spec.fast_trial_rate
    df.loc[fast, "rt_ms"] = rng.uniform(50, 150, fast.sum())
    reasons = np.full(len(df), None, dtype=object)
    empty: list[str] = []
    gate_r, fast_r = [C.REASON_PRACTICE_GATE], ["rt_too_fast"]
    both = [C.REASON_PRACTICE_GATE, "rt_too_fast"]
    reasons[:] = [both if g and f else gate_r if g else fast_r if f else empty
                  for g, f in zip(gate, fast)]
    df["exclusion_reasons"] = reasons
    df["excluded"] = gate | fast
    return df


def _model_trials(name: str, obs: Observer, clips: pd.DataFrame, rng,
                  experiment: str) -> pd.DataFrame:
    """Each stimulus (clip x direction) under both label orders, with logit P(F)."""
    n_clips = len(clips)
    clip_idx = np.tile(np.repeat(np.arange(n_clips), 2), 2)
    backward = np.tile(np.tile([False, True], n_clips), 2)
    label_order = np.repeat(["FB", "BF"], 2 * n_clips)
    # The first-named label gains a logit shift: a position effect that swapping cancels.
    shift = np.where(label_order == "FB", -1.0, 1.0) * obs.label_position_bias
    strength = clips["strength"].to_numpy()[clip_idx]
    n = len(clip_idx)
    evidence, _ = _sdt_answers(backward, strength, np.full(n, obs.d_prime),
                               np.full(n, obs.criterion), rng)
    logit_b = 1.7 * (evidence - obs.criterion) + shift
    p_forward = 1 / (1 + np.exp(logit_b))
    response = np.where(p_forward < 0.5, "B", "F").astype(object)
    response[rng.random(n) < obs.timeout_rate] = None
    extra = [{C.EXTRA_P_FORWARD: float(p), C.EXTRA_LABEL_ORDER: lo, C.EXTRA_SETTING: "zero-shot",
              C.EXTRA_PARSE_STATUS: "ok" if r is not None else "unparseable",
              # a logit-scored answer's ledger: a prompt of frames in, one token out
              "tokens_in": 1200, "tokens_out": 1, "tokens_reasoning": 0, "model_s": 0.05}
             for p, lo, r in zip(p_forward, label_order, response)]
    block = {"subject_idx": np.zeros(n, dtype=int), "clip_idx": clip_idx,
             "direction": np.where(backward, C.BACKWARD, C.FORWARD),
             "correct_response": np.where(backward, "B", "F"), "response": response,
             "rt_ms": np.full(n, np.nan), "trial_type": C.AOT, "extra": extra}
    return _frame(block, clips, np.array([name], dtype=object), C.MODEL, experiment)
