"""The wheel works on its own: built from the checkout, installed into a fresh virtual
environment and run from outside the source tree, the app serves its templates and static
files and the report finds its template (both live outside the packages in the repository).

Offline: the wheel is built without build isolation (setuptools from the project's venv) and
installed with --no-deps; its dependencies are read from the project's venv through a .pth
file, which adds that folder to sys.path without running its editable-install hook.
"""
import json
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("webapp", "experiments", "analysis")
SOURCES = ("pyproject.toml", "README.md", "templates", "static", *PACKAGES)

pytestmark = pytest.mark.slow

CHECK_INSTALLED = r"""
import sys
from pathlib import Path

import jinja2

import webapp
from analysis.report import output
from webapp import create_app

here = Path(sys.argv[1])
assert Path(webapp.__file__).is_relative_to(here), webapp.__file__
assert Path(output.TEMPLATE_DIR).is_relative_to(here), output.TEMPLATE_DIR
jinja2.Environment(loader=jinja2.FileSystemLoader(output.TEMPLATE_DIR)).get_template(
    "report.html")

app = create_app({"TESTING": True, "INSTANCE_PATH": str(here / "instance"),
                  "DATABASE_URL": f"sqlite:///{here / 'wheel.db'}"})
client = app.test_client()
page = client.get("/auth/login")
assert page.status_code == 200 and b"<form" in page.data, page.status_code
script = client.get("/static/js/runner.js")
assert script.status_code == 200, script.status_code
sys.stdout.buffer.write(script.data)
"""


def _run(*command, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                            timeout=300, **kwargs)
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy, so that the build leaves nothing (build/, *.egg-info) in the checkout.
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name,
                            ignore=shutil.ignore_patterns("__pycache__", ".installed"))
        else:
            shutil.copy2(REPO / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "--quiet", "--wheel-dir", dist, source)
    (built,) = dist.glob("chronoscope-*.whl")
    return built


def test_wheel_holds_every_module_and_asset(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {p.relative_to(REPO).as_posix() for package in PACKAGES
               for p in (REPO / package).rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - names == set()  # a new subpackage missing from pyproject.toml's list
    # static/vendor comes from npm (make setup): a wheel built without it has no drag and drop.
    assert {"webapp/templates/base.html", "webapp/static/js/runner.js",
            "webapp/static/vendor/Sortable.min.js", "analysis/templates/report.html"} <= names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "chronoscope = webapp.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    assert not any(n.startswith("webapp/templates/report/") for n in names)


def test_installed_wheel_serves_templates_and_static_files(wheel, tmp_path):
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         "--quiet", wheel)
    installed = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
                     .stdout.strip())
    (installed / "project_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    result = subprocess.run([str(python), "-c", CHECK_INSTALLED, str(installed)], cwd=outside,
                            capture_output=True, timeout=300,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == (REPO / "static" / "js" / "runner.js").read_bytes()
    commands = subprocess.run([str(venv / "bin" / "chronoscope"), "--help"], cwd=outside,
                              capture_output=True, text=True, timeout=300,
                              env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                   "CHRONOSCOPE_INSTANCE_PATH": str(tmp_path / "instance"),
                                   "CHRONOSCOPE_SECRET_KEY": "k" * 64})
    assert commands.returncode == 0, commands.stderr
    assert "run-models" in commands.stdout and "study" in commands.stdout


def test_the_citation_file_is_valid_cff_1_2_0_for_this_version():
    # Schema: github.com/citation-file-format/citation-file-format, tag 1.2.0
    # (commit 396f738fb025b1d8acdb02a56ffc923f95dc8999), schema.json, CC BY 4.0.
    import jsonschema_rs
    import yaml

    root = Path(__file__).resolve().parents[1]
    schema = json.loads((root / "tests" / "citation_cff_1.2.0.schema.json").read_text())
    citation = yaml.safe_load((root / "CITATION.cff").read_text())
    validator = jsonschema_rs.validator_for(schema)
    assert [error.message for error in validator.iter_errors(citation)] == []
    assert not validator.is_valid({**citation, "cff-version": "1.1.0", "authors": []})
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert str(citation["version"]) == project["version"]
