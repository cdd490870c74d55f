"""AoT-PsyPhyBENCH: published metadata, items, protocol, reference tables, video matching."""
import collections
import json

import numpy as np
import pandas as pd
import pytest

from experiments import media
from experiments.benchmarks import aot_psyphybench as bench
from experiments.benchmarks import check_benchmark, protocol, reference
from experiments.benchmarks.videos import ReversalMismatch, flip_check, plan_import, verify_reversal
from tests.experiments.benchmark_videos import write_benchmark_videos

DEMO_IDS = ["00058", "00012_rev", "00186", "00271_rev"]
NO_VIDEO_IDS = ["00011", "00140", "00262", "00279", "00341"]


# --- metadata and items -----------------------------------------------------------------

def test_metadata_has_212_clips_and_the_published_category_counts():
    metadata = bench.read_metadata()
    assert len(metadata.clips) == 212
    published = collections.Counter(c for clip in metadata.clips for c in clip.published_categories)
    # Issue 7 / the release: Fall 70, Proceed 64, Put 51, Explode 44, Cut_Delete 23.
    assert published == {"Fall": 70, "Proceed": 64, "Put": 51, "Explode": 44, "Cut_Delete": 23}
    ours = collections.Counter(c for clip in metadata.clips for c in clip.categories)
    assert ours == {"Fall": 70, "Proceed": 64, "Put": 51, "Diffusion": 44, "Division": 23}
    first = metadata.by_id()["00001"]
    assert first.published_categories == ("Fall", "Explode")
    assert first.categories == ("Fall", "Diffusion")


def test_no_video_found_rows_are_reported_missing():
    assert bench.read_metadata().missing_ids == NO_VIDEO_IDS


@pytest.mark.parametrize("row, message", [
    ("00001.mp4,a,b.mp4,\"['Fall', 'Spin']\",b.mp4", "unknown or missing motion categories"),
    ("00001.mp4,a,b.mp4,Fall,b.mp4", "is not a list of names"),
    ("00001,a,b.mp4,['Fall'],b.mp4", "is not of the form"),
    ("00001_rev.mp4,a,b.mp4,['Fall'],b.mp4", "is not of the form"),
])
def test_bad_metadata_rows_name_their_line(tmp_path, row, message):
    path = tmp_path / "meta.csv"
    path.write_text(",".join(bench.METADATA_COLUMNS) + "\n" + row + "\n")
    with pytest.raises(ValueError, match=f"line 2: .*{message}"):
        bench.read_metadata(path)


def test_metadata_with_missing_column_or_repeated_id_is_refused(tmp_path):
    path = tmp_path / "meta.csv"
    path.write_text("id,folder\n00001.mp4,a\n")
    with pytest.raises(ValueError, match="missing columns"):
        bench.read_metadata(path)
    row = "00001.mp4,a,b.mp4,['Fall'],b.mp4\n"
    path.write_text(",".join(bench.METADATA_COLUMNS) + "\n" + row + row)
    with pytest.raises(ValueError, match="repeated clip ids"):
        bench.read_metadata(path)


def test_items_are_424_balanced_and_named_by_clip_and_direction():
    items = bench.read_items()
    assert len(items) == 424
    assert collections.Counter(i.answer for i in items) == {"F": 212, "B": 212}
    clip_ids = {clip.clip_id for clip in bench.read_metadata().clips}
    assert {i.item_id for i in items} == clip_ids | {f"{c}_rev" for c in clip_ids}
    for item in items:
        assert item.answer == ("B" if item.item_id.endswith("_rev") else "F")
        assert bench.item_id_for(item.clip_id, item.direction) == item.item_id
        assert item.split == "test"


def test_an_item_whose_answer_contradicts_its_name_is_refused(tmp_path):
    path = tmp_path / "items.json"
    path.write_text(json.dumps([{"messages": [{"role": "user", "content": "?"},
                                              {"role": "assistant", "content": "F"}],
                                 "videos": ["x/00001_rev.mp4"]}]))
    with pytest.raises(ValueError, match="00001_rev .*answer 'F'"):
        bench.read_items(path)


# --- protocol ---------------------------------------------------------------------------

