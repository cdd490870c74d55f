"""The study page: participants and their status, accuracy and RT figures, exclusion flow."""
import csv
import io
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from analysis import aot, loading
from analysis import figures as report_figures
from tests.webapp.conftest import minutes_ago
from webapp.researcher import dashboard, exports


@pytest.fixture
def study(factory):
    """Participants in every status; clip A answered well forward, half right backward."""
    study = factory.study(slug="pilot", title="Pilot study")
    clip_a = factory.clip(clip_key="fall-a", categories=["Fall", "Diffusion"])
    clip_b = factory.clip(clip_key="put-b", categories=["Put"])
    a_fwd, a_bwd = (factory.stimulus(clip_a, direction=d) for d in ("forward", "backward"))
    b_fwd = factory.stimulus(clip_b, direction="forward")
    s = {}
    s["started"] = factory.session(study, subject_id="P-started", status="started")
    s["progress"] = factory.session(study, subject_id="P-progress", status="in_progress")
    s["done"] = factory.session(study, subject_id="P-done", status="completed",
                                completed_at=minutes_ago(1))
    s["gone"] = factory.session(study, subject_id="P-gone", status="in_progress",
                                last_seen_at=minutes_ago(60))
    s["catch"] = factory.session(study, subject_id="P-catch", status="failed_attention",
                                 excluded=True, exclusion_reasons=["catch_failed"])
    s["practice"] = factory.session(study, subject_id="P-practice", status="failed_practice",
                                    excluded=True, exclusion_reasons=["practice_gate"])
    factory.session(study, subject_id="gpt-x", kind="model", status="completed")
    for stimulus in (a_fwd, a_fwd, b_fwd):
        factory.trial(s["progress"], stimulus)
    factory.trial(s["done"], a_bwd)
    factory.trial(s["done"], a_bwd, response="F", correct=False, rt_ms=1500.0)
    factory.trial(s["done"], b_fwd, block="practice", response="B", correct=False)  # practice: not counted
    factory.trial(s["done"], b_fwd, trial_type="catch", response="B", correct=False)  # catch: not counted
    factory.trial(s["catch"], b_fwd, response="B", correct=False)  # excluded participant: not counted
    return study


def test_the_participants_table_shows_status_progress_and_last_seen(logged_in, study):
    page = logged_in.get("/researcher/studies/pilot").get_data(as_text=True)
    rows = dict(re.findall(r"<code>(P-[a-z]+)</code>(.*?)</tr>", page, flags=re.S))
    assert set(rows) == {"P-started", "P-progress", "P-done", "P-gone", "P-catch", "P-practice"}
    assert "gpt-x" not in page  # model runs are not participants
    expected = {"P-started": "started", "P-progress": "in progress", "P-done": "completed",
                "P-gone": "abandoned", "P-catch": "failed attention", "P-practice": "failed practice"}
    for subject, status in expected.items():
        assert f">{status}</span>" in rows[subject], subject
    assert "3/8" in rows["P-progress"] and "0/8" in rows["P-started"]
    assert "excluded: catch_failed" in rows["P-catch"]
    assert "excluded: practice_gate" in rows["P-practice"]
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", rows["P-gone"])


def test_a_simulated_session_is_excluded_while_it_runs_too(app, logged_in, factory):
    # The stored flag is set when a session ends; docs/researcher-guide.md: simulated sessions are always excluded.
    study = factory.study(slug="sim")
    factory.trial(factory.session(study, subject_id="P-robot", simulated=True))
    page = logged_in.get("/researcher/studies/sim").get_data(as_text=True)
    row = re.search(r'data-participant="P-robot"\s+data-excluded="(\w+)"(.*?)</tr>', page,
                    flags=re.S)
    assert row.group(1) == "yes" and "excluded: simulated" in row.group(2)
    with app.app_context():
        files = exports.build_export("sim")
    person = next(csv.DictReader(io.StringIO(files["participants.csv"].decode())))
    trial = next(csv.DictReader(io.StringIO(files["trials.csv"].decode())))
    assert (person["excluded"], person["exclusion_reasons"]) == ("True", '["simulated"]')
    assert (trial["excluded"], trial["exclusion_reasons"]) == ("True", '["simulated"]')


def test_abandonment_follows_the_configured_heartbeat_window(app, logged_in, study):
    app.config["ABANDONED_AFTER_MINUTES"] = 120
    page = logged_in.get("/researcher/studies/pilot").get_data(as_text=True)
    assert ">abandoned</span>" not in page


