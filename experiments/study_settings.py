"""Every setting of a study file, declared once in :data:`SETTINGS`: its kind and bounds, the
words a problem uses for what it expects, where in the design it goes, its default, its help
text and where the dashboard's study form shows it.

The study file's validation (:mod:`experiments.study_format`, :mod:`experiments.study_checks`),
the dashboard's form (``webapp/researcher/study_form.py``) and the settings reference
(:func:`reference_markdown`) are derived from it, so a new setting is one entry here, plus its
use in the design.  The exclusion settings are the fields of
:class:`~experiments.exclusions.ExclusionRules`, with their help text in :data:`RULE_HELP`.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, fields, replace
from typing import Any

from experiments.designs import DESIGNS
from experiments.exclusions import ExclusionRules
from experiments.platforms import DEFAULT_PLATFORM, MAX_URL_CHARS, PLATFORMS, URL_OUTCOMES, url_key

BROWSERS = ("chromium", "firefox", "webkit")
# What a study accepts unless its file says otherwise: the engines whose measured onset error
# meets the goal (|mean| < 5 ms, SD < 3 ms; bench/rt_engines.py, docs/measurements.md
# "Onset timing per engine").  WebKitGTK, standing in for Safari, missed it; a study file may still opt in.
DEFAULT_BROWSERS = ("chromium", "firefox")
DEVICES = ("desktop", "tablet", "phone")
# Sanity bounds: a value past them is a typo (or would exhaust memory building a schedule).
MAX_SESSIONS, MAX_BLOCKS, MAX_TRIALS_PER_BLOCK, MAX_PRACTICE_TRIALS = 20, 100, 2000, 200
MAX_ATTEMPTS, MAX_REPEATS, MAX_PLACES, MAX_WINDOW_PX = 10, 100, 100_000, 10_000
MAX_REFRESH_HZ = 1000  # the device check measures no faster display (static/js/device.js)
MAX_STOP_STEPS = 10  # a stopping rule's credible half-width, in level steps: a sweep's width
MAX_ADAPTIVE_TRIALS = 1000  # per sweep: a 3 s clip a trial, over an hour a sweep
MAX_TIMING_MS, MAX_GAP_HOURS = 600_000, 24 * 365  # 10 minutes; a year
# Bounds of what a participant's page renders on every visit (each text through Markdown and
# the sanitiser) and of what the stored form holds: a consent of ~3,000 words fits a text.
MAX_LANGUAGES, MAX_TEXT_CHARS = 20, 20_000
MAX_TITLE_CHARS = 200  # the study table's title column
MAX_ZONE_CHARS = 64  # the longest IANA zone name is 32

# The dashboard form's groups, in the order the form shows them.
STUDY, SESSIONS, PRACTICE, RESPONSES = "Study", "Sessions and blocks", "Practice", \
    "Responses and timing"


@dataclass(frozen=True)
class FormField:
    """Where the dashboard's study form shows a setting: its group, its label, and its field's
    name where that is not the setting's key (``practice_trials`` for ``practice.trials``)."""

    group: str
    label: str
    name: str = ""
    select: bool = False  # a select the page fills with choices (never blank)


@dataclass(frozen=True)
class Setting:
    """One key of the file: its kind, what it must be, and the Design field it sets (if any)."""

    # int | number | bool | str | title | choice | localised | *_list | key_pair | time_zone
    kind: str
    expected: str
    design_field: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    required: bool = False
    choices: Collection[str] = ()
    # Said after ``expected`` when a value is above ``maximum`` (" of at most 200").
    bound: str = ""
    help: str = ""
    form: FormField | None = None
    # A study-level setting's default (StudyConfig's); a design setting's is the design's.
    default: Any = None


def _int(minimum: int, field_: str | None = None, maximum: int | None = None, note: str = "",
         **more) -> Setting:
    words = {0: "a non-negative integer", 1: "a positive integer"}
    bound = f" of at most {maximum}{note}" if maximum is not None else ""
    return Setting("int", words.get(minimum, f"an integer >= {minimum}"), field_, minimum,
                   maximum, bound=bound, **more)


def _timing(minimum: int, field_: str, **more) -> Setting:
    return _int(minimum, field_, MAX_TIMING_MS, " (10 minutes)", **more)


def _fact(says: str, **more) -> Setting:
    return Setting("localised", f"Markdown text saying {says}, or a table of such texts by "
                                'language (en = "...", de = "...")', default="",
                   help=f"Stated in the consent: {says}.", **more)


