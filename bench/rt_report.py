"""Tables for bench/rt_accuracy.py: errors of each onset method against the trace reference."""
from __future__ import annotations

import numpy as np

ARMS = ("chronoscope", "chronoscope-noniso", "naive-rvfc", "jspsych")


def arm_errors(trials, arm, onset_of=None, reference="displayed"):
    """stored RT - true delay; ``onset_of`` re-scores our trials with another onset estimate."""
    errors = []
    for t in trials:
        if t["arm"] != arm or t.get("reference") is None:
            continue
        true_delay = t["key_time_ms"] - t["reference"][reference]
        rt = t["rt_ms"] if onset_of is None else t["key_time_ms"] - onset_of(t)
        if rt is not None:
            errors.append(rt - true_delay)
    return np.array(errors)


def first_callback(field):
    return lambda t: t["onset_callbacks"][0][field] if t["onset_callbacks"] else np.nan


def summary_rows(trials):
    rows = [
        ("chronoscope onset.js (cross-origin isolated)", arm_errors(trials, "chronoscope")),
        ("chronoscope onset.js (not isolated, 4-ms Element Timing)",
         arm_errors(trials, "chronoscope-noniso")),
        ("jsPsych 8.3 video-keyboard-response", arm_errors(trials, "jspsych")),
        ("naive: show + play, onset = 1st rVFC expectedDisplayTime",
         arm_errors(trials, "naive-rvfc")),
        ("  diag: naive, onset = 1st rVFC presentationTime",
         arm_errors(trials, "naive-rvfc", first_callback("presentationTime"))),
        ("  diag: ours, onset = raf-next fallback",
         arm_errors(trials, "chronoscope", lambda t: t["onset_detail"]["next_frame_time_ms"])),
        ("  diag: ours vs draw start instead of presentation",
         arm_errors(trials, "chronoscope", reference="draw_start")),
    ]
    jitter = np.array([t["jitter_ms"] for t in trials])
    rows.append(("key press jitter (keydown.timeStamp - scheduled)", jitter))
    return rows


def first_frame_shares(trials) -> str:
    """Per arm, the share of trials whose first presented frame was frame 0 of the clip."""
    parts = []
    for arm in ARMS:
        shown = [t["reference"]["media_time_us"] for t in trials
                 if t["arm"] == arm and t.get("reference")]
        if shown:
            zero = sum(media == 0 for media in shown)
            parts.append(f"{arm} {zero}/{len(shown)}")
    return "first presented frame is clip frame 0: " + ", ".join(parts)


def print_table(rows, clock_notes, versions, unverified):
    print(f"jsPsych versions: {versions}")
    for note in clock_notes:
        print(note)
    print(f"trials without a traced reference frame (left out): {unverified}")
    print(f"{'measure (ms)':58s} {'n':>4s} {'mean':>8s} {'SD':>7s} {'median':>8s} "
          f"{'min':>8s} {'max':>8s}")
    for name, values in rows:
        values = values[np.isfinite(values)]
        if not len(values):
            print(f"{name:58s} {0:4d}")
            continue
        print(f"{name:58s} {len(values):4d} {values.mean():8.2f} {values.std(ddof=1):7.2f} "
              f"{np.median(values):8.2f} {values.min():8.2f} {values.max():8.2f}")