def test_the_exclusion_flow(app, study):
    with app.app_context():
        flow = {step["step"]: step for step in dashboard.study_panel("pilot")["flow"]}
    assert flow["entered"]["n_remaining"] == 6
    assert flow["failed practice gate"]["n_removed"] == 1
    assert flow["excluded: catch_failed"]["n_removed"] == 1
    assert flow["not finished"]["n_removed"] == 3  # started, in progress, abandoned
    assert flow["remaining"]["n_remaining"] == 1


def test_accuracy_per_clip_and_category_counts_only_included_main_trials(app, study):
    """Practice, catch and excluded participants' trials stay out of the figures."""
    with app.app_context():
        figures = dashboard.study_panel("pilot")["figures"]
    per_clip = {(t["name"], x): (y, n) for t in figures["clip_accuracy"]["data"]
                for x, y, n in zip(t["x"], t["y"], t["customdata"])}
    assert per_clip == {("forward", "fall-a"): (1.0, 2), ("forward", "put-b"): (1.0, 1),
                        ("backward", "fall-a"): (0.5, 2)}
    per_category = {(t["name"], x): y for t in figures["category_accuracy"]["data"]
                    for x, y in zip(t["x"], t["y"])}
    # Fall+Diffusion clips count under both categories.
    assert per_category[("backward", "Fall")] == per_category[("backward", "Diffusion")] == 0.5
    assert per_category[("forward", "Put")] == 1.0
    rts = {t["name"]: sorted(t["y"]) for t in figures["rt"]["data"]}
    assert rts["backward / answered B"] == [812.125] and rts["backward / answered F"] == [1500.0]


def _numbers(figure) -> list:
    """Each trace's name, x, y and customdata, as plain lists."""
    return [(trace.name, *(None if getattr(trace, key) is None
                           else np.asarray(getattr(trace, key)).tolist()
                           for key in ("x", "y", "customdata")))
            for trace in go.Figure(figure).data]


def test_the_page_draws_what_the_report_figure_functions_draw(app, study):
    """The page's figures are analysis.figures' functions on analysis tables of the same
    trials, so the live numbers and the report's cannot disagree."""
    with app.app_context():
        panel = dashboard.study_panel("pilot")
        kept = dashboard.counted_trials(dashboard.human_trials("pilot"))
    page = panel["figures"]
    per_clip = aot.aot_metrics(loading.aot_trials(kept), by=["source_clip_id", "direction"])
    assert _numbers(page["clip_accuracy"]) == _numbers(
        report_figures.accuracy_figure(per_clip, "source_clip_id", "Accuracy per clip"))
    per_category = aot.aot_metrics(loading.explode_categories(loading.aot_trials(kept)),
                                   by=["category", "direction"])
    assert _numbers(page["category_accuracy"]) == _numbers(
        report_figures.accuracy_figure(per_category, "category", "Accuracy per category"))
    assert _numbers(page["rt"]) == _numbers(report_figures.rt_figure(kept))
    assert _numbers(page["flow"])[0][2] == [step["n_remaining"] for step in panel["flow"]]


def test_one_abandoned_trial_gets_a_readable_rt_axis(app, factory):
    """One abandoned trial drew an RT axis of 1,805.8-1,806.6 ms beside a funnel of 0 left."""
    study = factory.study(slug="one")
    session = factory.session(study, status="in_progress", last_seen_at=minutes_ago(60))
    factory.trial(session, rt_ms=1806.2)
    with app.app_context():
        figures = dashboard.study_panel("one")["figures"]
    axis = figures["rt"]["layout"]["yaxis"]
    low, high = (10 ** end for end in axis["range"])
    assert axis["type"] == "log" and low < 1806.2 < high and high / low > 2
    assert axis["tickvals"] == [1500, 2000]  # round values either side of the one RT
    flow = figures["flow"]
    assert flow["data"][0]["y"] == [1, 1, 1, 0, 0]  # entered ... not finished, remaining
    assert flow["layout"]["yaxis"]["dtick"] == 1  # whole participants, not ticks of 0.2
    assert figures["clip_accuracy"]["layout"]["yaxis"]["range"] == [0, 1]
    for figure in figures.values():
        go.Figure(figure)


def test_before_any_trial_only_the_participant_flow_is_drawn(app, factory):
    study = factory.study(slug="early")
    factory.session(study, status="started")
    factory.study(slug="empty")
    with app.app_context():
        early = dashboard.study_panel("early")["figures"]
        empty = dashboard.study_panel("empty")["figures"]
    assert early["clip_accuracy"] is early["category_accuracy"] is early["rt"] is None
    assert early["flow"]["data"][0]["y"] == [1, 1, 1, 0, 0]
    assert set(empty.values()) == {None}


