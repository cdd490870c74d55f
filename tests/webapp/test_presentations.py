"""A script's view of two sessions: every byte the browser may fetch, looked at for answers.

Issue 25: a script with no browser recognised catch trials by the hash of the downloaded catch
video (the same file for every participant) and answered practice from the schedule.  Here two
participants' sessions on real encoded clips are downloaded whole (the session state and every
trial's media), and nothing in them may tell an answer or single out a catch trial's file: no
answer field, one size and one header set for every video of a session, no catch file (nor
any box in one) seen twice, and catch videos of the shape of the session's own clips.
"""
import hashlib
import json
import struct
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select, update

from experiments import catch as catch_module
from experiments import media
from experiments.catch import catch_specs
from tests.factories import Factory, tiny_specs
from tests.webapp.test_adaptive_sessions import _start
from tests.webapp.test_api import answer, run_all, schedule_of
from webapp.extensions import db
from webapp.models import Session
from webapp.stimuli import catalog, presentations
from webapp.stimuli.length_sets import import_length_set

ANSWER_WORDS = ("correct", "preview_answer", "instructed_key", "catch", "direction", "forward",
                "backward", "stimulus_id", "public_id")


# The clips' frames: what a browser counts of them (the server holds the count to the clip).
CLIP_FRAMES = 18


@pytest.fixture
def study(app, tmp_path):
    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        catalog.import_clips(tiny_specs(tmp_path / "clips"), "tiny", root, frame_set_sizes=())
        # as long as the clips (18 frames at 30 fps), as a catch set is made to be
        catalog.import_clips(catch_specs(tmp_path / "catch", fps=10, duration_s=0.6,
                                         keys=("f", "j")), "catch", root, frame_set_sizes=())
    Factory(app).open_study(stimulus_set="tiny", main_blocks=3)
    return app


def test_a_length_sessions_catch_videos_all_last_long_enough_to_show_the_key(app, tmp_path):
    """A length set's cuts are 2 to 18 frames; a catch variant the length of a short cut ended
    before its key showed, and every honest participant failed attention."""
    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        catalog.import_clips(tiny_specs(tmp_path / "clips", per_category=1), "tiny", root,
                             frame_set_sizes=())
        catalog.import_clips(catch_specs(tmp_path / "catch", fps=10, duration_s=0.4,
                                         keys=("f", "j")), "catch", root, frame_set_sizes=())
        import_length_set("tiny", "tiny-len", (2, 4, 6, 12, 18), root, n_practice=1)
    Factory(app).open_study("aot-length-adaptive", stimulus_set="tiny-len", main_blocks=4,
                            adaptive_trials=8)
    least = catch_module.min_frames(4, 10.0, 30.0)  # 0.4 s at the clips' 30 fps
    assert least == 12
    for participant in ("p-1", "p-2"):
        client = app.test_client()
        token, _ = _start(client, participant)
        assert client.get(f"/media/{token}/0").status_code == 200  # makes the session's variants
    variants = catch_files(app)
    assert len(variants) == 8  # 4 blocks x 1 catch trial x 2 sessions
    for name, data in variants.items():
        path = tmp_path / "variant.mp4"
        path.write_bytes(data)
        assert len(media.decode_frames(path)) >= least, name


def boxes(data: bytes) -> list[tuple[bytes, bytes]]:
    """The top-level MP4 boxes of ``data``: (type, whole box)."""
    found, at = [], 0
    while at < len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        found.append((kind, data[at:at + size]))
        at += size
    assert at == len(data)
    return found


def download(client, participant: str) -> tuple[dict, dict[int, bytes], set[str]]:
    """As a script would: the session state, then every trial's video; with the header sets
    of the video answers (Date aside)."""
    entry = client.get("/p/study", query_string={"participant": participant})
    token = entry.headers["Location"].rsplit("/", 1)[-1]
    assert client.post(f"/api/session/{token}/consent", json={"consent": True}).status_code == 200
    state = client.get(f"/api/session/{token}").get_json()
    videos, headers = {}, set()
    for trial in state["trials"]:
        response = client.get(trial["stimulus"]["url"])
        assert response.status_code == 200
        videos[trial["trial_index"]] = response.data
        headers.add(json.dumps(sorted((k, v) for k, v in response.headers.items() if k != "Date")))
    return state | {"token": token}, videos, headers


