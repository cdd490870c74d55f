"""The app factory and its configuration sources."""
from pathlib import Path

from webapp import create_app


def test_test_config_overrides_defaults(app, tmp_path):
    assert app.testing
    assert app.config["SECRET_KEY"] == "test-secret"
    assert app.config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite:///")
    assert app.config["STIMULUS_ROOT"] == str(tmp_path / "stimuli")


def test_environment_variables_configure_the_app(monkeypatch, tmp_path):
    monkeypatch.setenv("CHRONOSCOPE_DATABASE_URL", f"sqlite:///{tmp_path / 'env.db'}")
    monkeypatch.setenv("CHRONOSCOPE_SECRET_KEY", "from-env-" + "e" * 32)
    monkeypatch.setenv("CHRONOSCOPE_STIMULUS_ROOT", "media")
    monkeypatch.setenv("CHRONOSCOPE_INSTANCE_PATH", str(tmp_path / "inst"))
    app = create_app()
    assert app.config["SECRET_KEY"] == "from-env-" + "e" * 32
    assert app.config["SQLALCHEMY_DATABASE_URI"] == f"sqlite:///{tmp_path / 'env.db'}"
    # Relative stimulus roots live in the instance folder.
    assert app.config["STIMULUS_ROOT"] == str(tmp_path / "inst" / "media")


def test_instance_config_file_is_read(monkeypatch, tmp_path):
    instance = tmp_path / "inst"
    instance.mkdir()
    (instance / "config.py").write_text(f"SECRET_KEY = 'from-instance-{'i' * 32}'\n")
    monkeypatch.setenv("CHRONOSCOPE_INSTANCE_PATH", str(instance))
    app = create_app()
    assert app.config["SECRET_KEY"] == f"from-instance-{'i' * 32}"
    assert Path(app.config["SQLALCHEMY_DATABASE_URI"].removeprefix("sqlite:///")).parent == instance


def test_home_page_lists_stimulus_sets(client):
    response = client.get("/")
    assert response.status_code == 200
    assert b"Chronoscope" in response.data


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(app):
    from webapp.extensions import db

    with app.app_context(), db.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
