"""Timing quality through the participant API (review 30): counts the server cannot believe
are left out, and the verdict at /complete scores what the roster shows."""
import pytest

from experiments import timing_quality
from experiments.exclusions import ExclusionRules
from tests.webapp.test_api import answer, schedule_of, start
from tests.webapp.test_technical_trials import session_and_trials as stored
from webapp.participant.progress import stored_record

pytestmark = pytest.mark.usefixtures("person_pace")


@pytest.fixture
def study(factory):
    factory.stimulus_set("tiny", per_category=2)
    factory.catch_set()
    factory.open_study(main_blocks=2, exclusions=ExclusionRules(min_timing_quality=0.9))


@pytest.mark.parametrize("forged, reason", [
    ({"frames_shown": 10**6, "frames_late": 0, "frames_dropped": 0},
     "frames_shown = 1000000 is more than the 90 frames of the clip served"),
    ({"frames_shown": 60, "frames_late": 0, "frames_dropped": 40},
     "frames_shown + frames_dropped = 60 + 40 is more than the 90 frames of the clip served"),
    ({"frames_shown": 10, "frames_late": 80, "frames_dropped": 0},
     "frames_late = 80 is more than frames_shown = 10"),
    ({"total_frames": 10**6, "dropped_frames": 0},
     "total_frames = 1000000 is more than the 90 frames of the clip served"),
])
def test_counts_the_clip_served_contradicts_are_left_out_without_frames_total(
        app, client, study, forged, reason):
    """Review 30, finding 1: without frames_total the counts went unchecked, and a trial
    claiming a million frames on time outweighed a whole session."""
    api = start(client, "p-forged")
    trial = next(t for t in schedule_of(app, api) if t["block"] == "practice")
    response = client.post(f"{api}/trials", json=answer(trial, **forged))
    assert response.status_code == 201, response.json
    _, trials = stored(app, api)
    row = trials[trial["trial_index"]]
    assert row.extra["technical_reasons"] == [reason]
    assert row.extra["technical"] is True and row.extra["frames_shown"] is None
    assert row.extra["clip_frames"] == 90  # what timing quality holds the trial to


def test_a_fallen_back_onset_excludes_at_completion_as_the_roster_scores_it(app, client, study):
    """Review 30, finding 2: the verdict never read onset_method, so a session whose onsets
    fell back on half its clips passed min_timing_quality = 0.9 at /complete while the review
    page showed 0.5."""
    from webapp.researcher.roster import roster_frame

    api = start(client, "p-fallback")
    schedule = schedule_of(app, api)
    for n, trial in enumerate(schedule):
        method = "element-timing" if n % 2 else "raf-next"
        response = client.post(f"{api}/trials", json=answer(trial, onset_method=method))
        assert response.status_code == 201, response.json
    assert client.post(f"{api}/complete").status_code == 200
    session, trials = stored(app, api)
    assert session.excluded and timing_quality.REASON in session.exclusion_reasons
    score = timing_quality.session_score([stored_record(t) for t in trials.values()])
    assert score == pytest.approx(0.5, abs=0.1)
    with app.app_context():
        roster = roster_frame("study")
    assert roster.set_index("session_id").loc[session.id, "timing_quality"] == score
