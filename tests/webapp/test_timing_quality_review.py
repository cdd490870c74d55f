"""The timing-quality score where the researcher reads it: participants.csv (documented in the
codebook) and the review table of the study page."""
import csv
import io
import re

import pytest

from webapp.researcher import exports
from webapp.researcher.codebook import CODEBOOK


def pacing(late=0, **extra):
    """What a canvas-presented clip trial stores: 30 frames, ``late`` of them late."""
    return {"key": "f", "onset_time_ms": 1000.0, "frames_total": 30, "frames_shown": 30,
            "frames_late": late, "frames_dropped": 0, "frame0_hold_refreshes": 0,
            "refresh_ms": 16.67, "stalls": 0, **extra}


@pytest.fixture
def timed(factory):
    study = factory.study(slug="timed")
    clip = factory.clip(clip_key="fall-t", categories=["Fall"])
    forward = factory.stimulus(clip, direction="forward")
    frames = factory.stimulus(clip, kind="frame_set", direction=None, frame_indices=[0, 30, 60])
    steady, janked, ordering = (factory.session(study, subject_id=name, status="completed")
                                for name in ("P-steady", "P-janked", "P-ordering"))
    for late in (0, 0):
        factory.trial(steady, forward, onset_method="canvas-element-timing",
                      extra=pacing(late))
    factory.trial(janked, forward, onset_method="canvas-element-timing", extra=pacing(12))
    factory.trial(janked, forward, onset_method="canvas-element-timing",
                  extra=pacing(0, focus_lost=True))
    factory.trial(ordering, frames, trial_type="frame_order", direction=None,
                  correct_response="[1, 2, 3]", response="[1, 2, 3]", extra={"moves": []})
    return study


def test_participants_csv_has_each_sessions_score(app, timed):
    with app.app_context():
        files = exports.build_export("timed")
    rows = {r["subject_id"]: r for r in csv.DictReader(io.StringIO(files["participants.csv"]
                                                                   .decode()))}
    assert float(rows["P-steady"]["timing_quality"]) == 1.0
    # 18 of 30 frames on time, and a trial with focus lost: 18 of 60.
    assert float(rows["P-janked"]["timing_quality"]) == pytest.approx(0.3)
    assert rows["P-ordering"]["timing_quality"] == ""  # no clip: no score
    assert ("participants.csv", "timing_quality") in {(f, c) for f, c, _, _ in CODEBOOK}


def test_the_review_table_shows_the_score(logged_in, timed):
    page = logged_in.get("/researcher/studies/timed").get_data(as_text=True)
    table = page[page.index('<table id="participants"'):]
    assert re.search(r'<th data-sort="number"[^>]*>Timing quality</th>', table)
    cells = dict(re.findall(r'<code>(P-\w+)</code>.*?metric-timing_quality" data-value="([^"]*)"',
                            table, flags=re.S))
    assert float(cells["P-steady"]) == 1.0
    assert float(cells["P-janked"]) == pytest.approx(0.3)
    assert cells["P-ordering"] == ""
