"""The report's codebook, rendered from :mod:`analysis.report.registry`: every table, what
computes it, when a study has it, and what its columns mean.

:func:`analysis.report.output.write_report` writes it beside the CSVs as ``codebook.csv``
and ``codebook.md``; :func:`codebook_markdown` is also the analysis reference of the
documentation site.
"""
from __future__ import annotations

import pandas as pd

from analysis.report import registry as R


def codebook_table() -> pd.DataFrame:
    """One row per documented column group of each table (``table`` ``*``: every table
    that has the column). Columns: ``table, section, columns, description``."""
    rows = [(str(t), t.section.id, columns, text)
            for t in R.TABLES for columns, text in t.columns.items()]
    rows += [("*", "", columns, text) for columns, text in R.COMMON_COLUMNS.items()]
    return pd.DataFrame(rows, columns=["table", "section", "columns", "description"])


def _cell(text: str) -> str:
    return text.replace("|", "\\|")  # P(B | backward) must not end the cell


def _table_markdown(table: R.Table) -> list[str]:
    facts = [f"Computed by `{table.builder}`."]
    facts.append(f"Present with {table.when}." if table.when else "In every report.")
    if table.figures:
        facts.append(f"Figures: {', '.join(f'`{f}`' for f in table.figures)}.")
    if not table.html:
        facts.append("In the CSVs only; report.html shows its figures.")
    if table.metrics_json:
        facts.append("Also in metrics.json.")
    if table.live:
        facts.append(f"The live study page shows it (`{table.live}`).")
    lines = [f"### `{table}`", "", " ".join(facts), ""]
    if table.columns:
        lines += ["| columns | meaning |", "|---|---|"]
        lines += [f"| `{c}` | {_cell(text)} |" for c, text in table.columns.items()]
        lines.append("")
    return lines


def codebook_markdown() -> str:
    """The Markdown reference of every report table and column, by section in report order."""
    lines = ["# Report codebook", "",
             "Every table of a report (`tables/<name>.csv`), by its section of report.html. "
             "Sections shown for a trial type are those it names in `METRICS`.", "",
             "Columns that mean the same in every table that has them:", "",
             "| columns | meaning |", "|---|---|"]
    lines += [f"| `{c}` | {_cell(text)} |" for c, text in R.COMMON_COLUMNS.items()]
    for section in R.SECTIONS:
        lines += ["", f"## {section.title}", ""]
        for table in (t for t in R.TABLES if t.section == section):
            lines += _table_markdown(table)
    return "\n".join(lines).rstrip() + "\n"
