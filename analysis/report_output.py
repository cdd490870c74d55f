"""Write a :class:`analysis.reports.Report` to disk: report.html, tables/*.csv, metrics.json."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from analysis.csv_cells import escape_cells
from analysis.report_codebook import codebook_markdown, codebook_table

# A wheel carries the report template in analysis/templates (pyproject.toml maps it there); a
# checkout or an editable install reads it from the repository's templates/report.
_PACKAGED_TEMPLATES = Path(__file__).resolve().parent / "templates"
TEMPLATE_DIR = (_PACKAGED_TEMPLATES if _PACKAGED_TEMPLATES.is_dir()
                else Path(__file__).resolve().parent.parent / "templates" / "report")
MAX_HTML_ROWS = 40

# Sections of the HTML report: (id, title, figure names, table names), in reading order.
SECTIONS = (
    ("exclusions", "Exclusion flow", ("exclusion_flow",), ("exclusion_flow",)),
    ("aot", "Arrow of time: accuracy, F1 and bias", ("direction_accuracy", "bias", "sdt"),
     ("aot_overall", "aot_by_direction")),
    ("participants", "Per participant: signal detection and the forward bias",
     ("participants",), ("sdt_participant_summary", "sdt_by_participant")),
    ("categories", "Per-category performance", ("categories",), ("aot_by_category",)),
    ("pairs", "Pairs: a clip forward and reversed, both right (pair accuracy) and told apart "
     "(pair consistency)", (), ("pair_metrics", "pair_metrics_by_category",
                                "pair_metrics_by_participant")),
    ("rt", "Reaction times", ("rt", "rt_breakdown"),
     ("rt_median", "rt_answer_speed", "rt_lmm")),
    ("accuracy_model", "Accuracy models: GEE and crossed GLMM", (),
     ("accuracy_model", "accuracy_glmm")),
    ("human_vs_model", "People vs models", ("item_scatter",),
     ("human_model_gap", "category_gap", "error_consistency", "item_correlation", "difficulty_correlation",
      "text_vs_logit_accuracy", "per_stimulus_agreement")),
    ("tests", "Tests against chance and between models (Holm-corrected as one family)", (),
     ("binomial_tests", "mcnemar_tests")),
    ("non_response", "Non-responses: the main figures under each policy", (),
     ("nonresponse_sensitivity", "ordering_nonresponse_sensitivity")),
    ("ordering", "Frame ordering",
     ("ordering_factors", "ordering_condition", "ordering_anchoring", "ordering_inversions"),
     ("ordering_by_factor", "ordering_by_condition", "ordering_anchoring",
      "ordering_by_inversions")),
    ("diagnostics", "Model diagnostics", (),
     ("tomato", "swap_consistency", "calibration", "calibration_bins", "tra_process",
      "tra_scenario", "tra_parameter")),
    ("tra_sweep", "Arrow of time over the TRA sweeps: people, VLMs and self-supervised models "
     "(TRA paper's peaks published, not measured)", ("tra_sweep_bouncing_ball",
                                                     "tra_sweep_pendulum"),
     ("tra_sweep_fits", "tra_sweep_level_means", "tra_sweep_participants")),
    ("subjects", "Per participant and session", (), ("aot_by_subject", "aot_by_session")),
    ("benchmark", "AoT-PsyPhyBENCH: our runs beside the paper (published, not measured)", (),
     ("benchmark_reference",)),
)


def write_report(report, out_dir: str | Path, title: str = "Chronoscope report") -> dict:
    """Write the report files and return their paths.

    Parameters
    ----------
    report : analysis.reports.Report
    out_dir : str or Path
        Created if needed. Gets ``report.html`` (plotly.js embedded once; no network
        needed to view it), ``tables/<name>.csv`` for every table (text cells quoted
        against spreadsheet formulas, see :mod:`analysis.csv_cells`), ``metrics.json``
        and ``codebook.csv`` / ``codebook.md`` (:mod:`analysis.report_codebook`).
    title : str
        Heading of the HTML page.

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
    html_path = out / "report.html"
    html_path.write_text(render_html(report, title), encoding="utf-8")
    return {"html": html_path, "metrics": metrics_path, "tables": tables}


def _csv_ready(table: pd.DataFrame) -> pd.DataFrame:
    """List and dict cells as JSON, like the trial export."""
    out = table.copy()
    for col in out.columns:
        if out[col].dtype == object and out[col].map(lambda v: isinstance(v, (list, dict))).any():
            out[col] = out[col].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    return out


def render_html(report, title: str) -> str:
    """The self-contained HTML page as a string."""
    import jinja2
    from plotly.offline import get_plotlyjs

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
                             autoescape=jinja2.select_autoescape(["html"]))
    sections = []
    failures = report.failures
    for sid, stitle, fig_names, table_names in SECTIONS:
        figs = [report.figures[f].to_html(full_html=False, include_plotlyjs=False)
                for f in fig_names if f in report.figures]
        # An empty table is left out (a section of nothing is not shown); a failed fit
        # keeps its place with the reason.
        tabs = [_table_html(n, report.tables[n]) for n in table_names
                if n in report.tables and not report.tables[n].empty]
        failed = [{"name": n, "reason": failures[n]} for n in table_names if n in failures]
        if figs or tabs or failed:
            sections.append({"id": sid, "title": stitle, "figures": figs, "tables": tabs,
                             "failures": failed})
    m = report.metrics
    rule = m.get("sessions", {}).get("rule")
    summary = (f"{m.get('n_participants_included', 0)} of {m.get('n_participants_entered', 0)} "
               f"participants and {m.get('n_trials_included', 0)} of "
               f"{m.get('n_trials_entered', 0)} trials analysed"
               + (f" ({rule} of participants)" if rule else "") + "; models: "
               f"{', '.join(m.get('models', [])) or 'none'}.")
    return env.get_template("report.html").render(
        title=title, summary=summary, notes=report.notes, sections=sections,
        plotly_js=get_plotlyjs())


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
                     participants: pd.DataFrame | None = None) -> dict:
    """Check and normalise a canonical trial table, build the full report and write it.

    The one function behind ``manage.py analyze`` and ``manage.py report``. A table with
    a value outside the codebook raises ``ValueError`` (see
    :func:`analysis.validation.validate_trials`; ``rows`` says how its message names
    rows, e.g. :class:`analysis.loading.CsvLines`); ``sessions`` is the session rule of
    :func:`analysis.reports.build_report`, and so are ``sweep_levels`` and ``participants``.

    Returns
    -------
    dict
        The paths of :func:`write_report` plus ``"metrics"`` content under ``"summary"``.
    """
    import numpy as np

    from analysis import loading, reports

    if data.empty:
        raise ValueError("the trial table is empty: nothing to analyse")
    trials = loading.normalize_trials(data, rows=rows)
    report = reports.build_report(trials, models=models, n_boot=n_boot,
                                  rng=np.random.default_rng(seed), tra_data=tra_data,
                                  sessions=sessions, sweep_levels=sweep_levels,
                                  participants=participants)
    paths = write_report(report, out_dir, title=title)
    paths["summary"] = report.metrics
    return paths
