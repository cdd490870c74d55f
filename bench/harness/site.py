"""A site to load: an instance folder, a database with its tables, and one open study.

The study is the shipped arrow-of-time design on a small stored stimulus set (rows plus
stand-in media files): 14 trials per session (4 practice, 2 main blocks with a catch trial
each), the same shape a real session has.
"""
from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

SLUG = "load"
# Production servers refuse public keys: each benchmark process makes its own.
SECRET_KEY = secrets.token_hex(32)
UNLIMITED = "1000000 per second"
RESEARCHER = ("bench-researcher", "bench-password-not-secret")  # the exports' sign-in


@dataclass
class Site:
    instance: Path
    database_url: str
    slug: str = SLUG

    def env(self, busy_timeout_ms: int | None = None) -> dict:
        """Environment for a gunicorn server of this site (the CHRONOSCOPE_* prefix)."""
        env = {"CHRONOSCOPE_INSTANCE_PATH": str(self.instance),
               "CHRONOSCOPE_DATABASE_URL": self.database_url,
               "CHRONOSCOPE_SECRET_KEY": SECRET_KEY,
               "CHRONOSCOPE_STIMULUS_ROOT": str(self.instance / "stimuli"),
               # One loopback address stands for every simulated participant.
               "CHRONOSCOPE_NEW_SESSIONS_PER_ADDRESS": UNLIMITED,
               "CHRONOSCOPE_NEW_SESSIONS_PER_STUDY": UNLIMITED,
               "CHRONOSCOPE_NEW_SESSIONS_PER_ADDRESS_PER_STUDY": UNLIMITED}
        if busy_timeout_ms is not None:
            env["CHRONOSCOPE_SQLITE_BUSY_TIMEOUT_MS"] = str(int(busy_timeout_ms))
        return env

    def app(self, **config):
        from webapp import create_app

        return create_app({"INSTANCE_PATH": str(self.instance), "DATABASE_URL": self.database_url,
                           "SECRET_KEY": SECRET_KEY,
                           "STIMULUS_ROOT": str(self.instance / "stimuli"), **config})


def fresh_postgres(server_url: str) -> str:
    """A new empty database on the PostgreSQL server at ``server_url``; returns its URL."""
    name = f"chronoscope_bench_{uuid.uuid4().hex[:10]}"
    engine = sa.create_engine(server_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sa.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return sa.engine.make_url(server_url).set(database=name).render_as_string(hide_password=False)


def build_site(folder: Path, database_url: str | None = None, main_blocks: int = 2) -> Site:
    """Create the tables and one open study in ``folder`` (SQLite there unless a URL is given)."""
    from bench.harness.stored_study import add_catch_set, add_stimulus_set, open_study
    from experiments.designs import PracticeSpec
    from webapp.auth import create_researcher
    from webapp.extensions import db

    instance = Path(folder) / "instance"
    instance.mkdir(parents=True, exist_ok=True)
    site = Site(instance, database_url or f"sqlite:///{instance / 'load.db'}")
    app = site.app()
    with app.app_context():
        db.create_all()
        root = instance / "stimuli"
        add_stimulus_set(root=root)
        add_catch_set(root=root)
        # The load clients are told no practice answer (they are not published): a practice
        # gate that admits everyone keeps every session running to its end.
        open_study(slug=site.slug, main_blocks=main_blocks,
                   practice=PracticeSpec(n_trials=4, min_accuracy=0.0, max_attempts=1))
        create_researcher(*RESEARCHER, is_admin=True)  # sees the study without a membership
        db.engine.dispose()
    return site
