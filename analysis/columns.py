"""The one place that names the columns and ``extra`` keys analysis reads.

Every trial, human or model, is one row in the canonical shape below. Writers (the
participant API, ``run-models``, the probes) and readers (this package, the dashboard)
agree on these names; change them here and nowhere else.

Conventions
-----------
* :data:`COLUMN_RULES` says what each column may hold, and :data:`ANSWER_CODES` how each
  trial type codes its answers; :func:`analysis.validation.validate_trials` rejects a table
  that breaks them before anything is computed.
* ``direction`` is ``"forward"`` or ``"backward"``.
* Arrow-of-time trials (``trial_type == "aot"``): ``response`` and ``correct_response`` are
  ``"F"`` or ``"B"``; ``response`` is ``None`` for a timeout or an unparseable model answer.
  ``correct_response`` is ``"F"`` exactly when ``direction`` is ``"forward"``
  (:data:`DIRECTION_ANSWERS`), so every analysis may read either.
* Frame-ordering trials (``trial_type == "frame_order"``): frames are labelled by the
  position in which they were *presented* (1..N, as the participant saw them).
  ``correct_response`` is the JSON list of presented labels in true chronological order;
  ``response`` is the JSON list the subject gave (earliest first). So the presented order is
  the identity and ``correct_response[0]`` is the presented position of the true first
  frame. With hints, ``extra["hint_frames"]`` lists the presented labels of the hint
  frames; scores use only the other (unsorted) frames, as in EGO-FLIGHT.
* Ordered-pair trials (``trial_type == "pair_order"``, TimeCausality style):
  ``response``/``correct_response`` are ``"A"`` (the image shown first / on top is
  earlier) or ``"B"``; ``extra["pair_order"]`` is ``"AB"`` when the truly earlier image was
  shown first and ``"BA"`` when swapped; ``extra["pair_id"]`` names the underlying pair so
  both presentations can be matched.
* List and dict columns (``categories``, ``exclusion_reasons``, ``extra``) are JSON strings
  in CSV and Python objects in a loaded frame.

What depends on the trial types (:data:`TRIAL_TYPES`, :data:`ANSWER_CODES`,
:data:`DIRECTIONLESS_TRIAL_TYPES` and :data:`COLUMN_RULES`, whose rules name them) is read
from the registry :data:`experiments.trial_types.TRIAL_TYPES` each time it is used, so a
registered type is in every rule, error message and codebook entry without a line here.
"""
from dataclasses import dataclass
from typing import Any

from experiments import exclusions, trial_types, verdict
from experiments.categories import CATEGORIES

TRIAL_COLUMNS = (
    "subject_id", "subject_kind", "session_id", "session_status", "session_number",
    "experiment", "trial_index",
    "trial_type", "block", "stimulus_id", "source_clip_id", "categories", "direction",
    "correct_response", "response", "correct", "rt_ms", "onset_method", "dropped_frames",
    "excluded", "exclusion_reasons", "extra",
)
JSON_COLUMNS = ("categories", "exclusion_reasons", "extra")
REQUIRED_COLUMNS = ("subject_id", "subject_kind", "trial_type", "direction", "response",
                    "correct_response")

HUMAN, MODEL = "human", "model"
FORWARD, BACKWARD = "forward", "backward"
# The types some analyses are written for (their own metrics), named by their modules.
AOT, FRAME_ORDER = trial_types.aot.NAME, trial_types.frame_order.NAME
CATCH = trial_types.ATTENTION_CHECK
PAIR_ORDER = "pair_order"  # asked of models only: no trial-type module
PRACTICE_BLOCK = "practice"
MAIN_BLOCK = "main"
MAIN_BLOCK_PATTERN = r"main-[1-9][0-9]*"  # the n-th main block of a session
SUBJECT_KINDS = (HUMAN, MODEL)
DIRECTIONS = (FORWARD, BACKWARD)
# Stored session statuses (experiments.verdict): people's sessions, then a model run that
# lacks items.
SESSION_COMPLETED, SESSION_STATUSES = verdict.COMPLETED, verdict.SESSION_STATUSES
# Which sessions of people a report analyses (``--sessions``); model runs are taken as stored.
SESSION_RULES = {"completed": "completed sessions only", "all": "every session"}