def test_demonstrations_per_setting():
    assert protocol.demonstrations("zero-shot") == ()
    four = protocol.demonstrations("few-shot-4")
    assert [(d.item_id, d.label, d.split) for d in four] == [
        ("00058", "F", "demo"), ("00012_rev", "B", "demo"), ("00186", "F", "demo"),
        ("00271_rev", "B", "demo")]
    assert [d.item_id for d in protocol.demonstrations("few-shot-2")] == DEMO_IDS[:2]
    multi = protocol.demonstrations("multi-step-cot")
    assert [d.item_id for d in multi] == DEMO_IDS[:2]
    assert multi[0].answer.startswith("Observation: I see a building in poor condition")
    simple = protocol.demonstrations("simple-cot")
    assert [(d.item_id, d.label) for d in simple] == [("00058", "F"), ("00012_rev", "B")]
    assert simple[1].answer.endswith("Therefore, this video is being played backward.\nB")


def test_demonstration_settings_leave_out_the_four_demonstration_items():
    # Sec. 4.2: "These four demonstration videos were excluded from the test set".
    assert len(protocol.setting_items("zero-shot")) == 424
    for name in ("few-shot-2", "few-shot-4", "simple-cot", "multi-step-cot"):
        items = protocol.setting_items(name)
        assert len(items) == 420
        assert sorted({i.item_id for i in bench.read_items()} - {i.item_id for i in items}) \
            == sorted(DEMO_IDS)
        assert collections.Counter(i.answer for i in items) == {"F": 210, "B": 210}
    with pytest.raises(ValueError, match="unknown setting 'few-shot-8'"):
        protocol.setting_items("few-shot-8")


def test_select_for_setting_keeps_the_settings_clip_stimuli():
    from types import SimpleNamespace as Record

    stimuli = [Record(kind="clip", item_id=i) for i in ("00001", "00001_rev", "00058", "00058_rev")]
    stimuli += [Record(kind="frame_set", item_id=None), Record(kind="clip", item_id="elsewhere")]
    chosen, missing = protocol.select_for_setting("few-shot-4", stimuli)
    assert [s.item_id for s in chosen] == ["00001", "00001_rev", "00058_rev"]
    assert len(missing) == 417 and "00058" not in missing and "00005" in missing
    assert len(protocol.select_for_setting("zero-shot", stimuli)[1]) == 420


@pytest.mark.parametrize("model, family, fps", [
    ("Qwen/Qwen2-VL-7B-Instruct", "Qwen2-VL", 2.0),
    ("Qwen/Qwen2.5-VL-72B-Instruct", "Qwen2.5-VL", 2.0),
    ("/models/QVQ-72B-Preview/", "QVQ", 2.0),
    ("nvidia/Cosmos-Reason1-7B", "Cosmos-Reason1", 4.0),
    ("gpt-4.1-2025-04-14", "GPT-4o / GPT-4.1", 4.0),
    ("o4-mini", "OpenAI reasoning (o3, o4-mini, GPT-5)", 4.0),
    ("gemini-2.5-pro", "Gemini-2.5-Pro", 4.0),
])
def test_frame_rate_per_model_family(model, family, fps):
    # Sec. 4.6: 2 fps for Qwen2-VL, Qwen2.5-VL and QVQ; 4 fps for Cosmos and the APIs.
    assert protocol.model_family(model).name == family
    assert protocol.protocol_fps(model) == fps


def test_decoding_parameters_and_unknown_models():
    assert protocol.model_family("nvidia/Cosmos-Reason1-7B").decoding == {
        "temperature": 0.6, "top_p": 0.95, "repetition_penalty": 1.05}
    assert protocol.model_family("gemini-2.5-pro").decoding == {"temperature": 1.0, "top_p": 0.95}
    assert protocol.model_family("o3").decoding == {}  # API defaults
    with pytest.raises(ValueError, match="give its fps explicitly"):
        protocol.protocol_fps("llava-hf/llava-1.5-7b-hf")
    assert protocol.protocol_fps("llava-hf/llava-1.5-7b-hf", override=8) == 8.0
    with pytest.raises(ValueError, match="unknown benchmark"):
        check_benchmark("tomato")


# --- published reference rows -------------------------------------------------------------

# Lines copied verbatim from the paper's text (shared/seeds/aot-psyphybench.txt), tab-separated
# as there: model (or a continuation cell), then F. F1, B. F1, Acc.
SEED_LINES = {
    2: ["Human\t90.0\t88.0\t89.2", "GPT-4.1\t62.5\t57.4\t60.1", "Qwen2-VL-7B\t66.7\t0.0\t50.0",
        "cosmos-reason1 7B\t31.2\t63.3\t52.1", "Gemini-2.5-pro\t65.9\t51.4\t59.9"],
    5: ["Simple\t2\t67.3\t3.76\t51.2", "Multi-step\t2\t66.7\t5.48\t50.7"],
    12: ["Human\t30\t90.0\t88.1\t89.2"],
}


