"""``--backend motion``: training-free pixel statistics as observers, with no download."""
import numpy as np
import pytest
from sqlalchemy import select

from analysis.vlm.backends import load_backend
from analysis.vlm.backends.base import GenerationParams, Request
from analysis.vlm.backends.motion import STATISTICS
from analysis.vlm.sampling import Visual
from experiments.synthetic import INK
from webapp.extensions import db
from webapp.models import ModelRun, Trial
from webapp.researcher import studies


def _request(frames: np.ndarray, kind: str = "video") -> Request:
    visual = Visual(kind, frames, list(range(len(frames))), 10.0, len(frames), 10.0)
    return Request([{"role": "user", "content": [{"type": "text", "text": "F or B?"},
                                                 {"type": kind, "visual": 0}]}], [visual])


@pytest.fixture(scope="module")
def ink():
    """A built-in ink drop spreading in still water, at 10 fps."""
    return INK.render(INK.sample(np.random.default_rng([0, 2, 0])))[::3]


def test_the_entropy_observer_tells_spreading_ink_from_ink_gathering(ink):
    backend = load_backend("motion", "entropy")
    forward, backward = _request(ink), _request(ink[::-1].copy())
    generated = backend.generate([forward, backward], GenerationParams())
    assert [g.text for g in generated] == ["F", "B"]
    scores = backend.score([forward, backward], ("F", "B"))
    assert scores[0].normalised()["F"] > 0.5 > scores[1].normalised()["F"]
    assert scores[0].normalised()["F"] == pytest.approx(scores[1].normalised()["B"])
    assert backend.describe()["revision"] == "entropy-v1"


def test_a_still_clip_has_no_answer_and_frames_to_order_are_refused():
    backend = load_backend("motion", "motion-energy")
    still = np.full((6, 8, 8, 3), 90, np.uint8)
    [generation] = backend.generate([_request(still)], GenerationParams())
    assert generation.text == "no motion: cannot tell"
    [refused] = backend.generate([_request(still[:1], "image")], GenerationParams())
    assert isinstance(refused, ValueError) and "cannot order frames" in str(refused)
    [short] = backend.generate([_request(still[:2])], GenerationParams())
    assert "at least 3 frames" in str(short)
    with pytest.raises(ValueError, match=r"not one of its statistics \('entropy', 'motion-energy'\)"):
        load_backend("motion", "flow")


def test_run_models_stores_a_motion_observer_beside_people(app, runner, stimulus_set):
    with app.app_context():
        studies.create_study("tiny-study", "arrow-of-time", stimulus_set)
    args = ["run-models", "--backend", "motion", "--model", "entropy", "--study", "tiny-study",
            "--fps", "6", "--no-progress"]
    result = runner.invoke(args=args)
    assert result.exit_code == 0, result.output
    assert "4 trials (0 cached, 4 computed, 0 errors" in result.output
    assert "tokens per correct" not in result.output  # it reads no tokens: not "0 per correct"
    with app.app_context():
        trials = db.session.scalars(select(Trial)).all()
        assert {t.extra["revision"] for t in trials} == {"entropy-v1"}
        assert all(0 <= t.extra["p_forward"] <= 1 for t in trials)
        run = db.session.scalar(select(ModelRun))
        assert run.backend["kind"] == "training-free pixel statistic (not a model)"
    assert "4 cached, 0 computed" in runner.invoke(args=args).output
    assert set(STATISTICS) == {"entropy", "motion-energy"}


def test_short_clips_are_answered_or_refused_before_any_item(app, runner, stimulus_set):
    """At 1 fps a 2 s clip is 2 frames: entropy compares them; motion energy has one step,
    no two halves to compare, and is refused up front rather than failing every rerun."""
    with app.app_context():
        studies.create_study("tiny-study", "arrow-of-time", stimulus_set)
    args = ["run-models", "--backend", "motion", "--study", "tiny-study", "--fps", "1",
            "--no-progress", "--model"]
    result = runner.invoke(args=[*args, "entropy"])
    assert result.exit_code == 0, result.output
    assert "4 trials (0 cached, 4 computed, 0 errors" in result.output
    refused = runner.invoke(args=[*args, "motion-energy"])
    assert refused.exit_code != 0
    assert ("4 clips are sampled to fewer than 3 frames by --fps 1, and --backend motion "
            "--model motion-energy needs 3") in refused.output
    assert "--fps 1.05 or --n-frames 3 gives each at least 3" in refused.output
    with app.app_context():
        assert db.session.scalar(select(ModelRun).where(
            ModelRun.model == "motion-energy")) is None


def test_options_a_pixel_statistic_never_reads_do_not_split_its_run(app, runner, stimulus_set):
    """--max-new-tokens, the sampling or --annotation on an arrow-of-time motion run made
    another session and observer (outside review): none can change its answer, so none is
    part of its identity, and label orders, which would ask each clip again, are refused."""
    with app.app_context():
        studies.create_study("tiny-study", "arrow-of-time", stimulus_set)
    args = ["run-models", "--backend", "motion", "--model", "entropy", "--study", "tiny-study",
            "--fps", "6", "--no-progress"]
    assert runner.invoke(args=args).exit_code == 0
    for more in (["--max-new-tokens", "9", "--sampling", "paper"], ["--annotation", "none"]):
        result = runner.invoke(args=[*args, *more])
        assert result.exit_code == 0, result.output
        assert "Stored 0 new trials" in result.output
    with app.app_context():
        assert len(db.session.scalars(select(ModelRun)).all()) == 1
        assert len({t.session_id for t in db.session.scalars(select(Trial))}) == 1
    refused = runner.invoke(args=[*args, "--label-orders", "FB,BF"])
    assert refused.exit_code == 2
    assert "reads no prompt, so every label order gets the same answer" in refused.output


def test_a_report_of_model_subjects_alone_counts_no_participants(app, runner, stimulus_set,
                                                               tmp_path):
    """"Analysed 1 of 1 participants" was printed with no person in the study (outside
    review): the count is of model subjects, and says so."""
    with app.app_context():
        studies.create_study("tiny-study", "arrow-of-time", stimulus_set)
    assert runner.invoke(args=["run-models", "--backend", "motion", "--model", "entropy",
                               "--study", "tiny-study", "--fps", "6", "--no-progress"]
                         ).exit_code == 0
    out = tmp_path / "report"
    result = runner.invoke(args=["report", "tiny-study", "--out", str(out), "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    assert "Analysed 1 of 1 model subjects (no people's trials), 4 of 4 trials" in result.output
    assert "participants" not in result.output.split("\n")[0]
    assert "1 of 1 model subjects (no people&#39;s trials) and 4 of 4 trials analysed" in \
        (out / "report.html").read_text()