# The arrow-of-time benchmark subset leaves out the cyclic category (AoT-PsyPhyBENCH, sec. 3).
BENCHMARK_EXCLUDED_CATEGORIES = ("Reciprocal",)

# Exclusion reason codes analysis treats specially; any other code is shown as its own step.
REASON_PRACTICE_GATE = exclusions.PRACTICE_GATE
REASON_SESSION_NOT_COMPLETED = "session_not_completed"  # added by the ``--sessions`` rule

# --- keys read from ``extra`` -----------------------------------------------------------
# Model rows (subject_kind == "model"):
EXTRA_P_FORWARD = "p_forward"        # float in [0, 1]: P(F) / (P(F) + P(B)) from logits
EXTRA_LABEL_ORDER = "label_order"    # "FB" | "BF": order the two labels were named in the prompt
EXTRA_RAW_TEXT = "raw_text"          # str: generated text, kept for audit only
EXTRA_PARSE_STATUS = "parse_status"  # "ok" | "unparseable"
EXTRA_SETTING = "setting"            # str: e.g. "zero-shot", "few-shot-4", "simple-cot"
EXTRA_REVISION = "revision"          # str: which weights (--model-revision, or weights hash start)
EXTRA_TASK_VARIANT = "task_variant"  # see TASK_VARIANTS
EXTRA_PAIR_ORDER = "pair_order"      # "AB" | "BA" (pair_order trials)
EXTRA_PAIR_ID = "pair_id"            # str: the underlying ordered pair (pair_order trials)
EXTRA_THINKING = "thinking"          # "on" | "off": the run's thinking switch (absent: default)
EXTRA_PROMPT_LANGUAGE = "prompt_language"  # the prompt set's language (absent: the paper's, en)
EXTRA_RUN = "run"                    # dict: the run's settings that can change an answer
EXTRA_REASONING = "reasoning_status" # "none" | "complete" | "cut_off" (see analysis.vlm.reasoning)
# The item's ledger: tokens in, out (reasoning included) and of reasoning, over all its model
# calls, and the seconds the model took for it (its share of a batched call).
LEDGER_FIELDS = ("tokens_in", "tokens_out", "tokens_reasoning", "model_s")
# Frame ordering (humans and models):
EXTRA_HINT_FRAMES = "hint_frames"    # list of presented labels (1-based) of hint frames
EXTRA_CONDITION = "condition"        # str: ordering condition, e.g. "4 frames", "hint 1&3"
# Technical events (human rows): each time the page left fullscreen during a presentation
# (timed out or answered), the browser offered the trial again (at most twice); the trial keeps
# every such event.
EXTRA_TECHNICAL_EVENTS = "technical_events"  # list of {"kind", "presentation"} (1-based)
EXTRA_TECHNICAL = "technical"        # bool: out of fullscreen every time, the stored one too:
                                     # excluded as "technical" (response and RT not analysed)
                                     # and never held against the participant

LABEL_ORDERS = ("FB", "BF")
PAIR_ORDERS = ("AB", "BA")
# TOMATO frame conditions (Shangguan et al. 2025): the full clip in order, the same frames
# shuffled, one random frame, one hand-picked (most informative) frame.
TASK_VARIANTS = ("full", "shuffled", "single_frame", "handpicked_frame")

# --- what each trial column may hold -------------------------------------------------------
@dataclass(frozen=True)
class ColumnRule:
    """What one column may hold; :mod:`analysis.validation` checks every cell against it.

    ``kind`` is ``"text"``, ``"choice"`` (one of ``allowed``, spelled exactly), ``"integer"``,
    ``"number"``, ``"boolean"`` (true/false or 1/0, any case), ``"json_list"`` (items from
    ``allowed`` when given), ``"json_object"`` or ``"answer"`` (coded per trial type, see
    :data:`ANSWER_CODES`). ``blank`` says whether an empty cell is allowed; ``note``, when
    given, is how error messages describe the allowed values.
    """

    kind: str
    allowed: tuple = ()
    blank: bool = True
    note: str = ""
    pattern: str = ""  # a regular expression other allowed values match in full


