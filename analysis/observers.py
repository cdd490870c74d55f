"""Who an observer is: the one key every table groups by, and its short display label.

People are pooled as one observer, ``"human"`` (error consistency and the per-item tables
still pair individual people, by ``subject_id``). A model observer is a model *run
configuration*: the key :data:`OBSERVER_KEY` = (model, revision, prompt setting, label
order, thinking, prompt language). Two prompt settings of one model are two observers, never one pooled
row: a zero-shot kappa of -0.08 and a few-shot kappa of +0.10 are two results, not one of
0.01. So are a model thinking and not thinking (``--thinking on``/``off``; a run that left
the switch at the model's default has no thinking part), the comparison AoT-PsyPhyBENCH
makes of deliberation, and a model asked in Japanese and in English (``--prompt-language``;
the paper's English has no language part).

Beyond these named parts, a model observer's key holds the rest of its run's identity, as
its rows carry it (``extra.run``, :func:`analysis.vlm.run_config.answer_settings`): every
setting that can change an answer (frame rate or count, scoring, seed, decoding, the model's
build) other than the TOMATO frame condition, which tables show or compare within one
observer. Two runs that differ in any of them are two observers, named by the parts that
differ (``"m / fps 2"``, ``"m / fps 4"``); runs that differ in nothing that changes an answer
(batch size, the batch API) are one stored run, one observer. Rows stored before runs carried
their identity take it from the other rows of their run (session), or go without.

The label-order part is the run's design, not a trial's: the sorted label orders one run
(session) used, ``"FB"``, ``"BF"`` or ``"FB+BF"``. A run balanced over both orders is one
observer (the orders are pooled, as the logit debiasing in :mod:`analysis.diagnostics`
needs); a run in one order only is a different observer from a run in the other.

Observer names (:func:`observer_ids`) are the model id plus only those parts of the key
that tell the model's observers of one task apart, e.g. ``"m"`` when it ran once and
``"m / zero-shot"``, ``"m / few-shot-4"`` when it ran under two settings.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from analysis import columns as C

OBSERVER_KEY = ("model", "revision", "setting", "label_order", "thinking", "prompt_language",
                "settings")
# Parts of a run's identity (``extra.run``) that are not in "settings": named key parts, the
# task, and the frame condition.
_NAMED = ("task", "setting", "label_orders", "thinking", "prompt_language", "task_variant")
SEPARATOR = " / "
FULL_VARIANT = "full"

_SIZE = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)[bB](?![A-Za-z0-9])")
_DATE = re.compile(r"[-_]?(19|20)\d\d-?\d\d-?\d\d$")
_SUFFIXES = re.compile(r"[-_](instruct|chat|hf|it|base)$", re.IGNORECASE)


def observer_keys(data: pd.DataFrame) -> pd.DataFrame:
    """The observer key of every row.

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials. ``subject_kind`` may be absent (then every row is a model's, as
        in a table of model diagnostics); ``session_id`` and ``extra`` may be absent.

    Returns
    -------
    pandas.DataFrame
        Indexed like ``data``: :data:`OBSERVER_KEY` columns plus ``task`` (``"aot"`` for
        arrow-of-time rows, else ``trial_type``) and ``task_variant``, all of object dtype.
        ``settings`` is the rest of the run's identity as sorted JSON. People have model
        ``"human"`` and None elsewhere.
    """
    n = len(data)
    cols = {c: np.full(n, None, dtype=object) for c in (*OBSERVER_KEY, "task_variant")}
    cols["model"][:] = C.HUMAN
    is_model = _is_model(data)
    if is_model.any():
        rows = data[is_model]
        extras = rows["extra"].to_numpy(object) if "extra" in rows else [None] * len(rows)
        cols["model"][is_model] = rows["subject_id"].astype(object).to_numpy()
        cols["revision"][is_model] = _extra(extras, C.EXTRA_REVISION)
        cols["setting"][is_model] = _extra(extras, C.EXTRA_SETTING)
        cols["thinking"][is_model] = _extra(extras, C.EXTRA_THINKING)
        cols["prompt_language"][is_model] = _extra(extras, C.EXTRA_PROMPT_LANGUAGE)
        cols["task_variant"][is_model] = _extra(extras, C.EXTRA_TASK_VARIANT)
        sessions = rows["session_id"].to_numpy(object) if "session_id" in rows \
            else np.full(len(rows), None, dtype=object)
        cols["settings"][is_model] = _settings(_extra(extras, C.EXTRA_RUN), sessions)
        cols["label_order"][is_model] = _label_design(
            cols["model"][is_model], cols["revision"][is_model], cols["setting"][is_model],
            sessions, _extra(extras, C.EXTRA_LABEL_ORDER))
    # object dtype: pandas 3 would read a column of strings and None as str, None as NaN,
    # and a NaN task variant was taken for a real one ("human / nan").
    return pd.DataFrame({**cols, "task": _task(data)}, index=data.index, dtype=object)


def _settings(runs: list, sessions) -> list:
    """Each row's run identity beyond the named key parts, as sorted JSON; a row without
    one takes its session's (a run stored before rows carried it, then rerun)."""
    keys = [json.dumps({k: v for k, v in run.items() if k not in _NAMED}, sort_keys=True)
            if isinstance(run, dict) else None for run in runs]
    of_session: dict = {}
    for session, key in zip(sessions, keys):
        if key is not None and not _missing(session):
            of_session.setdefault(session, key)
    return [key if key is not None or _missing(session) else of_session.get(session)
            for session, key in zip(sessions, keys)]


