"""Fields of the video trials (arrow of time and catch): one key press after a clip."""
from collections.abc import Mapping

from experiments.timing_quality import ONSET_PRECISION
from experiments.trial_types.base import (
    COMMON_FIELDS,
    MS,
    OUT_OF_BOUNDS,
    Field,
    PayloadError,
    check_fields,
    check_ignored_inputs,
    check_technical_events,
    ignored_inputs_field,
    reject_inconsistent,
)

CALLBACK = Field("onset_callback", "object", keys=(
    Field("presentedFrames", "int", required=True, minimum=0, maximum=10**7),
    Field("mediaTime", "number", required=True, minimum=0.0, maximum=86_400.0),
    Field("presentationTime", "number", required=True, minimum=0.0, maximum=1e12),
    Field("expectedDisplayTime", "number", required=True, minimum=0.0, maximum=1e12),
))

PRESENTERS = ("worker", "canvas", "video")
# The browser reports a key held longer than KEY_HOLD_MAX_MS, timed from its keydown, as null
# (static/js/trials/aot.js keyRelease; a test holds the two constants together).
KEY_HOLD_MAX_MS = 5000.0
# How the onset was timed (static/js/onset.js ONSET_METHODS, whose METHODS a test holds to
# ONSET_PRECISION): by the <video> presenter, or with the canvas presenter's prefix.
ONSET_METHODS = ONSET_PRECISION + tuple(f"canvas-{method}" for method in ONSET_PRECISION)

VIDEO_FIELDS = COMMON_FIELDS + (
    Field("response", "str", required=True, nullable=True, choices=("F", "B")),
    Field("key", "str", nullable=True, max_length=32),
    Field("onset_method", "str", nullable=True, choices=ONSET_METHODS),
    Field("onset_callbacks", "list", max_length=4, items=CALLBACK, default=()),
    Field("onset_time_ms", "number", nullable=True, minimum=0.0, maximum=1e12),
    Field("key_time_ms", "number", nullable=True, minimum=0.0, maximum=1e12),
    # How long the answering key was held, press to release (jsPsych 8.3's rt_key_duration);
    # null if focus was lost before the release, or without an answer.
    Field("key_duration_ms", "number", nullable=True, minimum=0.0, maximum=KEY_HOLD_MAX_MS),
    Field("dropped_frames", "int", nullable=True, minimum=0, maximum=10**6),
    Field("total_frames", "int", nullable=True, minimum=0, maximum=10**6),
    Field("stalls", "int", minimum=0, maximum=10**4, default=0),
    Field("stall_ms", "number", default=0.0, **MS),
    # Response keys pressed from the fixation on but before the clip's first frame was on
    # screen: never an answer, so t_ms (from the onset) is negative (strictly: a key at the
    # onset answers).
    ignored_inputs_field(("key",), latest_ms=0.0),
) + (
    # Frame pacing of the canvas presenter (static/js/present.js); null from a <video> element.
    Field("frames_total", "int", nullable=True, minimum=0, maximum=10**6, measurement=True),
    Field("frames_shown", "int", nullable=True, minimum=0, maximum=10**6, measurement=True),
    Field("frames_late", "int", nullable=True, minimum=0, maximum=10**6, measurement=True),
    Field("frames_dropped", "int", nullable=True, minimum=0, maximum=10**6, measurement=True),
    Field("frame0_hold_refreshes", "int", nullable=True, minimum=0, maximum=10**6,
          measurement=True),
    Field("refresh_ms", "number", nullable=True, minimum=0.0, maximum=1000.0, measurement=True),
    # How the frames were laid on the refreshes (static/js/present.js frameCadence).
    Field("frame_cadence", "str", nullable=True, choices=("whole", "pulldown")),
    Field("refreshes_per_frame", "number", nullable=True, minimum=0.0, maximum=10_000.0),
    Field("clip_speed", "number", nullable=True, minimum=0.0, maximum=100.0),
    # Which presenter showed the clip (static/js/present.js): frames drawn by a worker, on the
    # main thread's canvas, or by a <video> element (a clip too large to hold decoded).
    Field("presenter", "str", nullable=True, choices=PRESENTERS),
)


def validate_video(payload, trial_type: str, key_mapping: Mapping | None = None) -> dict:
    """The validated fields of a video trial; with the session's ``key_mapping`` (response key
    -> "F"/"B"), the key must be one of its keys and the response the key's label."""
    fields = check_fields(payload, VIDEO_FIELDS)
    if fields["trial_type"] != trial_type:
        raise PayloadError("trial_type_mismatch", f"payload is a {fields['trial_type']!r} trial")
    fields["onset_callbacks"] = list(fields["onset_callbacks"] or [])
    check_ignored_inputs(fields, before_ms=0.0)
    reject_inconsistent(fields)
    if fields["timed_out"] and (fields["rt_ms"] is not None or fields["key"] is not None
                                or fields["key_duration_ms"] is not None):
        raise PayloadError("inconsistent", "a timed-out trial has no rt_ms, no key and no "
                                           "key_duration_ms")
    if key_mapping is not None and not fields["timed_out"]:
        _check_key(fields, key_mapping)
    check_technical_events(fields)
    return fields