def scheduled(app, token: str) -> list[dict]:
    with app.app_context():
        return db.session.scalar(select(Session.schedule).where(Session.token == token))


def test_two_sessions_downloaded_whole_show_no_answer_and_no_catch_file(study, tmp_path):
    client = study.test_client()
    catch, real, shapes = [], [], set()
    for participant in ("p-1", "p-2"):
        state, videos, headers = download(client, participant)
        text = json.dumps(state["trials"])
        assert not [word for word in ANSWER_WORDS if word in text]
        assert len(headers) == 1  # one Content-Length, one Content-Type ... for every video
        kinds = {tuple(kind for kind, _ in boxes(data)) for data in videos.values()}
        assert len(kinds) == 1  # the same boxes in the same order, free padding last
        for trial in scheduled(study, state["token"]):
            data = videos[trial["trial_index"]]
            (catch if trial["trial_type"] == "catch" else real).append(data)
            path = tmp_path / f"{participant}-{trial['trial_index']}.mp4"
            path.write_bytes(data)
            info = media.probe(path)
            shape = (info.width, info.height, info.fps, info.frame_count, info.codec)
            if trial["trial_type"] == "catch":
                assert shape in shapes  # a clip's size, rate and length
            else:
                shapes.add(shape)
    assert len(catch) == 6  # 3 blocks x 1 catch trial x 2 sessions
    # No file, and no box but the muxer's fixed ones, repeats between presentations, and none
    # is a clip's: a hash seen once tells nothing the next time.
    hashes = {hashlib.sha256(data).hexdigest() for data in catch}
    assert len(hashes) == len(catch)
    assert not hashes & {hashlib.sha256(data).hexdigest() for data in real}
    for kind in (b"moov", b"mdat"):
        seen = [box for data in catch for k, box in boxes(data) if k == kind]
        assert len(set(seen)) == len(seen) == len(catch), kind
    first_box = {boxes(data)[0][1] for data in catch + real}
    assert len(first_box) == 1  # the ftyp: the same bytes for every video


def test_a_catch_video_is_the_same_bytes_on_every_request_and_range(study):
    client = study.test_client()
    state, videos, _ = download(client, "p-1")
    index = next(t["trial_index"] for t in scheduled(study, state["token"])
                 if t["trial_type"] == "catch")
    url = f"/media/{state['token']}/{index}"
    assert client.get(url).data == videos[index]
    size = len(videos[index])
    for first, last in ((0, 99), (size - 20, size - 1), (100, size - 1)):
        part = client.get(url, headers={"Range": f"bytes={first}-{last}"})
        assert part.status_code == 206 and part.data == videos[index][first:last + 1]


def test_a_renumbered_schedule_never_serves_another_catch_trials_video(study):
    # A failed practice attempt renumbers the trials after it: the catch trial that then holds
    # an index where another catch video was shown gets a video of its own key, not that one.
    client = study.test_client()
    state, videos, _ = download(client, "p-1")
    trials = scheduled(study, state["token"])
    catch = [t for t in trials if t["trial_type"] == "catch"]
    first = next(t for t in catch if t["instructed_key"] != catch[0]["instructed_key"])
    index = catch[0]["trial_index"]
    moved = [dict(t) for t in trials]
    moved[index] = {**first, "trial_index": index, "block": catch[0]["block"]}
    with study.app_context():
        row = db.session.scalars(select(Session).where(Session.token == state["token"])).one()
        row.schedule = moved
        db.session.commit()
    assert client.get(f"/media/{state['token']}/{index}").data != videos[index]


# --- the variants' lifecycle: kept while a session is live, gone once it cannot show them ---

def catch_files(app) -> dict[str, bytes]:
    """Every stored catch variant: its path under the folder -> its bytes."""
    folder = Path(app.config["STIMULUS_ROOT"], presentations.FOLDER)
    return {str(f.relative_to(folder)): f.read_bytes() for f in folder.rglob("*.mp4")}



