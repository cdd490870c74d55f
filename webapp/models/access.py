"""Who may do what with a study: researchers are its members with a role; admins may do all.

A role is a set of permissions: ``view`` (the study page, live panel, completion codes,
export), ``run`` (open and pause), ``close`` (close or stop it) and ``manage`` (members).
"""
from datetime import datetime

from sqlalchemy import ForeignKey, String, select
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.extensions import db
from webapp.models._types import UTCDateTime, utcnow
from webapp.models.researcher import Researcher
from webapp.models.study import Experiment

ROLE_PERMISSIONS = {
    "viewer": frozenset({"view"}),
    "editor": frozenset({"view", "run"}),
    "owner": frozenset({"view", "run", "close", "manage"}),
}
ROLES = tuple(ROLE_PERMISSIONS)
ALL_PERMISSIONS = ROLE_PERMISSIONS["owner"]
# Lifecycle actions editors may take; any other (close, stop, and one added later) is the
# owners', so a new action is never open to more researchers than closing is.
ACTION_PERMISSIONS = {"open": "run", "pause": "run"}


class StudyMember(db.Model):
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiment.id"), primary_key=True)
    researcher_id: Mapped[int] = mapped_column(ForeignKey("researcher.id"), primary_key=True,
                                               index=True)
    role: Mapped[str] = mapped_column(String(10))  # a key of ROLE_PERMISSIONS
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    researcher: Mapped[Researcher] = relationship()


class MembershipError(ValueError):
    """A membership change that cannot be made (unknown researcher or role, last owner)."""


def action_permission(action: str) -> str:
    return ACTION_PERMISSIONS.get(action, "close")


def role_of(researcher: Researcher, experiment: Experiment) -> str | None:
    return db.session.scalar(select(StudyMember.role).where(
        StudyMember.experiment_id == experiment.id, StudyMember.researcher_id == researcher.id))


def permissions_of(researcher: Researcher, experiment: Experiment) -> frozenset[str]:
    """What ``researcher`` may do with ``experiment``: nothing at all for a non-member."""
    if researcher.is_admin:
        return ALL_PERMISSIONS
    return ROLE_PERMISSIONS.get(role_of(researcher, experiment), frozenset())


def members(experiment: Experiment) -> list[StudyMember]:
    return list(db.session.scalars(
        select(StudyMember).join(StudyMember.researcher)
        .where(StudyMember.experiment_id == experiment.id).order_by(Researcher.username)))


def share(experiment: Experiment, username: str, role: str) -> StudyMember:
    """Make ``username`` a member of ``experiment`` with ``role`` (changing the role of a member).

    Raises
    ------
    MembershipError
        For an unknown researcher or role, or a change that would leave the study's owners
        without an owner.
    """
    if role not in ROLE_PERMISSIONS:
        raise MembershipError(f"unknown role {role!r}; expected one of {', '.join(ROLES)}")
    member = _member(experiment, username)
    if member is None:
        member = StudyMember(experiment_id=experiment.id, researcher_id=_researcher(username).id)
        db.session.add(member)
    elif member.role == "owner" and role != "owner":
        _keep_an_owner(experiment)
    member.role = role
    db.session.commit()
    return member


def unshare(experiment: Experiment, username: str) -> None:
    """Remove ``username`` from ``experiment``'s members (never its last owner).

    Raises
    ------
    MembershipError
        For an unknown researcher or one who is not a member, or the last owner.
    """
    member = _member(experiment, username)
    if member is None:
        raise MembershipError(f"{username} is not a member of {experiment.slug!r}")
    if member.role == "owner":
        _keep_an_owner(experiment)
    db.session.delete(member)
    db.session.commit()


def _researcher(username: str) -> Researcher:
    researcher = db.session.scalar(select(Researcher).where(Researcher.username == username))
    if researcher is None:
        raise MembershipError(f"no researcher {username!r}")
    return researcher


def _member(experiment: Experiment, username: str) -> StudyMember | None:
    return db.session.get(StudyMember, (experiment.id, _researcher(username).id))


def _keep_an_owner(experiment: Experiment) -> None:
    owners = db.session.scalars(select(StudyMember.researcher_id).where(
        StudyMember.experiment_id == experiment.id, StudyMember.role == "owner")).all()
    if len(owners) <= 1:
        raise MembershipError(f"{experiment.slug!r} must keep at least one owner; "
                              "make someone else owner first")
