"""One rule for a study's title, whichever way it comes in (``manage.py study create --title``,
a study file, the dashboard's form when creating or editing), on SQLite and PostgreSQL: at
most 200 characters (the column), no control, invisible or bidirectional-formatting
characters.  Nothing is stored from a refused title."""
import html

import pytest
from sqlalchemy import select

from experiments import study_file
from tests.factories import RESEARCHER, RESEARCHER_PASSWORD
from webapp import auth
from webapp.extensions import db
from webapp.models import Study
from webapp.researcher import studies

LONG = "T" * 250  # gave a 500 on PostgreSQL (the column holds 200)
REFUSED = {
    LONG: "expected a title of at most 200 characters, got 250",
    "Pilot\u202eton": "got an invisible or bidirectional-formatting character U+202E (right-to-left "
                      "override) at character 6",
    "Pi\u200blot": "got an invisible or bidirectional-formatting character U+200B (zero width "
                   "space) at character 3",
    "Pilot\x07": "got a control character U+0007 (no name) at character 6",
    "Pilot\x7f": "got a control character U+007F (no name) at character 6",
}
ACCEPTED = ["É" * 200, "Zeitpfeil — Pilot 2 (日本語, עברית)"]


@pytest.fixture
def site(any_db_app, factory):
    any_db_app.config["PASSWORD_HASH_METHOD"] = "pbkdf2:sha256:1000"
    factory.stimulus_set()
    with any_db_app.app_context():
        auth.create_researcher(RESEARCHER, RESEARCHER_PASSWORD)
    client = any_db_app.test_client()
    assert client.post("/auth/login", data={"username": RESEARCHER,
                                            "password": RESEARCHER_PASSWORD}).status_code == 302
    return any_db_app, client


def titles(app):
    with app.app_context():
        return list(db.session.scalars(select(Study.title)))


def study_source(title: str) -> str:
    """A study file with ``title``, every character escaped (whatever the writer does)."""
    escaped = "".join(f"\\U{ord(char):08X}" for char in title)
    return ('[study]\ndesign = "arrow-of-time"\nstimulus_set = "synthetic"\n'
            f'title = "{escaped}"\n')


@pytest.mark.parametrize(("title", "message"), REFUSED.items())
def test_a_refused_title_is_refused_the_same_way_everywhere(site, tmp_path, title, message):
    app, client = site
    cli = app.test_cli_runner().invoke(args=["study", "create", "cli", "--design", "arrow-of-time",
                                             "--stimulus-set", "synthetic", "--title", title])
    assert cli.exit_code != 0 and message in cli.output
    path = tmp_path / "s.toml"
    path.write_text(study_source(title), "utf-8")
    from_file = app.test_cli_runner().invoke(args=["study", "create", "file", "--from", str(path)])
    assert from_file.exit_code != 0 and f"s.toml:4: study.title: {'expected' if title == LONG else ''}" \
        in from_file.output and message in from_file.output
    form = client.post("/researcher/studies", data={"slug": "form", "design": "arrow-of-time",
                                                    "stimulus_set": "synthetic", "title": title})
    assert form.status_code == 400 and message in html.unescape(form.get_data(as_text=True))
    assert titles(app) == []


@pytest.mark.parametrize("title", list(REFUSED))
def test_editing_refuses_the_same_titles_and_keeps_the_stored_one(site, title):
    app, client = site
    created = client.post("/researcher/studies", data={"slug": "pilot", "design": "arrow-of-time",
                                                       "stimulus_set": "synthetic",
                                                       "title": "Pilot"})
    assert created.status_code == 303, created.get_data(as_text=True)
    edit = client.post("/researcher/studies/pilot/edit", data={
        "design": "arrow-of-time", "stimulus_set": "synthetic", "title": title, "based_on": "1"})
    assert edit.status_code == 400 and REFUSED[title] in html.unescape(edit.get_data(as_text=True))
    assert titles(app) == ["Pilot"]


@pytest.mark.parametrize("title", ACCEPTED)
def test_titles_within_the_rule_are_stored_whole(site, tmp_path, title):
    app, _ = site
    path = tmp_path / "s.toml"
    path.write_text(study_source(title), "utf-8")
    result = app.test_cli_runner().invoke(args=["study", "create", "file", "--from", str(path)])
    assert result.exit_code == 0, result.output
    with app.app_context():
        assert studies.require_study("file").title == title
        assert study_file.MAX_TITLE_CHARS == Study.__table__.c.title.type.length