def test_the_tables_the_report_registry_marks_live_are_on_the_study_page(app, study):
    """A table's ``live`` in analysis/report/registry.py names what shows it here."""
    from analysis.report import registry

    with app.app_context():
        panel = dashboard.study_panel("pilot")
    live = {table.live for table in registry.TABLES if table.live}
    assert live and live <= {*panel["figures"], *panel}
    assert live - {"participants"} == set(panel["figures"]) == set(dashboard.LIVE_FIGURES)
    assert registry.SDT_BY_PARTICIPANT.live == "participants"  # the table's accuracy column


def test_the_page_draws_the_figures_the_registry_names_live(logged_in, study, monkeypatch):
    """What the page shows comes from the registry when it is read, not a list of its own:
    a table no longer named live takes its figure off the page."""
    from analysis.report import registry

    kept = [t for t in registry.TABLES if t.live != "category_accuracy"]
    monkeypatch.setattr(registry, "TABLES", tuple(kept))
    page = logged_in.get("/researcher/studies/pilot").get_data(as_text=True)
    assert re.findall(r'id="figure-([a-z_]+)"', page) == ["flow", "clip_accuracy", "rt"]


def test_figures_are_valid_plotly_figures(app, study):
    with app.app_context():
        figures = dashboard.study_panel("pilot")["figures"]
    assert set(figures) == {"clip_accuracy", "category_accuracy", "rt", "flow"}
    for name, figure in figures.items():
        go.Figure(figure)  # raises on any property plotly.js would not understand
        assert figure["data"], name


def test_the_page_embeds_the_figures_and_local_plotly(logged_in, study):
    page = logged_in.get("/researcher/studies/pilot").get_data(as_text=True)
    assert page.count('class="plotly-figure"') == 4
    assert re.findall(r'id="figure-([a-z_]+)"', page) == ["flow", "clip_accuracy",
                                                         "category_accuracy", "rt"]
    scripts = re.findall(r'<script src="([^"]+)"', page)
    assert "/researcher/vendor/plotly.min.js" in scripts
    assert all(src.startswith("/") for src in scripts)  # no CDN
    js = logged_in.get("/researcher/vendor/plotly.min.js")
    assert js.status_code == 200 and js.mimetype == "text/javascript"
    assert b"plotly.js" in js.data[:2000]


def test_a_study_without_trials_shows_no_empty_figures(logged_in, factory):
    factory.study(slug="fresh")
    page = logged_in.get("/researcher/studies/fresh").get_data(as_text=True)
    assert "No participants yet" in page and 'class="plotly-figure"' not in page


def test_the_live_panel_is_a_fragment(logged_in, study):
    response = logged_in.get("/researcher/studies/pilot/panel")
    assert response.status_code == 200
    fragment = response.get_data(as_text=True)
    assert 'id="participants"' in fragment and "<html" not in fragment
    assert logged_in.get("/researcher/studies/nope/panel").status_code == 404


def test_participant_ids_are_escaped(logged_in, factory):
    study = factory.study(slug="xss")
    factory.session(study, subject_id="<script>alert(1)</script>")
    page = logged_in.get("/researcher/studies/xss").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_the_study_list_counts_sessions(logged_in, study):
    page = logged_in.get("/researcher/").get_data(as_text=True)
    row = re.search(r"Pilot study</a>.*?</tr>", page, flags=re.S).group(0)
    cells = re.findall(r"<td>(\d+)</td>", row)
    assert cells == ["6", "1"]  # human sessions, completed


def test_frame_ordering_accuracy_is_the_exact_order_rate():
    import pandas as pd

    from analysis.loading import normalize_trials

    trials = normalize_trials(pd.DataFrame({
        "subject_id": ["a", "a", "b"], "subject_kind": "human", "trial_type": "frame_order",
        "direction": None, "source_clip_id": ["c1", "c1", "c2"], "categories": [["Put"]] * 3,
        "correct_response": ["[2, 1, 3]", "[1, 3, 2]", "[1, 2]"],
        "response": ["[2, 1, 3]", "[1, 2, 3]", None], "extra": [{}, {}, {}]}))
    table = dashboard.accuracy_table(trials, "source_clip_id")
    # An unanswered order is an error, as in the report (one non-response policy).
    assert table[["source_clip_id", "direction", "n_trials"]].values.tolist() == [
        ["c1", "frame order", 2], ["c2", "frame order", 1]]
    assert table["accuracy"].tolist() == [0.5, 0.0]
    figure = dashboard.accuracy_figure(trials, "source_clip_id", "Accuracy per clip")
    assert figure["data"][0]["y"] == [0.5, 0.0]
    assert "shapes" not in figure["layout"]  # no 50% chance line for ordering
    go.Figure(figure)


