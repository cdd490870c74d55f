"""``manage.py analyze`` and ``manage.py report`` through Flask's CLI runner."""
import json
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import loading, simulate


def test_analyze_writes_report_from_csv(runner, tmp_path):
    spec = simulate.StudySpec(n_participants=12, trials_per_participant=40, n_clips=30,
                              models={"m": simulate.Observer(d_prime=0.5, criterion=1.0)})
    trials = tmp_path / "trials.csv"
    loading.write_trials_csv(simulate.simulate_study(spec, np.random.default_rng(0)), trials)
    out = tmp_path / "out"
    result = runner.invoke(args=["analyze", "--trials", str(trials), "--out", str(out),
                                 "--n-boot", "50", "--models", "m"])
    assert result.exit_code == 0, result.output
    assert "Wrote" in result.output and "Log-RT mixed model" in result.output
    assert (out / "report.html").is_file() and (out / "tables" / "aot_overall.csv").is_file()
    assert json.loads((out / "metrics.json").read_text())["models"] == ["m"]


def test_analyze_reports_bad_input_cleanly(runner, tmp_path):
    result = runner.invoke(args=["analyze", "--trials", str(tmp_path / "nope.csv"),
                                 "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "not found" in result.output
    bad = tmp_path / "bad.csv"
    bad.write_text("subject_id,response\nx,F\n")
    result = runner.invoke(args=["analyze", "--trials", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "lacks required column" in result.output


def test_report_unknown_study_is_a_usage_error(runner, tmp_path):
    result = runner.invoke(args=["report", "no-such-study", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "no study" in result.output


def _store_study(app, slug, n_subjects=6, n_trials=30, statuses=None, p_correct=None):
    """People's arrow-of-time trials on 10 clips (both directions), written straight into
    the data model. Sessions are completed unless ``statuses`` (one per subject) says
    otherwise; answers lean to "F" unless ``p_correct`` fixes the chance of a right one."""
    from webapp.extensions import db
    from webapp.models import Session, SourceClip, Stimulus, Study, Subject, Trial

    rng = np.random.default_rng(0)
    statuses = statuses or ["completed"] * n_subjects
    with app.app_context():
        exp = Study(slug=slug, title="t", design="arrow-of-time", stimulus_set=slug)
        db.session.add(exp)
        stimuli = {}
        for c, category in enumerate(["Fall", "Proceed", "Diffusion", "Put", "Division"] * 2):
            clip = SourceClip(stimulus_set=slug, clip_key=f"clip-{c}", categories=[category],
                              duration_s=3.0, fps=30.0, frame_count=90, width=64, height=48)
            for direction in ("forward", "backward"):
                stimuli[c, direction] = Stimulus(
                    public_id=f"{slug}-{c}-{direction}", source_clip=clip, kind="clip",
                    direction=direction, path=f"{c}/{direction}.mp4", sha256="0" * 64)
        db.session.add_all(stimuli.values())
        for s, status in enumerate(statuses):
            subject = Subject(study=exp, kind="human", external_id=f"p{s}")
            session = Session(subject=subject, token=f"{slug}-tok{s}", seed=s, status=status)
            db.session.add_all([subject, session])
            for i in range(n_trials):
                backward = bool(rng.random() < 0.5)
                direction = "backward" if backward else "forward"
                truth = "B" if backward else "F"
                if p_correct is None:
                    answer = "F" if rng.random() < (0.4 if backward else 0.9) else "B"
                else:
                    answer = truth if rng.random() < p_correct else "FB".replace(truth, "")
                db.session.add(Trial(session=session, client_uuid=f"{slug}-{s}-{i}",
                                     trial_index=i, trial_type="aot", block="main",
                                     stimulus=stimuli[i % 10, direction], direction=direction,
                                     correct_response=truth, response=answer,
                                     correct=answer == truth, rt_ms=float(rng.uniform(400, 900)),
                                     excluded=s == 0,
                                     exclusion_reasons=["practice_gate"] * (s == 0)))
        db.session.commit()


def test_report_reads_the_study_from_the_database(app, runner, tmp_path):
    _store_study(app, "demo")
    out = tmp_path / "out"
    result = runner.invoke(args=["report", "demo", "--out", str(out), "--n-boot", "50"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_participants_entered"] == 6 and metrics["n_participants_included"] == 5
    human = metrics["observers"]["human"]["full"]
    assert human["forward_share"] > 0.6  # the stored answers lean to "F"


def test_analyze_reads_what_export_writes(app, runner, tmp_path):
    _store_study(app, "exported")
    export_dir = tmp_path / "export"
    result = runner.invoke(args=["export", "exported", "--out", str(export_dir)])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    result = runner.invoke(args=["analyze", "--trials", str(export_dir / "trials.csv"),
                                 "--out", str(out), "--n-boot", "50"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_trials_entered"] == 6 * 30 and metrics["n_participants_included"] == 5


def _section(html: str, section_id: str) -> str:
    start = html.index(f'<section id="{section_id}">')
    return html[start:html.index("</section>", start)]


def _flow(out) -> dict:
    flow = pd.read_csv(out / "tables" / "exclusion_flow.csv")
    return flow.set_index("step").to_dict("index")


def test_unfinished_sessions_are_left_out_by_a_stated_rule(app, runner, tmp_path):
    """The report said '12 of 14 participants' with an in-progress session among them."""
    _store_study(app, "live", statuses=["completed"] * 4 + ["in_progress"])  # p0: gate
    out = tmp_path / "out"
    result = runner.invoke(args=["report", "live", "--out", str(out), "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    assert "Analysed 3 of 5 participants, 90 of 150 trials (completed sessions only" \
        in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["sessions"] == {"sessions": "completed", "rule": "completed sessions only",
                                   "n_sessions_left_out": 1, "n_trials_left_out": 30,
                                   "statuses_left_out": {"in_progress": 1}}
    flow = _flow(out)
    assert flow["session_not_completed"]["n_participants_removed"] == 1
    assert flow["session_not_completed"]["n_trials_removed"] == 30
    assert flow["remaining"]["n_participants_remaining"] == 3
    html = (out / "report.html").read_text()
    assert "3 of 5 participants and 90 of 150 trials analysed (completed sessions only" in html
    assert "Sessions analysed: completed sessions only (--sessions completed)" in html

    every = tmp_path / "every"
    result = runner.invoke(args=["report", "live", "--out", str(every), "--n-boot", "20",
                                 "--sessions", "all"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((every / "metrics.json").read_text())
    assert metrics["n_participants_included"] == 4 and metrics["sessions"]["rule"] == \
        "every session"
    assert "session_not_completed" not in _flow(every)


def test_analyze_applies_the_session_rule_to_the_export(app, runner, tmp_path):
    _store_study(app, "exported-live", statuses=["completed"] * 3 + ["stopped"])
    export = tmp_path / "export"
    assert runner.invoke(args=["export", "exported-live", "--out", str(export)]).exit_code == 0
    for rule, included in (("completed", 2), ("all", 3)):
        out = tmp_path / rule
        result = runner.invoke(args=["analyze", "--trials", str(export / "trials.csv"),
                                     "--out", str(out), "--n-boot", "20", "--sessions", rule])
        assert result.exit_code == 0, result.output
        assert json.loads((out / "metrics.json").read_text())["n_participants_included"] \
            == included


def test_a_table_without_session_status_needs_sessions_all(runner, tmp_path):
    trials = tmp_path / "old.csv"
    spec = simulate.StudySpec(n_participants=3, trials_per_participant=20, n_clips=10)
    loading.write_trials_csv(simulate.simulate_study(spec, np.random.default_rng(0))
                             .drop(columns="session_status"), trials)
    args = ["analyze", "--trials", str(trials), "--out", str(tmp_path / "o"), "--n-boot", "20"]
    result = runner.invoke(args=args)
    assert result.exit_code == 2 and "no session_status" in result.output \
        and "--sessions all" in result.output
    assert runner.invoke(args=[*args, "--sessions", "all"]).exit_code == 0


def test_a_failed_fit_leaves_its_reason_and_the_report_is_written(app, runner, tmp_path):
    """Everyone 100% correct: the log-RT model's design is singular."""
    _store_study(app, "perfect", n_subjects=6, p_correct=1.0)  # p0 fails the gate
    out = tmp_path / "out"
    result = runner.invoke(args=["report", "perfect", "--out", str(out), "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    reason = metrics["rt_lmm"]["failed"]
    assert reason.startswith("LinAlgError: ") and "singular" in reason.lower()
    assert metrics["observers"]["human"]["full"]["accuracy"] == 1.0
    # The GLMM gave "ValueError: zero-size array to reduction ..."; the real reason:
    glmm = next(v["failed"] for k, v in metrics.items()
                if isinstance(v, dict) and "glmm" in k and "failed" in v)
    assert glmm.startswith("SeparationError: no errors: all ") and "answered correctly" in glmm
    html = (out / "report.html").read_text()
    assert f"Not computed: {reason}" in _section(html, "rt")
    assert (out / "tables" / "rt_median.csv").is_file()
    assert not (out / "tables" / "rt_lmm.csv").exists()


def test_report_rejects_a_stored_value_outside_the_codebook(app, runner, tmp_path):
    from webapp.extensions import db
    from webapp.models import Trial

    _store_study(app, "typo")
    with app.app_context():
        trial = db.session.query(Trial).filter_by(trial_index=3).order_by(Trial.id).first()
        trial.response = trial.response.lower()
        session_id = trial.session_id
        db.session.commit()
    result = runner.invoke(args=["report", "typo", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert f"(session_id {session_id}, trial_index 3), column 'response'" in result.output
    assert "allowed: 'F', 'B' or empty for trial_type 'aot'" in result.output


def test_n_boot_help_says_how_intervals_resample(runner):
    # It said "clip-clustered" after people's intervals moved to the two-way bootstrap.
    for command in ("analyze", "report"):
        result = runner.invoke(args=[command, "--help"])
        assert "clip-clustered" not in result.output
        assert "two-way" in result.output


def test_analyze_runs_without_a_secret_key_or_database(app, runner, tmp_path):
    # `analyze` reads a CSV: a statistician given an export has no app to configure.
    import os
    import subprocess
    import sys

    _store_study(app, "keyless")
    export_dir = tmp_path / "export"
    assert runner.invoke(args=["export", "keyless", "--out", str(export_dir)]).exit_code == 0
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CHRONOSCOPE_") and k != "FLASK_APP"}
    env["CHRONOSCOPE_INSTANCE_PATH"] = str(tmp_path / "empty-instance")
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, str(repo / "manage.py"), "analyze", "--trials",
                             str(export_dir / "trials.csv"), "--out", str(tmp_path / "out"),
                             "--n-boot", "20"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "metrics.json").exists()
