"""Write a :class:`analysis.report.build.Report` to disk: report.html, tables/*.csv,
metrics.json; its sections and their tables are :mod:`analysis.report.registry`'s."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from analysis.csv_cells import escape_cells
from analysis.report import registry
from analysis.report.codebook import codebook_markdown, codebook_table

# A wheel carries the report template in analysis/templates (pyproject.toml maps it there); a
# checkout or an editable install reads it from the repository's templates/report.
_PACKAGED_TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
TEMPLATE_DIR = (_PACKAGED_TEMPLATES if _PACKAGED_TEMPLATES.is_dir()
                else Path(__file__).resolve().parents[2] / "templates" / "report")
MAX_HTML_ROWS = 40

def write_report(report, out_dir: str | Path, title: str = "Chronoscope report",
                 methods: str | None = None) -> dict:
    """Write the report files and return their paths.

    Parameters
    ----------
    report : analysis.report.build.Report
    out_dir : str or Path
        Created if needed. Gets ``report.html`` (plotly.js embedded once; no network
        needed to view it), ``tables/<name>.csv`` for every table (text cells quoted
        against spreadsheet formulas, see :mod:`analysis.csv_cells`), ``metrics.json``
        and ``codebook.csv`` / ``codebook.md`` (:mod:`analysis.report.codebook`).
    title : str
        Heading of the HTML page.
    methods : str, optional
        A methods section (Markdown, :mod:`analysis.report.methods`): written as
        ``methods.md`` and shown at the end of report.html.

    Returns
    -------
    dict
        ``{"html": Path, "metrics": Path, "tables": [Path, ...]}``.
    """
    out = Path(out_dir)
    try:
        (out / "tables").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"cannot create output folder {out}: {exc}") from exc
    tables = []
    for name, table in report.tables.items():
        path = out / "tables" / f"{name}.csv"
        escape_cells(_csv_ready(table)).to_csv(path, index=False)
        tables.append(path)
    # What the columns mean (and why some cells are empty), beside the tables.
    escape_cells(codebook_table()).to_csv(out / "codebook.csv", index=False)
    (out / "codebook.md").write_text(codebook_markdown(), encoding="utf-8")
    metrics_path = out / "metrics.json"
    metrics = {**report.metrics, "timings_s": report.timings_s}
    metrics_path.write_text(json.dumps(metrics, indent=2, allow_nan=False, default=str))
    if methods is not None:
        (out / "methods.md").write_text(methods, encoding="utf-8")
    html_path = out / "report.html"
    html_path.write_text(render_html(report, title, methods), encoding="utf-8")
    return {"html": html_path, "metrics": metrics_path, "tables": tables}


def _csv_ready(table: pd.DataFrame) -> pd.DataFrame:
    """List and dict cells as JSON, like the trial export."""
    out = table.copy()
    for col in out.columns:
        if out[col].dtype == object and out[col].map(lambda v: isinstance(v, (list, dict))).any():
            out[col] = out[col].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    return out


def render_html(report, title: str, methods: str | None = None) -> str:
    """The self-contained HTML page as a string."""
    import jinja2
    from plotly.offline import get_plotlyjs

    from analysis.report.methods import methods_html

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                             autoescape=jinja2.select_autoescape(["html"]))
    sections = []
    failures = report.failures
    for section in registry.sections():
        shown = [t for t in registry.TABLES if t.section == section]
        table_names = [t for t in shown if t.html]
        fig_names = {f for t in shown for f in t.figures}
        # in the order they were drawn
        figs = [figure.to_html(full_html=False, include_plotlyjs=False)
                for name, figure in report.figures.items() if name in fig_names]
        # An empty table is left out (a section of nothing is not shown); a failed fit
        # keeps its place with the reason.
        tabs = [_table_html(n, report.tables[n]) for n in table_names
                if n in report.tables and not report.tables[n].empty]
        failed = [{"name": n, "reason": failures[n]} for n in table_names if n in failures]
        if figs or tabs or failed:
            sections.append({"id": section.id, "title": section.title, "figures": figs,
                             "tables": tabs,
                             "failures": failed})
    m = report.metrics
    rule = m.get("sessions", {}).get("rule")
    summary = (f"{m.get('n_participants_included', 0)} of {m.get('n_participants_entered', 0)} "
               + ("participants" if m.get("people", True) else
                  "model subjects (no people's trials)")
               + f" and {m.get('n_trials_included', 0)} of "
               f"{m.get('n_trials_entered', 0)} trials analysed"
               + (f" ({rule} of {'participants' if m.get('people', True) else 'model subjects'})"
                  if rule else "") + "; models: "
               f"{', '.join(m.get('models', [])) or 'none'}.")
    return env.get_template("report.html").render(
        title=title, summary=summary, notes=report.notes, sections=sections,
        methods_html=methods_html(methods) if methods else None, plotly_js=get_plotlyjs())


def _table_html(name: str, table: pd.DataFrame) -> dict:
    shown = table.head(MAX_HTML_ROWS)
    html = shown.to_html(index=False, classes="data", float_format=_number, na_rep="",
                         border=0)
    return {"name": name, "html": html, "rows": len(table), "shown": len(shown),
            "truncated": len(table) > len(shown)}


def _number(value: float) -> str:
    """Three decimals; an infinite statistic as the TRA paper prints it (t = inf)."""
    if value in (float("inf"), float("-inf")):
        return "∞" if value > 0 else "−∞"
    return f"{value:.3f}"


def report_to_folder(data: pd.DataFrame, out_dir: str | Path, models=None, n_boot: int = 1000,
                     seed: int = 0, tra_data: pd.DataFrame | None = None,
                     title: str = "Chronoscope report", sessions: str = "completed",
                     rows=None, sweep_levels: pd.DataFrame | None = None,
                     participants: pd.DataFrame | None = None,
                     methods: str | None = None) -> dict:
    """Check and normalise a canonical trial table, build the full report and write it.

    The one function behind ``manage.py analyze`` and ``manage.py report``. A table with
    a value outside the codebook raises ``ValueError`` (see
    :func:`analysis.validation.validate_trials`; ``rows`` says how its message names
    rows, e.g. :class:`analysis.loading.CsvLines`); ``sessions`` is the session rule of
    :func:`analysis.report.build.build_report`, and so are ``sweep_levels`` and ``participants``;
    ``methods`` is :func:`write_report`'s.

    Returns
    -------
    dict
        The paths of :func:`write_report` plus ``"metrics"`` content under ``"summary"``.
    """
    import numpy as np

    from analysis import loading
    from analysis.report import build

    if data.empty:
        raise ValueError("the trial table is empty: nothing to analyse")
    trials = loading.normalize_trials(data, rows=rows)
    report = build.build_report(trials, models=models, n_boot=n_boot,
                                  rng=np.random.default_rng(seed), tra_data=tra_data,
                                  sessions=sessions, sweep_levels=sweep_levels,
                                  participants=participants)
    paths = write_report(report, out_dir, title=title, methods=methods)
    paths["summary"] = report.metrics
    return paths
