#!/usr/bin/env python
"""TRA probe speed: batched windows against the per-window path it replaced (issue 20).

Tiny random VideoMAE and V-JEPA 2 (the test suite's configs) on one 48-frame 64x64 clip, the
TRA paper's length: the losses of the clip and its reverse at every context length, as
``manage.py probe tra`` computes them for one clip.  The baseline is the per-window path as
it was before batching, kept here only: each 16-frame window resized and normalised on its
own, one forward pass per window, and for V-JEPA 2 the full window's target latents encoded
again at every context length.  Modes run in interleaved rounds with a rotating order; prints
seconds per clip (median [range]), the machine load, and each mode's speed-up against the
baseline of the same round (median [range]).

    python bench/probe.py --rounds 3
    python bench/probe.py --threads 1 --batch-sizes 1,8,34
"""
import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.probes.tra import (  # noqa: E402
    BATCH_SIZE,
    CONTEXT_LENGTHS,
    WINDOW,
    VideoMAEProbe,
    VJEPA2Probe,
    window_starts,
)
from bench.models import median_range, moving_square  # noqa: E402


def per_window_loss(probe, frames: np.ndarray, context: int) -> float:
    """The loss of one 16-frame window, as the probe computed it before batching."""
    import torch
    import torch.nn.functional as F

    pixels = probe.pixels(frames).unsqueeze(0)
    with torch.no_grad():
        if isinstance(probe, VideoMAEProbe):
            return float(probe.model(pixel_values=pixels, bool_masked_pos=probe.mask(context)).loss)
        encoder = probe.model.encoder
        n_tokens = (len(frames) // probe.tubelet) * probe.tokens_per_step
        n_context = (context // probe.tubelet) * probe.tokens_per_step
        context_ids = torch.arange(n_context, device=probe.device).unsqueeze(0)
        target_ids = torch.arange(n_context, n_tokens, device=probe.device).unsqueeze(0)
        hidden = encoder.embeddings(pixels)[:, :n_context]
        for layer in encoder.layer:
            hidden = layer(hidden, context_ids)[0]
        hidden = encoder.layernorm(hidden)
        full = hidden.new_zeros(1, n_tokens, hidden.shape[-1])
        full[:, :n_context] = hidden
        predicted = probe.model.predictor(encoder_hidden_states=full, context_mask=[context_ids],
                                          target_mask=[target_ids]).last_hidden_state
        target = encoder(pixel_values_videos=pixels).last_hidden_state[:, n_context:]
        return float(F.mse_loss(predicted, F.layer_norm(target, target.shape[-1:])))


def per_window_clip_losses(probe, frames: np.ndarray, context_lengths):
    """(forward, reversed) mean window loss at each context length, window by window."""
    reversed_frames = np.ascontiguousarray(frames[::-1])
    return [tuple(float(np.mean([per_window_loss(probe, clip[s:s + WINDOW], context)
                                 for s in window_starts(len(clip))]))
                  for clip in (frames, reversed_frames))
            for context in context_lengths]


def tiny_models():
    """The test suite's tiny random VideoMAE and V-JEPA 2 (tests/analysis/probes/conftest.py)."""
    import torch
    from transformers import VideoMAEConfig, VideoMAEForPreTraining, VJEPA2Config, VJEPA2Model

    torch.manual_seed(0)
    videomae = VideoMAEForPreTraining(VideoMAEConfig(
        image_size=32, patch_size=8, num_frames=16, tubelet_size=2, hidden_size=32,
        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        decoder_hidden_size=32, decoder_num_hidden_layers=1, decoder_num_attention_heads=4,
        decoder_intermediate_size=64, norm_pix_loss=True))
    torch.manual_seed(0)
    vjepa2 = VJEPA2Model(VJEPA2Config(
        patch_size=8, crop_size=32, frames_per_clip=16, tubelet_size=2, hidden_size=48,
        num_attention_heads=4, num_hidden_layers=2, mlp_ratio=2.0, pred_hidden_size=48,
        pred_num_attention_heads=4, pred_num_hidden_layers=2, pred_num_mask_tokens=4))
    return {"VideoMAE": (VideoMAEProbe, videomae), "V-JEPA 2": (VJEPA2Probe, vjepa2)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--batch-sizes", default=f"1,{BATCH_SIZE}",
                        help="comma-separated windows per forward pass")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--frame-size", type=int, default=64)
    args = parser.parse_args(argv)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    clip = moving_square(args.frames, args.frame_size, args.frame_size, seed=0)
    contexts = CONTEXT_LENGTHS
    n_windows = 2 * len(window_starts(args.frames))
    print(f"{args.frames}-frame {args.frame_size}x{args.frame_size} clip, {n_windows} windows "
          f"(forward + reversed) x contexts {','.join(map(str, contexts))}; {args.rounds} "
          f"interleaved rounds; torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{os.cpu_count()} CPUs")
    for name, (probe_class, model) in tiny_models().items():
        modes = {"per window (baseline)": probe_class(model)}
        modes |= {f"batch {b}": probe_class(model, batch_size=b) for b in sizes}
        calls = {label: (lambda p=probe: p.clip_losses(clip, contexts)) for label, probe in
                 modes.items()}
        calls["per window (baseline)"] = lambda p=modes["per window (baseline)"]: (
            per_window_clip_losses(p, clip, contexts))
        reference = np.array(calls["per window (baseline)"]())
        worst = max(float(np.max(np.abs(np.array(call()) / reference - 1)))
                    for call in calls.values())
        seconds: dict[str, list[float]] = {label: [] for label in calls}
        loads = []
        labels = list(calls)
        for round_ in range(args.rounds):
            shift = round_ % len(labels)
            for label in labels[shift:] + labels[:shift]:
                start = time.perf_counter()
                calls[label]()
                seconds[label].append(time.perf_counter() - start)
            loads.append(os.getloadavg()[0])
        print(f"\n{name}: load1 {min(loads):.2f}-{max(loads):.2f}; largest relative difference "
              f"of a clip loss from the baseline {worst:.1e}")
        print(f"{'mode':<24}{'s per clip, median [range]':>30}{'speed-up, median [range]':>30}")
        base = seconds["per window (baseline)"]
        for label in labels:
            ratios = [b / s for b, s in zip(base, seconds[label])]
            print(f"{label:<24}{median_range(seconds[label]):>30}"
                  f"{median_range(ratios) + 'x':>30}")


if __name__ == "__main__":
    main()
