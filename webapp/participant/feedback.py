"""Practice feedback, told only once the answer is stored.

The browser is never sent a trial's correct answer (a script would read it instead of
watching the clip).  The reply to the POST of a practice trial with feedback says instead
whether the stored answer was right, as the server scored it from its own schedule: the
answer is committed before it is judged, so the verdict cannot change it.
"""
from sqlalchemy import Connection, Row, select

from experiments import exclusions
from experiments import schedule as scheduling
from webapp.models import Trial


def stored_verdict(connection: Connection, session: Row, answer: dict) -> dict:
    """``{"feedback": {"correct": bool}}`` when ``answer`` (a trial POST's reply) is for a
    stored practice trial that shows feedback and is not technical; ``{}`` for any other."""
    index = answer.get("trial_index")
    scheduled = next((t for t in session.schedule if t["trial_index"] == index), None)
    if scheduled is None or scheduled["block"] != scheduling.PRACTICE or \
            not scheduled["params"].get("feedback"):
        return {}
    stored = connection.execute(select(Trial.correct, Trial.extra).where(
        Trial.session_id == session.id, Trial.trial_index == index)).one_or_none()
    # A technical trial (fullscreen left, a measurement out of its bounds) is not judged: its
    # answer is not the participant's, and a verdict would tell a script what a file shows.
    if stored is None or exclusions.is_technical({"extra": stored.extra}):
        return {}
    return {"feedback": {"correct": bool(stored.correct)}}
