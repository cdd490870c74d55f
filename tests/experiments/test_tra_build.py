"""`manage.py stimuli generate --set tra`: a handful of clips, checked, stored, resumable."""
import pytest

pytest.importorskip("pybullet")

from sqlalchemy import select  # noqa: E402

from experiments.synthetic import tra_bullet as tb  # noqa: E402
from webapp.extensions import db  # noqa: E402
from webapp.models import SourceClip  # noqa: E402


def _stored(app):
    with app.app_context():
        clips = db.session.scalars(select(SourceClip).where(SourceClip.stimulus_set == "tra")).all()
        return {c.clip_key: (c.frame_count, c.width, c.height, c.params,
                             {s.direction: s.meta for s in c.stimuli if s.kind == "clip"},
                             sorted(s.id for s in c.stimuli)) for c in clips}


def _generate(app, runner, *args):
    with app.app_context():  # manage.py's FlaskGroup pushes one; the test runner does not
        return runner.invoke(args=["stimuli", "generate", "--set", "tra", *args])


def test_build_checks_reversals_and_resumes(app, runner, monkeypatch):
    seed = app.config["SYNTHETIC_SEED"]
    result = _generate(app, runner, "--limit", "2", "--workers", "2")  # the render pool
    assert result.exit_code == 0, result.output
    first = _stored(app)
    assert len(first) == 2
    for frames, width, height, params, clips, _ in first.values():
        assert (frames, width, height) == (48, 256, 256)
        assert params["seed"] == seed and params["generator"] == tb.GENERATOR_VERSION
        assert {"forward", "backward"} <= set(clips)
        assert clips["backward"]["alignment_check"]  # decoded backward k == forward N-1-k

    # a build killed after rendering its third source: the resumed build must not render again
    job = tb.tra_jobs(seed)[2]
    sources = app.config["STIMULUS_ROOT"] + f"/.sources/tra-{seed}"
    tb.render_source(job, sources)
    monkeypatch.setattr(tb, "render", lambda params: pytest.fail("rendered a finished clip"))
    result = _generate(app, runner, "--limit", "3", "--workers", "1")
    assert result.exit_code == 0, result.output
    assert "Stored 1 clips" in result.output and "2 already there" in result.output
    second = _stored(app)
    assert set(second) == set(first) | {job["clip_key"]}
    assert all(second[key][5] == first[key][5] for key in first)  # untouched rows

    result = _generate(app, runner, "--limit", "3")
    assert "nothing to do" in result.output
