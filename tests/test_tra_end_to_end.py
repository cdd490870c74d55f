"""The researcher's TRA path, README commands only, from sweep clips to the three-way figure.

``stimuli generate`` (the built-in set: its 17 TRA sweep clips; the PyBullet ``--set tra``
takes ~6 s a clip here and a TRA peak fit needs 4 levels a sweep, i.e. ``--limit 24``: too
slow for a test, walked by hand instead), ``study create --from`` the shipped ``tra-sweep``
study file (``repeats_per_direction`` lowered so the simulated people are quick), simulated
people through the participant HTTP API (as ``bench/export_equivalence.py`` drives it),
``run-models`` with a tiny random Qwen2.5-VL scored from its logits in both label orders,
``probe tra`` with a tiny random V-JEPA 2, then ``report STUDY --tra FILE``.
"""
import math
import random
import re
import uuid
from pathlib import Path

import pandas as pd
import pytest

from webapp.extensions import db
from webapp.models import Session

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
STUDY = "tra-e2e"
PEOPLE = 4
# Simulated people: P(correct) falls from 1 to chance along each sweep (cumulative normal;
# clip-key letter -> threshold, sd, sign); restitution is easier low, damping easier high.
OBSERVER = {"e": (0.5, 0.2, -1.0), "r": (0.5, 0.2, -1.0), "d": (2.0, 1.0, 1.0)}
KEY = re.compile(r"-(?P<letter>[erd])(?P<level>\d+\.\d+)(-r\d+)?$")


def p_correct(clip_key: str | None) -> float:
    """A simulated person's chance of answering a clip right (practice clips: 0.95)."""
    match = KEY.search(clip_key or "")
    if match is None:
        return 0.95
    threshold, sd, sign = OBSERVER[match["letter"]]
    z = sign * (float(match["level"]) - threshold) / sd
    return 0.5 + 0.25 * (1 + math.erf(z / math.sqrt(2)))


def run_people(app, slug: str, n: int, seed: int = 0) -> list[str]:
    """``n`` simulated people through consent, device check, practice, main blocks, completion."""
    client = app.test_client()
    statuses = []
    for i in range(n):
        rng = random.Random(f"{seed}/{i}")
        entry = client.get(f"/p/{slug}", query_string={"participant": f"sim{seed}-{i:02d}"})
        assert entry.status_code == 303, entry.get_data(as_text=True)
        token = entry.headers["Location"].rstrip("/").rsplit("/", 1)[-1]
        api, tab = f"/api/session/{token}", f"tab-{i}"
        _ok(client.post(f"{api}/consent", json={"consent": True}))
        _ok(client.post(f"{api}/device", json={
            "user_agent": "TraEndToEnd/1.0", "screen_w": 1920, "screen_h": 1080,
            "window_w": 1600, "window_h": 1000, "refresh_hz": 60.0, "device_pixel_ratio": 1.0,
            "touch": False, "video_check_ok": True}))
        _ok(client.post(f"{api}/claim", json={"client": tab}))
        with app.app_context():
            schedule = {t["trial_index"]: t for t in
                        db.session.query(Session).filter_by(token=token).one().schedule}
        while True:
            state = _ok(client.get(api)).get_json()
            if state["status"] not in ("started", "in_progress"):
                break
            index = state["next_trial_index"]
            shown = next((t for t in state["trials"] if t["trial_index"] == index), None)
            if shown is None:
                break
            body = _answer(schedule[index], state["key_mapping"], rng)
            _ok(client.post(f"{api}/trials?client={tab}",
                            json={**body, "trial_type": shown["trial_type"]}))
        if state["status"] == "in_progress":
            _ok(client.post(f"{api}/complete?client={tab}"))
        statuses.append(_ok(client.get(api)).get_json()["status"])
    return statuses


def _ok(response):
    assert response.status_code < 300, (response.request.path, response.get_data(as_text=True))
    return response


