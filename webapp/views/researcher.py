"""The researcher dashboard: study list and set-up, the live study page, exports.

Every route of this blueprint requires a signed-in researcher (enforced once, in
``before_request``, so a route added later cannot forget it).
"""
import io
from pathlib import Path

import plotly
from flask import Blueprint, abort, flash, redirect, render_template, send_file, url_for
from flask_login import current_user
from flask_wtf import FlaskForm
from wtforms import SelectField, StringField
from wtforms.validators import DataRequired, Length

from webapp import catalog, dashboard, exports, participants, studies
from webapp.extensions import login_manager
from webapp.priority import low_priority

bp = Blueprint("researcher", __name__, url_prefix="/researcher")

PLOTLY_JS = Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"


@bp.before_request
def _require_login():
    if not current_user.is_authenticated:
        return login_manager.unauthorized()
    return None


class StudyForm(FlaskForm):
    slug = StringField("Slug (in the participant link)",
                       validators=[DataRequired(), Length(max=64)])
    title = StringField("Title", validators=[Length(max=200)])
    design = SelectField("Design", validators=[DataRequired()])
    stimulus_set = SelectField("Stimulus set", validators=[DataRequired()])


class ActionForm(FlaskForm):
    """No fields: it carries the CSRF token of a lifecycle button."""


def _study_form() -> StudyForm:
    form = StudyForm()
    form.design.choices = [(name, f"{d.title} ({name})") for name, d in studies.DESIGNS.items()]
    form.stimulus_set.choices = [(name, name) for name in sorted(catalog.stimulus_sets())]
    return form


def _study_or_404(slug: str):
    experiment = studies.get_study(slug)
    if experiment is None:
        abort(404, description=f"No study {slug!r}.")
    return experiment


@bp.get("/", endpoint="studies")
def studies_index():
    return _render_list(_study_form())


def _render_list(form: StudyForm, status: int = 200):
    return render_template("researcher/studies.html", studies=studies.list_studies(),
                           counts=studies.status_counts(), form=form), status


@bp.post("/studies")
def create_study():
    form = _study_form()
    if not form.validate_on_submit():
        return _render_list(form, 400)
    try:
        experiment = studies.create_study(form.slug.data, form.design.data,
                                          form.stimulus_set.data, form.title.data)
    except studies.StudyError as error:
        form.slug.errors = [*form.slug.errors, str(error)]
        return _render_list(form, 400)
    flash(f"Created study {experiment.slug!r} as a draft; open it to take participants.", "info")
    return redirect(url_for("researcher.study", slug=experiment.slug), 303)


@bp.get("/studies/<slug>")
@low_priority
def study(slug):
    experiment = _study_or_404(slug)
    return render_template(
        "researcher/study.html", study=experiment, panel=dashboard.study_panel(slug),
        actions=studies.allowed_actions(experiment.status), action_form=ActionForm(),
        link=studies.participant_link(slug),
        prolific_link=studies.participant_link(slug, prolific=True),
        completion_codes=participants.completion_codes(slug))


@bp.get("/studies/<slug>/panel")
@low_priority
def panel(slug):
    """The live part of the study page, re-fetched by researcher.js every few seconds."""
    _study_or_404(slug)
    return render_template("researcher/_panel.html", panel=dashboard.study_panel(slug))


@bp.post("/studies/<slug>/<action>")
def change_status(slug, action):
    _study_or_404(slug)
    if action not in studies.TRANSITIONS:
        abort(404)
    if not ActionForm().validate_on_submit():
        abort(400, description="The form expired; reload the page and try again.")
    try:
        experiment = studies.transition(slug, action)
    except studies.StudyError as error:
        flash(str(error), "error")
        return redirect(url_for("researcher.study", slug=slug), 303)
    flash(f"Study {slug!r} is now {experiment.status}.", "info")
    return redirect(url_for("researcher.study", slug=slug), 303)


@bp.get("/studies/<slug>/export.zip")
@low_priority
def export(slug):
    _study_or_404(slug)
    name, data = exports.export_zip(slug)
    return send_file(io.BytesIO(data), mimetype="application/zip", as_attachment=True,
                     download_name=name, max_age=0)


@bp.get("/vendor/plotly.min.js")
def plotly_js():
    # Served from the installed plotly package, so the version always matches and no CDN is used.
    if not PLOTLY_JS.is_file():
        abort(404, description="plotly.min.js is missing from the plotly package.")
    return send_file(PLOTLY_JS, mimetype="text/javascript", max_age=86400)
