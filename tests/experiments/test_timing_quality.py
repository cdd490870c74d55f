"""The timing-quality score (experiments/timing_quality.py) and its exclusion rule: what each
stored field a clip trial carries does to it, and the study's threshold."""
import pytest

from experiments import study_file, timing_quality
from experiments.exclusions import ExclusionRules, participant_reasons
from experiments.timing_quality import session_score


def clip(method="canvas-element-timing", block="main-1", **extra):
    """A clip trial drawn by the canvas presenter: 30 frames, all on time."""
    fields = {"onset_time_ms": 1200.0, "frames_total": 30, "frames_shown": 30,
              "frames_late": 0, "frames_dropped": 0, "frame0_hold_refreshes": 0,
              "refresh_ms": 16.67, "stalls": 0, "focus_lost": False,
              "fullscreen_exited": False, "technical_events": [], **extra}
    return {"trial_type": "aot", "block": block, "response": "F", "correct": True,
            "rt_ms": 900.0, "onset_method": method, "dropped_frames": fields["frames_dropped"],
            "extra": fields}


def test_a_session_of_clean_trials_scores_one():
    assert session_score([clip() for _ in range(5)]) == 1.0


@pytest.mark.parametrize("changed, expected", [
    # Late frames: shown, but not on their refresh. A frame 0 held makes frame 1 late.
    ({"frames_late": 6}, (150 - 6) / 150),
    ({"frames_late": 1, "frame0_hold_refreshes": 2}, (150 - 1) / 150),
    # Dropped frames fell due and were never shown: on-time share of 30 + 4 due.
    ({"frames_shown": 30, "frames_dropped": 4}, (150 - 0) / 154),
    # A trial answered before its clip ended: frames that never fell due do not count.
    ({"frames_shown": 10}, 130 / 130),
])
def test_late_and_dropped_frames_lower_the_score(changed, expected):
    records = [clip() for _ in range(4)] + [clip(**changed)]
    assert session_score(records) == pytest.approx(expected)


@pytest.mark.parametrize("changed", [
    {"focus_lost": True},  # hidden page or lost focus (the monitor's visibility events)
    {"fullscreen_exited": True},
    {"technical_events": [{"kind": "fullscreen_exited_answer", "presentation": 1}]},
    {"stalls": 1},
    {"onset_time_ms": None},
    {"refresh_ms": 33.3},  # refresh unstable: more than 10 % off the session's median
])
def test_a_disturbed_trial_counts_none_of_its_frames(changed):
    records = [clip() for _ in range(3)] + [clip(**changed)]
    assert session_score(records) == pytest.approx(0.75)


def test_an_onset_that_fell_back_to_a_less_precise_method_is_a_disturbance():
    records = [clip(), clip(), clip(), clip("canvas-raf-next")]
    assert session_score(records) == pytest.approx(0.75)
    # An engine whose best is the next animation frame (Firefox) is not held against it.
    assert session_score([clip("canvas-raf-next") for _ in range(4)]) == 1.0


def test_a_video_element_trial_counts_the_browsers_playback_quality():
    video = {"trial_type": "aot", "block": "main-1", "onset_method": "element-timing",
             "dropped_frames": 3, "extra": {"onset_time_ms": 900.0, "total_frames": 30,
                                            "frames_shown": None, "refresh_ms": None}}
    assert session_score([clip(), video]) == pytest.approx(57 / 60)
    unknown = {**video, "dropped_frames": None, "extra": {**video["extra"], "total_frames": None}}
    assert session_score([clip(), unknown]) == 1.0


def test_a_session_without_clip_trials_has_no_score_and_never_breaks_the_rule():
    frames = {"trial_type": "frame_order", "block": "main-1", "response": "[1, 2]",
              "correct": True, "rt_ms": 4000.0, "extra": {"moves": []}}
    assert session_score([frames]) is None
    assert participant_reasons([frames], ExclusionRules(min_timing_quality=1.0)) == []


def test_fields_from_a_tampered_csv_are_read_as_missing():
    record = clip(frames_shown="many", frames_late=-3, refresh_ms=float("nan"))
    assert session_score([record]) is None
    assert session_score([{"extra": "not a dict"}]) is None


def test_the_rule_applies_the_studys_threshold_and_is_off_by_default():
    records = [clip(), clip(frames_late=15)]  # 45 of 60 frames on time: 0.75
    assert timing_quality.REASON not in participant_reasons(records, ExclusionRules())
    assert timing_quality.REASON not in participant_reasons(
        records, ExclusionRules(min_timing_quality=0.75))
    assert timing_quality.REASON in participant_reasons(
        records, ExclusionRules(min_timing_quality=0.8))
    # Practice trials ran on the same machine: they count.
    practice = [clip(block="practice", focus_lost=True), clip()]
    assert timing_quality.REASON in participant_reasons(
        practice, ExclusionRules(min_timing_quality=0.8))


