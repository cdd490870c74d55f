"""Each benchmark script's cheapest run, so a refactor cannot silently break a benchmark
whose figures the README quotes.

Covered: models, probe, analysis, null_fpr, psychometric_psignifit, tra_power, tra_report,
length_power, adaptive_power.
Not here: those that start servers or browsers (bots, browser_contexts, load, login_flood, faults,
catch_presentations, frame_pacing, timing_quality, rt_*, offline_browser, export_equivalence),
need R (glmm_vs_lme4, pacing_reference), or spawn worker processes (stimuli); study_file_limits
fails on its own study file today (a duplicated placeholder), left to the study-file work.
"""
import importlib
import sys

import pytest

# (script, its cheapest arguments, a phrase its report prints)
CASES = [
    ("models", ["--clips", "1", "--rounds", "1", "--max-new-tokens", "1", "--batch-size", "2",
                "--frame-size", "32", "--sweep"], "batch 8, CPU with grouped windows"),
    ("probe", ["--rounds", "1", "--batch-sizes", "1,2", "--frames", "16",
               "--frame-size", "32"], "speed-up"),
    ("analysis", ["--participants", "10", "--trials", "8", "--n-boot", "5", "--rounds", "1"],
     "full report"),
    ("null_fpr", ["--sims", "2", "--people", "3", "--clips", "4", "--n-boot", "5"],
     "True null, 4 clips"),
    ("psychometric_psignifit", ["--participants", "2", "--no-psignifit"],
     "2 participants a sweep"),
    ("tra_power", ["--observers", "4", "--trials", "12", "--lapses", "0", "--n-boot", "5"],
     "4 participants a row"),
    ("tra_report", ["--participants", "3", "--vlms", "1", "--rounds", "1", "--n-boot", "5"],
     "(3 participants, 1 VLMs)"),
    ("length_power", ["--observers", "2", "--trials", "12", "--lapses", "0"],
     "2 participants a row"),
    ("adaptive_power", ["--observers", "2", "--rounds", "1", "--adaptive", "20", "--fixed",
                        "4", "--lapses", "0", "--sweeps", "pendulum"],
     "profile interval's coverage per bound case"),
]


@pytest.mark.slow
@pytest.mark.parametrize("script, argv, phrase", CASES, ids=[c[0] for c in CASES])
def test_benchmark_runs(script, argv, phrase, capsys, monkeypatch):
    module = importlib.import_module(f"bench.{script}")
    monkeypatch.setattr(sys, "argv", [f"bench/{script}.py", *argv])  # some parse sys.argv
    main = module.main
    main(argv) if main.__code__.co_argcount else main()
    assert phrase in capsys.readouterr().out


def test_the_gpu_script_parses_and_runs_only_what_exists():
    """bench/gpu.sh runs on a lent GPU machine only; here its shell is checked and each
    benchmark script it calls must exist (bench/models.py itself runs above)."""
    import re
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "gpu.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    scripts = re.findall(r'"\$PY" (bench/\w+\.py)', text)
    assert scripts and all((script.parents[1] / path).is_file() for path in scripts)
