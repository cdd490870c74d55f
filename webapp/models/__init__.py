"""The data model: one trial shape for humans and models (see ARCHITECTURE.md)."""
from webapp.models.access import StudyMember
from webapp.models.manual_exclusion import ManualExclusion
from webapp.models.model_run import ModelRun
from webapp.models.rate_limit import RateLimitCounter
from webapp.models.researcher import Researcher
from webapp.models.resume_link import ResumeLink
from webapp.models.stimuli import SourceClip, Stimulus
from webapp.models.study import CellCount, Session, Study, Subject, Trial

__all__ = ["CellCount", "ManualExclusion", "ModelRun", "RateLimitCounter", "Researcher",
           "ResumeLink", "Session", "SourceClip", "Stimulus", "Study", "StudyMember", "Subject",
           "Trial"]