# Help for each exclusion rule (the rules' fields and defaults are ExclusionRules').
RULE_HELP = {
    "version": "The rule set's version, stored with the study and in every export.",
    "min_rt_ms": "A trial answered faster than this (ms) is excluded.",
    "no_moves_after_ignored_input_ms": "A frame order submitted unchanged this soon (ms) after "
                                       "clicks the browser ignored is excluded; 0 switches it off.",
    "max_dropped_frames": "A trial with more clip frames never shown is excluded.",
    "exclude_stalls": "Exclude a trial whose clip stalled while playing.",
    "exclude_focus_lost": "Exclude a trial during which the page lost focus.",
    "exclude_fullscreen_exited": "Exclude a trial during which the page left fullscreen.",
    "exclude_reoffered": "Exclude a trial answered only when offered again after a "
                         "presentation that left fullscreen.",
    "max_failed_catch": "A participant failing more catch trials than this is excluded.",
    "min_catch_accuracy": "A participant answering a smaller share of catch trials correctly "
                          "is excluded.",
    "min_practice_accuracy": "A participant whose practice accuracy is lower is excluded; it "
                             "follows practice.pass_accuracy unless set, and is at most that.",
    "max_timeout_fraction": "A participant who lets a larger share of main trials time out is "
                            "excluded.",
    "min_mean_trial_ms": "A participant whose mean response time over the main trials is "
                         "shorter (ms) is excluded.",
    "max_technical_events": "A session with more presentations lost to leaving fullscreen is "
                            "excluded.",
    "min_timing_quality": "A session whose timing-quality score (the share of its clip frames "
                          "shown on time, disturbed trials counting none) is lower is "
                          "excluded; 0 switches it off.",
}
# Rules that are shares: a threshold above 1 would exclude every session.
_RULE_SHARES = ("min_timing_quality",)
_RULE_KINDS = {"str": Setting("str", "a string"), "bool": Setting("bool", "true or false"),
               "int": _int(0), "float": Setting("number", "a non-negative number", minimum=0)}


def _rules() -> dict[str, Setting]:
    share = Setting("number", "a proportion from 0 to 1", minimum=0, maximum=1)
    return {f.name: replace(share if f.name in _RULE_SHARES else
                            _RULE_KINDS[type(f.default).__name__],
                            design_field=f"exclusions.{f.name}", help=RULE_HELP.get(f.name, ""))
            for f in fields(ExclusionRules)}


