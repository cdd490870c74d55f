"""Media as a cheating participant sees it: nothing fetched may tell an answer.

Every test here plays a participant holding only their own session token and HTTP: they
read the public schedule, then HEAD and GET every stimulus, send validators back, and look
for anything that differs with the correct answer (a clip's direction, a frame's place in
time, whether a trial is an attention check).
"""
import json
import os
import string
from pathlib import Path

import pytest
from sqlalchemy import select

from webapp.extensions import db
from webapp.models import Session, SourceClip, Stimulus

# Headers whose value may legitimately differ between two stimuli: the file's own size.
SIZE_HEADERS = {"Content-Length", "Content-Range"}
LEAKY_HEADERS = {"ETag", "Last-Modified", "Content-Disposition", "Expires"}


@pytest.fixture
def site(app, factory):
    """An arrow-of-time and a frame-ordering study on stored files whose modification times
    run in time order (frame 0 oldest) and by direction, as a real preparation writes them."""
    root = Path(app.config["STIMULUS_ROOT"])
    factory.stimulus_set("tiny", per_category=2, files=True)
    factory.catch_set(files=True)
    factory.open_study(main_blocks=2)
    factory.open_study(design="frame-ordering", slug="order", main_blocks=1)
    with app.app_context():
        for n, stimulus in enumerate(db.session.scalars(select(Stimulus).order_by(Stimulus.id))):
            folder = root / stimulus.path
            files = sorted(folder.iterdir()) if folder.is_dir() else [folder]
            for k, path in enumerate(files):
                os.utime(path, (1_700_000_000 + 100 * n + k,) * 2)
    return app


def enter(client, slug="study", participant="p-1"):
    location = client.get(f"/p/{slug}", query_string={"participant": participant}).headers["Location"]
    token = location.rsplit("/", 1)[-1]
    client.post(f"/api/session/{token}/consent", json={"consent": True})
    return token, client.get(f"/api/session/{token}").get_json()


def schedule(app, token):
    with app.app_context():
        return db.session.scalar(select(Session.schedule).where(Session.token == token))


def headers_of(response) -> dict:
    return {k: v for k, v in response.headers.items() if k not in SIZE_HEADERS and k != "Date"}


def test_media_headers_never_depend_on_the_answer(site):
    # The red team's attack: HEAD every clip and frame, read ETag / Last-Modified / the file
    # name, and sort frames or tell directions apart by them.
    client = site.test_client()
    token, state = enter(client)
    order_token, order_state = enter(client, "order")
    seen = set()
    for public in state["trials"] + order_state["trials"]:
        stimulus = public["stimulus"]
        for url in [stimulus["url"], *stimulus["frames"]]:
            if url is None:
                continue
            head = client.head(url)
            assert head.status_code == 200, url
            assert not LEAKY_HEADERS & set(head.headers.keys()), (url, dict(head.headers))
            seen.add(json.dumps(sorted(headers_of(head).items())))
    assert len(seen) == 2  # one header set for every clip, one for every frame


def test_validators_sent_back_change_nothing(site):
    # Without validators a conditional request cannot probe a file's age or identity.
    client = site.test_client()
    _, state = enter(client)
    url = state["trials"][0]["stimulus"]["url"]
    whole = client.get(url).data
    for headers in ({"If-Modified-Since": "Tue, 14 Nov 2023 22:13:20 GMT"},
                    {"If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"},
                    {"If-None-Match": "*"}, {"If-None-Match": '"x"'},
                    {"If-Range": "Tue, 14 Nov 2023 22:13:20 GMT", "Range": "bytes=0-9"}):
        response = client.get(url, headers=headers)
        assert response.status_code in (200, 206), headers
        assert whole.startswith(response.data)


def test_urls_name_positions_only_and_differ_between_participants(site):
    client = site.test_client()
    first, state = enter(client, participant="p-1")
    second, other = enter(client, participant="p-2")
    with site.app_context():
        secrets = set(db.session.scalars(select(Stimulus.public_id))) | \
            set(db.session.scalars(select(Stimulus.path)))
    urls = [t["stimulus"]["url"] for t in state["trials"]]
    assert urls == [f"/media/{first}/{t['trial_index']}" for t in state["trials"]]
    assert not {u for u in urls if any(s in u for s in secrets)}
    assert not set(urls) & {t["stimulus"]["url"] for t in other["trials"]}
    # The token is the credential: another participant's URLs are theirs alone.
    assert client.get(f"/media/{'x' * 43}/0").status_code == 404


def test_frame_urls_follow_presented_slots_not_time(site):
    client = site.test_client()
    token, state = enter(client, "order")
    scheduled = {t["trial_index"]: t for t in schedule(site, token)}
    for public in (t for t in state["trials"] if t["trial_type"] == "frame_order"):
        frames = scheduled[public["trial_index"]]["frames"]  # time index at each slot
        urls = public["stimulus"]["frames"]
        assert urls == [f"/media/{token}/{public['trial_index']}/{slot}"
                        for slot in range(len(frames))]
        for slot, url in enumerate(urls):
            assert client.get(url).data == f"frame {frames[slot]} of {len(frames)}".encode()


