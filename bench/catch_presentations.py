"""What per-presentation catch videos cost a session's media requests.

    python bench/catch_presentations.py [--sessions 5] [--requests 20]

On the built-in set's shape (320x240, 90 frames at 30 fps: one clip per category of the
synthetic set) and the shipped arrow-of-time design (4 main blocks, 1 catch trial each),
through the Flask test client: the first video request of each session (it makes the
session's catch variants, whichever trial it names), then warm requests of a catch trial's
and a clip trial's video, and the video bytes a session is served against its files' sizes.
Prints medians with ranges and the load average.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness.stored_study import open_study  # noqa: E402
from experiments.catch import catch_specs  # noqa: E402
from experiments.synthetic import synthetic_specs  # noqa: E402
from webapp import create_app  # noqa: E402
from webapp.extensions import db  # noqa: E402
from webapp.participant import sessions  # noqa: E402
from webapp.stimuli import catalog, presentations  # noqa: E402


def _app(folder: Path):
    app = create_app({"TESTING": True, "SECRET_KEY": "bench-not-secret",
                      "INSTANCE_PATH": str(folder / "instance"),
                      "DATABASE_URL": f"sqlite:///{folder / 'bench.db'}",
                      "STIMULUS_ROOT": str(folder / "stimuli"),
                      "NEW_SESSIONS_PER_ADDRESS": "1000000 per second",
                      "NEW_SESSIONS_PER_STUDY": "1000000 per second"})
    with app.app_context():
        db.create_all()
        root = Path(app.config["STIMULUS_ROOT"])
        specs = synthetic_specs(folder / "sources", seed=1, clips_per_category=1,
                                include_sweeps=False)
        catalog.import_clips(specs, "builtin", root, frame_set_sizes=())
        catalog.import_clips(catch_specs(folder / "catch", keys=("f", "j")), "catch", root,
                             frame_set_sizes=())
        open_study(stimulus_set="builtin")
    return app


def _timed(client, url: str) -> float:
    start = time.perf_counter()
    response = client.get(url)
    elapsed = (time.perf_counter() - start) * 1000
    assert response.status_code == 200, (url, response.status_code)
    return elapsed


def _summary(name: str, values: list[float]) -> str:
    return (f"{name:<34} median {statistics.median(values):8.1f} ms  "
            f"range {min(values):.1f}-{max(values):.1f}  (n={len(values)})")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        app = _app(Path(folder))
        client = app.test_client()
        first, catch_warm, clip_warm, n_catch, served, stored = [], [], [], 0, [], []
        for n in range(args.sessions):
            entry = client.get("/p/study", query_string={"participant": f"bench-{n}"})
            token = entry.headers["Location"].rsplit("/", 1)[-1]
            client.post(f"/api/session/{token}/consent", json={"consent": True})
            with app.app_context(), db.engine.connect() as connection:
                schedule = sessions.session_by_token(connection, token).schedule
            catch = [t["trial_index"] for t in schedule if t["trial_type"] == "catch"]
            clip = next(t["trial_index"] for t in schedule if t["trial_type"] != "catch")
            n_catch = len(catch)
            first.append(_timed(client, f"/media/{token}/{clip}"))
            with app.app_context(), db.engine.connect() as connection:
                files, size = presentations.session_videos(
                    connection, sessions.session_by_token(connection, token))
            served.append(size * len(files))
            stored.append(sum(os.path.getsize(path) for path in files.values()))
            for _ in range(args.requests):
                catch_warm.append(_timed(client, f"/media/{token}/{catch[0]}"))
                clip_warm.append(_timed(client, f"/media/{token}/{clip}"))
    print(f"built-in shape 320x240x90, {n_catch} catch trials per session")
    print(_summary("first video request of a session", first))
    print(_summary("warm request, catch trial", catch_warm))
    print(_summary("warm request, clip trial", clip_warm))
    print(f"video bytes per session: served {statistics.median(served):,.0f}, files "
          f"{statistics.median(stored):,.0f} (median; padding +"
          f"{100 * (sum(served) / sum(stored) - 1):.1f}% overall)")
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()), f"({os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
