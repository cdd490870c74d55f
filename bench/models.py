#!/usr/bin/env python
"""Model-run throughput: batched vs one-at-a-time generation, logit scoring vs generation.

Same run, same model, same items (arrow-of-time zero-shot on synthetic 3 s clips sampled at
2 fps), in interleaved rounds with a rotating order.  Prints items/s medians with their range
and the machine load, and each batched mode's speed-up against its own one-at-a-time
baseline (per-round ratios: median and range).  ``--size 7b --device cuda`` measures
Qwen2.5-VL-7B shapes with random bf16 weights and compares the prefill (logit scoring is
one prefill) with the GPU's roofline: achieved FLOP/s over ``--peak-tflops``, and decoding at
batch 1 (each new token reads every weight once) with the memory roofline: achieved bytes/s
over ``--peak-tbps``.  ``per-window score`` is logit scoring with transformers' own vision
attention (one SDPA call per window: analysis/vlm/backends/vision_windows.py off), today's
baseline in the same run.  Every run also checks that batched scoring equals one-at-a-time scoring
(largest difference in log-probability; the goal is 1e-5 in float32).

    python bench/models.py                       # tiny Qwen2.5-VL on CPU
    python bench/models.py --size 7b --device cuda --dtype bfloat16 --frame-size 336
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis.vlm.backends.base import GenerationParams  # noqa: E402
from analysis.vlm.tasks import StimulusRecord, TaskSpec, build_items  # noqa: E402

GOAL = 3.0  # batch-8 generation and batch-8 scoring, each against its own batch-1 rate
AGREEMENT = 1e-5  # batched = one at a time, in log-probability (float32)


def moving_square(n_frames: int, height: int, width: int, seed: int):
    """A bright square moving right over a noisy background (uint8 RGB)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 60, (n_frames, height, width, 3)).astype(np.uint8)
    side = max(4, height // 4)
    for t in range(n_frames):
        x = int(t * (width - side) / max(1, n_frames - 1))
        frames[t, height // 4:height // 4 + side, x:x + side] = 250
    return frames


def make_items(folder: Path, n_clips: int, size: int):
    from experiments.media import encode_browser_mp4, sha256_file
    from experiments.reversal import reverse_clip_checked
    records = []
    for i in range(n_clips):
        fwd, bwd = folder / f"{i}_f.mp4", folder / f"{i}_b.mp4"
        encode_browser_mp4(moving_square(90, size, size, seed=i), fwd, fps=30)
        reverse_clip_checked(fwd, bwd)
        for j, (path, direction) in enumerate(((fwd, "forward"), (bwd, "backward"))):
            records.append(StimulusRecord(
                id=2 * i + j, public_id=f"b{2 * i + j}", kind="clip", direction=direction,
                source_clip_id=i, path=str(path), sha256=sha256_file(path), clip_fps=30.0,
                clip_frame_count=90))
    return build_items(records, TaskSpec(fps=2))


def make_backend(args, folder: Path):
    from analysis.vlm.backends.hf import TransformersBackend
    from analysis.vlm.tiny import build_vlm

    if args.size == "tiny":
        build_vlm("qwen2_5_vl", folder / "model")
        return TransformersBackend(str(folder / "model"), device=args.device, dtype=args.dtype)
    model, processor = build_vlm("qwen2_5_vl", folder / "model", size="7b", dtype=args.dtype,
                                 save=False)
    return TransformersBackend.from_loaded(model, processor, "random-qwen2.5-vl-7b",
                                           args.device, "random")


def per_window(backend, fn):
    """``fn`` run with transformers' own per-window vision attention (today's baseline)."""
    from analysis.vlm.backends.vision_windows import group_windows

    def run():
        group_windows(backend.model, enabled=False)
        try:
            return fn()
        finally:
            group_windows(backend.model)
    return run


def timed(fn, sync) -> float:
    sync()
    start = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - start


def median_range(values) -> str:
    values = sorted(values)
    return f"{statistics.median(values):.2f} [{values[0]:.2f}-{values[-1]:.2f}]"


def prefill_flops(backend, requests) -> float:
    """2 x parameters x tokens for the language model and the vision tower (dense matmuls)."""
    model = backend.model
    vision = sum(p.numel() for p in model.model.visual.parameters())
    text = sum(p.numel() for p in model.model.language_model.parameters())
    total = 0.0
    for request in requests:
        inputs = backend.encode([request])
        patches = int(inputs["video_grid_thw"].prod(-1).sum())
        total += 2 * text * int(inputs["input_ids"].shape[1]) + 2 * vision * patches
    return total


def agreement(backend, requests, batch: int, dtype: str) -> str:
    """Batched scoring against one-at-a-time scoring of the same items."""
    single = [backend.score([r], ("F", "B"))[0] for r in requests]
    batched = [s for i in range(0, len(requests), batch)
               for s in backend.score(requests[i:i + batch], ("F", "B"))]
    worst = max(abs(a.logprobs[k] - b.logprobs[k]) for a, b in zip(single, batched)
                for k in ("F", "B"))
    verdict = ("met" if worst <= AGREEMENT else "NOT met") if dtype == "float32" else \
        f"not judged in {dtype}"
    return (f"batched = one at a time: largest |d log p| {worst:.1e} over {len(requests)} "
            f"items (goal {AGREEMENT:.0e} in float32: {verdict})")


def batch_sweep(backend, requests, rounds: int, sizes=(1, 2, 4, 8, 16)) -> str:
    """Scoring time per item by batch size, interleaved: where it levels off is the work each
    item costs whatever the batch (compute on its own tokens and pixels, its preprocessing),
    so batch 1's time over that level bounds what batching can gain.  CPU time of this
    process is given beside wall time: with one thread it hardly moves with the load.
    Batch 1 and 8 are also timed with transformers' per-window vision attention."""
    modes = [("", size) for size in sizes] + [("per-window ", 1), ("per-window ", 8)]
    wall: dict[tuple, list[float]] = {mode: [] for mode in modes}
    cpu: dict[tuple, list[float]] = {mode: [] for mode in modes}
    for round_ in range(rounds):
        shift = round_ % len(modes)
        for mode in modes[shift:] + modes[:shift]:
            size = mode[1]

            def run():
                for i in range(0, len(requests), size):
                    backend.score(requests[i:i + size], ("F", "B"))
            start, start_cpu = time.perf_counter(), time.process_time()
            (per_window(backend, run) if mode[0] else run)()
            wall[mode].append(1000 * (time.perf_counter() - start) / len(requests))
            cpu[mode].append(1000 * (time.process_time() - start_cpu) / len(requests))
    lines = [f"scoring per item by batch size, {rounds} interleaved rounds "
             f"(load1 {os.getloadavg()[0]:.2f}), median [range]:"]
    for mode in modes:
        ratios = [one / many for one, many in zip(cpu[(mode[0], 1)], cpu[mode])]
        lines.append(f"  {mode[0]}batch {mode[1]:>2}: wall {median_range(wall[mode])} ms, CPU "
                     f"{median_range(cpu[mode])} ms = {median_range(ratios)}x its batch 1's CPU")
    grouped = [g / w for g, w in zip(cpu[("", 8)], cpu[("per-window ", 8)])]
    lines.append(f"  batch 8, CPU with grouped windows / per-window: {median_range(grouped)}")
    return "\n".join(lines)


def decode_roofline(backend, request, peak_tbps: float, sync, new_tokens: int = 64) -> str:
    """Batch-1 decoding: each token reads every weight once, so bytes/s over bandwidth."""
    import torch

    weights = sum(p.numel() * p.element_size() for p in backend.model.parameters())
    inputs = backend.encode([request])

    def generate(n: int):  # exactly n tokens: random weights may say end-of-text at once
        with torch.inference_mode():
            backend.model.generate(**inputs, max_new_tokens=n, min_new_tokens=n,
                                   do_sample=False)

    prefill = timed(lambda: generate(1), sync)
    total = timed(lambda: generate(new_tokens), sync)
    per_token = (total - prefill) / (new_tokens - 1)
    achieved = weights / per_token / 1e12
    return (f"decode, batch 1: {1 / per_token:.0f} tokens/s, {weights / 1e9:.1f} GB of weights "
            f"read per token = {achieved:.2f} TB/s, {100 * achieved / peak_tbps:.0f}% of "
            f"{peak_tbps} TB/s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("tiny", "7b"), default="tiny")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--clips", type=int, default=8, help="items = 2 x clips")
    parser.add_argument("--frame-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds")
    parser.add_argument("--sweep", action="store_true",
                        help="also time scoring at batch 1, 2, 4, 8 and 16 (where it levels off)")
    parser.add_argument("--no-generate", action="store_true",
                        help="time logit scoring only (generation is the slow part)")
    parser.add_argument("--peak-tflops", type=float, default=989.0,
                        help="dense bf16 peak of the GPU (H100 SXM and H200: 989)")
    parser.add_argument("--peak-tbps", type=float, default=4.8,
                        help="memory bandwidth of the GPU in TB/s (H200: 4.8, H100 SXM: 3.35)")
    args = parser.parse_args(argv)
    import torch

    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        items = make_items(folder, args.clips, args.frame_size)
        backend = make_backend(args, folder)
        requests = [item.request for item in items]
        params = GenerationParams(max_new_tokens=args.max_new_tokens)
        backend.score(requests[:2], ("F", "B"))  # warm-up
        b = args.batch_size
        # Each batched mode is compared with its own one-at-a-time baseline.
        pairs = {
            "generate": (lambda: [backend.generate([r], params) for r in requests],
                         lambda: [backend.generate(requests[i:i + b], params)
                                  for i in range(0, len(requests), b)]),
            "logit score": (lambda: [backend.score([r], ("F", "B")) for r in requests],
                            lambda: [backend.score(requests[i:i + b], ("F", "B"))
                                     for i in range(0, len(requests), b)]),
        }
        pairs["per-window score"] = tuple(per_window(backend, fn) for fn in pairs["logit score"])
        if args.no_generate:
            del pairs["generate"]
        modes = [(kind, batch) for kind in pairs for batch in (1, b)]
        seconds = {mode: [] for mode in modes}
        loads = []
        for round_ in range(args.rounds):
            # Interleaved, with the order rotated each round, so drift hits every mode alike.
            shift = round_ % len(modes)
            for kind, batch in modes[shift:] + modes[:shift]:
                fn = pairs[kind][0 if batch == 1 else 1]
                seconds[(kind, batch)].append(timed(fn, sync))
            loads.append(os.getloadavg()[0])
        n = len(requests)
        print(f"\n{args.size} Qwen2.5-VL on {args.device} ({args.dtype}), {n} items, "
              f"{args.max_new_tokens} new tokens, frames {args.frame_size}px @ 2 fps; "
              f"{args.rounds} interleaved rounds; load1 {min(loads):.2f}-{max(loads):.2f} "
              f"on {os.cpu_count()} CPUs")
        print(f"{'mode':<26}{'items/s median [range]':>26}{'vs own batch-1, median [range]':>34}")
        for kind, batch in modes:
            rates = [n / s for s in seconds[(kind, batch)]]
            ratio = ""
            if batch != 1:
                ratios = [one / many for one, many in zip(seconds[(kind, 1)],
                                                          seconds[(kind, batch)])]
                ratio = median_range(ratios) + "x"
            label = f"{kind}, " + ("one at a time" if batch == 1 else f"batch {batch}")
            print(f"{label:<26}{median_range(rates):>26}{ratio:>34}")
        for kind in pairs:
            ratio = statistics.median(one / many for one, many in zip(seconds[(kind, 1)],
                                                                      seconds[(kind, b)]))
            verdict = "met" if ratio >= GOAL else "NOT met"
            print(f"goal: {kind} batch {b} >= {GOAL:.0f}x its one-at-a-time rate: {verdict} "
                  f"({ratio:.2f}x)")
        print(agreement(backend, requests, b, args.dtype))
        if args.sweep:
            print(batch_sweep(backend, requests, args.rounds))
        if args.device.startswith("cuda"):
            print(decode_roofline(backend, requests[0], args.peak_tbps, sync))
            flops = prefill_flops(backend, requests)
            achieved = flops / statistics.median(seconds[("logit score", b)]) / 1e12
            print(f"prefill: {flops / 1e12:.1f} TFLOP, {achieved:.0f} TFLOP/s = "
                  f"{100 * achieved / args.peak_tflops:.0f}% of {args.peak_tflops:.0f} TFLOP/s peak")


if __name__ == "__main__":
    main()
