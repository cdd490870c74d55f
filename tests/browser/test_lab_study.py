"""Issue 19's acceptance test: a lab runs its own study from the example study file of
docs/researcher-guide.md (texts and counts changed, nothing else) with no Python edit:
`manage.py study create --from`, `study open`, then one participant screened out and another
through both sessions, in German.

What each screen shows (saved as PNGs to ``$CHRONOSCOPE_SCREENSHOTS`` when it is set):

- ``screen_out_de.png`` (an iPhone, ``?lang=de``): on the runner's grey, the heading "Diese
  Studie kann auf Ihrem Gerät nicht laufen", why, one line per problem found ("Diese Studie
  braucht einen Desktop- oder Laptop-Computer mit Tastatur.", the browsers it runs in, and
  "mindestens 1024 × 700 Pixel … (es ist 390 × 844)"), the request to return the
  study on the recruitment site with the study's own screen-out code in bold, the code again
  under "Ihr Abschlusscode", a countdown "Sie werden in N Sekunden zurückgeleitet." and the link
  back to Prolific.  Consent is never shown.
- ``consent_de.png`` (desktop Chromium, ``?lang=de``): "Einwilligung", the lab's own German
  consent from ``consent.de.md`` with the duration computed from the schedule, the line that
  the study has two sessions on different days, and the buttons "Ich willige ein" /
  "Ich willige nicht ein".
- ``end_of_session_1_de.png``: "Sitzung 1 von 2 ist geschafft — vielen Dank!", when session 2
  opens, 20 hours after session 1 ended, in the participant's own date and time ("Sitzung 2
  öffnet am Mittwoch, 25. November 2026 um 05:49 … (Ihre Ortszeit)"), that they will be
  invited through the recruitment site and should come back with the same link, the link
  "In meinen Kalender eintragen" (the .ics), the completion code and a 60-second countdown
  back to Prolific.
- ``final_de.png`` (after session 2): "Alles erledigt — vielen Dank!", the completion code and
  the countdown back to Prolific.
"""
import os
import re
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from experiments.texts import defaults
from tests.browser.participant import (
    assert_every_trial_once,
    enter_in,
    run_by_hand,
    session_row,
    stored,
)
from tests.factories import tiny_specs
from tests.live_site import writing
from tests.webapp.test_next_session import event, utc_time
from webapp.models import Session

pytestmark = pytest.mark.browser
GUIDE = Path(__file__).resolve().parents[2] / "docs" / "researcher-guide.md"
SLUG = "lab-pilot"
GAP = timedelta(hours=20)  # the guide's example's sessions.gap_hours, kept as it is
IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
          "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1")
# The lab's own German consent: a sentence no shipped text has, and the computed duration.
CONSENT_DE = ("Das Zeitlabor der Beispieluniversität lädt Sie zu einer kurzen Studie ein.\n\n"
              "Sie dauert etwa {duration_minutes} Minuten. Fragen? Schreiben Sie an "
              "[das Labor](mailto:lab@example.org).\n")
OWN_SENTENCE = "Das Zeitlabor der Beispieluniversität lädt Sie zu einer kurzen Studie ein."
# Only counts change: one block of three clips (plus its catch trial) and two practice trials.
COUNTS = {"count = 4\n": "count = 1\n", "trials_per_block = 10 ": "trials_per_block = 3 ",
          "[practice]\ntrials = 4\n": "[practice]\ntrials = 2\n"}


def guide_study_file() -> str:
    """The researcher's guide's example study file ("Study files"), as a lab would copy it."""
    section = GUIDE.read_text("utf-8").split("## Study files", 1)[1]
    return section.split("```toml\n", 1)[1].split("```", 1)[0]


def lab_study_file(folder: Path) -> Path:
    text = guide_study_file()
    for old, new in COUNTS.items():
        assert text.count(old) == 1, f"the guide's example changed: {old!r}"
        text = text.replace(old, new)
    assert 'consent = {file = "consent.de.md"}' in text
    (folder / "consent.de.md").write_text(CONSENT_DE, "utf-8")
    path = folder / "study.toml"
    path.write_text(text, "utf-8")
    return path


def _store_synthetic(site) -> None:
    """The example names the "synthetic" set (what `make stimuli` stores in a checkout); the
    live site stands its tiny clips in for it, so the study file stays the guide's."""
    from webapp.stimuli import catalog

    with tempfile.TemporaryDirectory() as sources, site.app.app_context():
        catalog.import_clips(tiny_specs(Path(sources)), "synthetic",
                             Path(site.app.config["STIMULUS_ROOT"]), frame_set_sizes=())


@pytest.fixture(scope="module")
def lab(site, tmp_path_factory):
    """The study, created and opened from its file through the command line."""
    if "lab" not in site.slugs:
        _store_synthetic(site)
        path = lab_study_file(tmp_path_factory.mktemp("lab"))
        runner = site.app.test_cli_runner()
        for args in (["study", "create", SLUG, "--from", str(path)], ["study", "open", SLUG]):
            result = runner.invoke(args=args)
            assert result.exit_code == 0, result.output
        site.slugs["lab"] = SLUG
    return "lab"


