"""What an unlucky or cheating participant sees: a German session screen by screen (with
axe-core on every screen), a phone screened out, going offline, a reload mid-trial, leaving."""
from pathlib import Path

import pytest

from experiments.designs import STUDY_CONFIG_KEY
from experiments.texts import defaults
from tests.browser.participant import (
    WAITING,
    answer,
    enter,
    screen_state,
    session_row,
    stored,
    wait_change,
)
from tests.factories import STIMULUS_SET, tiny_designs
from tests.live_site import writing
from webapp.participant import sessions

pytestmark = pytest.mark.browser
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
# English sentences that must not show in a German session (their German differs).
ENGLISH = [defaults("en")[k] for k in ("consent_yes", "debrief_title", "completion_code_label",
                                        "keyboard_check", "practice_intro", "main_title",
                                        "debrief_button", "key_label_forward")]


def open_german(site) -> str:
    from webapp.researcher import lifecycle, studies

    kind = "aot_de"
    if kind not in site.slugs:
        design = tiny_designs()["aot"]
        with writing(site.app):
            study = studies.create_study("tiny-aot-de", design.name, STIMULUS_SET)
            study.design_snapshot = {**design.to_dict(), STUDY_CONFIG_KEY: {"languages": ["de"]}}
        with site.app.app_context():
            lifecycle.transition("tiny-aot-de", "open")
        site.slugs[kind] = "tiny-aot-de"
    return kind


@pytest.fixture
def csp_free_page(browser):
    """A page whose CSP lets the test inject axe-core (the app's CSP forbids inline scripts)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, bypass_csp=True,
                                  locale="en-GB")
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


def axe_violations(page) -> list:
    if not page.evaluate("() => Boolean(window.axe)"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate("""async () => {
        const result = await axe.run(document, {runOnly: {type: 'tag',
            values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}});
        return result.violations.map((v) => ({id: v.id, nodes: v.nodes.map((n) => n.html)}));
    }""")


def test_a_german_session_is_german_and_accessible_on_every_screen(csp_free_page, site):
    page = csp_free_page
    kind = open_german(site)
    token = enter(page, site, kind, "de-1", prolific=True)
    seen, problems = set(), {}
    state = screen_state(page)
    while state["screen"] != "done":
        if state["screen"] not in WAITING:
            if state["screen"] not in seen:
                seen.add(state["screen"])
                shown = page.inner_text("#stage")
                assert not [e for e in ENGLISH if e in shown], (state, shown)
                assert page.evaluate("() => document.documentElement.lang") == "de"
                violations = axe_violations(page)
                if violations:
                    problems[state["screen"]] = violations
            answer(page, state, site=site, token=token)
        state = wait_change(page, state, timeout_s=30)
    done = page.inner_text("#stage")
    assert defaults("de")["completion_code_label"] in done
    assert page.locator("#countdown").is_visible()
    assert not axe_violations(page)
    assert not problems, problems
    assert {"consent", "instructions", "block-intro", "debrief"} <= seen
    assert stored(site.app, token)["status"] == "completed"


def test_a_phone_is_asked_to_switch_and_screened_out_before_consent_if_it_cannot(browser, site):
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
        user_agent="Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
                   "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1")
    page = context.new_page()
    try:
        token = enter(page, site, "aot", "phone-1", prolific=True)
        # First what to do: the same link on a desktop or laptop, where the same id continues.
        page.wait_for_function("() => document.body.dataset.screen === 'device-switch'")
        asked = page.inner_text("#stage")
        assert defaults("en")["device_problem_desktop"] in asked
        assert "Open the same study link in" in asked and "desktop or laptop" in asked
        assert stored(site.app, token)["status"] == "started"
        page.click("#device-give-up")  # this participant cannot switch
        page.wait_for_function("() => document.body.dataset.status === 'screened_out'")
        shown = page.inner_text("#stage")
        with site.app.app_context():
            code = sessions.completion_codes(site.slugs["aot"])["screened_out"]
        assert defaults("en")["screen_out_title"] in shown
        assert defaults("en")["device_problem_desktop"] in shown  # why
        assert "return the study" in shown and code in shown
        assert page.locator("#countdown").is_visible()
        assert page.get_attribute("#redirect", "href").endswith(f"cc={code}")
        data = stored(site.app, token)
        assert data["status"] == "screened_out"
        assert page.evaluate("() => document.body.dataset.screen") == "done"  # never consent
    finally:
        context.close()


def test_offline_says_the_answers_are_safe(page, site):
    token = enter(page, site, "aot", "offline-1")
    state = screen_state(page)
    while state["screen"] != "block-intro":
        if state["screen"] not in WAITING:
            answer(page, state, site=site, token=token)
        state = wait_change(page, state)
    page.context.set_offline(True)
    page.wait_for_selector("#offline-banner", state="visible")
    assert page.inner_text("#offline-banner") == defaults("en")["offline"]
    page.context.set_offline(False)
    page.wait_for_selector("#offline-banner", state="hidden")


def run_until(page, site, token, stop):
    state = screen_state(page)
    while not stop(state):
        if state["screen"] not in WAITING:
            answer(page, state, site=site, token=token)
        state = wait_change(page, state, timeout_s=30)
    return state


def test_a_reload_mid_trial_says_where_and_records_the_restart(page, site):
    token = enter(page, site, "aot", "reload-1")
    state = run_until(page, site, token, lambda s: s["screen"] == "clip" and s["onset"] is not None
                      and page.evaluate("() => !window.chronoscope.session.trials.find((t) => "
                                        "t.trial_index === Number(document.body.dataset.trialIndex))"
                                        ".block.startsWith('practice')"))
    interrupted = int(state["trial"])
    page.reload()
    run_until(page, site, token, lambda s: s["screen"] == "instructions")
    shown = page.inner_text("#stage")
    assert "Welcome back — block 1 of 2, trial" in shown
    assert defaults("en")["instructions_practice"] not in shown
    run_until(page, site, token, lambda s: s["screen"] == "done")
    rows = {t["trial_index"]: t for t in stored(site.app, token)["trials"]}
    assert rows[interrupted]["extra"]["restarted"] is True
    assert not any(t["extra"].get("restarted") for i, t in rows.items() if i != interrupted)
    # The session keeps the resume: the trial it went on with, restarted, and the time away.
    (resumed,) = session_row(site.app, token)["resumes"]
    assert (resumed["trial_index"], resumed["restarted"]) == (interrupted, True)
    assert 0 <= resumed["away_s"] < 60


def test_leaving_mid_session_asks_first(page, site):
    token = enter(page, site, "aot", "leave-1")
    run_until(page, site, token, lambda s: s["screen"] == "instructions")
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    with page.expect_event("dialog"):
        page.close(run_before_unload=True)
    assert dialogs == ["beforeunload"]
