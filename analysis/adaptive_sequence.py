"""Each participant's adaptive (QUEST+) trial sequence with the posterior behind each choice,
from the trial rows' ``extra["adaptive"]`` (``experiments.adaptive_schedule``). The
thresholds themselves are fitted from the same trials by the same fit as fixed levels
(``analysis.report.tra``): a participant's likelihood fit does not depend on how the levels
were chosen, as long as each choice depended on the answers before it only (which it does
here). Pooling participants' trials does depend on it (:mod:`analysis.participant_thresholds`).
"""
from __future__ import annotations

import pandas as pd

from analysis import columns as C
from analysis.loading import extra_column

POSTERIOR = ("threshold_mean", "threshold_lo", "threshold_hi", "halfwidth_steps",
             "width_mean", "lapse_mean")
COLUMNS = ["subject_id", "session_id", "scenario", "slot", "trial_index", "level", "correct",
           *POSTERIOR, "n_answers"]


def sequence_table(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per adaptive trial of a person, in the order shown: its sweep, slot (0 first),
    level, whether it was answered right (empty: no answer), and the posterior of the
    sweep's threshold when its level was chosen (mean, 95% credible interval, half-width in
    level steps; width and lapse means), from the answers before it (``n_answers``)."""
    if trials.empty or "extra" not in trials:
        return pd.DataFrame(columns=COLUMNS)
    chosen = extra_column(trials, "adaptive")
    people = trials[chosen.map(lambda a: isinstance(a, dict) and "level" in a)
                    & (trials["subject_kind"] == C.HUMAN)]
    if people.empty:
        return pd.DataFrame(columns=COLUMNS)
    said = chosen[people.index]
    posterior = said.map(lambda a: a.get("posterior") or {})
    out = pd.DataFrame({
        "subject_id": people["subject_id"], "session_id": people["session_id"],
        "scenario": said.map(lambda a: a.get("sweep")), "slot": said.map(lambda a: a.get("slot")),
        "trial_index": people["trial_index"], "level": said.map(lambda a: a.get("level")),
        "correct": people["correct"].where(people["response"].notna()),
        **{k: posterior.map(lambda p, k=k: p.get(k)) for k in (*POSTERIOR, "n_answers")}})
    return out.sort_values(["subject_id", "session_id", "scenario", "slot"]).reset_index(drop=True)
