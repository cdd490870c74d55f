from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from tests.factories import Factory
from webapp.extensions import db
from webapp.models import Session, Subject
from webapp.participant.sessions import now


@pytest.fixture
def study(factory):
    factory.aot_study()
    return "study"


def enter(client, **params):
    return client.get("/p/study", query_string=params)


def token_of(response):
    assert response.status_code == 303, response.data
    return response.headers["Location"].rsplit("/", 1)[-1].split("?")[0]


def test_entry_creates_subject_and_session_then_runner(app, client, study):
    response = enter(client, PROLIFIC_PID="abc123", STUDY_ID="s1", SESSION_ID="x9")
    token = token_of(response)
    assert response.headers["Location"].endswith(f"/run/{token}")
    with app.app_context():
        session = db.session.scalar(select(Session).where(Session.token == token))
        assert session.status == "started" and session.session_number == 1
        assert session.subject.recruitment == {"PROLIFIC_PID": "abc123", "STUDY_ID": "s1",
                                               "SESSION_ID": "x9"}
        assert 0 <= session.seed < 2**31 and session.condition["key_mapping"]
        assert len(session.schedule) == 4 + 8 + 2
    page = client.get(f"/run/{token}")
    assert page.status_code == 200 and f"/api/session/{token}".encode() in page.data
    assert page.headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert page.headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert page.headers["Referrer-Policy"] == "no-referrer" and page.headers["Cache-Control"] == "no-store"


def test_repeat_entry_resumes_never_duplicates(app, client, study):
    first = token_of(enter(client, participant="p-1"))
    assert token_of(enter(client, participant="p-1")) == first
    other = token_of(enter(client, participant="p-2"))
    assert other != first
    with app.app_context():
        assert db.session.scalar(select(db.func.count()).select_from(Subject)) == 2
        assert db.session.scalar(select(db.func.count()).select_from(Session)) == 2


@pytest.mark.parametrize("params, status", [
    ({"STUDY_ID": "s1"}, 400), ({"participant": "bad id!"}, 400), ({"participant": "x" * 201}, 400),
    ({"participant": "abc\n"}, 400),  # "$" would accept a trailing newline
    ({"PROLIFIC_PID": "ok", "STUDY_ID": "<script>"}, 400),
])
def test_entry_needs_a_valid_id(client, study, params, status):
    response = enter(client, **params)
    # an id typed into the ask-id form gets the form again, saying why (issue 28)
    typed = "participant" in params
    assert response.status_code == status
    assert (b'role="alert"' if typed else b"not available") in response.data


def offer_languages(app, languages):
    from experiments.designs import STUDY_CONFIG_KEY
    from webapp.models import Study

    with app.app_context():
        row = db.session.scalar(select(Study).where(Study.slug == "study"))
        row.design_snapshot = {**row.design_snapshot, STUDY_CONFIG_KEY: {"languages": languages}}
        db.session.commit()


def test_the_bare_link_asks_for_the_participant_id(app, client, study, factory):
    """The link the dashboard and `study list` show (no id) opens a form that asks for the
    id and opens the same link with it, in the participant's language."""
    from experiments.texts import defaults
    from webapp.researcher import studies

    offer_languages(app, ["en", "de"])
    with app.app_context():
        shown = studies.participant_link("study").removeprefix(app.config["PUBLIC_URL"])
    assert shown == "/p/study"
    page = client.get(shown)
    assert page.status_code == 200, page.data
    html = page.get_data(as_text=True)
    assert '<form method="get" action="/p/study"' in html and 'name="participant"' in html
    assert defaults("en")["ask_id_title"] in html and 'name="lang"' not in html
    german = client.get(shown, headers={"Accept-Language": "de"}).get_data(as_text=True)
    assert defaults("de")["ask_id"] in german and '<html lang="de">' in german
    # ?lang= travels with the form; an empty id asks again; what is typed in is checked.
    assert '<input type="hidden" name="lang" value="de">' in client.get(
        shown + "?lang=de").get_data(as_text=True)
    assert client.get(shown + "?participant=").status_code == 200
    assert client.get(shown + "?participant=bad%20id!").status_code == 400
    assert token_of(client.get(shown + "?participant=typed-in"))
    # A study that is not open says so, with or without an id.
    factory.open_study(slug="drafted", status="draft")
    assert client.get("/p/drafted").status_code == 404
    assert client.get("/p/missing").status_code == 404


