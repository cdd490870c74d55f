"""Who may do what with a study: researchers are its members with a role; admins may do all.

A role is a set of permissions: ``view`` (the study page, live panel, completion codes,
exports), ``run`` (the study day to day: open and pause, previews, manual exclusions with a
reason), ``configure`` (change its configuration: in place for a draft, as a new version once
opened), ``close`` (close or stop it) and ``manage`` (members).  docs/researcher-guide.md and
SECURITY.md state the same table (tests/webapp/test_access.py checks both against every route).
"""
from contextlib import contextmanager
from datetime import datetime

from sqlalchemy import ForeignKey, String, delete, func, insert, select, update
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.database import write_transaction
from webapp.extensions import Model, db
from webapp.models._types import UTCDateTime, utcnow
from webapp.models.researcher import Researcher
from webapp.models.study import Study

ROLE_PERMISSIONS = {
    "viewer": frozenset({"view"}),
    "editor": frozenset({"view", "run"}),
    "owner": frozenset({"view", "run", "configure", "close", "manage"}),
}
ROLES = tuple(ROLE_PERMISSIONS)
ALL_PERMISSIONS = ROLE_PERMISSIONS["owner"]
# Lifecycle actions editors may take; any other (close, stop, and one added later) is the
# owners', so a new action is never open to more researchers than closing is.
ACTION_PERMISSIONS = {"open": "run", "pause": "run"}


class StudyMember(Model):
    study_id: Mapped[int] = mapped_column(ForeignKey("study.id"), primary_key=True)
    researcher_id: Mapped[int] = mapped_column(ForeignKey("researcher.id"), primary_key=True,
                                               index=True)
    role: Mapped[str] = mapped_column(String(10))  # a key of ROLE_PERMISSIONS
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    researcher: Mapped[Researcher] = relationship()


class MembershipError(ValueError):
    """A membership change that cannot be made (unknown researcher or role, last owner)."""


def action_permission(action: str) -> str:
    return ACTION_PERMISSIONS.get(action, "close")


def role_of(researcher: Researcher, study: Study) -> str | None:
    return db.session.scalar(select(StudyMember.role).where(
        StudyMember.study_id == study.id, StudyMember.researcher_id == researcher.id))


def permissions_of(researcher: Researcher, study: Study) -> frozenset[str]:
    """What ``researcher`` may do with ``study``: nothing at all for a non-member."""
    if researcher.is_admin:
        return ALL_PERMISSIONS
    role = role_of(researcher, study)
    return frozenset() if role is None else ROLE_PERMISSIONS[role]


def members(study: Study) -> list[StudyMember]:
    return list(db.session.scalars(
        select(StudyMember).join(StudyMember.researcher)
        .where(StudyMember.study_id == study.id).order_by(Researcher.username)))


def share(study: Study, username: str, role: str) -> None:
    """Make ``username`` a member of ``study`` with ``role`` (changing the role of a member).

    Raises
    ------
    MembershipError
        For an unknown researcher or role, or a change that would leave the study's owners
        without an owner.
    """
    if role not in ROLE_PERMISSIONS:
        raise MembershipError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    researcher_id, study_id, slug = _researcher(username).id, study.id, study.slug
    with _membership_change(study_id) as connection:
        current = _role(connection, study_id, researcher_id)
        if current is None:
            connection.execute(insert(StudyMember.__table__).values(
                study_id=study_id, researcher_id=researcher_id, role=role, created_at=utcnow()))
            return
        if current == "owner" and role != "owner":
            _keep_an_owner(connection, study_id, slug)
        connection.execute(update(StudyMember.__table__).where(
            StudyMember.study_id == study_id, StudyMember.researcher_id == researcher_id)
            .values(role=role))


def unshare(study: Study, username: str) -> None:
    """Remove ``username`` from ``study``'s members (never its last owner).

    Raises
    ------
    MembershipError
        For an unknown researcher or one who is not a member, or the last owner.
    """
    researcher_id, study_id, slug = _researcher(username).id, study.id, study.slug
    with _membership_change(study_id) as connection:
        current = _role(connection, study_id, researcher_id)
        if current is None:
            raise MembershipError(f"{username} is not a member of {slug!r}")
        if current == "owner":
            _keep_an_owner(connection, study_id, slug)
        connection.execute(delete(StudyMember.__table__).where(
            StudyMember.study_id == study_id, StudyMember.researcher_id == researcher_id))


@contextmanager
def _membership_change(study_id: int):
    """One write transaction that holds the study's row until it commits, so that changes to
    one study's members run one after the other: each sees the owners the previous one left
    (two owners demoting each other at once left none when both counted two).  PostgreSQL
    locks the row (FOR UPDATE); SQLite's write transaction already excludes other writers."""
    db.session.rollback()  # end the read: the change below waits its turn for the lock
    with db.engine.connect() as connection, write_transaction(connection):
        connection.execute(select(Study.id).where(Study.id == study_id).with_for_update())
        yield connection


def _role(connection, study_id: int, researcher_id: int) -> str | None:
    return connection.scalar(select(StudyMember.role).where(
        StudyMember.study_id == study_id, StudyMember.researcher_id == researcher_id))


def _researcher(username: str) -> Researcher:
    researcher = db.session.scalar(select(Researcher).where(Researcher.username == username))
    if researcher is None:
        raise MembershipError(f"no researcher {username!r}")
    return researcher


def _keep_an_owner(connection, study_id: int, slug: str) -> None:
    owners = connection.scalar(select(func.count()).select_from(StudyMember).where(
        StudyMember.study_id == study_id, StudyMember.role == "owner"))
    if owners <= 1:
        raise MembershipError(f"{slug!r} must keep at least one owner; "
                              "make someone else owner first")
