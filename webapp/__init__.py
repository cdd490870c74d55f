"""Chronoscope web application: ``create_app`` is the only way to get an app."""
import os
from pathlib import Path

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from webapp.config import Defaults, read_switches
from webapp.extensions import db, migrate
from webapp.secret_key import configure_secret_key

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent  # the checkout, when running from one
MIGRATIONS_DIR = PACKAGE_DIR / "migrations"


def _asset_folder(name: str) -> str:
    """``templates`` or ``static``: inside the package in a wheel (pyproject.toml maps them
    there), at the top of the repository in a checkout or an editable install."""
    packaged = PACKAGE_DIR / name
    return str(packaged if packaged.is_dir() else PROJECT_ROOT / name)


def create_app(test_config: dict | None = None) -> Flask:
    test_config = dict(test_config or {})
    app = Flask(
        __name__,
        instance_path=(test_config.pop("INSTANCE_PATH", None)
                       or os.environ.get("CHRONOSCOPE_INSTANCE_PATH")),
        instance_relative_config=True,
        template_folder=_asset_folder("templates"),
        static_folder=_asset_folder("static"),
    )
    app.config.from_object(Defaults)
    app.config.from_pyfile("config.py", silent=True)
    app.config.from_prefixed_env("CHRONOSCOPE")
    app.config.from_mapping(test_config)
    _resolve_paths(app)
    read_switches(app)
    configure_secret_key(app)
    if app.config["PROXY_HOPS"]:
        hops = int(app.config["PROXY_HOPS"])
        # Flask's documented way to add WSGI middleware; its stubs type wsgi_app as a method.
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)

    from webapp import database, errors, models, rate_limits  # noqa: F401  (models: the tables)

    db.init_app(app)
    migrate.init_app(app, db, directory=str(MIGRATIONS_DIR), render_as_batch=True)
    database.configure_engine_events(app)
    errors.register_error_handlers(app)
    rate_limits.init_app(app)

    from webapp import auth
    from webapp.cli import register_commands
    from webapp.headers import register_security_headers

    register_commands(app)
    _register_blueprints(app)
    register_security_headers(app)
    auth.init_security(app)  # after the blueprints: the participant API is exempted by name
    return app


def _resolve_paths(app: Flask) -> None:
    instance = Path(app.instance_path)
    # Private: it holds the secret key, the database (password hashes, live session tokens)
    # and the lock files; an existing folder is made private too.
    instance.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = instance.stat()
    if status.st_mode & 0o077 and status.st_uid == os.getuid():
        instance.chmod(status.st_mode & 0o7700)
    url = app.config.get("DATABASE_URL") or f"sqlite:///{instance / 'chronoscope.db'}"
    app.config["DATABASE_URL"] = url
    app.config["SQLALCHEMY_DATABASE_URI"] = url
    app.config["STIMULUS_ROOT"] = str((instance / app.config["STIMULUS_ROOT"]).resolve())


def _register_blueprints(app: Flask) -> None:
    from webapp import auth
    from webapp.participant import api
    from webapp.participant import views as participant
    from webapp.researcher import blueprint as researcher
    from webapp.researcher import downloads, participant_view, views  # noqa: F401 (routes of researcher's bp)
    from webapp.stimuli import media
    from webapp.views import home, openapi

    for module in (home, participant, api, media, openapi, auth, researcher):
        app.register_blueprint(module.bp)