@pytest.mark.parametrize("table", sorted(SEED_LINES))
def test_reference_cells_match_the_paper_text(table):
    rows = reference.published_reference(table)
    printed = {(r.f1_forward_pct, r.f1_backward_pct, r.accuracy_pct) for r in rows.itertuples()}
    for line in SEED_LINES[table]:
        values = tuple(float(v) for v in line.split("\t")[-3:])
        assert values in printed, f"Table {table}: {line!r}"


def test_reference_spot_checks():
    ref = reference.published_reference()
    def cell(table, **where):
        hit = ref[ref["table"] == table]
        for column, value in where.items():
            hit = hit[hit[column] == value]
        assert len(hit) == 1, (table, where)
        return tuple(hit.iloc[0][["f1_forward_pct", "f1_backward_pct", "accuracy_pct"]])
    # Table 3: "GPT-4o ... 2  66.8  4.61  50.7"; Table 4: "Gemini-2.5-pro Low 67.2 52.1 61.1".
    assert cell(3, model="GPT-4o", shots=2) == (66.8, 4.61, 50.7)
    assert cell(4, model="Gemini-2.5-pro", effort="low") == (67.2, 52.1, 61.1)
    # Table 6: "Qwen2.5VL-7B Training ... 3000  54.5  43.4  49.5".
    assert cell(6, model_key="qwen2.5-vl-7b", train_size=3000) == (54.5, 43.4, 49.5)
    # Table 7: "GPT-4.1  30  64.4  55.9  60.6".
    assert cell(7, model="GPT-4.1", fps=30) == (64.4, 55.9, 60.6)
    # Table 1: "(6) Reciprocal ... 71.6/38.5  148  No".
    reciprocal = ref[(ref["table"] == 1) & (ref["category"] == "Reciprocal")].iloc[0]
    assert (reciprocal.f1_forward_pct, reciprocal.f1_backward_pct, reciprocal.n_clips) \
        == (71.6, 38.5, 148)
    assert pd.isna(cell(2, model="Random")[0])  # printed as a dash


def test_every_reference_row_is_labelled_published_with_its_table():
    ref = reference.published_reference()
    assert set(ref["table"]) == set(range(1, 13))
    assert (ref["source"] == "published").all()
    assert (ref["label"] == "published, not measured").all()
    assert all(c.endswith(f"Table {t}.") and "Matta" in c
               for c, t in zip(ref["citation"], ref["table"]))
    assert len(reference.published_reference(1)) == 6
    assert len(reference.published_reference([2])) == 13
    with pytest.raises(ValueError, match="tables must be among 1-12"):
        reference.published_reference(13)


def test_later_results_are_published_rows_with_their_own_citation():
    # Han et al. 2026, arXiv:2605.07568, abstract: "surpassing human performance on AoT_PPB
    # with 98.1% accuracy"; the abstract gives no F1.
    later = reference.later_results()
    row = later.set_index("model_key").loc["han-2026-video-llm"]
    assert (row.accuracy_pct, row.label, row.setting) == (98.1, "published, not measured", "sft")
    assert pd.isna(row.f1_forward_pct) and pd.isna(row.table)
    assert "arXiv:2605.07568" in row.citation and "abstract only" in row.note
    table = reference.reference_beside_measured(tables=2)
    assert "han-2026-video-llm" in set(table["model_key"])
    assert list(table["table"].dropna().unique()) == [2]  # whole table numbers, not 2.0
    without = reference.reference_beside_measured(tables=2, later=False)
    assert "han-2026-video-llm" not in set(without["model_key"])