SETTINGS: dict[str, dict[str, Setting]] = {
    "study": {
        "title": Setting("title", "a title", help="The study's title on the dashboard "
                         "(without one, the slug).", form=FormField(STUDY, "Title"), default=""),
        "design": Setting("choice", f"one of {', '.join(DESIGNS)}", required=True,
                          choices=DESIGNS.keys(), help="The base design whose settings the "
                          "file changes (experiments/designs.py).",
                          form=FormField(STUDY, "Design", select=True)),
        "stimulus_set": Setting("str", "the name of a stimulus set", required=True,
                                help="The stored stimulus set the trials are drawn from.",
                                form=FormField(STUDY, "Stimulus set", select=True)),
        "languages": Setting("language_list", f"a list of at most {MAX_LANGUAGES} language "
                                              'codes such as ["en", "de"]', default=("en",),
                             help="The languages a participant may read the study in; the "
                                  "first is the default.",
                             form=FormField(STUDY, "Languages (e.g. en, de; the first is the "
                                                   "default)")),
        # The lab's facts the consent states (experiments.texts.STUDY_FACTS).
        "contact": _fact("whom participants contact"),
        "ethics": _fact("the ethics approval"),
        "data_retention": _fact("how long the data are kept and who may see them"),
        "time_zone": Setting("time_zone", 'an IANA time zone name such as "Asia/Tokyo"',
                             default="UTC", help="The lab's time zone: the study page and the "
                             "export show times in it beside UTC.",
                             form=FormField(STUDY, "Time zone (IANA, e.g. Asia/Tokyo)")),
    },
    "sessions": {
        "count": _int(1, "sessions", MAX_SESSIONS, help="Sessions a participant takes, on "
                      "different days.", form=FormField(SESSIONS, "Sessions (on different days)",
                                                        "sessions")),
        "gap_hours": Setting("number", "a non-negative number of hours", "session_gap_hours", 0,
                             MAX_GAP_HOURS, bound=f" of at most {MAX_GAP_HOURS} (a year)",
                             help="Hours after a session before the next one opens.",
                             form=FormField(SESSIONS, "Hours between sessions"))},
    "blocks": {
        "count": _int(1, "main_blocks", MAX_BLOCKS, help="Main blocks a session has, with a "
                      "break between them.", form=FormField(SESSIONS, "Blocks", "blocks")),
        "clips_per_session": _int(1, "max_clips", MAX_TRIALS_PER_BLOCK * MAX_BLOCKS,
                                  help="Main trials a session has (leave it and "
                                       "trials_per_block out: every clip of the set)."),
        "trials_per_block": _int(1, None, MAX_TRIALS_PER_BLOCK,
                                 help="Main trials a block has: clips_per_session written as "
                                      "trials_per_block × blocks.count (give one of them).",
                                 form=FormField(SESSIONS, "Trials per block (blank: every clip)")),
        "catch_per_block": _int(0, "catch_per_block", MAX_TRIALS_PER_BLOCK,
                                help="Catch trials (attention checks) a block has.",
                                form=FormField(SESSIONS, "Catch trials per block")),
        # Sweep designs only (included_splits): each clip this many times per direction.
        "repeats_per_direction": _int(1, "repeats_per_direction", MAX_REPEATS,
                                      help="Sweep designs only: how often a session shows each "
                                           "clip in each direction."),
        # Adaptive designs only (adaptive_trials > 0): QUEST+ chooses each trial's level.
        "adaptive_trials": _int(2, "adaptive_trials", MAX_ADAPTIVE_TRIALS,
                                help="Adaptive sweep designs only: trials per sweep in a "
                                     "session, each at the level QUEST+ chooses from the "
                                     "answers before it."),
        "adaptive_stop_halfwidth": Setting(
            "number", "a non-negative number of level steps", "adaptive_stop_halfwidth", 0,
            MAX_STOP_STEPS, bound=f" of at most {MAX_STOP_STEPS}",
            help="Adaptive sweep designs only: a sweep ends early, its remaining trials "
                 "skipped, once its threshold's 95% credible interval is within this many "
                 "level steps either side; adaptive_trials is then the most it runs (0: "
                 "every trial is run).")},
    "practice": {
        "trials": _int(0, "practice.n_trials", MAX_PRACTICE_TRIALS, help="Practice trials, with "
                       "feedback, before the main blocks.",
                       form=FormField(PRACTICE, "Practice trials", "practice_trials")),
        "pass_accuracy": Setting("number", "a proportion from 0 to 1", "practice.min_accuracy",
                                 0, 1, help="The share of practice trials answered correctly "
                                            "that lets a participant go on.",
                                 form=FormField(PRACTICE, "Practice pass accuracy (0 to 1)")),
        "attempts": _int(1, "practice.max_attempts", MAX_ATTEMPTS, help="How often a "
                         "participant may take the practice to pass it.")},
    "responses": {
        # Which key means forward is counterbalanced between participants by default: the
        # label must not suggest that the first key is "forward".
        "keys": Setting("key_pair", "two different keys, each a lower-case letter or digit, "
                                    'such as ["f", "j"]', "response_keys",
                        help="The two response keys; the catch trials instruct them too.",
                        form=FormField(RESPONSES, "Response keys (two letters or digits, e.g. "
                                                  "d, k; which one means forward is "
                                                  "counterbalanced)")),
        "counterbalance": Setting("bool", "true or false", "counterbalance_keys",
                                  help="Whether which key means forward is counterbalanced "
                                       "between participants.")},
    "timing": {
        "fixation_ms": _timing(0, "fixation_ms", help="The fixation before each trial (ms).",
                               form=FormField(RESPONSES, "Fixation (ms)")),
        "response_timeout_ms": _timing(0, "response_window_ms_after_clip",
                                       help="Time to answer after the clip ends (ms).",
                                       form=FormField(RESPONSES, "Response timeout after the "
                                                                 "clip (ms)")),
        "ordering_timeout_ms": _timing(1, "max_ordering_ms", help="Time to order the frames of "
                                       "a frame-ordering trial (ms)."),
        "inter_trial_ms": _timing(0, "inter_trial_ms", help="The pause between trials (ms).",
                                  form=FormField(RESPONSES, "Between trials (ms)"))},
    "participants": {
        "places": _int(1, None, MAX_PLACES, help="The most participants the study takes "
                       "(none: no limit).", form=FormField(
                           STUDY, "Places (no new participants once this many took part)")),
        "browsers": Setting("choice_list", f"a list of {', '.join(BROWSERS)}", choices=BROWSERS,
                            default=DEFAULT_BROWSERS, help="The browser engines a participant "
                            "may take part with (webkit's onset timing misses the goal)."),
        "devices": Setting("choice_list", f"a list of {', '.join(DEVICES)}", choices=DEVICES,
                           default=("desktop",), help="The kinds of device a participant may "
                                                      "take part with."),
        "min_window_width": _int(1, None, MAX_WINDOW_PX, default=800, help="The narrowest "
                                 "browser window (CSS pixels) a participant may take part in."),
        "min_window_height": _int(1, None, MAX_WINDOW_PX, default=600, help="The lowest "
                                  "browser window (CSS pixels) a participant may take part in."),
        # The device check's measured refresh rate (static/js/device.js estimateRefreshHz).
        "min_refresh_hz": _int(1, None, MAX_REFRESH_HZ, help="The slowest display refresh rate "
                               "(Hz, as the device check measures it) a participant may take "
                               "part with (none: no limit)."),
        "max_refresh_hz": _int(1, None, MAX_REFRESH_HZ, help="The fastest display refresh rate "
                               "(Hz) a participant may take part with (none: no limit)."),
    },
    "recruitment": {
        "platform": Setting("choice", f"one of {', '.join(PLATFORMS)}", choices=PLATFORMS.keys(),
                            default=DEFAULT_PLATFORM, help="Where participants come from "
                            "(experiments/platforms.py): the link's id parameter, the codes "
                            "(prolific: one per outcome; sona, generic: each participant's own) "
                            "and the default return URLs."),
        **{url_key(outcome): Setting(
            "url", f"an https:// URL of at most {MAX_URL_CHARS} characters, with placeholders "
                   "such as {participant} and {code}",
            help=f"Where a participant whose session ends {' or '.join(statuses)} is sent "
                 "back (default: the platform's)." + (" sona: its credit-granting URL, with "
                                                      "{survey_code}." if outcome ==
                                                      "completed" else ""))
           for outcome, statuses in URL_OUTCOMES.items()}},
    "exclusions": _rules(),
}


