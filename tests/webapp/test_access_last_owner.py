"""A study keeps an owner when two owners demote or remove each other at once, each on its own
connection, on SQLite and on PostgreSQL.

The interleaving that lost the last owner is forced, not hoped for: each change, right after
it has counted the owners, waits until the other change has counted them too, or is waiting
for the lock the first one holds (PostgreSQL: ``pg_stat_activity`` says so; SQLite: its thread
is queued for the writer's turn).  Counting both before either writes is what left no owner
in 4 of 10 rounds; with the study's row locked the second change counts after the first.
"""
import sys
import threading

import pytest
from sqlalchemy import event, select, text

from tests.waiting import wait_until
from webapp.extensions import db
from webapp.models import Study, access
from webapp.models.access import StudyMember

WAIT_S = 60  # a failsafe only: every wait below ends on a state


class Interleaving:
    """Holds each change after its owner count until the other has counted or waits."""

    def __init__(self, engine):
        self.engine, self.counted, self.ended = engine, set(), set()
        self.pids: dict[threading.Thread, int] = {}
        event.listen(engine, "before_cursor_execute", self._note_connection)
        event.listen(engine, "after_cursor_execute", self._after)

    def close(self):
        event.remove(self.engine, "before_cursor_execute", self._note_connection)
        event.remove(self.engine, "after_cursor_execute", self._after)

    def _note_connection(self, connection, *_):
        if self.engine.dialect.name == "postgresql":
            backend = connection.connection.dbapi_connection.info.backend_pid
            self.pids[threading.current_thread()] = backend

    def _after(self, _connection, _cursor, statement, *_):
        me = threading.current_thread()
        if "study_member.role =" not in statement or me in self.counted:
            return
        self.counted.add(me)
        wait_until(lambda: any(other in self.counted or other in self.ended or self._waits(other)
                               for other in self.threads - {me}),
                   WAIT_S, "the other change neither counted nor waited", every_s=0.002)

    def _waits(self, thread: threading.Thread) -> bool:
        """Whether the change in ``thread`` is waiting for the other's lock."""
        if self.engine.dialect.name == "postgresql":
            pid = self.pids.get(thread)
            with self.engine.connect() as connection:
                kind = connection.scalar(text("SELECT wait_event_type FROM pg_stat_activity "
                                              "WHERE pid = :pid"), {"pid": pid})
            return pid is not None and kind == "Lock"
        frame = sys._current_frames().get(thread.ident)
        while frame is not None:  # queued for the writer's turn (webapp.database._held)
            if frame.f_code.co_name == "_held":
                return True
            frame = frame.f_back
        return False

    def run(self, app, changes):
        """Run each of ``changes`` (a function of the study) in a thread of its own; their
        outcomes: None or the exception raised."""
        outcomes: dict[int, object] = {}

        def change(index, function):
            try:
                with app.app_context():
                    function(db.session.scalar(select(Study).filter_by(slug="pilot")))
                    outcomes[index] = None
            except Exception as error:  # noqa: BLE001 - the outcome is what is checked
                outcomes[index] = error
            finally:
                self.ended.add(threading.current_thread())

        threads = [threading.Thread(target=change, args=(i, f)) for i, f in enumerate(changes)]
        self.threads = set(threads)
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT_S)
        return [outcomes.get(i, "still running") for i in range(len(changes))]


@pytest.fixture
def two_owners(any_db_app, factory):
    factory.study(owner=None, slug="pilot")
    for name in ("ada", "bob"):
        factory.researcher(name, role_in={"pilot": "owner"})
    with any_db_app.app_context():
        interleaving = Interleaving(db.engine)
    yield any_db_app, interleaving
    interleaving.close()


def owners(app):
    with app.app_context():
        return sorted(db.session.scalars(select(StudyMember.researcher_id).where(
            StudyMember.role == "owner")))


@pytest.mark.parametrize("change", [
    lambda study, name: access.share(study, name, "editor"),
    lambda study, name: access.unshare(study, name),
], ids=["demote", "remove"])
def test_two_owners_changing_each_other_at_once_leave_one_owner(two_owners, change):
    app, interleaving = two_owners
    outcomes = interleaving.run(app, [lambda study: change(study, "bob"),
                                      lambda study: change(study, "ada")])
    assert len(owners(app)) == 1
    refused = [o for o in outcomes if o is not None]
    assert outcomes.count(None) == 1 and len(refused) == 1, outcomes
    assert isinstance(refused[0], access.MembershipError)
    assert "must keep at least one owner" in str(refused[0])
