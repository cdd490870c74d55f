"""Every stored trial of one participant, on one page: what a researcher reads before
excluding or reinstating them, or answering their e-mail."""
from flask import abort, render_template, request

from webapp.priority import low_priority
from webapp.researcher import studies
from webapp.researcher.blueprint import bp
from webapp.researcher.export_tables import TRIAL_FILE_COLUMNS, json_cell, trials_table
from webapp.researcher.exports import snapshot
from webapp.researcher.participant_table import participant_rows
from webapp.researcher.roster import roster_frame, study_trials

# The trial columns the page shows, in this order (the export has them all).
SHOWN = ("session_id", "trial_index", "block", "trial_type", "stimulus_id", "direction",
         "correct_response", "response", "response_key", "correct", "rt_ms", "onset_method",
         "dropped_frames", "excluded", "exclusion_reasons", "received_at_local", "extra")


@bp.get("/studies/<slug>/trials")
@low_priority
def participant_trials(slug):
    """``?participant=ID``: that participant's sessions and every trial stored of them;
    without one, the study's participants to choose from."""
    subject = request.args.get("participant", "")
    if len(subject) > 200:
        abort(400, description="A participant id has at most 200 characters.")
    with snapshot():
        study = studies.require_study(slug)
        zone = studies.time_zone(study)
        sessions = roster_frame(slug)
        if not subject:
            people = sorted(set(sessions.loc[sessions["subject_kind"] == "human", "subject_id"]))
            return render_template("researcher/participant.html", study=study, subject=None,
                                   people=people)
        sessions = sessions[(sessions["subject_id"] == subject)
                            & (sessions["subject_kind"] == "human")]
        if sessions.empty:
            abort(404, description=f"No participant {subject!r} in study {slug!r}.")
        trials = study_trials(slug)
        trials = trials_table(trials[(trials["subject_id"] == subject)
                                     & (trials["subject_kind"] == "human")], sessions, zone)
    rows = [{column: _cell(column, row[column]) for column in SHOWN}
            for row in trials[list(TRIAL_FILE_COLUMNS)].to_dict("records")]
    return render_template("researcher/participant.html", study=study, subject=subject,
                           sessions=participant_rows(sessions, zone=zone), columns=SHOWN,
                           trials=rows)


def _cell(column: str, value) -> str:
    if column in ("exclusion_reasons", "extra"):
        return json_cell(value)
    if value is None or value != value:  # None, NaN
        return ""
    return str(value)