def default(path: str) -> Any:
    """The declared default of a study-level setting ("participants.browsers")."""
    section, key = path.split(".")
    return SETTINGS[section][key].default


def design_value(design: dict, design_field: str) -> Any:
    """The value at ``design_field`` ("practice.n_trials") of a design's dict."""
    value = design
    for part in design_field.split("."):
        value = value[part]
    return value


def reference_markdown() -> str:
    """Every setting of a study file as Markdown: per section, each key with what it is, what
    it must be, its default (a design setting's: each design's) and its form field."""
    designs = {name: design.to_dict() for name, design in DESIGNS.items()}
    lines = ["# Study file settings", "",
             "A study file (TOML) names a design and a stimulus set and changes the design's "
             "settings; every key is optional unless marked required, and an unknown key is an "
             "error. Texts are set per language under `[texts.LANGUAGE]` (the keys of "
             "`experiments/texts/en.toml`, with the plural forms `KEY_one`, `KEY_two`, ... that "
             "the language has) and the clips' frame-ordering annotations under "
             "`[annotations.LANGUAGE]` (by clip key). The dashboard's study form shows the settings that "
             "name a form field.", ""]
    for section, settings in SETTINGS.items():
        lines += [f"## [{section}]", "", "| key | what it is | value | default | form field |",
                  "|---|---|---|---|---|"]
        for key, setting in settings.items():
            value = setting.expected + setting.bound + ("; required" if setting.required else "")
            form = f"{setting.form.group}: {setting.form.label}" if setting.form else ""
            lines.append(f"| `{key}` | {setting.help} | {value} | "
                         f"{_default_text(setting, designs)} | {form} |")
        lines.append("")
    return "\n".join(lines)


def _default_text(setting: Setting, designs: dict[str, dict]) -> str:
    if setting.required:
        return ""
    if setting.design_field is None:
        return _shown(setting.default)
    values = {name: _shown(design_value(design, setting.design_field))
              for name, design in designs.items()}
    if len(set(values.values())) == 1:
        return next(iter(values.values()))
    return "; ".join(f"{name}: {value}" for name, value in values.items())


def _shown(value: Any) -> str:
    if value is None or value == "":
        return "none"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(f'"{item}"' if isinstance(item, str) else str(item)
                               for item in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    return f'"{value}"' if isinstance(value, str) else str(value)
