"""The study page as a lab reviews it: verdicts that say what a session is, fullscreen exits
that count every lost presentation, times in the study's time zone, and every stored trial of
one participant on a page of its own."""
import re
from datetime import datetime, timezone

import pytest

from experiments.designs import DESIGNS, STUDY_CONFIG_KEY
from tests.factories import RESEARCHER_PASSWORD

STARTED = datetime(2030, 1, 15, 23, 30, 5, tzinfo=timezone.utc)


@pytest.fixture
def study(logged_in, factory):
    snapshot = {**DESIGNS["arrow-of-time"].to_dict(),
                STUDY_CONFIG_KEY: {"stimulus_set": "synthetic", "time_zone": "Asia/Tokyo"}}
    study = factory.study(slug="review", design_snapshot=snapshot)
    clip = factory.clip(clip_key="fall-0")
    forward = factory.stimulus(clip, direction="forward")
    factory.session(study, subject_id="P-declined", status="no_consent", started_at=STARTED,
                    last_seen_at=STARTED)
    factory.session(study, subject_id="P-running", status="in_progress")
    kept = factory.session(study, subject_id="P-kept", status="completed")
    # Left fullscreen on two presentations that were offered again, then on the stored one.
    events = [{"presentation": 1, "kind": "fullscreen_exited_timeout"},
              {"presentation": 2, "kind": "fullscreen_exited_answer"}]
    factory.trial(kept, forward, extra={"key": "f", "fullscreen_exited": True,
                                        "technical_events": events})
    factory.trial(kept, forward, extra={"key": "j", "technical_events": events[:1]})
    factory.trial(kept, forward, response="B", correct=False, extra={"key": "<b>j</b>"})
    return study


def _rows(page: str) -> dict[str, str]:
    return dict(re.findall(r"<code>(P-[a-z]+)</code></a></td>(.*?)</tr>", page, flags=re.S))


def test_declined_and_unfinished_sessions_are_not_shown_as_included(logged_in, study):
    rows = _rows(logged_in.get("/researcher/studies/review").get_data(as_text=True))
    verdict = {subject: re.search(r'<td class="verdict">([^<]*)', row).group(1).strip()
               for subject, row in rows.items()}
    assert verdict == {"P-declined": "declined consent", "P-running": "not finished",
                       "P-kept": "included"}


def test_fullscreen_exits_count_the_presentations_offered_again(logged_in, study):
    rows = _rows(logged_in.get("/researcher/studies/review").get_data(as_text=True))
    exits = re.search(r'metric-n_fullscreen_exits" data-value="([^"]*)"', rows["P-kept"])
    assert exits.group(1) == "4.0"  # 2 + 1 re-offered, and the stored presentation's own


def test_a_manually_excluded_row_is_marked_excluded_not_by_its_status(logged_in, study):
    response = logged_in.post("/researcher/studies/review/exclusions", data={
        "participant": "P-kept", "action": "exclude", "reason": "answered at random"})
    assert response.status_code in (302, 303), response.data
    page = logged_in.get("/researcher/studies/review").get_data(as_text=True)
    row = re.search(r'<tr class="([^"]*)" data-participant="P-kept"', page).group(1)
    assert "excluded" in row.split() and not [c for c in row.split() if c.startswith("status-")]
    css = logged_in.get("/static/css/researcher.css").get_data(as_text=True)
    assert re.search(r"tr\.excluded \{ background: #c62828", css)


def test_times_are_shown_in_the_studys_time_zone_beside_utc(logged_in, study):
    rows = _rows(logged_in.get("/researcher/studies/review").get_data(as_text=True))
    assert "2030-01-15 23:30:05 UTC (2030-01-16 08:30 JST)" in rows["P-declined"]


def test_the_participant_view_lists_every_stored_trial(logged_in, study):
    page = logged_in.get("/researcher/studies/review").get_data(as_text=True)
    assert "/researcher/studies/review/trials?participant=P-kept" in page
    view = logged_in.get("/researcher/studies/review/trials?participant=P-kept")
    assert view.status_code == 200
    html = view.get_data(as_text=True)
    table = html[html.index('<table id="participant-trials"'):]
    assert len(re.findall(r"<tr><td", table)) == 3
    keys = re.findall(r'<td class="cell-response_key">([^<]*)</td>', table)
    assert keys == ["f", "j", "&lt;b&gt;j&lt;/b&gt;"]  # the participant's text, escaped


def test_without_a_participant_the_view_lists_them(logged_in, study):
    html = logged_in.get("/researcher/studies/review/trials").get_data(as_text=True)
    listed = html[html.index('id="participant-list"'):]
    assert listed.count("trials?participant=") == 3 and "P-declined" in listed


@pytest.mark.parametrize("query, status", [("?participant=P-nobody", 404),
                                           ("?participant=" + "x" * 201, 400)])
def test_the_participant_view_refuses_what_it_cannot_show(logged_in, study, query, status):
    assert logged_in.get(f"/researcher/studies/review/trials{query}").status_code == status


def test_another_studys_researcher_cannot_see_the_participant_view(client, factory, study):
    factory.study(slug="theirs")
    factory.researcher("eve", role_in={"theirs": "owner"})
    client.post("/auth/logout")
    client.post("/auth/login", data={"username": "eve", "password": RESEARCHER_PASSWORD})
    assert client.get("/researcher/studies/review/trials?participant=P-kept").status_code == 404
