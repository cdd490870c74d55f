"""Practice feedback, told only once the answer is stored.

The browser is never sent a trial's correct answer (a script would read it instead of
watching the clip).  The reply to the POST of a practice trial with feedback says instead
whether the stored answer was right, as the server scored it from its own schedule: the
answer is committed before it is judged, so the verdict cannot change it.
"""
from sqlalchemy import Connection, Row, select

from experiments import schedule as scheduling
from webapp.models import Trial


def stored_verdict(connection: Connection, session: Row, answer: dict) -> dict:
    """``{"feedback": {"correct": bool}}`` when ``answer`` (a trial POST's reply) is for a
    stored practice trial that shows feedback; ``{}`` for any other trial."""
    index = answer.get("trial_index")
    scheduled = next((t for t in session.schedule if t["trial_index"] == index), None)
    if scheduled is None or scheduled["block"] != scheduling.PRACTICE or \
            not scheduled["params"].get("feedback"):
        return {}
    correct = connection.execute(select(Trial.correct).where(
        Trial.session_id == session.id, Trial.trial_index == index)).scalar_one_or_none()
    return {} if correct is None else {"feedback": {"correct": bool(correct)}}
