"""A scripted participant for the browser tests: reads which screen the runner shows
(``body[data-screen]``) and answers it with real Playwright clicks and key presses."""
import json
import time
from contextlib import ExitStack, contextmanager
from urllib.parse import urlencode, urlsplit

from sqlalchemy import func, select

from tests.conftest import VIEWPORT
from tests.waiting import hold
from webapp.extensions import db
from webapp.models import Session, Trial

WAITING = {"loading", "saving", "trial-start", "fixation", "feedback", "gap", "device", "error"}


def enter(page, site, kind: str, participant: str, simulate: bool | dict = False,
          prolific: bool = False) -> str:
    """Open the study's entry link; returns the session token from the runner URL.

    ``simulate``: True, or the simulation's options (e.g. ``{"accuracy": 0}``).
    ``prolific``: enter with Prolific's parameters instead of a generic participant id.
    """
    if simulate:
        page.add_init_script(f"window.CHRONOSCOPE_SIMULATE = {json.dumps(simulate)}")
    query = {"participant": participant} if not prolific else {
        "PROLIFIC_PID": participant, "STUDY_ID": "study-1", "SESSION_ID": f"s-{participant}"}
    if simulate:
        query["simulate"] = "1"  # the server makes the session a simulated one (testing app)
    page.goto(f"{site.base_url}/p/{site.slugs[kind]}?{urlencode(query)}")
    page.wait_for_url("**/run/**")
    return urlsplit(page.url).path.rstrip("/").split("/")[-1]


def screen_state(page) -> dict:
    return page.evaluate("""() => ({screen: document.body.dataset.screen || '',
        trial: document.body.dataset.trialIndex ?? null,
        onset: document.body.dataset.onset ?? null})""")


def wait_change(page, state: dict, timeout_s: float = 20) -> dict:
    page.wait_for_function(
        """(s) => (document.body.dataset.screen || '') !== s.screen
               || (document.body.dataset.trialIndex ?? null) !== s.trial
               || (document.body.dataset.onset ?? null) !== s.onset""",
        arg=state, timeout=timeout_s * 1000, polling=20)
    return screen_state(page)


def answer_key(app, token: str, index: int) -> str:
    """The response key of trial ``index``'s correct answer (a catch trial's instructed key)."""
    with app.app_context():
        session = db.session.execute(select(Session.schedule, Session.condition)
                                     .where(Session.token == token)).one()
    trial = next(t for t in session.schedule if t["trial_index"] == index)
    mapping = session.condition["key_mapping"]
    return next(key for key, label in mapping.items() if label == trial["correct_response"])


def order_with_keyboard(page) -> None:
    """Moves the first movable frame one slot right with Space / ArrowRight / Space."""
    item = page.locator(".frame:not(.hint)").first
    item.focus()
    page.keyboard.press("Space")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Space")


def mouse_drag(page, source: dict, target: dict) -> None:
    """A real mouse drag from the centre of box ``source`` onto box ``target``, in ten moves
    at a hand's pace: Sortable follows the pointer only through intermediate moves."""
    page.mouse.move(source["x"] + source["width"] / 2, source["y"] + source["height"] / 2)
    page.mouse.down()
    for step in range(1, 11):
        x = source["x"] + (target["x"] - source["x"]) * step / 10 + target["width"] / 2
        page.mouse.move(x, target["y"] + target["height"] / 2)
        hold(15, page)  # the pace of a hand is the stimulus, not a wait
    page.mouse.up()


def instructed_key(app, token: str, index: int) -> str | None:
    """The key a catch video names (server-side only; an attentive participant reads it)."""
    with app.app_context():
        schedule = db.session.scalars(select(Session.schedule).where(Session.token == token)).one()
    trial = next(t for t in schedule if t["trial_index"] == index)
    return trial.get("instructed_key")


def answer(page, state: dict, on_trial=None, site=None, token=None, rt_ms: float = 0) -> None:
    screen = state["screen"]
    if screen == "consent":
        page.click("#consent-yes")
    elif screen == "keyboard-check":
        page.keyboard.press("Space")
    elif screen == "fullscreen":
        page.click("#fullscreen-go")
    elif screen in ("instructions", "block-intro", "break", "debrief"):
        page.click("#continue")
    elif screen == "clip" and state["onset"] is not None:
        index = int(state["trial"])
        if rt_ms:
            hold(rt_ms, page)  # a person's reaction time is what the test presents
        page.keyboard.press(answer_key(site.app, token, index) if site else page.evaluate(
            f"window.chronoscope.session.response_keys[{index} % 2]"))
    elif screen == "frame_order":
        if on_trial:
            on_trial(page, state)
        else:
            order_with_keyboard(page)
        page.click("#order-done")


def run_by_hand(page, until: str = "done", on_trial=None, limit_s: float = 120,
                site=None, token=None, rt_ms: float = 0) -> None:
    """Answers screens until ``until`` shows (real clicks and key presses, no simulation).

    ``on_trial(page, state)`` orders the frames of a frame-ordering trial (default: one
    keyboard move); ``site`` and ``token`` let catch trials be answered as instructed;
    ``rt_ms`` answers each clip that long after its onset, as a person would (0: at once,
    which the exclusion rules call an anticipation).
    """
    deadline = time.monotonic() + limit_s
    state = screen_state(page)
    while state["screen"] != until:
        if time.monotonic() > deadline:
            raise AssertionError(f"session stuck at {state}")
        if state["screen"] not in WAITING:
            answer(page, state, on_trial, site, token, rt_ms)
        state = wait_change(page, state)


