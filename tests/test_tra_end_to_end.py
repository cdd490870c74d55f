"""The researcher's TRA path, the documented commands only (docs/researcher-guide.md), from sweep clips to the three-way figure.

On the PyBullet set the TRA analysis is validated on: ``stimuli generate --set tra --limit
30`` (round-robin over the six groups: 5 levels of each sweep, what a TRA peak fit needs),
``study create --from`` the shipped ``tra-sweep-pybullet`` study file (``stimulus_set =
"tra"``, ``repeats_per_direction = 1``) with its blocks lowered from 8 to 2, simulated people through the
participant HTTP API (as ``bench/export_equivalence.py`` drives it), ``run-models`` with a
tiny random Qwen2.5-VL scored from its logits in both label orders, ``probe tra`` with a tiny
random V-JEPA 2, then ``report STUDY --out DIR --tra FILE``. The built-in set, the fast
default, keeps a shorter walk: the shipped study file as it is (``repeats_per_direction``
lowered) to the people's curves in the report. Both walks share one database, as a
researcher's instance holding both sets would, so the catch videos are built once.
"""
import collections
import math
import random
import re
import uuid
from pathlib import Path

import pandas as pd
import pytest

from tests.factories import make_app, preload
from webapp.extensions import db
from webapp.models import Session

# Sessions at a person's pace (tests/factories.py): the plausibility rules judge them.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("person_pace")]

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "experiments/studies/tra-sweep.toml"
STUDY, BUILTIN_STUDY = "tra-e2e", "tra-builtin"
PEOPLE = 24  # ~0.2 s each; 48 trials a level pin the pooled threshold to within a level
SCENARIOS = ("bouncing_ball", "pendulum")
# Simulated people: P(correct) falls from 1 to chance along each sweep (cumulative normal;
# scenario -> threshold, sd, sign), inside the 5 levels a --limit 30 build holds (restitution
# 0.1-0.5, damping 0.0-2.0); restitution is easier low, damping easier high.
OBSERVER = {"bouncing_ball": (0.25, 0.1, -1.0), "pendulum": (0.75, 0.3, 1.0)}
STEP = {"bouncing_ball": 0.1, "pendulum": 0.5}  # between levels of each sweep
# Sweep clip keys: PyBullet "sweep-bouncing_ball-r0.5-r03", "sweep-pendulum-d2.0-r01"
# (experiments/synthetic/tra_bullet.tra_jobs); built-in "tra-bounce-e0.5", "tra-pendulum-d2.0".
KEY = re.compile(r"-(?P<scenario>bouncing_ball|bounce|pendulum)-[erd](?P<level>\d+\.\d+)"
                 r"(-r\d+)?$")


def p_correct(clip_key: str | None, observer: dict = OBSERVER) -> float:
    """A simulated person's chance of answering a clip right (practice clips: 0.95)."""
    match = KEY.search(clip_key or "")
    if match is None:
        return 0.95
    scenario = {"bounce": "bouncing_ball"}.get(match["scenario"], match["scenario"])
    threshold, sd, sign = observer[scenario]
    z = sign * (float(match["level"]) - threshold) / sd
    return 0.5 + 0.25 * (1 + math.erf(z / math.sqrt(2)))


def run_people(app, slug: str, n: int, seed: int = 0, observer: dict = OBSERVER) -> list[str]:
    """``n`` simulated people (P(correct) from ``observer``, as :data:`OBSERVER`) through
    consent, device check, practice, main blocks and completion."""
    client = app.test_client()
    statuses = []
    for i in range(n):
        drawn = collections.Counter()
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
        preload(client, api)  # as the runner does (the plausibility rules check it)
        while True:
            state = _ok(client.get(api)).get_json()
            if state["status"] not in ("started", "in_progress"):
                break
            index = state["next_trial_index"]
            shown = next((t for t in state["trials"] if t["trial_index"] == index), None)
            if shown is None:
                break
            trial = _schedule(app, token)[index]
            # Each answer is drawn for its clip, direction and repeat, not in schedule order:
            # the order is the session's own random draw, and answers that followed it made
            # the fits (and whether the built-in walk's 2 people got a curve) vary run to run.
            draw = (trial["trial_type"], trial["clip_key"], trial.get("correct_response"))
            drawn[draw] += 1
            rng = random.Random(f"{seed}/{i}/{draw}/{drawn[draw]}")
            body = _answer(trial, state["key_mapping"], rng, observer)
            _ok(client.post(f"{api}/trials?client={tab}",
                            json={**body, "trial_type": shown["trial_type"]}))
        if state["status"] == "in_progress":
            _ok(client.post(f"{api}/complete?client={tab}"))
        statuses.append(_ok(client.get(api)).get_json()["status"])
    return statuses