FRAME_LIST = "frame_list"  # a JSON list of presented frame labels 1..N, e.g. "[2, 1, 3]"
# Arrow-of-time rows: the correct answer that goes with each direction.
DIRECTION_ANSWERS = {FORWARD: "F", BACKWARD: "B"}
# How the model-only ordered pairs code ``response`` and ``correct_response``.
PAIR_ORDER_ANSWERS = ("A", "B")


def trial_type_names() -> tuple[str, ...]:
    """:data:`TRIAL_TYPES`: people's trial types from their registry, then the model-only
    ordered pairs."""
    return (*trial_types.TRIAL_TYPES, PAIR_ORDER)


def answer_codes() -> dict:
    """:data:`ANSWER_CODES`: how each trial type codes ``response`` and ``correct_response``
    (its module's ``ANSWERS``)."""
    return {**{name: module.ANSWERS for name, module in trial_types.TRIAL_TYPES.items()},
            PAIR_ORDER: PAIR_ORDER_ANSWERS}


def directionless_trial_types() -> tuple[str, ...]:
    """:data:`DIRECTIONLESS_TRIAL_TYPES`: types whose rows leave ``direction`` empty (a type
    declaring ``DIRECTIONS = ()``; image pairs)."""
    return (*trial_types.directionless(), PAIR_ORDER)


def _or(names) -> str:
    quoted = [f"'{name}'" for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def column_rules() -> dict[str, ColumnRule]:
    """:data:`COLUMN_RULES`: what each trial column may hold."""
    return {
        "subject_id": ColumnRule("text", blank=False),
        "subject_kind": ColumnRule("choice", SUBJECT_KINDS, blank=False),
        "session_id": ColumnRule("text"),
        "session_status": ColumnRule("choice", SESSION_STATUSES),  # empty: not known
        "session_number": ColumnRule("integer"),  # empty: an export made before it was kept
        "experiment": ColumnRule("text"),
        "trial_index": ColumnRule("integer"),
        "trial_type": ColumnRule("choice", trial_type_names(), blank=False),
        # As experiments/schedule.py writes it: "practice", "main-1", "main-2", ...; "main"
        # for one unnamed main block (simulations); empty for model runs.
        "block": ColumnRule("choice", (PRACTICE_BLOCK, MAIN_BLOCK), pattern=MAIN_BLOCK_PATTERN,
                            note=f"'{PRACTICE_BLOCK}', '{MAIN_BLOCK}', 'main-1', 'main-2', ... "
                                 "(exact spelling) or empty"),
        "stimulus_id": ColumnRule("text"),
        "source_clip_id": ColumnRule("text"),
        "categories": ColumnRule("json_list", CATEGORIES),
        "direction": ColumnRule("choice", DIRECTIONS, note=f"{_or(DIRECTIONS)} (empty only for "
                                f"trial_type {_or(directionless_trial_types())})"),
        "correct_response": ColumnRule("answer", blank=False),
        "response": ColumnRule("answer"),  # empty: a timeout or an unparseable model answer
        # empty: derived from the responses; given, it must agree with them
        "correct": ColumnRule("boolean", note="true or false (or 1 or 0) or empty; it must "
                              "agree with response and correct_response"),
        "rt_ms": ColumnRule("number"),
        "onset_method": ColumnRule("text"),
        "dropped_frames": ColumnRule("integer"),
        "excluded": ColumnRule("boolean", blank=False),
        "exclusion_reasons": ColumnRule("json_list"),
        "extra": ColumnRule("json_object"),
    }


_DERIVED = {"TRIAL_TYPES": trial_type_names, "ANSWER_CODES": answer_codes,
            "DIRECTIONLESS_TRIAL_TYPES": directionless_trial_types, "COLUMN_RULES": column_rules}


def __getattr__(name: str) -> Any:
    # The registry-derived names are built when read, never copied at import.
    if name in _DERIVED:
        return _DERIVED[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# --- per-clip TRA values (probes write one row per clip x model x context) ---------------
# tra = (loss_reversed - loss_forward) / loss_forward (Temporal Reversal Asymmetry, eq. 1).
TRA_COLUMNS = ("model", "clip_id", "scenario", "process", "parameter", "parameter_value",
               "context_frames", "loss_forward", "loss_reversed", "tra")
TRA_PROCESSES = ("low_dissipation", "dissipative")

__all__ = [name for name in dir() if name.isupper()] + list(_DERIVED)