def _answer(trial: dict, key_mapping: dict, rng: random.Random) -> dict:
    keys = {label: key for key, label in key_mapping.items()}
    if trial["trial_type"] == "catch":
        key = trial["instructed_key"]
    else:
        right = trial["correct_response"]
        wrong = "F" if right == "B" else "B"
        key = keys[right if rng.random() < p_correct(trial["clip_key"]) else wrong]
    rt, onset = round(rng.uniform(450, 1400), 3), 10000.0 + 4000 * trial["trial_index"]
    return {"client_uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "trial_index": trial["trial_index"], "trial_type": trial["trial_type"],
            "rt_ms": rt, "timed_out": False, "response": key_mapping[key], "key": key,
            "onset_method": "raf", "onset_callbacks": [], "onset_time_ms": onset,
            "key_time_ms": onset + rt, "dropped_frames": 0, "total_frames": 48,
            "stalls": 0, "stall_ms": 0.0, "frames_total": 48, "frames_shown": 48,
            "frames_late": 0, "frames_dropped": 0, "frame0_hold_refreshes": 1,
            "refresh_ms": 16.667, "focus_lost": False, "fullscreen_exited": False}


@pytest.fixture
def tiny_folders(tmp_path_factory, monkeypatch):
    """A tiny random Qwen2.5-VL and V-JEPA 2, saved as checkpoint folders (read offline)."""
    import torch
    from transformers import VJEPA2Config, VJEPA2Model

    from analysis.vlm.tiny import build_vlm

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    vlm, vjepa2 = tmp_path_factory.mktemp("qwen"), tmp_path_factory.mktemp("vjepa2")
    build_vlm("qwen2_5_vl", vlm)
    torch.manual_seed(0)
    VJEPA2Model(VJEPA2Config(
        patch_size=8, crop_size=32, frames_per_clip=16, tubelet_size=2, hidden_size=48,
        num_attention_heads=4, num_hidden_layers=2, mlp_ratio=2.0, pred_hidden_size=48,
        pred_num_attention_heads=4, pred_num_hidden_layers=2, pred_num_mask_tokens=4,
    )).save_pretrained(vjepa2)
    return str(vlm), str(vjepa2)


def _cli(app, runner, *args):
    with app.app_context():  # manage.py's FlaskGroup pushes one; the test runner does not
        result = runner.invoke(args=list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result.output


def test_readme_path_ends_in_the_three_way_figure(app, runner, tmp_path, tiny_folders):
    vlm, vjepa2 = tiny_folders
    _cli(app, runner, "stimuli", "generate")
    study_file = tmp_path / "tra-sweep.toml"
    shipped = (ROOT / "experiments/studies/tra-sweep.toml").read_text("utf-8")
    study_file.write_text(shipped.replace("catch_per_block = 1", "catch_per_block = 1\n"
                                          "repeats_per_direction = 2"), "utf-8")
    _cli(app, runner, "study", "create", STUDY, "--from", str(study_file))
    _cli(app, runner, "study", "open", STUDY)
    assert run_people(app, STUDY, PEOPLE) == ["completed"] * PEOPLE
    _cli(app, runner, "run-models", "--study", STUDY, "--model", vlm, "--scoring", "logits",
         "--label-orders", "FB,BF", "--device", "cpu", "--no-progress")
    probed = _cli(app, runner, "probe", "tra", "--kind", "vjepa2", "--model", vjepa2, "--study",
                  STUDY, "--context", "12", "--no-progress")
    tra_csv = re.search(r"--tra (\S+)", probed)[1]
    out = tmp_path / "report"
    _cli(app, runner, "report", STUDY, "--out", str(out), "--tra", tra_csv)

    html = (out / "report.html").read_text("utf-8")
    assert "Arrow of time over the TRA sweeps" in html
    curves = pd.read_csv(out / "tables" / "tra_sweep_curves.csv")
    for scenario in ("bouncing_ball", "pendulum"):
        drawn = curves[(curves["scenario"] == scenario) & curves["value_normalised"].notna()]
        assert {"people", "vlm", "self_supervised"} <= set(drawn["observer_kind"]), scenario
        title = scenario.replace("_", " ")
        assert f"Arrow of time over the {title} sweep: people, VLMs and self-supervised" in html
    fits = pd.read_csv(out / "tables" / "tra_sweep_fits.csv")
    published = fits[fits["source"] == "published"]
    assert set(published["scenario"]) >= {"bouncing_ball", "pendulum"}
    assert sorted(published["peak_tra_pct"]) == [0.01, 0.27, 0.68]  # TRA paper, as issue 20
    assert set(fits["source"]) == {"measured", "published"}
    # the figure itself: one trace per kind of observer, the published peaks, the caption
    for text in ("people (pooled)", "(TRA, context 12)", "published V-JEPA 2 peak",
                 "rescaled to [0, 1]"):
        assert text in html, text
