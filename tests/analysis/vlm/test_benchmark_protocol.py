"""``run-models --benchmark aot-psyphybench``: the paper's protocol on a tiny random model.

Tiny videos named by real benchmark ids are imported, then each setting runs through the
model runner; every row must be a published item with its published answer.
"""
import json
import re
from pathlib import Path

import pytest

from analysis.vlm import prompts
from experiments.benchmarks import aot_psyphybench as bench
from tests.experiments.benchmark_videos import write_benchmark_videos

# Two ordinary clips and the clips of all four few-shot demonstrations.
CLIPS = ["00001", "00005", "00058", "00012", "00186", "00271"]
DEMO_ITEMS = {"00058", "00012_rev", "00186", "00271_rev"}


@pytest.fixture
def imported(runner, tmp_path):
    videos = write_benchmark_videos(tmp_path / "videos", CLIPS)
    result = runner.invoke(args=["stimuli", "import-benchmark", "aot-psyphybench",
                                 "--videos", str(videos)])
    assert result.exit_code == 0, result.output
    return runner


def _run(runner, model, setting, *extra):
    # Chain-of-thought answers come after generated reasoning: never from one forward pass.
    scoring = "generate" if setting in prompts.COT_SETTINGS else "logits"
    return runner.invoke(args=["run-models", "--benchmark", "aot-psyphybench", "--setting",
                               setting, "--model", model, "--device", "cpu", "--dtype",
                               "float32", "--max-new-tokens", "2", "--scoring", scoring,
                               "--no-progress", *extra])


def _rows(output: str) -> tuple[list[dict], dict]:
    folder = Path(re.search(r"run folder (\S+)", output).group(1))
    rows = [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]
    return rows, json.loads((folder / "manifest.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("setting, n_items", [("zero-shot", 12), ("few-shot-2", 8),
                                              ("few-shot-4", 8), ("multi-step-cot", 8)])
def test_protocol_rows_are_published_items(imported, tiny_model, setting, n_items):
    result = _run(imported, tiny_model("qwen2_5_vl"), setting, "--fps", "4")
    assert result.exit_code == 0, result.output
    rows, manifest = _rows(result.output)
    published = {item.item_id: item.answer for item in bench.read_items()}
    item_ids = [row["extra"]["item_id"] for row in rows]
    assert len(rows) == n_items == len(set(item_ids))
    assert {row["correct_response"] for row in rows} == {"F", "B"}
    for row, item_id in zip(rows, item_ids):
        assert row["correct_response"] == published[item_id]
    expected = {f"{c}{suffix}" for c in CLIPS for suffix in ("", "_rev")}
    if setting != "zero-shot":  # sec. 4.2: the demonstration videos leave the test set
        expected -= DEMO_ITEMS
    assert set(item_ids) == expected
    assert manifest["config"]["spec"]["fps"] == 4.0
    # The paper's decoding by default (sec. 4.6), recorded with the run.
    params = manifest["config"]["params"]
    assert (params["temperature"], params["top_p"]) == (0.6, 0.95)
    assert f"{(424 if setting == 'zero-shot' else 420) - n_items} items of the " \
           f"{setting} protocol are not imported" in result.output


def test_protocol_needs_fps_for_a_model_outside_the_papers_families(imported, tmp_path):
    # The tiny model's folder name names no family; the paper's rate cannot be chosen for it.
    result = _run(imported, str(tmp_path / "my-vlm"), "zero-shot")
    assert result.exit_code == 2
    assert "is not one of the paper's model families" in result.output
    result = _run(imported, "Qwen/Qwen2-VL-7B-Instruct", "few-shot-3")
    assert result.exit_code == 2 and "'few-shot-3' is not one of 'zero-shot'" in result.output


def test_the_benchmark_name_is_accepted_in_any_case(imported):
    # As the paper writes it: reaches the protocol (here: the model needs an fps).
    result = _run(imported, "my-vlm", "zero-shot", "--benchmark", "AoT-PsyPhyBENCH")
    assert result.exit_code == 2 and "is not one of the paper's model families" in result.output
