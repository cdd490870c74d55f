"""Resume links: a researcher lets a participant continue in another browser, once.

A participant's entry link resumes their session only in the browser that holds their resume
key (``Subject.resume_key_hash``; see :mod:`webapp.participant.resume`).  Someone who changed
browser or cleared their cookies asks the researcher, who issues a link here.  Rows are the
audit trail: who issued a link for whom and when, and when it was used; only the hash of the
link's code is stored, so the table cannot be read back into working links.
"""
from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from webapp.extensions import Model
from webapp.models._types import UTCDateTime, utcnow
from webapp.models.study import Subject


class ResumeLink(Model):
    __tablename__ = "resume_link"

    id: Mapped[int] = mapped_column(primary_key=True)
    study_id: Mapped[int] = mapped_column(ForeignKey("study.id"), index=True)
    subject_id: Mapped[int] = mapped_column(ForeignKey("subject.id"), index=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex of the code
    # The username (or "cli:<login>"), not a key: the record outlives the account.
    issued_by: Mapped[str] = mapped_column(String(80))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    subject: Mapped[Subject] = relationship()