def _check_key(fields: dict, key_mapping: Mapping) -> None:
    """The browser maps the pressed key through the session's mapping (static/js/trials/aot.js),
    so an answer names one of its keys and that key's label."""
    key = fields["key"]
    if key not in key_mapping:
        raise PayloadError("inconsistent", f"key must be one of the session's response keys "
                                           f"{sorted(key_mapping)}")
    if fields["response"] != key_mapping[key]:
        raise PayloadError("inconsistent", f"response must be {key_mapping[key]!r}, the label "
                                           f"of key {key!r} in the session's key mapping")


# The clip's frame counts the browser reports: the canvas presenter's pacing, and the totals
# timing quality falls back on (static/js/pacing.js fields() sends both from one count).
FRAME_COUNTS = ("frames_total", "frames_shown", "frames_late", "frames_dropped", "total_frames",
                "dropped_frames")


# totalVideoFrames counts the frames a <video> element decoded for display since it loaded
# (Media Playback Quality).  One play of an N-frame clip decodes each frame once, but the
# preroll (static/js/onset.js prerollFirstFrame) may rewind to 0, decoding again from the
# key frame, and a decoder runs a few frames ahead: up to twice N and a few more is a
# browser's count.  Past it no browser sent it, and the trial is technical (excluded, so the
# bound is wide); timing quality never counts more than N of a trial's frames anyway.
def video_frames_bound(served: int) -> int:
    return 2 * served + 10


def check_frame_counts(fields: dict, served: int | None) -> dict:
    """``fields`` with their frame counts left out, and why among the trial's technical
    reasons, where the counts contradict the clip the server served (``served`` frames, None
    if unknown) or each other: timing quality reads them, so the browser's word is not taken
    for them, and nothing is refused for them."""
    total, shown = fields["frames_total"], fields["frames_shown"]
    late, dropped = fields["frames_late"], fields["frames_dropped"]
    reasons = []
    if served is not None and total is not None and total != served:
        reasons.append(f"frames_total = {total} is not the {served} frames of the clip served")
    # Without frames_total the counts are held to the clip served (review 30, finding 1).
    limit, named = (total, f"frames_total = {total}") if total is not None else (
        served, f"the {served} frames of the clip served")
    # Counts past the clip's frames: the first way found.
    if limit is not None and shown is not None and shown > limit:
        reasons.append(f"frames_shown = {shown} is more than {named}")
    elif limit is not None and late is not None and dropped is not None \
            and late + dropped > limit:
        reasons.append(f"frames_late + frames_dropped = {late} + {dropped} is more than {named}")
    elif limit is not None and shown is not None and dropped is not None \
            and shown + dropped > limit:
        reasons.append(f"frames_shown + frames_dropped = {shown} + {dropped} is more than "
                       f"{named}")
    if late is not None and shown is not None and late > shown:
        reasons.append(f"frames_late = {late} is more than frames_shown = {shown}")
    video_total, video_dropped = fields["total_frames"], fields["dropped_frames"]
    if served is not None and video_total is not None \
            and video_total > video_frames_bound(served):
        reasons.append(f"total_frames = {video_total} is more than the {served} frames of the "
                       "clip served")
    if video_total is not None and video_dropped is not None and video_dropped > video_total:
        reasons.append(f"dropped_frames = {video_dropped} is more than total_frames = "
                       f"{video_total}")
    if not reasons:
        return fields
    return fields | dict.fromkeys(FRAME_COUNTS) | {
        OUT_OF_BOUNDS: [*fields.get(OUT_OF_BOUNDS, []), *reasons]}


# What a video trial's row keeps in ``extra`` of the validated payload.
VIDEO_EXTRA = ("key", "onset_callbacks", "onset_time_ms", "key_time_ms", "key_duration_ms",
               "total_frames", "stalls", "stall_ms", "ignored_inputs", "frames_total", "frames_shown", "frames_late",
               "frames_dropped", "frame0_hold_refreshes", "refresh_ms", "frame_cadence",
               "refreshes_per_frame", "clip_speed", "presenter")


def video_params(design) -> dict:
    """What the browser is told of a video trial: the same for every video trial of a study.
    A clip's length (and so its response window) comes from the video itself, so that the
    schedule cannot tell catch videos from the study's clips by their duration."""
    return {"fixation_ms": design.fixation_ms}


ANSWER_S = 1.0  # rough seconds to answer once the clip has played


def video_duration_s(design, clip_s: float) -> float:
    """About how long one video trial takes: fixation, the clip, the answer."""
    return design.fixation_ms / 1000 + clip_s + ANSWER_S


def video_public_view(trial, media_url, presented_as: str) -> dict:
    """The browser's view of a video trial: one clip URL and the shared parameters."""
    index = trial["trial_index"]
    return {"trial_index": index, "trial_type": presented_as, "block": trial["block"],
            "stimulus": {"url": media_url(index, None), "frames": []},
            "params": dict(trial["params"])}


def video_row_parts(fields: dict, scheduled) -> dict:
    """The type-specific columns of a video trial's row, and what it adds to ``extra``."""
    return {"direction": scheduled["direction"], "response": fields["response"],
            "onset_method": fields["onset_method"], "dropped_frames": fields["dropped_frames"],
            "extra": {key: fields[key] for key in VIDEO_EXTRA}}