def test_a_screened_out_participant_sees_the_screen_out_code_again(app, client, study):
    """Coming back after a screen-out shows why, the study to return and the screen-out code
    (a redirect that failed can be recovered), not \"nothing more to do\"."""
    from experiments.texts import defaults
    from webapp.participant.sessions import completion_codes

    offer_languages(app, ["en", "de"])
    with app.app_context():
        code = completion_codes("study")["screened_out"]
    link = {"PROLIFIC_PID": "phone-1", "STUDY_ID": "s", "SESSION_ID": "x"}
    token = token_of(enter(client, **link, lang="de"))
    assert client.post(f"/api/session/{token}/screen-out",
                       json={"reasons": ["device"]}).status_code == 200
    again = enter(client, **link)  # no ?lang=: the session's language (German)
    html = again.get_data(as_text=True)
    assert again.status_code == 200 and '<html lang="de">' in html
    assert defaults("de")["once_only"] not in html and defaults("de")["already_taken_part"] not in html
    assert defaults("de")["screen_out_title"] in html
    assert defaults("de")["device_problem_desktop"] in html  # why
    assert "Studie auf der" in html and f"<strong>{code}</strong>" in html
    assert defaults("de")["screen_out_code_label"] in html and f'class="code">{code}<' in html
    assert f'href="https://app.prolific.com/submissions/complete?cc={code}"' in html
    english = enter(client, **link, lang="en").get_data(as_text=True)
    assert defaults("en")["screen_out_code_label"] in english and code in english


def test_participant_pages_name_an_icon_that_is_served(client, study):
    """Without an icon of its own a page makes the browser ask for /favicon.ico, a 404 in
    the participant's console."""
    token = token_of(enter(client, participant="icon-1"))
    for path in ("/p/study", f"/run/{token}", "/p/study?participant=icon-1&x=1", "/p/nothing"):
        html = client.get(path, follow_redirects=True).get_data(as_text=True)
        assert '<link rel="icon" href="/static/favicon.svg"' in html, path
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200 and icon.mimetype == "image/svg+xml"


@pytest.mark.parametrize("status", ["draft", "paused", "closed"])
def test_only_open_studies_admit(client, factory, status):
    factory.stimulus_set("tiny", per_category=2)
    factory.open_study(slug="shut", status=status)
    assert client.get("/p/shut?participant=p1").status_code == 404
    assert client.get("/p/missing?participant=p1").status_code == 404


def test_unknown_run_token_is_404(client, study):
    assert client.get("/run/not-a-token").status_code == 404


def test_completed_participant_sees_done_page(app, client, study):
    token = token_of(enter(client, participant="p-1"))
    with app.app_context():
        session = db.session.scalar(select(Session).where(Session.token == token))
        session.status, session.completed_at = "no_consent", now()
        db.session.commit()
    response = enter(client, participant="p-1")
    assert response.status_code == 200 and b"already taken part" in response.data


def test_second_session_opens_after_delay_with_flipped_directions(app, client, study):
    token = token_of(enter(client, participant="p-1"))
    with app.app_context():
        first = db.session.scalar(select(Session).where(Session.token == token))
        first.status, first.completed_at = "completed", now()
        db.session.commit()
    waiting = enter(client, participant="p-1")
    assert waiting.status_code == 200 and b"not open yet" in waiting.data
    with app.app_context():
        first = db.session.scalar(select(Session).where(Session.token == token))
        first.completed_at = now() - timedelta(hours=21)
        db.session.commit()
    second_token = token_of(enter(client, participant="p-1"))
    assert second_token != token
    with app.app_context():
        first = db.session.scalar(select(Session).where(Session.token == token))
        second = db.session.scalar(select(Session).where(Session.token == second_token))
        assert second.session_number == 2 and second.seed == first.seed
        assert second.condition["key_mapping"] == first.condition["key_mapping"]
        shown = Counter((t["source_clip_id"], t["direction"])
                        for s in (first, second) for t in s.schedule
                        if t["trial_type"] == "aot" and t["block"] != "practice")
        clips = {clip for clip, _ in shown}
        assert shown == Counter({(c, d): 1 for c in clips for d in ("forward", "backward")})
        second.status, second.completed_at = "completed", now()
        db.session.commit()
    assert b"already completed" in enter(client, participant="p-1").data


def test_key_mapping_counterbalanced_least_filled(app, client, study):
    for i in range(6):
        token_of(enter(client, participant=f"p{i}"))
    with app.app_context():
        cells = Counter(s.condition["cell"] for s in db.session.scalars(select(Session)))
    assert sorted(cells.values()) == [3, 3]


def _entered(app, n):
    """Open a study on ``app`` and let ``n`` participants enter it from one browser; their
    session tokens, and that browser (where they resume)."""
    Factory(app).aot_study()
    client = app.test_client()
    return [token_of(client.get("/p/study", query_string={"participant": f"p{i}"}))
            for i in range(n)], client


