"""A production server refuses to start with a secret key anyone could know; development keeps
a generated one in the instance folder."""
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from webapp import PROJECT_ROOT, create_app
from webapp.secret_key import KEY_FILE, UnsafeSecretKey


def _config(tmp_path, **config):
    return {"INSTANCE_PATH": str(tmp_path / "inst"),
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite'}", **config}


@pytest.mark.parametrize("key, problem", [
    (None, "is not set"), ("", "is not set"),
    ("dev-only-change-me", "publicly known"),  # the key 0.1 shipped: cookies forged with it
    ("short-but-unknown", "shorter than 32"),
])
def test_production_refuses_an_unsafe_key(tmp_path, key, problem):
    with pytest.raises(UnsafeSecretKey, match=problem) as raised:
        create_app(_config(tmp_path, SECRET_KEY=key))
    assert "CHRONOSCOPE_SECRET_KEY" in str(raised.value)


def test_production_takes_a_strong_key_from_the_environment_or_the_instance_file(
        tmp_path, monkeypatch):
    monkeypatch.setenv("CHRONOSCOPE_SECRET_KEY", "e" * 64)
    assert create_app(_config(tmp_path)).config["SECRET_KEY"] == "e" * 64
    monkeypatch.delenv("CHRONOSCOPE_SECRET_KEY")
    (tmp_path / "inst").mkdir(exist_ok=True)
    (tmp_path / "inst" / KEY_FILE).write_text("f" * 64 + "\n")
    assert create_app(_config(tmp_path)).config["SECRET_KEY"] == "f" * 64


def test_development_generates_a_private_key_once_and_keeps_it(tmp_path):
    first = create_app(_config(tmp_path, DEVELOPMENT=True)).config["SECRET_KEY"]
    path = tmp_path / "inst" / KEY_FILE
    assert len(first) == 64 and path.read_text().strip() == first
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert create_app(_config(tmp_path, DEVELOPMENT=True)).config["SECRET_KEY"] == first
    # The generated key is random, not public: a production start on that folder accepts it.
    assert create_app(_config(tmp_path)).config["SECRET_KEY"] == first


def test_tests_get_a_throwaway_key(tmp_path):
    app = create_app(_config(tmp_path, TESTING=True))
    assert len(app.config["SECRET_KEY"]) == 64
    assert not (tmp_path / "inst" / KEY_FILE).exists()


def test_the_readme_gunicorn_command_fails_without_a_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOSCOPE_")}
    env.update(CHRONOSCOPE_INSTANCE_PATH=str(tmp_path / "inst"), CHRONOSCOPE_BIND="127.0.0.1:0")
    gunicorn = Path(sys.executable).with_name("gunicorn")
    result = subprocess.run([str(gunicorn), "-c", "webapp/gunicorn.conf.py", "webapp:create_app()"],
                            cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "CHRONOSCOPE_SECRET_KEY is not set" in result.stderr


def test_manage_py_says_what_is_missing_without_a_traceback(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOSCOPE_")}
    env["CHRONOSCOPE_INSTANCE_PATH"] = str(tmp_path / "inst")
    result = subprocess.run([sys.executable, "manage.py", "study", "list"], cwd=PROJECT_ROOT,
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "Error: CHRONOSCOPE_SECRET_KEY is not set" in result.stderr
    assert "Traceback" not in result.stderr


# The red team: CHRONOSCOPE_DEVELOPMENT=False read as the text "False" switched development on;
# the recheck: CHRONOSCOPE_DEBUG=False (and TESTING) did the same.
@pytest.mark.parametrize("name", ["DEVELOPMENT", "DEBUG", "TESTING"])
@pytest.mark.parametrize("value", ["False", "false", "no", "0", "off", ""])
def test_switches_are_off_for_every_spelling_of_off(tmp_path, monkeypatch, name, value):
    monkeypatch.setenv(f"CHRONOSCOPE_{name}", value)
    with pytest.raises(UnsafeSecretKey):
        create_app(_config(tmp_path))


@pytest.mark.parametrize("value", ["maybe", "1.0"])  # no guessing, no fractions
def test_a_switch_refuses_an_unclear_value(tmp_path, monkeypatch, value):
    monkeypatch.setenv("CHRONOSCOPE_DEVELOPMENT", value)
    with pytest.raises(ValueError, match="CHRONOSCOPE_DEVELOPMENT must be true or false"):
        create_app(_config(tmp_path))
