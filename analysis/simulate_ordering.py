"""Simulated frame-ordering trials with a first-position anchoring bias.

The observer perceives each frame's true time plus Gaussian noise, and pulls the frame it
was shown first toward the start (``anchoring``), the bias EGO-FLIGHT reports for VLMs
(Appendix, Figure 3). Labels are presented positions 1..N, as in
:mod:`analysis.columns`.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from analysis import columns as C


def ordering_block(clips: pd.DataFrame, n_subjects: int, n_per: int, n_frames: int,
                   rng: np.random.Generator, noise: float = 0.8,
                   anchoring: float = 1.0) -> dict:
    """``n_per`` frame-ordering trials per subject; fields as in the arrow-of-time block."""
    n = n_subjects * n_per
    subject_idx = np.repeat(np.arange(n_subjects), n_per)
    clip_idx = rng.integers(0, len(clips), n)
    # true_time[i, j]: chronological rank of the frame presented at position j (0-based).
    true_time = rng.permuted(np.tile(np.arange(n_frames), (n, 1)), axis=1)
    perceived = true_time + noise * rng.standard_normal((n, n_frames))
    perceived[:, 0] -= anchoring
    labels = np.arange(1, n_frames + 1)
    correct = labels[np.argsort(true_time, axis=1)]
    answer = labels[np.argsort(perceived, axis=1)]
    log_rt = 8.0 + 0.3 * rng.standard_normal(n)
    return {"subject_idx": subject_idx, "clip_idx": clip_idx,
            "direction": np.full(n, C.FORWARD, dtype=object),
            "correct_response": [json.dumps(r.tolist()) for r in correct],
            "response": [json.dumps(r.tolist()) for r in answer],
            "rt_ms": np.exp(log_rt), "trial_type": C.FRAME_ORDER,
            "extra": [{C.EXTRA_CONDITION: f"{n_frames} frames"} for _ in range(n)]}