def _cell_counts():
    from webapp.models import Study
    from webapp.participant.store import condition_counts

    study = db.session.scalars(select(Study)).one()
    return condition_counts(db.session.connection(), study.id)


def test_cell_counts_match_the_stored_sessions(any_db_app):
    """Entry and consent keep the per-cell counts in their write transactions; they must agree
    with the stored sessions on both backends, leaving out later sessions and those that
    ended at consent."""
    tokens, client = _entered(any_db_app, 5)
    client.post(f"/api/session/{tokens[0]}/consent", json={"consent": False})
    client.post(f"/api/session/{tokens[1]}/consent", json={"consent": True})
    token_of(client.get("/p/study", query_string={"participant": "p1"}))  # resumes: no count
    with any_db_app.app_context():
        sessions = db.session.scalars(select(Session)).all()
        expected = Counter(s.condition["cell"] for s in sessions if s.token != tokens[0])
        counts = _cell_counts()
    assert counts == expected and sum(counts.values()) == 4


def test_cell_count_migration_counts_the_stored_sessions(tmp_path):
    """A database from before the counts gets them from its stored sessions on upgrade."""
    from flask_migrate import downgrade, upgrade

    from tests.factories import make_app
    from webapp.models import CellCount

    app = make_app(tmp_path, f"sqlite:///{tmp_path / 'old.db'}")
    with app.app_context():
        db.drop_all()
        upgrade()
    tokens, client = _entered(app, 4)
    client.post(f"/api/session/{tokens[0]}/consent", json={"consent": False})
    with app.app_context():
        before = _cell_counts()
        downgrade(revision="c2b310d0f898")
        upgrade()
        assert db.session.scalar(select(func.count()).select_from(CellCount)) > 0
        assert _cell_counts() == before
    assert sum(before.values()) == 3


def test_paused_study_lets_those_inside_finish(app, client, study):
    from webapp.models import Study

    token = token_of(enter(client, participant="inside"))
    with app.app_context():
        db.session.scalars(select(Study)).one().status = "paused"
        db.session.commit()
    assert token_of(enter(client, participant="inside")) == token
    assert enter(client, participant="newcomer").status_code == 404
    assert client.get(f"/api/session/{token}").status_code == 200


def test_simultaneous_first_entries_open_one_session(any_db_app, factory):
    """Eight entries of one new id at once (eight browsers, or one clicking eight times): one
    subject, one session; the browser that entered last holds it (its token is one of those
    sent, the others open nothing: see test_participant_resume)."""
    from concurrent.futures import ThreadPoolExecutor

    factory.aot_study()

    def entry(_):
        return token_of(any_db_app.test_client().get("/p/study", query_string={"participant": "twin"}))

    with ThreadPoolExecutor(8) as pool:
        tokens = set(pool.map(entry, range(8)))
    with any_db_app.app_context():
        assert db.session.scalar(select(db.func.count()).select_from(Subject)) == 1
        assert list(db.session.scalars(select(Session.token))) in ([token] for token in tokens)


def test_unschedulable_study_stores_nothing_until_its_stimuli_arrive(app, client, factory):
    """Entry builds the schedule before writing, so a failed one leaves no subject behind;
    the cached stimulus catalog notices the set's new rows."""
    factory.catch_set()
    factory.open_study(stimulus_set="later", main_blocks=2)
    assert enter(client, participant="early").status_code == 503
    with app.app_context():
        assert db.session.scalar(select(db.func.count()).select_from(Subject)) == 0
    factory.stimulus_set("later", per_category=2)
    token_of(enter(client, participant="early"))


def test_catalog_is_cached_until_the_set_changes(app, study):
    from bench.harness.stored_study import _stimulus
    from webapp.models import SourceClip
    from webapp.stimuli.catalog import load_catalog

    with app.app_context():
        first = load_catalog(db.session.connection(), "tiny", "catch")
        assert load_catalog(db.session.connection(), "tiny", "catch").clips is first.clips
        with pytest.raises(TypeError):  # shared between sessions, so read-only
            first.clips[0].stimuli[0].meta["n_frames"] = 3
        clip = db.session.scalars(select(SourceClip).where(SourceClip.stimulus_set == "tiny")).first()
        clip.stimuli.append(_stimulus(clip, None, "frame_set", n_frames=6, span="medium"))
        db.session.commit()
        again = load_catalog(db.session.connection(), "tiny", "catch")
    assert again.clips is not first.clips
    assert sum(len(c.stimuli) for c in again.clips) == sum(len(c.stimuli) for c in first.clips) + 1
    assert again.catch == first.catch and len(again.catch) == 2