def test_catch_trials_look_like_every_other_trial(site):
    client = site.test_client()
    token, state = enter(client)
    catch = [t["trial_index"] for t in schedule(site, token) if t["trial_type"] == "catch"]
    assert catch  # the study has attention checks ...
    public = {t["trial_index"]: t for t in state["trials"]}
    assert "catch" not in json.dumps(state["trials"])  # ... and the schedule does not say which
    main = [t for t in state["trials"] if t["block"] != "practice"]
    assert {t["trial_type"] for t in main} == {"aot"}
    # Not even a clip length: every video trial of a study shows the same parameters.
    assert {json.dumps(t["params"], sort_keys=True) for t in main} == \
        {json.dumps(public[catch[0]]["params"], sort_keys=True)}
    assert state["attention_checks"] is True


def test_catch_trials_are_answered_as_arrow_of_time_trials(site):
    client = site.test_client()
    token, state = enter(client)
    api = f"/api/session/{token}"
    keys = {label: key for key, label in state["key_mapping"].items()}
    for trial in schedule(site, token):
        if trial["trial_type"] == "frame_order":
            continue
        body = {"client_uuid": f"00000000-0000-4000-8000-{trial['trial_index']:012d}",
                "trial_index": trial["trial_index"], "rt_ms": 700.0, "timed_out": False,
                "response": trial["correct_response"], "key": keys[trial["correct_response"]],
                "trial_type": trial["trial_type"]}
        if trial["trial_type"] == "catch":  # the name the browser never sees is refused
            assert client.post(f"{api}/trials", json=body).status_code == 400
        body["trial_type"] = "aot"
        assert client.post(f"{api}/trials", json=body).status_code == 201


def test_range_requests(site):
    client = site.test_client()
    _, state = enter(client)
    url = state["trials"][0]["stimulus"]["url"]
    whole = client.get(url)
    size = len(whole.data)
    assert whole.mimetype == "video/mp4" and whole.headers["Accept-Ranges"] == "bytes"
    assert whole.headers["Cache-Control"] == "private, max-age=3600"
    part = client.get(url, headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and part.data == whole.data[100:200]
    assert part.headers["Content-Range"] == f"bytes 100-199/{size}"
    assert client.get(url, headers={"Range": f"bytes={size + 10}-"}).status_code == 416


@pytest.mark.parametrize("suffix", ["/999", "/-1", "/0/0", "/0/99", "/x", "/0/..%2F..%2Fetc%2Fpasswd",
                                    "/..%2F..%2Fetc%2Fpasswd"])
def test_out_of_schedule_and_traversal_refused(site, suffix):
    client = site.test_client()
    token, _ = enter(client)  # trial 0 is a clip: it has no frame slots
    response = client.get(f"/media/{token}{suffix}")
    assert response.status_code == 404 and b"root:" not in response.data


def test_bad_row_cannot_escape_root(site, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not serve")
    client = site.test_client()
    token, _ = enter(client)
    with site.app_context():
        stimulus_id = schedule(site, token)[0]["stimulus_id"]
        for path in ["../secret.txt", str(secret), "tiny/../../secret.txt"]:
            db.session.get(Stimulus, stimulus_id).path = path
            db.session.commit()
            response = client.get(f"/media/{token}/0")
            assert response.status_code == 404 and b"do not serve" not in response.data


def test_missing_file_is_404(site):
    client = site.test_client()
    token, _ = enter(client)
    with site.app_context():
        path = db.session.get(Stimulus, schedule(site, token)[0]["stimulus_id"]).path
        assert db.session.scalar(select(SourceClip.id))
    (Path(site.config["STIMULUS_ROOT"]) / path).unlink()
    assert client.get(f"/media/{token}/0").status_code == 404


def test_catch_videos_cannot_be_told_apart_by_size_or_length(app, tmp_path):
    # The red team read which key a catch video names from its Content-Length (6741 vs 6948
    # bytes in every session) and spotted catch trials by their 2 s length.  Studies choose
    # their keys (issue 15), so every key's video is one size: W's keycap encodes some 40%
    # larger than I's, and whichever two a study uses must not differ.
    from experiments import media
    from experiments.catch import catch_specs
    from webapp.stimuli import catalog

    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        clips = catalog.import_clips(catch_specs(tmp_path / "sources"), "catch", root,
                                     frame_set_sizes=())
        assert sorted(clip.params["instructed_key"] for clip in clips) == \
            sorted(string.ascii_lowercase + string.digits)
        files = [(root / s.path, s) for clip in clips for s in clip.stimuli]
        assert len({path.stat().st_size for path, _ in files}) == 1
        for path, stimulus in files:
            assert stimulus.sha256 == media.sha256_file(path)
            assert stimulus.meta["size_bytes"] == path.stat().st_size
        assert {clip.duration_s for clip in clips} == {3.0}
        assert {media.probe(path).duration_s for path, _ in files} == {3.0}