def _schedule(app, token: str) -> dict:
    """The session's trials by index, read afresh: a failed practice attempt inserts another
    and renumbers the trials after it."""
    with app.app_context():
        return {t["trial_index"]: t for t in
                db.session.query(Session).filter_by(token=token).one().schedule}


def _ok(response):
    assert response.status_code < 300, (response.request.path, response.get_data(as_text=True))
    return response


def _answer(trial: dict, key_mapping: dict, rng: random.Random, observer: dict) -> dict:
    keys = {label: key for key, label in key_mapping.items()}
    if trial["trial_type"] == "catch":
        key = trial["instructed_key"]
    else:
        right = trial["correct_response"]
        wrong = "F" if right == "B" else "B"
        key = keys[right if rng.random() < p_correct(trial["clip_key"], observer) else wrong]
    rt, onset = round(rng.uniform(450, 1400), 3), 10000.0 + 4000 * trial["trial_index"]
    return {"client_uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "trial_index": trial["trial_index"], "trial_type": trial["trial_type"],
            "rt_ms": rt, "timed_out": False, "response": key_mapping[key], "key": key,
            "onset_method": "raf-next", "onset_callbacks": [], "onset_time_ms": onset,
            "key_time_ms": onset + rt, "dropped_frames": 0, "total_frames": 48,
            "stalls": 0, "stall_ms": 0.0, "frames_total": None, "frames_shown": None,
            "frames_late": 0, "frames_dropped": 0, "frame0_hold_refreshes": 1,
            "refresh_ms": 16.667, "focus_lost": False, "fullscreen_exited": False}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """One database for the module (the conftest ``app`` is one a test)."""
    folder = tmp_path_factory.mktemp("instance")
    app = make_app(folder, f"sqlite:///{folder / 'test.db'}")
    yield app
    with app.app_context():
        db.engine.dispose()


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


def _study_file(folder: Path, shipped: Path = SHIPPED, **changes: str) -> Path:
    """The ``shipped`` study file with ``key = value`` lines of its [blocks] section replaced
    or added (``count`` is also a key of [sessions], left as it is)."""
    head, _, rest = shipped.read_text("utf-8").partition("[blocks]\n")
    blocks, section, tail = rest.partition("\n[")
    for key, value in changes.items():
        line = re.compile(rf"^{key} = .*$", re.M)
        blocks = (line.sub(f"{key} = {value}", blocks) if line.search(blocks) else
                  f"{key} = {value}\n{blocks}")
    path = folder / shipped.name
    path.write_text(f"{head}[blocks]\n{blocks}{section}{tail}", "utf-8")
    return path


def _drawn(curves: pd.DataFrame, scenario: str) -> set:
    return set(curves[(curves["scenario"] == scenario)
                      & curves["value_normalised"].notna()]["observer_kind"])


