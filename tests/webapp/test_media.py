from pathlib import Path

import pytest
from sqlalchemy import select

from webapp.extensions import db
from webapp.models import SourceClip, Stimulus
from tests.webapp.participant_study import add_stimulus_set


@pytest.fixture
def stimuli(app):
    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        clip = add_stimulus_set(per_category=1, root=root)[0]
        by_kind = {(s.kind, s.direction, (s.meta or {}).get("n_frames"), (s.meta or {}).get("span")): s
                   for s in clip.stimuli}
        forward = by_kind[("clip", "forward", None, None)]
        frames = by_kind[("frame_set", None, 4, "medium")]
        return {"clip": forward.public_id, "frames": frames.public_id, "root": root,
                "clip_bytes": (root / forward.path).read_bytes()}


def frame_urls(app, public_id, n=4):
    from webapp.stimulus_files import frame_urls as urls

    with app.test_request_context():
        return urls(public_id, list(range(n)))


def test_clip_whole_file(client, stimuli):
    response = client.get(f"/media/{stimuli['clip']}")
    assert response.status_code == 200 and response.data == stimuli["clip_bytes"]
    assert response.mimetype == "video/mp4" and response.headers["Accept-Ranges"] == "bytes"
    assert response.headers["Cache-Control"].startswith("private, max-age=")


def test_range_request_206(client, stimuli):
    response = client.get(f"/media/{stimuli['clip']}", headers={"Range": "bytes=100-199"})
    assert response.status_code == 206 and response.data == stimuli["clip_bytes"][100:200]
    size = len(stimuli["clip_bytes"])
    assert response.headers["Content-Range"] == f"bytes 100-199/{size}"
    tail = client.get(f"/media/{stimuli['clip']}", headers={"Range": "bytes=-10"})
    assert tail.status_code == 206 and tail.data == stimuli["clip_bytes"][-10:]


def test_unsatisfiable_range_416(client, stimuli):
    size = len(stimuli["clip_bytes"])
    response = client.get(f"/media/{stimuli['clip']}", headers={"Range": f"bytes={size + 10}-"})
    assert response.status_code == 416


def test_frames_by_opaque_key(app, client, stimuli):
    urls = frame_urls(app, stimuli["frames"])
    assert len(set(urls)) == 4
    for i, url in enumerate(urls):
        key = url.rsplit("/", 1)[-1]
        assert len(key) == 24 and int(key, 16) >= 0  # an opaque hash, not the frame's position
        response = client.get(url)
        assert response.status_code == 200 and response.data == f"frame {i} of 4".encode()
    assert client.get(f"/media/{stimuli['frames']}/0").status_code == 404
    assert client.get(f"/media/{stimuli['frames']}/{'0' * 24}").status_code == 404
    # a key is bound to its frame set: it does not open another one's frames
    assert client.get(urls[0].replace(stimuli["frames"], stimuli["clip"])).status_code == 404


@pytest.mark.parametrize("path", [
    "/media/..%2F..%2Fetc%2Fpasswd", "/media/%2e%2e/%2e%2e/etc/passwd", "/media/../../etc/passwd",
    "/media/..", "/media/tiny%2Fproceed-0%2Fforward.mp4", "/media/unknown-id",
    "/media/" + "a" * 500,
])
def test_traversal_and_unknown_ids_refused(client, stimuli, path):
    response = client.get(path)
    assert 400 <= response.status_code < 500
    assert b"root:" not in response.data


def test_bad_row_cannot_escape_root(app, client, stimuli, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("do not serve")
    with app.app_context():
        clip = db.session.scalars(select(SourceClip)).first()
        for n, path in enumerate(["../secret.txt", str(secret), "tiny/../../secret.txt"]):
            db.session.add(Stimulus(public_id=f"evil{n}", source_clip_id=clip.id, kind="clip",
                                    direction="forward", path=path, sha256="0" * 64, meta={}))
        db.session.commit()
    for n in range(3):
        response = client.get(f"/media/evil{n}")
        assert response.status_code == 404 and b"do not serve" not in response.data


def test_frame_set_is_not_a_clip_and_missing_file_404(app, client, stimuli):
    assert client.get(f"/media/{stimuli['frames']}").status_code == 404
    with app.app_context():
        path = db.session.scalar(select(Stimulus.path).where(Stimulus.public_id == stimuli["clip"]))
    (stimuli["root"] / path).unlink()
    assert client.get(f"/media/{stimuli['clip']}").status_code == 404
