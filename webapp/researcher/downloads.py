"""The researcher dashboard's downloads: a study's export, Prolific's decisions and
next-session files, and the plotly.js the dashboard's figures use."""
import io
from pathlib import Path

import plotly
from flask import abort, request, send_file

from webapp.priority import low_priority
from webapp.researcher import exports
from webapp.researcher.blueprint import bp

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


def _attachment(data: bytes, name: str, mimetype: str = "text/csv"):
    """A file built in memory, downloaded under ``name`` and never cached."""
    return send_file(io.BytesIO(data), mimetype=mimetype, as_attachment=True,
                     download_name=name, max_age=0)


@bp.get("/studies/<slug>/prolific.csv")
@low_priority
def prolific(slug):
    name, data = exports.prolific_export(slug)
    return _attachment(data, name)


def _next_session_file(slug: str, name: str):
    return _attachment(exports.next_session_export(slug, name), f"{slug}-{name}")


@bp.get("/studies/<slug>/next_session_allowlist.csv")
@low_priority
def next_session_allowlist(slug):
    """Prolific's custom allowlist for the next session (webapp.researcher.exports)."""
    return _next_session_file(slug, "next_session_allowlist.csv")


@bp.get("/studies/<slug>/next_session_start_times.csv")
@low_priority
def next_session_start_times(slug):
    """The same people with the earliest start time of their next session."""
    return _next_session_file(slug, "next_session_start_times.csv")


@bp.get("/studies/<slug>/export.zip")
@low_priority
def export(slug):
    name, data = exports.export_zip(slug, excel=request.args.get("excel") == "1",
                                    bids_layout=request.args.get("layout") == "bids")
    return _attachment(data, name, "application/zip")


@bp.get("/studies/<slug>/export.xlsx")
@low_priority
def export_workbook(slug):
    try:
        name, data = exports.workbook_export(slug)
    except ValueError as error:  # a table longer than an Excel sheet
        abort(400, description=str(error))
    return _attachment(data, name, XLSX)


@bp.get("/vendor/plotly.min.js")
def plotly_js():
    # Served from the installed plotly package, so the version always matches and no CDN is used.
    if not PLOTLY_JS.is_file():
        abort(404, description="plotly.min.js is missing from the plotly package.")
    return send_file(PLOTLY_JS, mimetype="text/javascript", max_age=86400)
