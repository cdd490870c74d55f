"""The researcher dashboard's pages: study list and set-up, the live study page, previews,
exclusions, resume links, members (the downloads are :mod:`webapp.researcher.downloads`;
sign-in and membership are checked once for every route, in
:mod:`webapp.researcher.blueprint`).
"""
import secrets

from flask import abort, flash, redirect, render_template, request, url_for
from flask_login import current_user
from flask_wtf import FlaskForm
from wtforms import SelectField, StringField, TextAreaField
from wtforms.validators import DataRequired, Length

from experiments.designs import Design
from experiments.response_keys import reserved_key_warnings
from webapp.extensions import db
from webapp.models import access, manual_exclusion
from webapp.participant import entry, resume, texts
from webapp.priority import low_priority
from webapp.researcher import codes, dashboard, lifecycle, studies, study_form
from webapp.researcher.blueprint import bp
from webapp.researcher.participant_table import stamp


class ActionForm(FlaskForm):
    """No fields: it carries the CSRF token of a lifecycle or member-removal button."""


class ExclusionForm(FlaskForm):
    """Exclude or reinstate one participant; the reason is checked by the rule itself, so a
    missing one is answered with the same message on the dashboard and the command line."""

    participant = StringField("Participant", validators=[DataRequired(), Length(max=200)])
    action = SelectField("Action", choices=list(manual_exclusion.ACTIONS))
    reason = TextAreaField("Reason", validators=[Length(max=manual_exclusion.MAX_REASON)])


class ResumeLinkForm(FlaskForm):
    participant = StringField("Participant", validators=[DataRequired(), Length(max=200)])


class CodesForm(FlaskForm):
    codes = TextAreaField("Codes submitted on the platform (one a line, or separated by "
                          "commas or spaces)", validators=[DataRequired(), Length(
                              max=codes.MAX_CODES * (codes.MAX_CODE_CHARS + 1))])


class MemberForm(FlaskForm):
    username = StringField("Researcher", validators=[DataRequired(), Length(max=80)])
    role = SelectField("Role", choices=list(access.ROLES), default="viewer")


def _study_form(study=None) -> FlaskForm:
    """The study form (``study_form.new_form``) with its choices: stimulus sets only where some
    design can use them, each option naming the designs that can (researcher.js shows the
    chosen design's)."""
    form = study_form.new_form()
    usable = studies.usable_sets()
    form.design.choices = [(name, f"{d.title} ({name})") for name, d in studies.DESIGNS.items()]
    sets = sorted({name for names in usable.values() for name in names})
    form.stimulus_set.choices = [
        (name, name, {"data-designs": " ".join(d for d, names in usable.items() if name in names)})
        for name in sets]
    form.usable = usable
    if study is not None and request.method == "GET":
        study_form.fill(form, studies.study_config(study), study)
    return form


@bp.get("/", endpoint="studies")
def studies_index():
    return _render_list(_study_form())


def _render_list(form: FlaskForm, status: int = 200, editing=None):
    return render_template("researcher/studies.html", studies=studies.studies_for(current_user),
                           counts=studies.status_counts(), form=form, editing=editing), status


@bp.post("/studies")
def create_study():
    form = _study_form()
    if not form.validate_on_submit():
        return _render_list(form, 400)
    config = study_form.config_from(form, base=None)
    if config is None:
        return _render_list(form, 400)
    try:
        study = studies.create_study_from_config(form.slug.data, config,
                                                 owner=current_user.username)
    except studies.StudyError as error:
        form.slug.errors = [*form.slug.errors, str(error)]
        return _render_list(form, 400)
    flash(f"Created study {study.slug!r} as a draft; open it to take participants.", "info")
    return redirect(url_for("researcher.study", slug=study.slug), 303)


@bp.get("/studies/<slug>/edit")
def edit_study(slug):
    study = studies.get_study(slug)
    return _render_list(_study_form(study), editing=study)