def screenshot(page, name: str) -> None:
    folder = os.environ.get("CHRONOSCOPE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def de(key: str, **values) -> str:
    return defaults("de")[key].format(**values)


def codes(site, session_number: int = 1) -> dict:
    from webapp.participant import sessions

    with site.app.app_context():
        return sessions.completion_codes(SLUG, session_number)


def test_a_phone_is_screened_out_in_german_with_the_study_code(browser, site, lab):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True,
                                  has_touch=True, user_agent=IPHONE)
    page = context.new_page()
    try:
        token = enter_in(page, site, lab, "lab-phone-1", "de")
        page.wait_for_function("() => document.body.dataset.screen === 'device-switch'")
        assert de("device_switch_give_up") in page.inner_text("#stage")  # in German too
        page.click("#device-give-up")  # asked to switch to a computer: this one cannot
        page.wait_for_function("() => document.body.dataset.status === 'screened_out'")
        shown = page.inner_text("#stage")
        code = codes(site)["screened_out"]
        assert page.evaluate("() => document.documentElement.lang") == "de"
        assert de("screen_out_title") in shown and de("device_problem_desktop") in shown, shown
        assert "Bitte geben Sie die Studie auf der Rekrutierungsseite zurück" in shown
        assert code in shown and code != codes(site)["completed"]
        countdown = page.inner_text("#countdown")
        assert re.fullmatch(r"Sie werden in \d+ Sekunden zurückgeleitet\.", countdown), countdown
        assert page.get_attribute("#redirect", "href").endswith(f"cc={code}")
        assert page.evaluate("() => document.body.dataset.screen") == "done"  # never consent
        screenshot(page, "screen_out_de")
        row = session_row(site.app, token)
        assert row["status"] == "screened_out" and row["exclusion_reasons"] == ["screened_out"]
        assert "device" in row["device_info"]["screen_out"]["reasons"], row["device_info"]
        assert "consent" not in row["device_info"]
        assert stored(site.app, token)["trials"] == []
    finally:
        context.close()


def test_a_participant_runs_both_sessions_in_german(page, site, lab):
    token_1 = enter_in(page, site, lab, "lab-desk-1", "de")
    run_by_hand(page, until="consent", site=site, token=token_1)
    consent = page.inner_text("#stage")
    assert OWN_SENTENCE in consent, consent
    assert re.search(r"Sie dauert etwa \d+ Minuten\.", consent), consent  # computed, not typed
    assert de("consent_yes") in consent and "Videoclips" not in consent  # not the shipped text
    assert page.evaluate("() => document.documentElement.lang") == "de"
    screenshot(page, "consent_de")

    run_by_hand(page, site=site, token=token_1)
    first = session_row(site.app, token_1)
    opens_at = first["completed_at"] + GAP
    end = page.inner_text("#stage")
    assert de("next_session_title", session=1, sessions=2) in end, end
    assert "Rekrutierungsseite" in end
    assert page.text_content("#completion-code") == codes(site)["completed"]
    assert page.get_attribute("#next-session time", "datetime") == \
        opens_at.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    assert page.inner_text("#calendar-link") == de("next_session_calendar")
    href = page.evaluate("() => document.getElementById('calendar-link').href")
    props = event(page.request.get(href).body())
    assert utc_time(props["DTSTART"]) == opens_at.replace(microsecond=0)
    screenshot(page, "end_of_session_1_de")

    # Twenty hours pass: session 1 ended that long ago (the gap stays the guide's).
    with writing(site.app) as session:
        row = session.scalar(select(Session).where(Session.token == token_1))
        row.completed_at = first["completed_at"] - GAP - timedelta(minutes=1)
    token_2 = enter_in(page, site, lab, "lab-desk-1", "de")
    assert token_2 != token_1
    run_by_hand(page, site=site, token=token_2)
    final = page.inner_text("#stage")
    assert de("done_completed_title") in final, final
    # Issue 28: each session has its own code (both gave session 1's).
    assert page.text_content("#completion-code") == codes(site, 2)["completed"] \
        != codes(site)["completed"]
    assert page.locator("#countdown").is_visible()
    screenshot(page, "final_de")
    assert not page.js_errors

    second = session_row(site.app, token_2)
    assert (first["session_number"], second["session_number"]) == (1, 2)
    assert first["subject_id"] == second["subject_id"]
    assert second["available_from"] == first["completed_at"] - timedelta(minutes=1)
    for token in (token_1, token_2):
        data, row = stored(site.app, token), session_row(site.app, token)
        assert data["status"] == row["status"] == "completed"
        assert row["study_version"] == 1
        assert row["device_info"]["consent"]["given"] is True
        assert_every_trial_once(data)
        assert len(data["trials"]) == len(data["schedule"]) == schedule_length()
        blocks = [t["block"] for t in data["trials"]]
        assert sum(b.startswith("practice") for b in blocks) == 2, blocks
    assert_study_stored_as_written(site)


def schedule_length() -> int:
    # 2 practice trials, then one block of 3 clips and its catch trial.
    return 2 + 3 + 1


def assert_study_stored_as_written(site) -> None:
    from webapp.researcher import studies

    with site.app.app_context():
        config = studies.study_config(studies.require_study(SLUG))
    assert config.languages == ("en", "de")
    assert config.texts["de"]["consent"] == CONSENT_DE
    assert config.design.sessions == 2 and config.design.session_gap_hours == 20
    assert (config.design.main_blocks, config.design.practice.n_trials) == (1, 2)
