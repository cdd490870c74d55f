"""``manage.py analyze`` and ``manage.py report`` through Flask's CLI runner."""
import json

import numpy as np

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
    assert "Wrote" in result.output and "subsample" in result.output
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


def _store_study(app, slug, n_subjects=6, n_trials=30):
    """People's arrow-of-time trials written straight into the data model."""
    from webapp.extensions import db
    from webapp.models import Experiment, Session, Subject, Trial

    rng = np.random.default_rng(0)
    with app.app_context():
        exp = Experiment(slug=slug, title="t", design="aot", stimulus_set="s")
        db.session.add(exp)
        for s in range(n_subjects):
            subject = Subject(experiment=exp, kind="human", external_id=f"p{s}")
            session = Session(subject=subject, token=f"tok{s}", seed=s)
            db.session.add_all([subject, session])
            for i in range(n_trials):
                backward = bool(rng.random() < 0.5)
                answer = "F" if rng.random() < (0.4 if backward else 0.9) else "B"
                truth = "B" if backward else "F"
                db.session.add(Trial(session=session, client_uuid=f"{s}-{i}", trial_index=i,
                                     trial_type="aot", block="main",
                                     direction="backward" if backward else "forward",
                                     correct_response=truth, response=answer,
                                     correct=answer == truth, rt_ms=float(rng.uniform(400, 900)),
                                     excluded=s == 0, exclusion_reasons=["practice_gate"] * (s == 0)))
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
