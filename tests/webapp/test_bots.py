"""Scripted participants (bench/harness/bots.py) end outside APPROVE in the Prolific
decisions, each with a reason code; a participant at a person's pace who fetches the media
is flagged by no plausibility rule (issue 25)."""
import hashlib
from pathlib import Path

import pytest
from sqlalchemy import select

from bench.harness.bots import STRATEGIES, enter, record_outcome, run_api, state
from experiments import plausibility
from experiments.verdict import APPROVE
from webapp.extensions import db
from webapp.models import Session, SourceClip, Study, access
from webapp.participant import opening
from webapp.participant.progress import recompute_study
from webapp.participant.sessions import completion_codes
from webapp.researcher import studies
from webapp.researcher.prolific import prolific_decisions, prolific_review
from webapp.researcher.roster import roster_frame


class Http:
    """The Flask test client as the bots' ``http``."""

    def __init__(self, client):
        self.client = client

    def enter(self, path):
        response = self.client.get(path)
        assert response.status_code == 303, response.data
        return response.headers["Location"]

    def get(self, path):
        response = self.client.get(path)
        return response.status_code, response.get_data()

    def post(self, path, body):
        response = self.client.post(path, json=body)
        return response.status_code, response.get_json() or {}


@pytest.fixture
def study(app, factory):
    """The usual study, with media files, and catch videos whose bytes differ from the
    clips' (the stand-in clips of one direction are all alike)."""
    root = Path(app.config["STIMULUS_ROOT"])
    factory.aot_study(files=True)
    with app.app_context():
        for clip in db.session.scalars(select(SourceClip).where(SourceClip.split == "catch")):
            for stimulus in clip.stimuli:
                (root / stimulus.path).write_bytes(f"catch {clip.clip_key}".encode() * 1000)
    return "study"


def catch_hashes(app) -> dict[str, str]:
    """What a bot learns by watching each catch video once: its hash and the key it asks."""
    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        clips = db.session.scalars(select(SourceClip).where(SourceClip.split == "catch")).all()
        return {hashlib.sha256((root / s.path).read_bytes()).hexdigest():
                clip.params["instructed_key"] for clip in clips for s in clip.stimuli}


def outcome(app, participant: str) -> tuple:
    """(Prolific decision and reason or None, the session's status and reasons)."""
    with app.app_context():
        roster = roster_frame("study")
        row = roster[roster["subject_id"] == participant].iloc[-1]
        return prolific_review(roster).get(participant), row["status"], row["exclusion_reasons"]


# strategy -> the reason codes it must be flagged with at least, whatever it guesses.  The
# practice answers are not published, so the guessing bots pass practice by chance or end
# failed_practice (practice_gate, left to the researcher), and the plausibility rules judge
# whatever trials they sent (a few practice trials are too short for implausible_duration).
EXPECTED = {
    "API only, fast": {"implausible_media", "implausible_pace"},
    "API only, human-like delays": {"implausible_media"},
    "media fetched, unwatched": {"implausible_pace"},
    "consent declined": set(),
    "all technical": set(),  # all_technical or practice_gate, by its practice guesses (below)
}
PACED = {"API only, human-like delays", "all technical"}


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_every_scripted_strategy_ends_outside_approve_with_a_reason(app, client, study, name,
                                                                    request):
    if name in PACED:  # the server's clock moves at a person's pace while the bot waits
        request.getfixturevalue("person_pace")
    STRATEGIES[name](Http(client), study, "bot-1", lambda ms: None)
    decision, status, reasons = outcome(app, "bot-1")
    record_outcome(name, "bot-1", status, decision, reasons)
    assert EXPECTED[name] <= set(reasons), reasons
    with app.app_context():
        approved = set(prolific_decisions(roster_frame("study"))
                       .query("decision == @APPROVE")["participant_id"])
    assert "bot-1" not in approved and (decision is None or decision[0] != APPROVE)
    if name == "consent declined":
        assert status == "no_consent" and decision == ("REVIEW", decision[1])
        assert "declined consent" in decision[1]
    elif name == "all technical":  # practice guessed right: screened out, else failed practice
        assert (status == "screened_out" and "all_technical" in reasons and decision is None) \
            or (status == "failed_practice" and "practice_gate" in reasons
                and decision[0] == "REVIEW")
    else:
        assert decision[0] in ("REVIEW", "REJECT") and decision[1]


@pytest.mark.usefixtures("person_pace")
def test_a_participant_at_a_persons_pace_is_flagged_by_no_plausibility_rule(app, client, study):
    run_api(Http(client), study, "person-1", fetch_media=True, person_delays=True,
            eyes=persons_eyes(app))
    decision, status, reasons = outcome(app, "person-1")
    record_outcome("control: API at a person's pace, media fetched", "person-1", status,
                   decision, reasons)
    assert status in ("completed", "failed_attention")
    assert not set(reasons) & set(plausibility.PARTICIPANT_REASONS), reasons


def persons_eyes(app, wrong_practice: bool = False):
    """``eyes`` for run_api: the answer a person who watched the clip gives (read from the
    database, as the schedule the page gets no longer publishes it); ``wrong_practice``:
    one who gets every practice trial wrong."""
    def answer(api: str, trial: dict):
        token = api.rsplit("/", 1)[-1]
        with app.app_context():
            session = db.session.scalar(select(Session).where(Session.token == token))
            scheduled = next(t for t in session.schedule
                             if t["trial_index"] == trial["trial_index"])
            responses = set(session.condition["key_mapping"].values())
        if wrong_practice and trial["block"] == "practice":
            return min(responses - {scheduled["correct_response"]})
        return scheduled["correct_response"]
    return answer