def catch_indexes(app, token: str) -> list[int]:
    return [t["trial_index"] for t in scheduled(app, token) if t["trial_type"] == "catch"]


def scheduled_status(app, token: str) -> str:
    with app.app_context():
        return db.session.scalar(select(Session.status).where(Session.token == token))


def set_session(app, token: str, **columns) -> None:
    with app.app_context():
        db.session.execute(update(Session).where(Session.token == token).values(**columns))
        db.session.commit()


def test_a_completed_session_keeps_no_catch_video_and_gets_none_made_again(study):
    client = study.test_client()
    state, _, _ = download(client, "p-1")
    assert len(catch_files(study)) == 3
    api = f"/api/session/{state['token']}"
    run_all(client, study, api, total_frames=CLIP_FRAMES)
    assert client.post(f"{api}/complete").status_code == 200
    assert catch_files(study) == {}
    for index in catch_indexes(study, state["token"]):
        assert client.get(f"/media/{state['token']}/{index}").status_code == 404
    assert catch_files(study) == {}


def test_a_failed_practice_keeps_no_catch_video(study):
    client = study.test_client()
    state, _, _ = download(client, "p-1")
    api, answered, passed = f"/api/session/{state['token']}", set(), None
    while passed is not False:  # every attempt answered wrong until the gate ends the session
        trial = next(t for t in schedule_of(study, api)
                     if t["block"] == "practice" and t["trial_index"] not in answered)
        passed = client.post(f"{api}/trials", json=answer(
            trial, False, total_frames=CLIP_FRAMES)).get_json() \
            .get("practice_passed")
        answered.add(trial["trial_index"])
    assert scheduled_status(study, state["token"]) == "failed_practice"
    assert catch_files(study) == {}


def test_the_sweep_keeps_live_sessions_and_removes_the_rest(study, runner):
    client = study.test_client()
    downloads, tokens = {}, {}
    for participant in ("live", "away", "stopped"):
        state, videos, _ = download(client, participant)
        tokens[participant], downloads[state["token"]] = state["token"], videos
    before = catch_files(study)
    assert len(before) == 9  # 3 sessions x 3 catch trials
    away = datetime.now(timezone.utc) - timedelta(
        minutes=study.config["ABANDONED_AFTER_MINUTES"] + 1)
    set_session(study, tokens["away"], last_seen_at=away)
    set_session(study, tokens["stopped"], status="stopped")
    flat = Path(study.config["STIMULUS_ROOT"], presentations.FOLDER, "0" * 64 + ".mp4")
    flat.write_bytes(b"a variant of the flat layout before session folders")

    with study.app_context():  # manage.py's FlaskGroup pushes one; the test runner does not
        result = runner.invoke(args=["stimuli", "sweep-presentations"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert "Removed 3 item(s)" in result.output  # 2 sessions' folders, 1 flat file
    live = catch_files(study)
    assert len(live) == 3 and live.items() <= before.items()  # the live session's, untouched
    assert not flat.exists()
    # A session that comes back after the sweep is shown the same bytes, rendered again.
    served = {}
    for token in (tokens["live"], tokens["away"]):
        for index in catch_indexes(study, token):
            served[token, index] = client.get(f"/media/{token}/{index}").data
    assert served == {(token, index): downloads[token][index] for token, index in served}
    back = catch_files(study)
    assert len(back) == 6 and back.items() <= before.items()
    assert client.get(f"/media/{tokens['stopped']}/{catch_indexes(study, tokens['stopped'])[0]}"
                      ).status_code == 404


def test_a_new_sessions_first_video_sweeps_the_abandoned_ones(study):
    client = study.test_client()
    token = download(client, "away")[0]["token"]
    set_session(study, token, last_seen_at=datetime.now(timezone.utc) - timedelta(days=2))
    away = catch_files(study)
    download(client, "newcomer")
    assert len(catch_files(study)) == 3 and not away.keys() & catch_files(study).keys()