def _extra(extras, key: str) -> list:
    """``key`` of each row's ``extra`` dict; None where a row has none."""
    return [_none(e.get(key)) if isinstance(e, dict) else None for e in extras]


def _none(value):
    """Missing values as None, so that keys compare equal (NaN never equals itself)."""
    return None if _missing(value) else value


def _missing(value) -> bool:
    """None, NaN or pandas' NA: every way a missing key part can come back from a table."""
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def _is_model(data: pd.DataFrame) -> np.ndarray:
    if "subject_kind" not in data:
        return np.ones(len(data), dtype=bool)
    return (data["subject_kind"] == C.MODEL).to_numpy()


def _task(data: pd.DataFrame) -> np.ndarray:
    """The trial type of each row; without a ``trial_type`` column, ``"aot"`` for rows
    answered F or B (as :func:`analysis.loading.aot_trials` reads such a table)."""
    if "trial_type" in data:
        return data["trial_type"].astype(object).to_numpy()
    kind = np.full(len(data), None, dtype=object)
    if "correct_response" in data:
        kind[data["correct_response"].isin(("F", "B")).to_numpy()] = C.AOT
    return kind


def _label_design(model, revision, setting, sessions, orders) -> list:
    """``"FB"``, ``"BF"`` or ``"FB+BF"``: the label orders of each row's run."""
    runs = pd.Series(list(zip(model, revision, setting, map(_none, sessions))), dtype=object)
    codes, uniques = pd.factorize(runs.to_numpy(object))
    seen: list[set[str]] = [set() for _ in uniques]
    for code, order in zip(codes, orders):
        if not _missing(order):
            seen[code].add(order)
    design = ["+".join(o for o in C.LABEL_ORDERS if o in s) or None for s in seen]
    return [None if _missing(o) else design[c] for c, o in zip(codes, orders)]


def observer_ids(data: pd.DataFrame, frame_condition: bool = False) -> pd.Series:
    """The observer name of every row (``"human"`` for people).

    Parameters
    ----------
    data : pandas.DataFrame
        Canonical trials (see :func:`observer_keys`).
    frame_condition : bool
        Also append a TOMATO frame condition other than the full clip (``" / shuffled"``),
        as the accuracy tables show each condition as its own row. Diagnostics that compare
        conditions of one observer (TOMATO ratios) leave it off.

    Returns
    -------
    pandas.Series of str
        Indexed like ``data``. Distinct keys of one model and task get distinct names.

    Examples
    --------
    >>> import pandas as pd
    >>> rows = pd.DataFrame({"subject_id": "Qwen/Qwen2.5-VL-7B-Instruct",
    ...     "subject_kind": "model", "trial_type": "aot", "correct_response": "F",
    ...     "extra": [{"setting": "zero-shot"}, {"setting": "few-shot-4"}]})
    >>> observer_ids(rows).tolist()
    ['Qwen/Qwen2.5-VL-7B-Instruct / zero-shot', 'Qwen/Qwen2.5-VL-7B-Instruct / few-shot-4']
    """
    keys = observer_keys(data)
    names = keys["model"].astype(str).to_numpy(object)
    is_model = _is_model(data)
    if is_model.any():
        parts = keys.loc[is_model, ["model", "task", *OBSERVER_KEY[1:]]]
        tuples = [tuple(map(_none, k)) for k in parts.itertuples(index=False)]
        unique = pd.DataFrame(list(dict.fromkeys(tuples)), columns=parts.columns, dtype=object)
        named = {}
        for _, group in unique.groupby(["model", "task"], dropna=False, sort=False):
            named.update(_minimal_names(group))
        names[is_model] = [named[k] for k in tuples]
    if frame_condition:
        variant = keys["task_variant"].to_numpy(object)
        codes, uniques = pd.factorize(variant, use_na_sentinel=False)  # a few, per row
        shown = np.array([not _missing(v) and v != FULL_VARIANT for v in uniques],
                         dtype=bool)[codes]
        names[shown] = [f"{n}{SEPARATOR}{v}" for n, v in zip(names[shown], variant[shown])]
    return pd.Series(names, index=data.index, dtype=object)