@bp.post("/studies/<slug>/edit")
def update_study(slug):
    """Change a study's configuration: a draft in place, an opened study as a new version."""
    study = studies.get_study(slug)
    form = _study_form(study)
    form.slug.data = slug
    if not form.validate_on_submit():
        return _render_list(form, 400, editing=study)
    config = study_form.config_from(form, base=studies.study_config(study))
    if config is None:
        return _render_list(form, 400, editing=study)
    try:
        based_on = int(form.based_on.data) if (form.based_on.data or "").isdigit() else None
        study = lifecycle.update_study(slug, config, based_on=based_on,
                                       by=current_user.username)
    except studies.StudyError as error:
        form.based_on.errors = [str(error)]
        return _render_list(form, 409 if "meanwhile" in str(error) else 400, editing=study)
    flash(f"Study {slug!r} is at version {study.config_version}"
          + (" (sessions from now on run it)." if study.status != "draft" else "."), "info")
    return redirect(url_for("researcher.study", slug=slug), 303)


@bp.get("/studies/<slug>")
@low_priority
def study(slug):
    return _render_study(slug)


def _render_study(slug: str, exclusion_form: ExclusionForm | None = None, status: int = 200,
                  issued_link: str | None = None, code_check=None):
    """The study page; ``exclusion_form``: a refused rule's form, kept with its errors;
    ``issued_link``: a resume link just issued (shown this once); ``code_check``: pasted
    codes checked (:func:`webapp.researcher.codes.check_codes`)."""
    study = studies.require_study(slug)  # a missing study was refused before the view
    allowed = access.permissions_of(current_user, study)
    settings = texts.study_settings(study.design_snapshot)
    return render_template(
        "researcher/study.html", study=study, slug=slug, panel=dashboard.study_panel(slug),
        stamp=stamp, zone=studies.time_zone(study),
        state=lifecycle.state_name(study), action_labels=lifecycle.ACTION_LABELS,
        actions=[action for action in lifecycle.allowed_actions(study)
                 if access.action_permission(action) in allowed],
        action_form=ActionForm(), role=access.role_of(current_user, study),
        members=access.members(study),
        member_form=MemberForm() if "manage" in allowed else None,
        can_preview="run" in allowed and study.close_mode != "stop",
        exclusion_form=exclusion_form or (ExclusionForm() if "run" in allowed else None),
        manual_rules=manual_exclusion.history(study),
        resume_form=ResumeLinkForm() if "run" in allowed else None,
        codes_form=CodesForm() if "run" in allowed else None, code_check=code_check,
        resume_links=resume.issued_links(study), issued_link=issued_link,
        resume_valid_hours=int(resume.LINK_VALID.total_seconds() // 3600),
        link=studies.participant_link(slug), platform=settings["platform"],
        platform_link=studies.platform_link(slug, settings["platform"]),
        return_urls=settings["return_urls"],
        completion_codes=codes.shared_codes(study),
        key_warnings=reserved_key_warnings(Design.from_snapshot(study).response_keys,
                                           studies.study_config(study).browsers)), status


@bp.get("/studies/<slug>/panel")
@low_priority
def panel(slug):
    """The live part of the study page, re-fetched by researcher.js every few seconds."""
    return render_template("researcher/_panel.html", slug=slug, panel=dashboard.study_panel(slug))


@bp.post("/studies/<slug>/<action>")
def change_status(slug, action):
    if action not in lifecycle.TRANSITIONS:
        abort(404)
    if not ActionForm().validate_on_submit():
        abort(400, description="The form expired; reload the page and try again.")
    try:
        study = lifecycle.transition(slug, action)
    except studies.StudyError as error:
        flash(str(error), "error")
        return redirect(url_for("researcher.study", slug=slug), 303)
    flash(f"Study {slug!r} is now {lifecycle.state_name(study)}.", "info")
    return redirect(url_for("researcher.study", slug=slug), 303)


@bp.post("/studies/<slug>/preview")
def preview(slug):
    """Run the study in any state but stopped, as the simulated participant or (``mode=manual``)
    click by click: a new session marked as a preview (simulated, always excluded, taking no
    place, never in exports or reports)."""
    if not ActionForm().validate_on_submit():
        abort(400, description="The form expired; reload the page and try again.")
    with db.engine.connect() as connection:
        result = entry.enter(connection, slug,
                             {"participant": f"preview-{secrets.token_hex(6)}"},
                             entry.Admission(preview=True))
    if result.outcome != "run":
        flash(result.message, "error")
        return redirect(url_for("researcher.study", slug=slug), 303)
    studies.mark_preview(result.token)
    manual = request.form.get("mode") == "manual"
    return redirect(url_for("participant.run", token=result.token,
                            **({"manual": "1"} if manual else {})), 303)


@bp.post("/studies/<slug>/exclusions")
def manual_rule(slug):
    """Add a manual exclude/reinstate rule. A repeated submit (the participant is already
    in that state) changes nothing and says so; a refused rule comes back on the study page,
    its form kept with the error."""
    form = ExclusionForm()
    if not form.validate_on_submit():
        if "csrf_token" in form.errors:
            abort(400, description="The form expired; reload the page and try again.")
        return _render_study(slug, form, 400)
    try:
        rule = manual_exclusion.add_rule(studies.get_study(slug), form.participant.data,
                                         form.action.data, form.reason.data,
                                         current_user.username)
    except manual_exclusion.ManualRuleError as error:
        if error.status == 409:
            flash(str(error), "error")
            return redirect(url_for("researcher.study", slug=slug, _anchor="review"), 303)
        form.form_errors.append(str(error))
        return _render_study(slug, form, error.status)
    done = "excluded" if rule.action == "exclude" else "reinstated"
    flash(f"{form.participant.data} is {done} (rule {rule.sequence}); no data was changed.",
          "info")
    return redirect(url_for("researcher.study", slug=slug, _anchor="review"), 303)


@bp.post("/studies/<slug>/resume-links")
def resume_link(slug):
    """Issue a single-use link that lets a participant continue in another browser; the
    link is shown this once (only its hash is stored), the issue is kept on the study page."""
    form = ResumeLinkForm()
    if not form.validate_on_submit():
        if "csrf_token" in form.errors:
            abort(400, description="The form expired; reload the page and try again.")
        flash("Name the participant (their recruitment id) to issue a resume link.", "error")
        return redirect(url_for("researcher.study", slug=slug, _anchor="resume"), 303)
    try:
        code, _ = resume.issue_link(studies.get_study(slug), form.participant.data,
                                    current_user.username)
    except resume.ResumeLinkError as error:
        flash(str(error), "error")
        return redirect(url_for("researcher.study", slug=slug, _anchor="resume"), 303)
    return _render_study(slug, issued_link=studies.participant_link(slug, resume=code))


@bp.post("/studies/<slug>/codes")
def check_codes(slug):
    """Which of the codes pasted from the platform this study issued, to whom."""
    form = CodesForm()
    if not form.validate_on_submit():
        if "csrf_token" in form.errors:
            abort(400, description="The form expired; reload the page and try again.")
        flash("Paste the codes to check (at most "
              f"{codes.MAX_CODES} codes).", "error")
        return redirect(url_for("researcher.study", slug=slug, _anchor="codes"), 303)
    try:
        pasted = codes.parse_codes(form.codes.data)
    except codes.CodeListError as error:
        flash(str(error), "error")
        return redirect(url_for("researcher.study", slug=slug, _anchor="codes"), 303)
    return _render_study(slug, code_check=codes.check_codes(studies.get_study(slug), pasted))


@bp.post("/studies/<slug>/members")
def add_member(slug):
    """Add a researcher by username with a role, or change a member's role."""
    form = MemberForm()
    if not form.validate_on_submit():
        for field in (form.username, form.role):
            for error in field.errors:
                flash(f"{field.label.text}: {error}", "error")
        return redirect(url_for("researcher.study", slug=slug), 303)
    try:
        access.share(studies.get_study(slug), form.username.data, form.role.data)
    except access.MembershipError as error:
        flash(str(error), "error")
    else:
        flash(f"{form.username.data} is now {form.role.data} of {slug!r}.", "info")
    return redirect(url_for("researcher.study", slug=slug), 303)


@bp.post("/studies/<slug>/members/<username>/remove")
def remove_member(slug, username):
    if not ActionForm().validate_on_submit():
        abort(400, description="The form expired; reload the page and try again.")
    try:
        access.unshare(studies.get_study(slug), username)
    except access.MembershipError as error:
        flash(str(error), "error")
    else:
        flash(f"{username} no longer has access to {slug!r}.", "info")
    return redirect(url_for("researcher.study", slug=slug), 303)