@pytest.mark.usefixtures("person_pace")
def test_a_failed_practice_is_left_to_the_researcher(app, client, study):
    """A person who fails practice and a script that fails it at a person's pace look alike
    to the server: neither is approved (nor rejected) by the list."""
    run_api(Http(client), study, "person-3", fetch_media=True, person_delays=True,
            eyes=persons_eyes(app, wrong_practice=True))
    decision, status, reasons = outcome(app, "person-3")
    assert status == "failed_practice" and reasons == ["practice_gate"]
    assert decision == ("REVIEW", "failed the practice (a person who tried, or a script that "
                                  "guessed)")


def test_an_implausible_failed_practice_carries_its_plausibility_reasons(app, client, study):
    run_api(Http(client), study, "bot-5", fetch_media=False, person_delays=False,
            eyes=persons_eyes(app, wrong_practice=True))
    decision, status, reasons = outcome(app, "bot-5")
    assert status == "failed_practice" and reasons[0] == "practice_gate"
    assert {"implausible_media", "implausible_pace"} <= set(reasons)
    assert decision[0] == "REVIEW" and "answers arrived for clips the server never sent" \
        in decision[1]
    with app.app_context():  # recomputing keeps the status and finds the same reasons
        assert recompute_study(studies.get_study("study")) == {"sessions": 1, "excluded": 1}
    assert outcome(app, "bot-5") == (decision, status, reasons)


@pytest.mark.usefixtures("person_pace")
def test_all_technical_main_trials_end_screened_out_with_that_code(app, client, study):
    ending = run_api(Http(client), study, "person-2", fetch_media=True, person_delays=True,
                     technical_main=True, eyes=persons_eyes(app))
    decision, status, reasons = outcome(app, "person-2")
    with app.app_context():
        codes = completion_codes("study")
    assert status == "screened_out" and "all_technical" in reasons and decision is None
    assert ending["completion_code"] == codes["screened_out"] != codes["completed"]


def test_implausible_sessions_show_their_reason_on_the_study_page(app, client, study,
                                                                  logged_in):
    with app.app_context():
        access.share(db.session.scalar(select(Study)), "ada", "viewer")
    # Every answer known (practice and catch), so the practice gate and the attention
    # checks pass: only the plausibility rules stand between this bot and its pay.
    run_api(Http(client), study, "bot-2", fetch_media=True, person_delays=False,
            eyes=persons_eyes(app))
    decision, status, reasons = outcome(app, "bot-2")
    record_outcome("every answer known, media fetched, fast", "bot-2", status, decision,
                   reasons)
    page = logged_in.get("/researcher/studies/study/panel").get_data(as_text=True)
    assert "you decide" in page and "trials arrived faster than they can run" in page


@pytest.mark.usefixtures("person_pace")
@pytest.mark.parametrize("session_seed", [1, 2, 3])
def test_a_bot_with_catch_hashes_at_a_persons_pace_is_not_approved(app, client, study,
                                                                    monkeypatch, session_seed):
    """It fetches every clip, waits a person's time and knows the catch videos' hashes from
    an earlier session: no plausibility rule can see it, and the hashes match nothing, so
    it guesses.  Seeded (the session's schedule and the bot's guesses), so deterministic."""
    monkeypatch.setattr(opening.secrets, "randbelow", lambda _: session_seed)
    run_api(Http(client), study, "bot-4", fetch_media=True, person_delays=True,
            catch_keys=catch_hashes(app))
    decision, status, reasons = outcome(app, "bot-4")
    record_outcome("catch by bytes, media fetched, person's pace", "bot-4", status,
                   decision, reasons)
    assert decision is not None and decision[0] != APPROVE, (status, reasons)


def test_practice_answers_are_not_published(app, client, study):
    """The page gets no practice answer: a bot can only guess it."""
    api = enter(Http(client), study, "bot-3")
    client.post(f"{api}/consent", json={"consent": True})
    trials = state(Http(client), api)["trials"]
    practice = [t for t in trials if t["block"] == "practice"]
    assert practice and not any("correct_response" in t["params"] for t in practice)


def test_catch_videos_are_not_recognised_by_their_bytes(app, client, study):
    """A bot that saw the catch videos of one session (a person watching it once) learns
    their hashes; in its next session it must recognise none of them."""
    learned = {digest: trial["instructed_key"] for trial, digest in _catch_served(app, client, "bot-a")}
    seen = _catch_served(app, client, "bot-b")
    assert learned and seen and not any(digest in learned for _, digest in seen)


def _catch_served(app, client, participant: str) -> list[tuple[dict, str]]:
    """A new session's catch trials (read from the database: a person's eyes) and the hash
    of each one's video as the session is served it."""
    api = enter(Http(client), "study", participant)
    client.post(f"{api}/consent", json={"consent": True})
    token = api.rsplit("/", 1)[-1]
    with app.app_context():
        schedule = db.session.scalar(select(Session.schedule).where(Session.token == token))
    return [(t, hashlib.sha256(client.get(f"/media/{token}/{t['trial_index']}").get_data())
             .hexdigest()) for t in schedule if t["trial_type"] == "catch"]
