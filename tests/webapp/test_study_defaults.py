"""What a study gets without a study file, and what the study list counts
(webapp/researcher/studies.py: shipped_languages, status_counts)."""
import pytest
from sqlalchemy import select

from experiments import study_file
from experiments.designs import DESIGNS
from experiments.texts import defaults
from webapp.extensions import db
from webapp.models import Study
from webapp.researcher import studies

SHIPPED = sorted(studies.SHIPPED_STUDIES.glob("*.toml"))
# A design's own study file is named after it (studies.shipped_languages reads it); other
# shipped files are variants, such as tra-sweep-pybullet (the design on the PyBullet set).
DESIGN_FILES = [path.stem for path in SHIPPED if path.stem in DESIGNS]


def test_every_shipped_study_file_runs_a_design_and_the_designs_have_their_own():
    assert {study_file.load(path).design.name for path in SHIPPED} <= set(DESIGNS)
    assert set(DESIGN_FILES) == set(DESIGNS)


@pytest.mark.parametrize("design", DESIGN_FILES)
def test_a_design_offers_its_study_files_languages(design):
    expected = study_file.load(studies.SHIPPED_STUDIES / f"{design}.toml").languages
    assert "de" in expected  # the shipped files offer German; a demo must too
    assert studies.shipped_languages(design) == expected


def test_a_study_made_with_design_stores_them(app, factory):
    factory.stimulus_set()
    with app.app_context():
        study = studies.create_study("pilot", "arrow-of-time", "synthetic", title="Pilot")
        config = studies.study_config(study)
    assert config.languages == studies.shipped_languages("arrow-of-time")
    assert (config.title, config.stimulus_set, config.places) == ("Pilot", "synthetic", None)


def test_a_design_without_a_study_file_is_english_only(monkeypatch, tmp_path):
    monkeypatch.setattr(studies, "SHIPPED_STUDIES", tmp_path)
    assert studies.shipped_languages("arrow-of-time") == ("en",)


def test_a_demo_can_be_tried_in_german(app, runner, factory, client):
    factory.stimulus_set()
    result = runner.invoke(args=["study", "demo"])
    assert result.exit_code == 0, result.output
    with app.app_context():
        slug = db.session.scalar(select(Study.slug).where(Study.design == "arrow-of-time",
                                                          Study.slug.like("demo-%")))
    response = client.get(f"/p/{slug}", query_string={"PROLIFIC_PID": "p-1", "lang": "de"})
    assert response.status_code == 303 and response.headers["Location"].endswith("?lang=de")
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert '<html lang="de">' in page and defaults("de")["noscript"] in page


def test_the_study_list_never_counts_previews(app, factory):
    study = factory.study(slug="pilot")
    for _ in range(2):
        factory.session(study, status="completed")
    factory.session(study, status="completed", preview=True, simulated=True)
    with app.app_context():
        assert studies.status_counts()[study.id] == {"completed": 2}
