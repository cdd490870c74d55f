"""The landing page: what is served and where to go next."""
from flask import Blueprint, render_template
from sqlalchemy import func, select

from webapp.extensions import db
from webapp.models import SourceClip, Stimulus

bp = Blueprint("home", __name__)


@bp.get("/")
def index():
    clip_counts = db.session.execute(
        select(SourceClip.stimulus_set, func.count()).group_by(SourceClip.stimulus_set)
    ).all()
    n_stimuli = db.session.scalar(select(func.count()).select_from(Stimulus))
    return render_template("home/index.html", clip_counts=clip_counts, n_stimuli=n_stimuli)