def test_a_study_sets_the_threshold_as_a_share():
    source = ('[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'
              "[exclusions]\nmin_timing_quality = {}\n")
    config, problems, _ = study_file.check(source.format(0.9), "study.toml", None)
    assert not problems and config.design.exclusions.min_timing_quality == 0.9
    _, problems, _ = study_file.check(source.format(1.5), "study.toml", None)
    assert any("min_timing_quality" in str(p) and "0 to 1" in str(p) for p in problems)


# What the server stores with each clip trial (review 30): the clip it served.
SERVED = {"clip_frames": 30, "clip_fps": 30.0}


@pytest.mark.parametrize("counts", [
    # nulled by the server (frames_shown above the clip's frames): the trial is technical
    {"frames_shown": None, "frames_late": None, "frames_dropped": None, "technical": True},
    {"frames_shown": 0, "frames_dropped": 0},  # no frame due
])
def test_a_disturbed_trial_never_leaves_the_score(counts):
    """Review 30, 1C/1D: a focus-lost trial whose counts were nulled, or claimed none due,
    counts the served clip's frames, none on time."""
    records = [clip(**SERVED) for _ in range(3)] + [clip(focus_lost=True, **SERVED, **counts)]
    assert session_score(records) == pytest.approx(0.75)


def test_a_count_above_the_clip_served_weighs_no_more_than_the_clip():
    video = {"trial_type": "aot", "block": "main-1", "onset_method": "element-timing",
             "rt_ms": 900.0, "dropped_frames": 0,
             "extra": {"onset_time_ms": 900.0, "total_frames": 10**6, **SERVED}}
    records = [clip(frames_late=15, **SERVED) for _ in range(3)] + [video]
    assert session_score(records) == pytest.approx((3 * 15 + 30) / 120)


def test_a_frozen_clip_is_not_on_time():
    """Review 30, finding 3: a measured refresh of 33.4 ms at 60 Hz froze the clip on frame 0
    (frames_shown 1, none late or dropped), answered after the clip's end: the frames that
    fell due by the answer count, and none of them but frame 0 was shown."""
    frozen = clip(frames_shown=1, frames_late=0, frames_dropped=0, refresh_ms=33.4, **SERVED)
    frozen["rt_ms"] = 1500.0  # the 30-frame clip ended at 1000 ms
    assert session_score([frozen] * 5) == pytest.approx(1 / 30)


def test_the_refresh_is_held_to_the_sessions_median_not_one_measurement_before_consent():
    """Re-review 30: the device check's one main-thread measurement (it reads 30 Hz on an
    energy-saving page) made 20 clean trials at 16.67 ms all refresh_off (0.0).
    The session's median is the reference; the trials that are off it are the off ones."""
    clean = [clip(**SERVED, device_refresh_hz=30.0) for _ in range(20)]
    assert session_score(clean) == 1.0
    assert session_score([clip(refresh_ms=33.4, **SERVED)] + [
        clip(**SERVED) for _ in range(3)]) == pytest.approx(0.75)


def test_a_video_trial_its_browser_could_not_count_is_left_out():
    """Re-review 30: Firefox and Safari may report totalVideoFrames as 0; such an honest,
    undisturbed trial scored 0 (its whole clip, none on time). It is left out; disturbed, it
    still counts its clip, none on time."""
    video = {"trial_type": "aot", "block": "main-1", "onset_method": "element-timing",
             "rt_ms": 1500.0, "dropped_frames": 0,
             "extra": {"onset_time_ms": 900.0, "total_frames": 0, "presenter": "video",
                       **SERVED}}
    assert session_score([clip(**SERVED) for _ in range(3)] + [video]) == 1.0
    hidden = {**video, "extra": {**video["extra"], "focus_lost": True}}
    assert session_score([clip(**SERVED) for _ in range(3)] + [hidden]) == pytest.approx(0.75)


def test_a_clip_at_the_slowest_whole_cadence_is_on_time():
    """Re-review 30: 24 fps at 85 Hz is shown 4 refreshes a frame, at 0.885 of its rate
    (static/js/pacing.js: 0.88 to 1.08); answered at 5 s, every frame it showed was on time."""
    slow = clip(frames_total=108, frames_shown=107, refresh_ms=1000 / 85,
                clip_frames=108, clip_fps=24.0)
    slow["rt_ms"] = 5000.0
    assert session_score([slow]) == 1.0


@pytest.mark.parametrize("refresh_ms", [0.0, None])
def test_canvas_counts_without_a_measured_refresh_are_off(refresh_ms):
    """Review 30, finding 9: refresh_ms 0 (or none) skipped the refresh check; the canvas
    presenter always measures it."""
    records = [clip(**SERVED) for _ in range(3)] + [clip(refresh_ms=refresh_ms, **SERVED)]
    assert session_score(records) == pytest.approx(0.75)