def test_reference_beside_measured_puts_an_always_forward_model_next_to_qwen2_vl():
    from analysis.aot import aot_metrics

    items = protocol.setting_items("zero-shot")
    trials = pd.DataFrame({"trial_type": "aot", "correct_response": [i.answer for i in items],
                           "response": "F"})
    metrics = aot_metrics(trials)
    measured = metrics.assign(model="Qwen/Qwen2-VL-7B-Instruct", setting="zero-shot")
    table = reference.reference_beside_measured(measured, tables=2, settings=["zero-shot"])
    rows = table[table["model_key"] == "qwen2-vl-7b"]
    assert list(rows["label"]) == ["published, not measured", "measured"]
    # AoT-PsyPhyBENCH Table 2: an always-F model -> F1_F 66.7, F1_B 0.0, acc 50.0.
    measured_row = rows.iloc[1]
    assert round(measured_row.f1_forward_pct, 1) == 66.7
    assert (measured_row.f1_backward_pct, measured_row.accuracy_pct, measured_row.n_trials) \
        == (0.0, 50.0, 424)
    with pytest.raises(ValueError, match="proportions"):
        reference.reference_beside_measured(measured.assign(accuracy=50.0))
    with pytest.raises(ValueError, match="missing"):
        reference.reference_beside_measured(measured.drop(columns="setting"))


# --- matching a researcher's videos -------------------------------------------------------

def test_plan_reports_missing_videos_by_id_and_verifies_supplied_reversals(tmp_path):
    present = ["00001", "00005", "00058"]
    folder = write_benchmark_videos(tmp_path / "videos", present, reversed_ids=["00005"])
    (folder / "holiday.mp4").write_bytes(b"")
    plan = plan_import(folder)
    assert [s.clip_key for s in plan.specs] == present
    assert len(plan.missing) == 209
    reasons = {m.clip_id: m.reason for m in plan.missing}
    assert all("no_video_found" in reasons[c] for c in NO_VIDEO_IDS)
    assert reasons["00006"] == "00006.mp4 not found"
    assert plan.verified_reversals == ["00005"]
    assert plan.ignored_files == ["holiday.mp4"]
    spec = plan.specs[0]
    assert spec.params["item_id_forward"] == "00001"
    assert spec.params["item_id_backward"] == "00001_rev"
    assert spec.categories == ["Fall", "Diffusion"] and spec.split == "test"
    assert plan.specs[1].params["supplied_reversal"]["alignment_check"]["frames"] == 10


def test_a_wrong_reversed_file_is_rejected_naming_its_id(tmp_path):
    folder = write_benchmark_videos(tmp_path / "videos", ["00001", "00005"],
                                    reversed_ids=["00001"], wrong_reversed_ids=["00005"])
    with pytest.raises(ReversalMismatch, match=r"00005_rev: 00005_rev\.mp4 is not a frame-exact "
                                               r"reversal of 00005\.mp4"):
        plan_import(folder)
    with pytest.raises(ReversalMismatch, match="00001_rev.*frame arrays differ"):
        verify_reversal(folder / "00001.mp4", _truncated(folder), "00001_rev")


def test_flip_check_tolerates_another_encoder_but_not_a_shifted_copy():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (32, 48, 3)).astype(np.uint8)
    forward = np.stack([np.roll(base, 2 * t, axis=1) for t in range(12)])
    # Another encoder's copy: every pixel off by a few grey levels.
    noise = rng.integers(-6, 7, forward.shape)
    reencoded = np.clip(forward[::-1].astype(int) + noise, 0, 255).astype(np.uint8)
    assert flip_check(forward, reencoded)["frames"] == 12
    shifted = np.concatenate([forward[::-1][1:], forward[:1]])  # off by one frame
    with pytest.raises(media.MediaError, match="match other source frames better"):
        flip_check(forward, shifted)
    static = np.repeat(forward[:1], 12, axis=0)  # no motion: any order is the same film
    assert flip_check(static, static)["mad_max"] == 0.0


def _truncated(folder):
    """A reversed copy one frame short: the flip check must say the frame counts differ."""
    from tests.experiments.benchmark_videos import FPS, ramp_frames

    path = folder / "short.mp4"
    media.encode_browser_mp4(ramp_frames()[::-1][:-1].copy(), path, fps=FPS)
    return path


def test_plan_over_the_full_list_gives_212_clips_and_424_item_ids(tmp_path):
    clips = bench.read_metadata().clips
    folder = write_benchmark_videos(tmp_path / "videos", [c.clip_id for c in clips])
    plan = plan_import(folder)
    assert len(plan.specs) == 212 and plan.missing == []
    ids = {s.params[k] for s in plan.specs for k in ("item_id_forward", "item_id_backward")}
    assert ids == {i.item_id for i in bench.read_items()}
    counts = collections.Counter(c for s in plan.specs for c in s.categories)
    assert counts == {"Fall": 70, "Proceed": 64, "Put": 51, "Diffusion": 44, "Division": 23}
    with pytest.raises(ValueError, match="not a folder"):
        plan_import(tmp_path / "nowhere")
