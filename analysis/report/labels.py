"""Models shown by short label in every report table, never by a local path."""
from __future__ import annotations

import pandas as pd

from analysis import columns as C
from analysis.observers import display_label

# Table columns that name observers or models.
LABELLED_COLUMNS = ("observer", "model", "subject_id", "session_id", "observer_a", "observer_b")


def model_labels(data: pd.DataFrame) -> dict:
    """Model id -> short label (:func:`analysis.observers.display_label`); ids whose
    labels collide keep the fewest trailing parts of their id that tell them apart."""
    ids = sorted(map(str, data.loc[data["subject_kind"] == C.MODEL, "subject_id"].unique()))
    labels = {m: display_label(m) for m in ids}
    for label in {v for v in labels.values() if list(labels.values()).count(v) > 1}:
        clash = [m for m in ids if labels[m] == label]
        parts = {m: [p for p in m.replace("\\", "/").split("/") if p] or [m] for m in clash}
        for n in range(1, max(len(p) for p in parts.values()) + 1):
            tails = {m: "/".join(p[-n:]) for m, p in parts.items()}
            if len(set(tails.values())) == len(tails):
                break
        labels.update(tails)
    return labels


def label_models(tables: dict, data: pd.DataFrame) -> None:
    """Show models by short label in every table of ``tables`` (name -> DataFrame, replaced
    in place): an observer name starts with its model id (``"<id> / few-shot-4"``), which
    is replaced by the model's label."""
    labels = model_labels(data)
    if not labels or all(k == v for k, v in labels.items()):
        return
    longest_first = sorted(labels, key=len, reverse=True)

    def label(value):
        if not isinstance(value, str):
            return value
        for model in longest_first:
            if value == model or value.startswith(model + " / "):
                return labels[model] + value[len(model):]
        return value

    for name, table in tables.items():
        for col in LABELLED_COLUMNS:
            if col in table.columns:
                values = table[col].astype(object)
                table = table.assign(**{col: values.map(
                    {v: label(v) for v in values.dropna().unique()}).where(values.notna())})
        tables[name] = table
