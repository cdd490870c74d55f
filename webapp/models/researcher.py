from datetime import datetime

from flask_login import UserMixin
from sqlalchemy import Boolean, Integer, String, false
from sqlalchemy.orm import Mapped, mapped_column

from webapp.extensions import Model
from webapp.models._types import UTCDateTime, utcnow


class Researcher(UserMixin, Model):
    id: Mapped[int] = mapped_column(primary_key=True)
    username: Mapped[str] = mapped_column(String(80), unique=True)
    password_hash: Mapped[str] = mapped_column(String(256))
    # Admins see and may do everything with every study, members or not (webapp.models.access).
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Part of every sign-in (session and remember cookie): raising it on logout or a password
    # change makes every cookie issued before it worthless.
    auth_epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def get_id(self) -> str:
        return f"{self.id}:{self.auth_epoch}"