def test_readme_path_on_the_pybullet_set_ends_in_the_three_way_figure(app, runner, tmp_path,
                                                                        tiny_folders):
    vlm, vjepa2 = tiny_folders
    _cli(app, runner, "stimuli", "generate", "--set", "tra", "--limit", "30")
    # the shipped study file for the PyBullet set, its 20 main trials in 2 blocks rather than
    # 8: each block's catch trial has a video rendered for the session (0.5 s each), and the
    # trials, so every count the report fits, stay the same (every shipped file is validated
    # as it is in tests/webapp/test_study_file_cli.py)
    study_file = _study_file(tmp_path, SHIPPED.with_name("tra-sweep-pybullet.toml"), count="2")
    _cli(app, runner, "study", "create", STUDY, "--from", str(study_file))
    _cli(app, runner, "study", "open", STUDY)
    assert run_people(app, STUDY, PEOPLE) == ["completed"] * PEOPLE
    _cli(app, runner, "run-models", "--study", STUDY, "--model", vlm, "--scoring", "logits",
         "--label-orders", "FB,BF", "--device", "cpu", "--no-progress")
    probed = _cli(app, runner, "probe", "tra", "--kind", "vjepa2", "--model", vjepa2, "--study",
                  STUDY, "--context", "12", "--no-progress")
    tra_csv = re.search(r"--tra (\S+)", probed)[1]
    assert set(pd.read_csv(tra_csv)["clip_id"]) == {
        *(f"sweep-bouncing_ball-r{r:.1f}-r00" for r in (0.1, 0.2, 0.3, 0.4, 0.5)),
        *(f"sweep-pendulum-d{d:.1f}-r00" for d in (0.0, 0.5, 1.0, 1.5, 2.0))}
    out = tmp_path / "report"
    _cli(app, runner, "report", STUDY, "--out", str(out), "--tra", tra_csv)

    html = (out / "report.html").read_text("utf-8")
    assert "Arrow of time over the TRA sweeps" in html
    curves = pd.read_csv(out / "tables" / "tra_sweep_curves.csv")
    for scenario in SCENARIOS:
        assert {"people", "vlm", "self_supervised"} <= _drawn(curves, scenario), scenario
        title = scenario.replace("_", " ")
        assert f"Arrow of time over the {title} sweep: people, VLMs and self-supervised" in html
    fits = pd.read_csv(out / "tables" / "tra_sweep_fits.csv")
    published = fits[fits["source"] == "published"]
    assert set(published["scenario"]) >= set(SCENARIOS)
    assert sorted(published["peak_tra_pct"]) == [0.01, 0.27, 0.68]  # TRA paper, as issue 20
    assert set(fits["source"]) == {"measured", "published"}
    # the pooled fit finds the simulated people's threshold within one level step: its sd
    # over samples of these people is 0.024 (ball) and 0.094 (pendulum), so this misses
    # about once in 3,000 runs (40,000 fits of simulated counts)
    people = fits[fits["observer_kind"] == "people"].set_index("scenario")["location"]
    for scenario, (threshold, _, _) in OBSERVER.items():
        assert abs(people[scenario] - threshold) <= STEP[scenario], (scenario, people[scenario])
    # the figure itself: one trace per kind of observer, the published peaks, the caption
    unwrapped = html.replace("\\u003cbr\\u003e", " ").replace("<br>", " ")
    for text in ("people (pooled)", "(TRA, context 12)", "published V-JEPA 2 peak",
                 "above-chance accuracy", "largest |level mean|"):
        assert text in unwrapped, text


def test_builtin_set_sweeps_reach_the_report(app, runner, tmp_path):
    """The fast default: the shipped study file (``repeats_per_direction`` lowered) on the
    built-in set's 17 sweep clips, one clip a motion category beside them to practise on."""
    _cli(app, runner, "stimuli", "generate", "--clips-per-category", "1")
    study_file = _study_file(tmp_path, repeats_per_direction="1")
    _cli(app, runner, "study", "create", BUILTIN_STUDY, "--from", str(study_file))
    _cli(app, runner, "study", "open", BUILTIN_STUDY)
    assert run_people(app, BUILTIN_STUDY, 2) == ["completed"] * 2
    out = tmp_path / "report"
    _cli(app, runner, "report", BUILTIN_STUDY, "--out", str(out), "--n-boot", "50")

    html = (out / "report.html").read_text("utf-8")
    assert "Arrow of time over the TRA sweeps" in html
    curves = pd.read_csv(out / "tables" / "tra_sweep_curves.csv")
    for scenario in SCENARIOS:
        assert "people" in _drawn(curves, scenario), scenario
    levels = curves[curves["observer_kind"] == "people"].groupby("scenario")["level"]
    assert levels.min().to_dict() == {"bouncing_ball": 0.1, "pendulum": 0.0}
    assert levels.max().to_dict() == {"bouncing_ball": 1.0, "pendulum": 5.0}


def test_simulated_people_read_every_sweep_key():
    from experiments.synthetic import _sweep_jobs
    from experiments.synthetic.tra_bullet import SWEEP_SPLIT, tra_jobs

    bullet = [job for job in tra_jobs(0) if job["split"] == SWEEP_SPLIT]
    for job in [*bullet, *_sweep_jobs(0)]:
        params, match = job["params"], KEY.search(job["clip_key"])
        assert match is not None, job["clip_key"]
        assert float(match["level"]) == params.get("restitution", params.get("damping"))
    assert p_correct("bouncing_ball-03") == p_correct("pendulum-17") == 0.95  # scenario clips