def wait_done(page, timeout_s: float = 120) -> str:
    page.wait_for_selector("body[data-screen=done]", timeout=timeout_s * 1000)
    return page.text_content("#completion-code")


def stored(app, token: str) -> dict:
    """The session row and its stored trials, straight from the database."""
    with app.app_context():
        session = db.session.scalars(select(Session).where(Session.token == token)).one()
        trials = db.session.scalars(select(Trial).where(Trial.session_id == session.id)
                                    .order_by(Trial.trial_index)).all()
        per_index = dict(db.session.execute(
            select(Trial.trial_index, func.count()).where(Trial.session_id == session.id)
            .group_by(Trial.trial_index)).all())
        return {"status": session.status, "schedule": list(session.schedule),
                "trials": [_row(t) for t in trials], "per_index": per_index}


def _row(trial: Trial) -> dict:
    return {"trial_index": trial.trial_index, "trial_type": trial.trial_type,
            "block": trial.block, "response": trial.response, "rt_ms": trial.rt_ms,
            "correct": trial.correct, "exclusion_reasons": trial.exclusion_reasons, "onset_method": trial.onset_method,
            "dropped_frames": trial.dropped_frames,
            "client_uuid": trial.client_uuid, "extra": json.loads(json.dumps(trial.extra))}


def assert_every_trial_once(data: dict) -> None:
    scheduled = sorted(t["trial_index"] for t in data["schedule"])
    assert sorted(data["per_index"]) == scheduled, "some scheduled trial is missing"
    assert set(data["per_index"].values()) == {1}, "a trial was stored twice"
    assert len({t["client_uuid"] for t in data["trials"]}) == len(data["trials"])


def enter_in(page, site, kind: str, participant: str, lang: str) -> str:
    """Open the study's Prolific entry link asking for language ``lang`` (``?lang=``), as a
    lab's recruitment link may; returns the session token (the same participant id entering
    again opens their next session)."""
    query = {"PROLIFIC_PID": participant, "STUDY_ID": "study-1",
             "SESSION_ID": f"s-{participant}", "lang": lang}
    page.goto(f"{site.base_url}/p/{site.slugs[kind]}?{urlencode(query)}")
    page.wait_for_url("**/run/**")
    return urlsplit(page.url).path.rstrip("/").split("/")[-1]


def session_row(app, token: str) -> dict:
    """What the session row stores beyond its trials: who, which session, which study
    version, when, and what the device check and consent recorded."""
    with app.app_context():
        session = db.session.scalars(select(Session).where(Session.token == token)).one()
        return {"subject_id": session.subject_id, "session_number": session.session_number,
                "status": session.status, "study_version": session.study_version,
                "available_from": session.available_from, "completed_at": session.completed_at,
                "exclusion_reasons": list(session.exclusion_reasons),
                "resumes": list(session.resumes or []),
                "device_info": json.loads(json.dumps(session.device_info))}


# Installed before any script of every page: each violation is sent to Python at once, so one
# that happens just before a navigation is not lost with the page.
REPORT_VIOLATIONS = """document.addEventListener("securitypolicyviolation", (e) =>
    window.reportViolation(`${e.effectiveDirective} refused ${e.blockedURI || "inline code"} `
                           + `in ${e.sourceFile}:${e.lineNumber}`));"""
# Collects every ImageBitmap made, to check that the trial freed them (closed: width 0).
TRACK_BITMAPS = """(() => {
  const make = window.createImageBitmap;
  window.bitmaps = [];
  window.createImageBitmap = (...args) => make(...args).then((bitmap) => {
    window.bitmaps.push(bitmap);
    return bitmap;
  });
})();"""


@contextmanager
def watching(browser):
    """A page whose CSP violations, CSP console messages and script errors are collected
    (``page.problems``; its script errors alone also in ``page.js_errors``)."""
    context = browser.new_context(viewport=VIEWPORT)
    problems, errors = [], []
    context.expose_function("reportViolation", lambda text: problems.append(text))
    context.add_init_script(REPORT_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda error: (problems.append(f"script error: {error}"),
                                        errors.append(str(error))))
    page.on("console", lambda message: "Content Security Policy" in message.text
            and problems.append(f"console: {message.text}"))
    page.problems, page.js_errors = problems, errors
    try:
        yield page
    finally:
        context.close()


def run_side_by_side(browser, site, sessions: dict, reload: tuple[str, int]) -> dict:
    """Simulated sessions ``{name: (kind, participant)}`` run at once, each in a page of its
    own (``watching``; as bench/bots.py runs several), entered in the order given, session
    ``reload[0]`` reloaded once it has reached trial ``reload[1]``: {name: (token, its
    page's script errors)}."""
    with ExitStack() as stack:
        pages = {name: stack.enter_context(watching(browser)) for name in sessions}
        tokens = {name: enter(pages[name], site, kind, participant, simulate=True)
                  for name, (kind, participant) in sessions.items()}
        name, trial = reload
        pages[name].wait_for_function(
            f"() => Number(document.body.dataset.trialIndex) >= {trial}", polling=20)
        pages[name].reload()
        for page in pages.values():
            assert wait_done(page)
        return {name: (tokens[name], list(page.js_errors)) for name, page in pages.items()}
