"""The data model: one trial shape for humans and models (see ARCHITECTURE.md)."""
from webapp.models.access import StudyMember
from webapp.models.manual_exclusion import ManualExclusion
from webapp.models.model_run import ModelRun
from webapp.models.researcher import Researcher
from webapp.models.stimuli import SourceClip, Stimulus
from webapp.models.study import CellCount, MediaServed, Session, Study, Subject, Trial

__all__ = ["CellCount", "ManualExclusion", "MediaServed", "ModelRun", "Researcher", "Session", "SourceClip",
           "Stimulus", "Study", "StudyMember", "Subject", "Trial"]