def _minimal_names(group: pd.DataFrame) -> dict:
    """Name each key of one model and task by the model and the fewest key parts (in key
    order) that keep the names distinct, never a part all share; a missing part is left out
    of the name."""
    keys = [tuple(map(_none, k)) for k in group.itertuples(index=False)]
    parts = (("revision", lambda v: f"rev {v}"), ("setting", str),
             ("label_order", lambda v: f"labels {v}"), ("thinking", lambda v: f"thinking {v}"),
             ("prompt_language", lambda v: f"prompts {v}"), ("settings", str))
    pos = list(group.columns).index("settings")
    differing = _differing([k[pos] for k in keys])
    names = [str(k[0]) for k in keys]
    for col, show in parts:
        if len(set(names)) == len(names):
            break
        pos = list(group.columns).index(col)
        if len({k[pos] for k in keys}) == 1:  # the same for all: it tells none apart
            continue
        if col == "settings":
            show = differing.__getitem__
        names = [n + (SEPARATOR + show(k[pos]) if not _missing(k[pos]) else "")
                 for n, k in zip(names, keys)]
    if len(set(names)) < len(names):  # a missing part collided with a named one
        names = [SEPARATOR.join(str(p) for p in (k[0], *k[2:])) for k in keys]
    return dict(zip(keys, names))


def _differing(settings: list) -> dict:
    """Each settings key shown by the settings in which the keys differ (``fps 2``)."""
    found = {key: json.loads(key) for key in set(settings) if not _missing(key)}
    names = sorted({name for run in found.values() for name in run})
    differ = [name for name in names
              if len({json.dumps(run.get(name)) for run in found.values()}) > 1]
    return {key: ", ".join(f"{name.replace('_', ' ')} {_shown(run.get(name))}"
                           for name in differ) for key, run in found.items()}


def _shown(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return "none" if value is None else str(value)


def with_observer(data: pd.DataFrame) -> pd.DataFrame:
    """``data`` with an ``observer`` column: :func:`observer_ids` with frame conditions."""
    return data.assign(observer=observer_ids(data, frame_condition=True))


def observer_table(data: pd.DataFrame, frame_condition: bool = True) -> pd.DataFrame:
    """One row per observer: ``observer``, the key parts, ``task_variant`` and ``label``
    (:func:`display_label`), for legends and report labels."""
    keys = observer_keys(data).assign(observer=observer_ids(data, frame_condition))
    if not frame_condition:
        keys["task_variant"] = None
    table = keys.drop(columns="task").drop_duplicates("observer").reset_index(drop=True)
    table["label"] = [C.HUMAN if m == C.HUMAN else display_label(m, s, v) + (
                          "" if _missing(t) else f", thinking {t}") + (
                          "" if _missing(lang) else f", prompts {lang}")
                      for m, s, v, t, lang in zip(table["model"], table["setting"],
                                                  table["task_variant"], table["thinking"],
                                                  table["prompt_language"])]
    shown: dict = {}  # the settings in which a model's observers differ, for the label
    for _, group in table.groupby("model", sort=False):
        shown.update(_differing(list(group["settings"])))
    table["label"] = [label + (f", {shown[key]}" if shown.get(key) else "")
                      for label, key in zip(table["label"], table["settings"])]
    return table[["observer", *OBSERVER_KEY, "task_variant", "label"]]


def display_label(model: str, setting: str | None = None,
                  task_variant: str | None = None) -> str:
    """A short label: model family and size, then the setting; never a folder path.

    Parameters
    ----------
    model : str
        A model id: a hub id (``"Qwen/Qwen2.5-VL-7B-Instruct"``), a served name or a local
        folder (only its last part is used).
    setting, task_variant : str, optional
        Shown after a comma when given (a full-clip variant is not shown).

    Examples
    --------
    >>> display_label("Qwen/Qwen2.5-VL-7B-Instruct", "zero-shot")
    'Qwen2.5-VL 7B, zero-shot'
    >>> display_label("/home/me/ckpt/llava-onevision-qwen2-0.5b-ov-hf/")
    'llava-onevision-qwen2-ov 0.5B'
    >>> display_label("gpt-4o-2024-11-20", "few-shot-4", "shuffled")
    'gpt-4o, few-shot-4, shuffled'
    """
    name = re.split(r"[\\/]", str(model).rstrip("/\\"))[-1] or str(model)
    name = _DATE.sub("", name)
    while _SUFFIXES.search(name):
        name = _SUFFIXES.sub("", name)
    size = _SIZE.search(name)
    if size:
        name = (name[:size.start()] + name[size.end():])
        name = re.sub(r"[-_]{2,}", "-", name).strip("-_ ")
        name = f"{name} {size.group(1)}B".strip()
    extras = [x for x in (setting, task_variant) if not _missing(x) and x
              and x != FULL_VARIANT]
    return ", ".join([name, *extras])


def observer_column(data: pd.DataFrame, frame_condition: bool = True) -> pd.Series:
    """The ``observer`` column of ``data`` where it has one (a report names observers once,
    on all its trials), else :func:`observer_ids`. Without frame conditions the names are
    always computed, since a table's ``observer`` carries them."""
    if frame_condition and "observer" in data:
        return data["observer"].astype(object)
    return observer_ids(data, frame_condition=frame_condition)
