"""Languages outside and at the door of a study (issue 28): pages that belong to no study
negotiate among the shipped languages, a full-width participant id is the same id, and a
refused id is explained in the study's language."""
import pytest
from sqlalchemy import select

from experiments.designs import STUDY_CONFIG_KEY
from tests.webapp.test_api import start
from tests.webapp.test_participant_entry import enter, token_of
from tests.webapp.test_participant_texts import offer_languages
from webapp.extensions import db
from webapp.models import Session, Study, Subject


@pytest.fixture
def study(factory):
    factory.aot_study()


GERMAN = {"Accept-Language": "de-CH,de;q=0.9,en;q=0.5"}


@pytest.mark.parametrize("url", ["/no-such-page", "/p/study/extra", "/static/nothing.js"])
def test_a_page_outside_any_study_speaks_the_browsers_shipped_language(client, study, url):
    # A mistyped address was Werkzeug's English page with lang="en" whatever the browser asked.
    page = client.get(url, headers=GERMAN)
    assert page.status_code == 404 and page.mimetype == "text/html"
    assert '<html lang="de">' in page.text and "Diese Seite gibt es nicht" in page.text
    english = client.get(url, headers={"Accept-Language": "ja,en;q=0.5"})
    assert '<html lang="en"' in english.text and "This page does not exist" in english.text


def test_an_error_page_keeps_its_status_and_allow_header(client, study):
    page = client.post("/run/some-token", headers=GERMAN)
    assert page.status_code == 405 and "GET" in page.headers["Allow"]
    assert "(405)" in page.text and '<html lang="de"' in page.text


def test_the_api_still_answers_json(client, study):
    answer = client.get("/api/session/not-a-token")
    assert answer.status_code == 404 and answer.is_json


def test_a_full_width_id_is_the_same_participant(app, client, study):
    # ＴＫ０１２ as a Japanese input method types it was refused; NFKC makes it TK012.
    first = token_of(enter(client, participant="ＴＫ０１２"))
    with app.app_context():
        ids = db.session.scalars(select(Subject.external_id)).all()
        session = db.session.scalar(select(Session).where(Session.token == first))
    assert ids == ["TK012"] and session is not None
    again = enter(client, participant="TK012")
    assert again.status_code == 303 and token_of(again) == first



def test_an_id_typed_in_arabic_or_persian_digits_is_the_same_participant(app, client, study):
    # An Arabic or Persian keyboard types ١٢٣٤٥ / ۱۲۳۴۵, which NFKC keeps: they were refused
    # with a message that asks for digits.
    first = token_of(enter(client, participant="\u0661\u0662\u0663\u0664\u0665"))
    again = enter(client, participant="\u06f1\u06f2\u06f3\u06f4\u06f5")
    assert again.status_code == 303 and token_of(again) == first
    with app.app_context():
        assert db.session.scalars(select(Subject.external_id)).all() == ["12345"]

def test_a_refused_id_is_explained_in_the_studys_language(app, client, study):
    offer_languages(app, ["de", "en"])
    page = enter(client, participant="名前 です")
    assert page.status_code == 400 and '<html lang="de"' in page.text
    assert 'role="alert"' in page.text and "Teilnahme-ID besteht nur aus" in page.text
    assert 'value="名前 です"' in page.text and 'id="participant"' in page.text
    # the form leaves the checking to the server, which explains; no browser bubble
    assert "pattern=" not in page.text and " required" not in page.text


def test_a_right_to_left_language_sets_the_pages_direction(app, client, study):
    offer_languages(app, ["he", "en"])
    page = client.get("/p/study", headers={"Accept-Language": "he"})
    assert '<html lang="he" dir="rtl">' in page.text


def test_a_frame_ordering_annotation_is_read_in_the_studys_language(app, client, factory):
    # The annotation above the frames came from the clip's English metadata only.
    factory.aot_study()  # the tiny stimulus set, with frame sets
    factory.open_study(design="frame-ordering", slug="order", main_blocks=1)
    api = start(client, participant="ja-1", slug="order", consent=None)
    with app.app_context():
        study = db.session.scalar(select(Study).where(Study.slug == "order"))
        schedule = db.session.scalar(select(Session.schedule).where(
            Session.token == api.rsplit("/", 1)[-1]))
        annotated = [t for t in schedule if (t.get("params") or {}).get("annotation")]
        clip = annotated[0]["clip_key"]
        study.design_snapshot = {**study.design_snapshot, STUDY_CONFIG_KEY: {
            **study.design_snapshot.get(STUDY_CONFIG_KEY, {}), "languages": ["en", "ja"],
            "annotations": {"ja": {clip: {"brief": "四角が動く。", "comprehensive": "四角が右へ動く。"}}}}}
        db.session.commit()
    english = client.get(api).get_json()["trials"]
    japanese = client.get(api, query_string={"lang": "ja"}).get_json()["trials"]
    assert [t["params"].get("annotation") for t in english] == \
        [(t.get("params") or {}).get("annotation") for t in schedule]
    for view, scheduled in zip(japanese, schedule):
        if scheduled.get("clip_key") == clip and view["params"].get("annotation"):
            level = scheduled["annotation_level"]
            assert view["params"]["annotation"] == {"brief": "四角が動く。",
                                                    "comprehensive": "四角が右へ動く。"}[level]
        else:
            assert view["params"].get("annotation") == scheduled["params"].get("annotation")
    assert "四角が動く。" in {t["params"].get("annotation") for t in japanese}


def test_the_browsers_a_study_admits_are_listed_in_the_participants_language():
    # The list was joined with English commas inside every language's sentence
    # ("فقط في Chrome, Edge, Firefox"); CLDR's "or" pattern is the language's own.
    from webapp.participant.texts import screen_out_text

    german = str(screen_out_text(None, "de", ["browser"], {}, "X"))
    assert "nur in Chrome, Edge oder Firefox," in german
    assert "Chrome أو Edge أو Firefox" in str(screen_out_text(None, "ar", ["browser"], {}, "X"))