@pytest.fixture
def reviewed(factory):
    """Three finished participants with answered, wrong, timed-out, catch and flagged trials."""
    study = factory.study(slug="review")
    clip = factory.clip(clip_key="fall-r", categories=["Fall"])
    fwd, bwd = (factory.stimulus(clip, direction=d) for d in ("forward", "backward"))
    people = {}
    for n, subject in enumerate(("P-a", "P-b", "P-c")):
        s = people[subject] = factory.session(study, subject_id=subject, status="completed")
        factory.trial(s, fwd, rt_ms=600.0 + 100 * n)
        factory.trial(s, bwd, rt_ms=900.0, extra={"focus_lost": True, "fullscreen_exited": True},
                      dropped_frames=2)
        factory.trial(s, bwd, response="F", correct=False, rt_ms=1200.0 + n)
        factory.trial(s, fwd, response=None, correct=False, rt_ms=None, excluded=True,
                      exclusion_reasons=["timeout"], extra={"timed_out": True})
        factory.trial(s, fwd, trial_type="catch", response="F" if n else "B", correct=bool(n))
    return people


def test_the_participants_table_agrees_with_the_report(app, reviewed):
    """The table's accuracy and median RT are the report's per-participant numbers."""
    from analysis.report.build import build_report
    from webapp.researcher.roster import study_trials

    with app.app_context():
        rows = {r["subject_id"]: r for r in dashboard.study_panel("review")["participants"]}
        report = build_report(study_trials("review"), n_boot=20)
    per = report.tables["sdt_by_participant"].set_index("subject_id")
    for subject, row in rows.items():
        assert row["accuracy"] == pytest.approx(per.loc[subject, "accuracy"])
    assert rows["P-b"]["median_rt_ms"] == 900.0  # 700, 900, 1201: timeouts have no RT
    assert rows["P-a"]["accuracy"] == pytest.approx(2 / 4)  # the timeout counts as an error
    assert (rows["P-a"]["catch_accuracy"], rows["P-b"]["catch_accuracy"]) == (0.0, 1.0)
    assert rows["P-a"]["n_timeouts"] == 1 and rows["P-a"]["n_focus_lost"] == 1
    assert rows["P-a"]["n_fullscreen_exits"] == 1 and rows["P-a"]["n_dropped_frames"] == 2


def test_an_excluded_participant_still_shows_their_numbers(app, factory, reviewed):
    # Excluded by the rules or by hand, the researcher reviewing them needs the numbers most.
    with app.app_context():
        from webapp.extensions import db
        from webapp.models import Session
        session = db.session.get(Session, reviewed["P-a"].id)
        session.excluded, session.exclusion_reasons = True, ["catch_failed"]
        db.session.commit()
        rows = {r["subject_id"]: r for r in dashboard.study_panel("review")["participants"]}
    assert rows["P-a"]["excluded"] and rows["P-a"]["accuracy"] == pytest.approx(0.5)


def test_the_table_has_every_review_column_sortable(logged_in, reviewed):
    page = logged_in.get("/researcher/studies/review").get_data(as_text=True)
    table = page[page.index('<table id="participants"'):]
    headings = re.findall(r'<th data-sort="(\w+)"[^>]*>([^<]+)</th>', table[:table.index("</thead>")])
    assert [h for _, h in headings][6:13] == ["Accuracy", "Catch accuracy", "Median RT", "Timeouts",
                                              "Focus losses", "Fullscreen exits", "Dropped frames"]
    assert 'data-value="0.5"' in table and 'id="participant-filter"' in page
    assert "<script>" not in table  # the CSP allows no inline script: researcher.js sorts


def test_long_clip_labels_are_not_cut_off(app, factory):
    study = factory.study(slug="long-labels")
    key = "a-very-long-source-clip-key-from-an-imported-benchmark-0042"
    stimulus = factory.stimulus(factory.clip(clip_key=key))
    factory.trial(factory.session(study, status="completed"), stimulus)
    with app.app_context():
        figure = dashboard.study_panel("long-labels")["figures"]["clip_accuracy"]
    assert figure["data"][0]["x"] == [key]
    layout = figure["layout"]
    assert layout["xaxis"]["automargin"] is True
    # room for the slanted label: 7.5 px a character at 45 degrees
    assert layout["margin"]["b"] >= len(key) * 7.5 * 0.7
    assert layout["height"] - layout["margin"]["b"] == 360 - 80  # the plot keeps its height
