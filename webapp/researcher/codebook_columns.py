"""The codebook's texts: one entry per column of every exported table
(:mod:`webapp.researcher.codebook` writes them out).

The values a trial column may hold come from :data:`analysis.columns.COLUMN_RULES` and the
constants it names, which ``manage.py analyze`` checks every cell against; the descriptions
below quote those same constants, the trial-type registry (each type's ``TITLE``,
``ANSWERS`` and ``METRICS``) and the exclusion rules' reason codes, so the codebook and what
is stored cannot drift apart.  The trial table's entries are built when asked for
(:func:`trial_codebook`), from the registry as it is then.
"""
from typing import Any

from analysis import columns as C
from experiments import plausibility, timing_quality
from experiments.exclusions import MANUAL, PARTICIPANT_REASONS, TRIAL_REASONS, ExclusionRules
from experiments.trial_types import TRIAL_TYPES
from experiments.trial_types.base import (
    FULLSCREEN_EXITED_ANSWER,
    FULLSCREEN_EXITED_TIMEOUT,
    MAX_TECHNICAL_EVENTS,
)

_DEFAULT_RULES = ExclusionRules()


def _quoted(values) -> str:
    """'"a", "b" or "c"'"""
    shown = [f'"{v}"' for v in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


# How a coding that is not a list of labels is written out.
_CODING_TEXT = {C.FRAME_LIST: "a JSON list of presented frame positions in true order, "
                              "e.g. [2, 1, 3]"}


def _types() -> list[tuple[str, str, Any, tuple[str, ...]]]:
    """(name, title, answers, report sections) of every trial type: the registry's, then
    the ordered image pairs, which are asked of models only and so have no trial-type
    module (the study-wide diagnostics section reads them)."""
    return [(name, module.TITLE, module.ANSWERS, tuple(module.METRICS))
            for name, module in TRIAL_TYPES.items()] + \
        [(C.PAIR_ORDER, "ordered image pair", C.PAIR_ORDER_ANSWERS,
          ("diagnostics",))]


def _trial_type_text() -> str:
    described = [f'"{name}" ({title}; report sections: {", ".join(metrics) or "none"})'
                 for name, title, _, metrics in _types()]
    return "; ".join(described) + "."


def _correct_response_text() -> str:
    coded = [f'"{name}" ({title}): '
             f"{_CODING_TEXT[answers] if isinstance(answers, str) else _quoted(answers)}"
             for name, title, answers, _ in _types()]
    return ("Coded per trial type: " + "; ".join(coded) +
            f'. On "{C.AOT}" rows "{C.DIRECTION_ANSWERS[C.FORWARD]}" exactly when direction '
            f'is "{C.FORWARD}".')


def trial_codebook() -> list[tuple[str, str, str]]:
    """(column, type, description) of every column of trials.csv, from the registry now."""
    return [
        ("subject_id", "string", "Participant recruitment id (e.g. Prolific PID) or model id."),
        ("subject_kind", "string", f"{_quoted(C.SUBJECT_KINDS)}."),
        ("session_id", "integer", "Database id of the session (one sitting / one model run); "
                                  "matches participants.csv."),
        ("session_status", "string", f"Stored status of the session at export time: "
                                     f"{_quoted(C.SESSION_STATUSES)} (a model run that still "
                                     "lacks items). `manage.py analyze` and `report` analyse "
                                     f"participants' {_quoted([C.SESSION_COMPLETED])} sessions "
                                     "only unless given --sessions all."),
        ("session_number", "integer", "Which of the design's sessions this is (1, 2, ...; "
                                      "sessions on different days); 1 for a model run."),
        ("experiment", "string", "Study slug."),
        ("trial_index", "integer", "Position of the trial in the session's schedule (from 0)."),
        ("trial_type", "string", _trial_type_text()),
        ("block", "string", '"practice", or the main block name as the schedule writes it '
                            '("main-1", "main-2", ...; "main" for one unnamed block), exact '
                            "spelling; empty for model runs. Anything else is rejected."),
        ("stimulus_id", "string", "Opaque public id of the stimulus shown; see metadata.json "
                                  "stimuli for its clip, direction and sha256."),
        ("source_clip_id", "string", "Key of the source clip the stimulus was made from."),
        ("categories", "JSON list", "Motion categories of the source clip (multi-label), spelled "
                                    f"exactly: {', '.join(C.CATEGORIES)}; e.g. "
                                    '["Fall", "Diffusion"].'),
        ("direction", "string", f"{_quoted(C.DIRECTIONS)} (reversed playback); empty only for "
                                f"{_quoted(C.DIRECTIONLESS_TRIAL_TYPES)} rows."),
        ("correct_response", "string", _correct_response_text()),
        ("response", "string", 'The answer given, in the same coding as correct_response; empty '
                               "for a timeout or an unparseable model answer."),
        ("correct", "boolean", "Whether response equals correct_response (computed by the "
                               "server; frame orders: the same list): true or false (1 or 0); "
                               "false for a non-response. Analysis rejects a value that "
                               "contradicts response and correct_response."),
        ("rt_ms", "float", "Response time in milliseconds from stimulus onset, unrounded."),
        ("onset_method", "string", "How stimulus onset was timestamped: 'element-timing' (the "
                                   "presentation time of the compositor frame that first shows "
                                   "the clip, unrounded), 'element-timing-coarse' (the same, "
                                   "rounded by the browser to 4 ms and centred), 'raf-next' (the "
                                   "fallback: the animation frame after the reveal), each "
                                   "prefixed 'canvas-' when the clip was drawn frame by frame on a "
                                   "canvas (the default presenter; without the prefix: a <video> "
                                   "element, used for clips too large to hold decoded); empty for "
                                   "frame ordering and model rows. RTs of different methods are "
                                   "not pooled by the report."),
        ("dropped_frames", "integer", "Clip frames never shown during the trial (the canvas "
                                      "presenter's frames_dropped; a <video> element's own count)."),
        ("excluded", "boolean", "true when a trial-level rule or the session's participant-level "
                                "rules exclude this trial, else false (1 or 0 also read; never "
                                "empty)."),
        ("exclusion_reasons", "JSON list", f"Reason codes: trial-level first "
                                           f"({', '.join(TRIAL_REASONS)}; plausibility: "
                                           f"{', '.join(plausibility.TRIAL_REASONS)}), then "
                                           "participant-level "
                                           f"({', '.join(PARTICIPANT_REASONS)}; plausibility: "
                                           f"{', '.join(plausibility.PARTICIPANT_REASONS)}), then "
                                           f"'{MANUAL}' when a researcher excluded the participant "
                                           "by hand (see participants.csv manual_*). A participant "
                                           "reinstated by hand has the participant-level codes "
                                           "lifted; a trial's own codes stay. 'technical': the "
                                           "page left fullscreen during every presentation of "
                                           "the trial, or the browser could not measure it (see "
                                           "extra), so its response and RT are "
                                           "not analysed and it never counts against the "
                                           "participant. 'no_moves_after_ignored_input': a frame "
                                           "order submitted unchanged, after clicks on Done the "
                                           "browser ignored, faster than the rules' "
                                           "no_moves_after_ignored_input_ms ("
                                           f"{_DEFAULT_RULES.no_moves_after_ignored_input_ms:g} "
                                           "ms by default): the same clicking got through, not "
                                           "a judgement of the order (only ignored clicks "
                                           "before the answer count). 'reoffered': answered "
                                           "in fullscreen only when the trial was offered "
                                           "again after a presentation that left it, so not "
                                           "a first look and its RT runs from the re-offer's "
                                           "onset (rules' exclude_reoffered, "
                                           f"{str(_DEFAULT_RULES.exclude_reoffered).lower()} "
                                           "by default). Analysis treats "
                                           "'timeout' and 'too_many_timeouts' as non-responses: "
                                           "a person excluded for them alone is analysed, the "
                                           "timeouts scored by the report's non-response policy, "
                                           "as a model's unparseable answers are. "
                                           "'all_technical': every main trial technical (the "
                                           "session ended screened_out). The plausibility codes "
                                           "(rules version "
                                           f"{plausibility.PLAUSIBILITY_VERSION}, "
                                           "experiments/plausibility.py, SECURITY.md) compare the "
                                           "browser's trial with the server's clock and media: "
                                           "'media_not_served' (answered before its clip or "
                                           "frames were served), 'clock_inconsistent' (onset, "
                                           "key time and rt_ms disagree), 'posted_early' (arrived "
                                           "sooner after the trial before than fixation, gap and "
                                           "its own RT allow); implausible_* when a session has "
                                           "too many of them or finished faster than its trials "
                                           "allow (implausible_duration)."),
        ("extra", "JSON object", "Everything beyond the canonical columns: key pressed, "
                                 "restarted (true for a trial that was on screen when the page "
                                 "went away and was shown again from its start; see "
                                 "participants.csv resumes), "
                                 "key_duration_ms (how long the answering key was held, press "
                                 "to release, as jsPsych 8.3's rt_key_duration; null when focus "
                                 "was lost before the release), onset callbacks, stalls, focus/fullscreen flags, frame-order moves, "
                                 "input that did not answer (ignored_inputs: a list of {t_ms, "
                                 "kind}; on clips, kind 'key', a response key pressed during the "
                                 "fixation or loading, before the clip's onset, t_ms from the "
                                 "onset so negative; on frame orders, kind 'click', a click on "
                                 "Done less than 300 ms after the frames appeared, t_ms from "
                                 "their appearance), "
                                 "the canvas presenter's frame pacing (frames_total, "
                                 "frames_shown, frames_late: drawn a refresh or more after they "
                                 "were due, frames_dropped, frame0_hold_refreshes, refresh_ms; "
                                 "frame_cadence: 'whole' when each frame was held "
                                 "refreshes_per_frame refreshes, the clip then playing at "
                                 "clip_speed of its own rate, within 10 %, or 'pulldown' when "
                                 "no whole number fitted and frames were held the whole "
                                 "refreshes either side of refreshes_per_frame at the clip's "
                                 "own rate), "
                                 "presenter (which drew the clip: 'worker', its frames drawn "
                                 "off the page's main thread; 'canvas', drawn on it; 'video', "
                                 "a <video> element for a clip too large to hold decoded; "
                                 "empty before it was recorded), "
                                 "technical_events (one per presentation during which the page "
                                 "left fullscreen: presentation, and kind "
                                 f"'{FULLSCREEN_EXITED_TIMEOUT}' or '{FULLSCREEN_EXITED_ANSWER}' "
                                 "as it timed out or was answered; after each the trial was "
                                 f"offered again, at most {MAX_TECHNICAL_EVENTS - 1} times, "
                                 "counted across reloads of the page: a reload neither "
                                 "erases the events nor gives the trial new re-offers) "
                                 "and technical (true when the page left fullscreen during "
                                 "every presentation, the stored one included, answered or "
                                 "not, or when a measurement of the browser was out of its "
                                 "bounds, e.g. refresh_ms in a background tab, or its frame "
                                 "counts contradicted the clip served or each other: reason "
                                 "'technical', never counted against the participant), "
                                 "clip_frames and clip_fps (stored by "
                                 "the server, not the browser: the frames and rate of the clip "
                                 "it served, which timing quality holds the trial to), "
                                 "technical_reasons (the out-of-bounds measurements, each with "
                                 "its value and bounds, and the contradicting frame counts; the "
                                 "values themselves are left empty), "
                                 "model raw text and log-probabilities."),
        ("received_at", "ISO 8601 UTC", "The server's clock when the participant's trial arrived "
                                        "(what the plausibility rules hold the browser to); "
                                        "empty for model runs and for trials stored before it "
                                        "was kept."),
        _local("received_at"),
        ("response_key", "string", "The key the participant pressed to answer a video trial "
                                   "(extra's key); empty for a timeout, a model and a trial "
                                   "answered otherwise (frame orders)."),
        ("forward_key", "string", 'The response key that answered "F" in this session '
                                  "(forward on arrow-of-time trials; its key mapping, "
                                  "counterbalanced between participants); empty for models."),
        ("backward_key", "string", 'The response key that answered "B" in this session '
                                   "(backward on arrow-of-time trials); empty for models."),
    ]


def _local(column: str) -> tuple[str, str, str]:
    return (f"{column.removesuffix('_utc')}_local", "ISO 8601 with offset",
            f"{column} in the study's time zone (study.time_zone, in metadata.json's study); "
            "empty when it is.")


PARTICIPANT_CODEBOOK = [
    ("subject_id", "string", "Participant recruitment id or model id."),
    ("subject_kind", "string", '"human" or "model".'),
    ("session_id", "integer", "Database id of the session; matches trials.csv."),
    ("session_number", "integer", "1 for the first sitting, 2 for the second (multi-day "
                                  "designs)."),
    ("status", "string", f"{', '.join(C.SESSION_STATUSES)} (screened_out: failed the device "
                         "check before consent; stopped: ended by the researchers stopping the "
                         "study, its stored trials kept; incomplete: a model run that lacks "
                         "items), or abandoned (unfinished and no heartbeat for "
                         "ABANDONED_AFTER_MINUTES at export time)."),
    ("excluded", "boolean", "Participant-level exclusion of this session, after the "
                            "participant's latest manual rule."),
    ("exclusion_reasons", "JSON list", "Participant-level reason codes of this session; "
                                       f"'{MANUAL}' for a manual exclusion, none left after a "
                                       "manual reinstatement."),
    ("simulated", "boolean", "True for a session run by the built-in simulated participant "
                             "(development, tests, researcher previews); always excluded with "
                             "reason 'simulated'."),
    ("study_version", "integer", "The study configuration version the session ran (1: as "
                                 "opened; each change after opening is a new version, frozen in "
                                 "the study_version table); empty for sessions stored before "
                                 "versions were kept."),
    ("n_trials_stored", "integer", "Trials stored for this session at export time."),
    ("n_trials_scheduled", "integer", "Trials in the session's schedule (practice included)."),
    ("timing_quality", "number", "The session's timing-quality score, from 0 to 1 "
     f"(definition {timing_quality.VERSION}): the share of its clip frames that the page saw "
     "shown on their due refresh (a <video> element's: not dropped), each trial counting no "
     "more frames than the clip served (extra clip_frames) and at least those due by its "
     f"answer at {timing_quality.MIN_CLIP_SPEED:g} of the clip's rate (a frozen clip is not on "
     "time); every frame of a trial "
     "whose page lost focus or was hidden, left fullscreen, was technical, stalled, fell back "
     "to a less precise onset method than the session's best or measured a refresh interval "
     f"more than {timing_quality.REFRESH_TOLERANCE:.0%} off the device check's (else the "
     "session's median) counting as not on time; no clip trial leaves the score (one whose "
     "counts were left out, or none due, counts its clip's frames, none on time); practice "
     "included. Empty for a session without such a trial (frame ordering, a model). Rule "
     f"'{timing_quality.REASON}': below the study's min_timing_quality (0: off)."),
    ("started_at", "ISO 8601 UTC", "When the session was created."),
    _local("started_at"),
    ("last_seen_at", "ISO 8601 UTC", "Last heartbeat or request of the session."),
    _local("last_seen_at"),
    ("completed_at", "ISO 8601 UTC", "When the session completed; empty if it did not."),
    _local("completed_at"),
    ("condition", "JSON object", "Between-subject assignment: key mapping and factors."),
    ("device_info", "JSON object", "Browser, screen, window, refresh rate, video check; "
     "language: the language the participant saw; consent: {given, at, language, "
     "text_version (sha256 prefix of the consent text shown), study_version}; for a "
     "model run, its provenance (model, revision, backend, decoding, counts, failures)."),
    ("recruitment", "JSON object", "Recruitment parameters (e.g. PROLIFIC_PID, STUDY_ID, "
                                   "SESSION_ID)."),
    ("resumes", "JSON list", "Each time a page took the session up again after another had "
                             "held it (a reload, a new tab, a researcher's resume link), oldest "
                             "first, at most 100: {at (ISO 8601 UTC), away_s (seconds from the "
                             "session's last request or heartbeat to this one, server clock), "
                             "trial_index (the trial the page went on with, as the browser "
                             "said; null when none was left), restarted (true when that trial "
                             "was on screen when the page went away and was shown again from "
                             "its start: it is stored with extra.restarted true)}."),
    ("manual_action", "string", '"exclude" or "reinstate": the latest manual rule a researcher '
                                "added for the participant; empty without one. Rules never "
                                "change stored trials; every rule is kept, numbered per study, "
                                "and metadata.json's exclusion_rules_version ends in "
                                "'+manual.<n>' once there are n."),
    ("manual_reason", "string", "The researcher's reason for that rule (required)."),
    ("manual_by", "string", "Who added it: a researcher's username, or cli:<login> from "
                            "`manage.py exclusions`."),
    ("manual_at", "ISO 8601 UTC", "When it was added; empty without a rule."),
    _local("manual_at"),
    ("completion_code", "string", "The code the participant was shown when the session ended "
                                  "(empty while it runs, and for model runs): the outcome's "
                                  "shared code on Prolific, else the participant's own; check "
                                  "a platform's list with `manage.py study codes SLUG FILE`."),
]

PROLIFIC_CODEBOOK = [
    ("participant_id", "string", "The participant's recruitment id (Prolific PID); one row per "
                                 "participant whose session ended with a completion code "
                                 "(unfinished sessions, previews and models are left out, and "
                                 "so are participants screened out by the device check: "
                                 "participants.csv lists them with status screened_out; they "
                                 "were told to return the study, so ask them to return it on "
                                 "Prolific rather than approving it)."),
    ("decision", "string", 'APPROVE or REJECT. Conservative: REJECT only for failed attention '
                           "checks (catch_failed, catch_accuracy) or a researcher's manual "
                           "exclusion. Left out, for the researcher to decide (the study page "
                           "says why): a latest session that declined consent, and sessions "
                           "flagged implausible_*, practice_gate, too_little_time, "
                           "too_many_technical or all_technical (SECURITY.md, Bots and "
                           "plausibility). Technical failures, timeouts and every other exclusion "
                           "APPROVE: the data may be excluded, but the participant is paid. A "
                           "manual reinstatement APPROVEs."),
    ("reason", "string", "For a REJECT, the reason to give Prolific (a manual exclusion's own "
                         "reason); empty for APPROVE."),
]


_NEXT_SESSION_WHO = ("participants who completed their latest session (status completed), "
                     "are excluded in no session after the manual rules, and have not started "
                     "their next one; simulated sessions and models are left out. Empty for a "
                     "one-session design")
NEXT_SESSION_CODEBOOK = [
    ("next_session_allowlist.csv", "participant_id", "string",
     "No header row: one recruitment id (Prolific PID) per line, as stored and never quoted, "
     f"for Prolific's custom allowlist of the next session's study: {_NEXT_SESSION_WHO}."),
    ("next_session_start_times.csv", "participant_id", "string",
     f"The same participants as next_session_allowlist.csv: {_NEXT_SESSION_WHO}."),
    ("next_session_start_times.csv", "session_number", "integer",
     "The session they are due for (2 in a two-session design)."),
    ("next_session_start_times.csv", "earliest_start_utc", "ISO 8601 UTC",
     "When their entry link opens it: session_gap_hours after they completed the session "
     "before; the calendar file they were offered starts then too."),
    ("next_session_start_times.csv", *_local("earliest_start_utc")),
]
