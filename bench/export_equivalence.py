#!/usr/bin/env python
"""Export equivalence check: the same seeded study must export the same files before and
after a refactor (the redesign of 7abe63c and later), apart from deliberate fixes.

    python bench/export_equivalence.py run [--checkout DIR] OUT
        Build a fresh instance of the checkout (SQLite in a temporary instance folder),
        generate the built-in stimuli, open one study per shipped design (``study demo``),
        run a fixed cast of scripted participants through each, and export every study
        (``manage.py export STUDY --out OUT/STUDY``).

    python bench/export_equivalence.py compare OLD_CHECKOUT NEW_CHECKOUT [--out DIR]
        Run both and diff every exported file: CSV column by column, JSON key by key.
        Prints every difference; exits 1 on any difference other than the expected ones
        (EXPECTED below), 0 otherwise.

The checkout is driven only through its command line (``python manage.py ...`` with
cwd=checkout and the checkout on PYTHONPATH), since module paths differ between layouts:

* ``init-db``, ``stimuli generate --seed``, ``study demo`` and ``export`` are plain commands.
* The participants are scripted in PARTICIPANT_SCRIPT, run inside ``manage.py shell``: it uses
  only the shell's ``app`` (Flask's test client against the public participant URLs
  ``/p/<slug>`` and ``/api/session/<token>/...``) and reads each session's schedule from
  the SQLite file with the standard library (the robot "sees" the clip: which key a catch
  video names, the true time order of frames, the clip's direction).  Every answer is drawn
  from ``random.Random("<study>/<participant>/<trial>/<attempt>")``, so no answer depends on
  the order of calls.
* The app draws session seeds (which fix schedule, condition and key mapping), session
  tokens and stimulus public ids from the standard library's ``secrets``, which no CLI
  option seeds.  Each command therefore runs under a launcher (LAUNCHER) that replaces
  ``secrets`` (and ``uuid.uuid4``) with seeded generators before ``manage.py`` is loaded:
  one generator per (function, size), so an extra token drawn elsewhere (a nonce) cannot
  shift the session seeds.  Nothing of the checkout is imported by the launcher.
* What stays random is the wall clock.  Normalised before comparing (each run prints the
  exact list): timestamps (metadata.json exported_at, study.created_at; participants.csv
  started_at, last_seen_at, completed_at, device_info.consent.at, device_info.device_at) to
  "<time>"; metadata.json files.participants.csv, the sha256 of a file holding them, after
  checking it is that file's hash; and a stimuli[].sha256 only when the two mp4s decode to
  identical frames (x264 with 2 threads now and then writes other bytes for the same pixels).
* metadata.json software.git_commit / git_dirty name the checkout: printed as INFO, never
  a failure.  A metadata files.<name> hash that differs only because of the expected change
  counts as expected.

Second sessions of arrow-of-time (20 h after the first) are not run: the clock is real.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # the checkout this file lives in
SECRET_KEY = "export-equivalence-" + "0" * 45  # fixed: completion codes are HMACs under it
STIMULUS_SEED = 20231
CLIPS_PER_CATEGORY = 4
DESIGNS = ("arrow-of-time", "frame-ordering")

LAUNCHER = r"""
import os, random, runpy, secrets, sys, uuid
_seed = os.environ["EQUIV_SEED"]
_streams = {}
def _rng(*key):
    if key not in _streams:
        _streams[key] = random.Random(_seed + "/" + "/".join(map(str, key)))
    return _streams[key]
def _token_bytes(nbytes=None):
    nbytes = 32 if nbytes is None else nbytes
    return _rng("bytes", nbytes).randbytes(nbytes)
secrets.token_bytes = _token_bytes
secrets.randbelow = lambda n: _rng("below", n).randrange(n)
secrets.randbits = lambda k: _rng("bits", k).getrandbits(k)
secrets.choice = lambda seq: _rng("choice", len(seq)).choice(seq)
uuid.uuid4 = lambda: uuid.UUID(int=_rng("uuid4").getrandbits(128), version=4)
random.seed(_seed)
sys.argv = ["manage.py"] + sys.argv[1:]
runpy.run_path("manage.py", run_name="__main__")
"""

# Runs inside `manage.py shell` (the shell gives `app`); reads its settings from the
# environment; prints one line "EQUIV-RESULT <json>" when every participant is done.
PARTICIPANT_SCRIPT = r'''
import json as _json, os as _os, random as _random, sqlite3 as _sqlite3, uuid as _uuid

def _equiv_main():
    slugs = _json.loads(_os.environ["EQUIV_STUDIES"])
    db_path = _os.environ["EQUIV_DB"]
    cast = _json.loads(_os.environ["EQUIV_CAST"])
    client = app.test_client()
    namespace = _uuid.UUID("5f1c2d7e-0000-4000-8000-00000000e9e1")

    def check(response, *ok):
        if response.status_code not in ok:
            raise RuntimeError(f"{response.request.method} {response.request.path}: "
                               f"{response.status_code} {response.get_data(as_text=True)[:300]}")
        return response

    def schedule_of(token):
        with _sqlite3.connect(db_path) as db:
            return _json.loads(db.execute("SELECT schedule FROM session WHERE token = ?",
                                          (token,)).fetchone()[0])

    def true_order(trial, scheduled):
        # labels (presented slots) in true time order; None when it would move a hint
        order = sorted(range(len(scheduled["frames"])), key=lambda label: scheduled["frames"][label])
        initial = trial["params"]["presented_order"]
        if any(order[slot] != initial[slot] for slot in trial["params"]["hint_positions"]):
            return None
        return order

    def moves_between(initial, final, rng, via):
        current, moves, t = list(initial), [], 0.0
        for slot, label in enumerate(final):
            source = current.index(label)
            if source != slot:
                t += round(rng.uniform(400, 2500), 3)
                current.insert(slot, current.pop(source))
                moves.append({"t_ms": t, "from": source, "to": slot, "via": via})
        return moves, t

    def frame_order_payload(trial, scheduled, profile, rng, uid):
        initial = list(trial["params"]["presented_order"])
        hints = set(trial["params"]["hint_positions"])
        if profile == "timeout" and rng.random() < 0.15:
            return {"client_uuid": uid, "trial_index": trial["trial_index"],
                    "trial_type": "frame_order", "rt_ms": None, "timed_out": True,
                    "initial_order": initial, "final_order": initial, "moves": [],
                    "ignored_inputs": []}
        if trial["block"] == "practice":
            # the true order, from the stored schedule (the browser is told no answer)
            right = [label - 1 for label in _json.loads(scheduled["correct_response"])]
            final = right if profile != "fail_practice" else initial
        else:
            final = true_order(trial, scheduled) or list(initial)
            free = [slot for slot in range(len(final)) if slot not in hints]
            accuracy = {"good": 0.6, "inattentive": 0.2}.get(profile, 0.45)
            if rng.random() > accuracy and len(free) >= 2:
                a, b = rng.sample(free, 2)
                final[a], final[b] = final[b], final[a]
        via = rng.choice(["mouse", "keyboard", "touch"])
        moves, t = moves_between(initial, final, rng, via)
        ignored = [{"t_ms": round(rng.uniform(0, 300), 3), "kind": "click"}] \
            if rng.random() < 0.1 else []
        return {"client_uuid": uid, "trial_index": trial["trial_index"],
                "trial_type": "frame_order", "rt_ms": round(t + rng.uniform(800, 3000), 3),
                "timed_out": False, "initial_order": initial, "final_order": final,
                "moves": moves, "ignored_inputs": ignored,
                "focus_lost": rng.random() < 0.05, "fullscreen_exited": False}

    def video_payload(trial, scheduled, profile, rng, uid, key_mapping):
        by_label = {label: key for key, label in key_mapping.items()}
        keys = sorted(key_mapping)
        timed_out = profile == "timeout" and rng.random() < 0.15
        if timed_out:
            key = None
        elif trial["block"] == "practice":
            want = scheduled["correct_response"]
            key = by_label[want] if profile != "fail_practice" else by_label["F" if want == "B" else "B"]
        elif scheduled["trial_type"] == "catch":
            key = scheduled["instructed_key"] if profile != "inattentive" else rng.choice(keys)
        else:
            accuracy = {"good": 0.8, "inattentive": 0.5, "fast": 0.55}.get(profile, 0.65)
            want = scheduled["correct_response"]
            key = by_label[want] if rng.random() < accuracy else rng.choice(keys)
        rt = None if timed_out else round(rng.uniform(120, 280) if profile == "fast"
                                          else rng.uniform(380, 1900), 3)
        onset = round(10000 + trial["trial_index"] * 4000 + rng.uniform(0, 50), 3)
        callbacks = [{"presentedFrames": 1 + i, "mediaTime": round(i / 30, 6),
                      "presentationTime": round(onset + i * 16.667, 3),
                      "expectedDisplayTime": round(onset + i * 16.667 + 16.667, 3)}
                     for i in range(rng.randint(0, 2))]
        total = 90
        dropped = rng.choice([0, 0, 0, 1, 3])
        body = {"client_uuid": uid, "trial_index": trial["trial_index"], "trial_type": trial["trial_type"],
                "rt_ms": rt, "timed_out": timed_out,
                "response": None if key is None else key_mapping[key], "key": key,
                "onset_method": rng.choice(["rvfc", "element_timing", "raf"]),
                "onset_callbacks": callbacks, "onset_time_ms": onset,
                "key_time_ms": None if rt is None else round(onset + rt, 3),
                "dropped_frames": dropped, "total_frames": total,
                "stalls": rng.choice([0, 0, 1]), "stall_ms": round(rng.uniform(0, 40), 3),
                "frames_total": total, "frames_shown": total - dropped,
                "frames_late": rng.choice([0, 1, 2]), "frames_dropped": dropped,
                "frame0_hold_refreshes": rng.choice([1, 2]), "refresh_ms": 16.667,
                "focus_lost": rng.random() < 0.03, "fullscreen_exited": rng.random() < 0.02}
        if body["fullscreen_exited"]:  # the runner stores it once it left fullscreen 3 times
            kind = "fullscreen_exited_" + ("timeout" if timed_out else "answer")
            body["technical_events"] = [{"kind": kind, "presentation": n} for n in (1, 2, 3)]
        return body

    results = {}
    for slug in slugs:
        for participant, profile in cast:
            query = {"participant": participant}
            if profile == "simulated":
                query["simulate"] = "1"
            if profile == "prolific":
                query = {"PROLIFIC_PID": participant, "STUDY_ID": "study-x", "SESSION_ID": "sess-" + participant}
            entry = check(client.get(f"/p/{slug}", query_string=query), 303)
            token = entry.headers["Location"].rstrip("/").rsplit("/", 1)[-1]
            api = f"/api/session/{token}"
            if profile == "no_consent":
                check(client.post(f"{api}/consent", json={"consent": False}), 200)
                results[f"{slug}/{participant}"] = "no_consent"
                continue
            check(client.post(f"{api}/consent", json={"consent": True}), 200)
            rng0 = _random.Random(f"{slug}/{participant}/device")
            check(client.post(f"{api}/device", json={
                "user_agent": f"EquivalenceBot/1.0 ({participant})",
                "screen_w": 1920, "screen_h": 1080, "window_w": rng0.choice([1280, 1600, 1920]),
                "window_h": 1000, "refresh_hz": rng0.choice([60.0, 120.0, None]),
                "device_pixel_ratio": rng0.choice([1.0, 2.0]), "touch": False,
                "video_check_ok": True}), 204)
            tab = "tab-" + participant
            check(client.post(f"{api}/claim", json={"client": tab}), 204)
            check(client.post(f"{api}/heartbeat?client={tab}"), 204)
            stored, limit = 0, 9 if profile == "abandon" else None
            while True:
                state = check(client.get(api), 200).get_json()
                if state["status"] not in ("started", "in_progress"):
                    break
                index = state["next_trial_index"]
                trial = next((t for t in state["trials"] if t["trial_index"] == index), None)
                if trial is None or (limit is not None and stored >= limit):
                    break
                scheduled = next(t for t in schedule_of(token) if t["trial_index"] == index)
                attempt = scheduled.get("practice_attempt", 0)
                rng = _random.Random(f"{slug}/{participant}/{index}/{attempt}")
                uid = str(_uuid.uuid5(namespace, f"{slug}/{participant}/{index}/{attempt}"))
                if trial["trial_type"] == "frame_order":
                    body = frame_order_payload(trial, scheduled, profile, rng, uid)
                else:
                    body = video_payload(trial, scheduled, profile, rng, uid, state["key_mapping"])
                check(client.post(f"{api}/trials?client={tab}", json=body), 201)
                stored += 1
                if profile == "replay" and stored == 3:  # a resent trial is a no-op
                    check(client.post(f"{api}/trials?client={tab}", json=body), 200)
            if limit is None and state["status"] == "in_progress":
                check(client.post(f"{api}/complete?client={tab}"), 200)
            final = check(client.get(api), 200).get_json()["status"]
            results[f"{slug}/{participant}"] = final
    print("EQUIV-RESULT " + _json.dumps(results))

_equiv_main()
'''

# (participant id, behaviour): the same cast in every study.
CAST = [("p01", "good"), ("p02", "good"), ("p03", "replay"), ("p04", "timeout"),
        ("p05", "fail_practice"), ("p06", "no_consent"), ("p07", "inattentive"),
        ("p08", "abandon"), ("p09", "fast"), ("p10", "simulated"), ("P-PROLIFIC-11", "prolific")]

# The one deliberate change: frame-ordering trial rows' direction was "forward", now empty.
EXPECTED = "frame-ordering trial rows: direction 'forward' -> empty"

# Wall-clock values that no CLI option fixes: CSV columns and JSON keys (at any depth, also
# inside JSON-encoded CSV cells) named like TIME, and any ISO-8601 timestamp value.
TIME = re.compile(r"(_at|_time|_utc|^exported|^created|^generated|timestamp)$", re.I)
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?$")
ISO_ANYWHERE = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?")
NORMALISED: set[str] = set()  # filled with "file:column" as they are normalised
# Trial flags computed from the server's receive times against the scripted participants'
# pace, which the machine's load sets (experiments/plausibility.py): dropped from reason lists.
WALL_CLOCK_CODES = frozenset({"posted_early"})


def _env(checkout: Path, instance: Path, seed: str, extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CHRONOSCOPE_", "FLASK_")) and k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(checkout), CHRONOSCOPE_INSTANCE_PATH=str(instance),
               CHRONOSCOPE_SECRET_KEY=SECRET_KEY, CHRONOSCOPE_RATELIMIT_ENABLED="false",
               EQUIV_SEED=seed, PYTHONHASHSEED="0", TZ="UTC")
    env.update(extra or {})
    return env


def manage(checkout: Path, instance: Path, *args: str, stdin: str | None = None,
           extra_env: dict | None = None) -> str:
    """``python manage.py ARGS`` in ``checkout`` under the seeded launcher; its stdout."""
    seed = "equivalence/" + " ".join(args)
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *args], cwd=checkout,
                          env=_env(checkout, instance, seed, extra_env), input=stdin,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"[{checkout}] manage.py {' '.join(args)} failed "
                         f"({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return done.stdout


def study_slugs(listing: str) -> dict[str, str]:
    """{design: slug} from ``study demo`` output: older versions print "<design> <link>" on
    one line, newer ones "<design> (open):" followed by indented links."""
    slugs: dict[str, str] = {}
    design = None
    for line in listing.splitlines():
        parts = line.split()
        if parts and parts[0] in DESIGNS:
            design = parts[0]
        links = [p for p in parts if "/p/" in p]
        if design and links and design not in slugs:
            slugs[design] = links[0].split("/p/", 1)[1].split("?", 1)[0]
    missing = set(DESIGNS) - set(slugs)
    if missing:
        raise SystemExit(f"study demo made no study for {sorted(missing)}:\n{listing}")
    return slugs


def run(checkout: Path, out: Path, keep: bool = False,
        instance: Path | None = None) -> dict:
    """Fill and export one study per design of ``checkout`` into ``out/<design>/``
    (the instance folder is removed afterwards unless ``keep``)."""
    checkout, out = checkout.resolve(), out.resolve()
    instance = instance or Path(tempfile.mkdtemp(prefix="chronoscope-equiv-"))
    try:
        manage(checkout, instance, "init-db")
        manage(checkout, instance, "stimuli", "generate", "--seed", str(STIMULUS_SEED),
               "--clips-per-category", str(CLIPS_PER_CATEGORY))
        slugs = study_slugs(manage(checkout, instance, "study", "demo"))
        script = instance / "participants.py"
        script.write_text(PARTICIPANT_SCRIPT)
        shell = manage(checkout, instance, "shell",
                       stdin=f"exec(compile(open({str(script)!r}).read(), 'participants', 'exec'))\n",
                       extra_env={"EQUIV_STUDIES": json.dumps([slugs[d] for d in DESIGNS]),
                                  "EQUIV_DB": str(instance / "chronoscope.db"),
                                  "EQUIV_CAST": json.dumps(CAST),
                                  "CHRONOSCOPE_DEVELOPMENT": "true"})  # for ?simulate=1
        found = [line for line in shell.splitlines() if "EQUIV-RESULT " in line]
        if not found:
            raise SystemExit(f"[{checkout}] the scripted participants failed:\n{shell[-8000:]}")
        outcomes = json.loads(found[-1].split("EQUIV-RESULT ", 1)[1])
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for design in DESIGNS:
            manage(checkout, instance, "export", slugs[design], "--out", str(out / design))
        (out / "outcomes.json").write_text(json.dumps(outcomes, indent=1, sort_keys=True) + "\n")
        return outcomes
    finally:
        if keep:
            pass  # the caller removes it
        else:
            shutil.rmtree(instance, ignore_errors=True)


# --- comparison -----------------------------------------------------------------------------

def _normalise(name: str, value, where: str):
    """``value`` with wall-clock content replaced (and ``where`` recorded in NORMALISED)."""
    if value in (None, ""):
        return value
    if TIME.search(name) or (isinstance(value, str) and ISO.match(value)):
        NORMALISED.add(where)
        return "<time>"
    return value


def _is_expected(file: str, row_type: str | None, column: str, old, new) -> bool:
    return (file.startswith("frame-ordering/trials.") and column == "direction"
            and row_type in ("frame_order", None) and old == "forward" and new in ("", None))


# Differ between two checkouts by construction: which software wrote the export.
PROVENANCE = ("$.software.git_commit", "$.software.git_dirty")


class Report:
    def __init__(self):
        self.unexpected, self.expected, self.info = [], {}, []
        self.unexpected_files: set[str] = set()

    def diff(self, file, where, old, new, row_type=None, column=None):
        if column is not None and _is_expected(file, row_type, column, old, new):
            self.expected[file] = self.expected.get(file, 0) + 1
            return
        if file.endswith("metadata.json") and where in PROVENANCE:
            self.info.append(f"{file}: {where}: {old!r} -> {new!r}")
            return
        if file.endswith("metadata.json") and where.startswith("$.files."):
            # the hash of an exported file: follows from that file's own comparison
            exported = f"{Path(file).parent.as_posix()}/{where[len('$.files.'):]}"
            if exported not in self.unexpected_files:
                key = f"{file} ($.files hashes of files whose only changes are expected)"
                self.expected[key] = self.expected.get(key, 0) + 1
                return
            where += f" (follows from the differences in {exported})"
        self.unexpected_files.add(file)
        self.unexpected.append(f"{file}: {where}: {old!r} -> {new!r}")


def compare_csv(file: str, old_text: str, new_text: str, report: Report) -> None:
    old_rows = list(csv.DictReader(io.StringIO(old_text)))
    new_rows = list(csv.DictReader(io.StringIO(new_text)))
    old_cols = next(csv.reader(io.StringIO(old_text)), [])
    new_cols = next(csv.reader(io.StringIO(new_text)), [])
    if old_cols != new_cols:
        for col in old_cols:
            if col not in new_cols:
                report.diff(file, f"column {col!r}", "present", "missing")
        for col in new_cols:
            if col not in old_cols:
                report.diff(file, f"column {col!r}", "missing", "present")
        if [c for c in old_cols if c in new_cols] != [c for c in new_cols if c in old_cols]:
            report.diff(file, "column order", old_cols, new_cols)
    if len(old_rows) != len(new_rows):
        report.diff(file, "row count", len(old_rows), len(new_rows))
    for i, (old, new) in enumerate(zip(old_rows, new_rows), start=2):
        row_type = old.get("trial_type")
        for col in old_cols:
            if col not in new:
                continue
            a, b = _json_cell(old[col]), _json_cell(new[col])
            if isinstance(a, (dict, list)) and isinstance(b, (dict, list)):
                # a JSON-encoded cell (extra, condition, device_info, ...): key by key
                compare_json(f"{file}", a, b, report, f"line {i} column {col!r} $", row_type,
                             tag=f"{file}:{col}")
                continue
            a = _normalise(col, old[col], f"{file}:{col}")
            b = _normalise(col, new[col], f"{file}:{col}")
            if a != b:
                report.diff(file, f"line {i} column {col!r}", old[col], new[col], row_type, col)


def _json_cell(text: str):
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def compare_json(file: str, old, new, report: Report, path: str = "$",
                 row_type: str | None = None, tag: str | None = None) -> None:
    tag = tag or file
    if isinstance(old, dict) and isinstance(new, dict):
        row_type = old.get("trial_type", row_type) if isinstance(old.get("trial_type"), str) \
            else row_type
        for key in old.keys() | new.keys():
            where = f"{path}.{key}"
            if key not in new:
                report.diff(file, where, old[key], "<missing>")
            elif key not in old:
                report.diff(file, where, "<missing>", new[key])
            elif isinstance(old[key], (dict, list)) or isinstance(new[key], (dict, list)):
                compare_json(file, old[key], new[key], report, where, row_type, tag)
            else:
                field = re.sub(r"\[\d+\]", "[]", where.split("$", 1)[-1])
                a = _normalise(key, old[key], f"{tag}:${field}")
                b = _normalise(key, new[key], f"{tag}:${field}")
                if a != b:
                    report.diff(file, where, old[key], new[key], row_type, key)
    elif isinstance(old, list) and isinstance(new, list):
        if WALL_CLOCK_CODES & {code for code in old + new if isinstance(code, str)}:
            NORMALISED.add(f"{tag}:{WALL_CLOCK_CODES}")
            old, new = ([c for c in codes if c not in WALL_CLOCK_CODES] for codes in (old, new))
        if len(old) != len(new):
            report.diff(file, f"{path} length", len(old), len(new))
        for i, (a, b) in enumerate(zip(old, new)):
            compare_json(file, a, b, report, f"{path}[{i}]", row_type, tag)
    elif old != new:
        report.diff(file, path, old, new)


def _sha256(path: Path) -> str | None:
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _same_pixels(a: Path, b: Path) -> bool:
    """Whether two videos decode to the same frames (PyAV, a dependency of the app)."""
    import av
    import numpy as np

    def frames(path):
        with av.open(str(path)) as container:
            return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    fa, fb = frames(a), frames(b)
    return len(fa) == len(fb) and all(np.array_equal(x, y) for x, y in zip(fa, fb))


def check_metadata_hashes(file: str, old_dir: Path, new_dir: Path, old: dict, new: dict,
                          media: tuple[Path, Path] | None) -> None:
    """Replace, in place, the two kinds of sha256 in metadata.json that differ for reasons
    no CLI option controls, once shown harmless:

    * ``files.<name>``: the hash of an exported file that holds wall-clock timestamps
      (participants.csv); kept when it hashes the file next to it, then set to "<sha256>".
    * ``stimuli[].sha256``: the bytes of a generated mp4.  x264 runs with 2 threads and does
      not always write the same bytes for the same pixels; a pair that decodes to the same
      frames is set to "<same pixels>".  (Needs the two instances' stimulus folders.)
    """
    study_dir = Path(file).parent.as_posix()
    for side, data, root in (("old", old, old_dir), ("new", new, new_dir)):
        for name, digest in list((data.get("files") or {}).items()):
            if not isinstance(digest, str):
                continue
            actual = _sha256(root / study_dir / name)
            if actual != digest:
                raise SystemExit(f"{side}/{file}: files.{name} is not the file's sha256")
    for name in (old.get("files") or {}):
        a, b = old["files"].get(name), (new.get("files") or {}).get(name)
        if a != b and name in (new.get("files") or {}):
            text_a = (old_dir / study_dir / name).read_text(encoding="utf-8")
            text_b = (new_dir / study_dir / name).read_text(encoding="utf-8")
            # its content is compared (timestamps normalised) on its own
            if ISO_ANYWHERE.search(text_a) or ISO_ANYWHERE.search(text_b):
                old["files"][name] = new["files"][name] = "<sha256>"
                NORMALISED.add(f"{file}:$.files.{name} (hash of a file with timestamps)")
    if media is None:
        return
    for a, b in zip(old.get("stimuli") or [], new.get("stimuli") or []):
        if not (isinstance(a, dict) and isinstance(b, dict)) or a.get("sha256") == b.get("sha256"):
            continue
        if a.get("path") != b.get("path") or not a.get("path"):
            continue
        pa, pb = media[0] / a["path"], media[1] / b["path"]
        if pa.is_file() and pb.is_file() and _same_pixels(pa, pb):
            NORMALISED.add(f"{file}:$.stimuli[].sha256 of {a['path']} (same pixels, other bytes)")
            a["sha256"] = b["sha256"] = "<same pixels>"


def compare_dirs(old_dir: Path, new_dir: Path,
                 media: tuple[Path, Path] | None = None) -> Report:
    report = Report()
    old_files = {p.relative_to(old_dir).as_posix() for p in old_dir.rglob("*") if p.is_file()}
    new_files = {p.relative_to(new_dir).as_posix() for p in new_dir.rglob("*") if p.is_file()}
    for file in sorted(old_files - new_files):
        report.diff(file, "file", "present", "missing")
    for file in sorted(new_files - old_files):
        report.diff(file, "file", "missing", "present")
    # metadata.json last: it holds the hashes of the other files
    for file in sorted(old_files & new_files, key=lambda f: (f.endswith("metadata.json"), f)):
        old_text = (old_dir / file).read_text(encoding="utf-8")
        new_text = (new_dir / file).read_text(encoding="utf-8")
        if file.endswith(".csv"):
            compare_csv(file, old_text, new_text, report)
        elif file.endswith(".json"):
            old_json, new_json = json.loads(old_text), json.loads(new_text)
            if file.endswith("metadata.json") and isinstance(old_json, dict) \
                    and isinstance(new_json, dict):
                check_metadata_hashes(file, old_dir, new_dir, old_json, new_json, media)
            compare_json(file, old_json, new_json, report)
        else:
            if ISO_ANYWHERE.search(old_text) or ISO_ANYWHERE.search(new_text):
                NORMALISED.add(f"{file}:(timestamps in the text)")
            old_text = ISO_ANYWHERE.sub("<time>", old_text)
            new_text = ISO_ANYWHERE.sub("<time>", new_text)
            if old_text == new_text:
                continue
            import difflib
            for line in difflib.unified_diff(old_text.splitlines(), new_text.splitlines(),
                                             "old/" + file, "new/" + file, lineterm="", n=0):
                if not line.startswith(("---", "+++", "@@")):
                    report.unexpected.append(f"{file}: {line}")
                    report.unexpected_files.add(file)
    return report


def compare(old: Path, new: Path, out: Path) -> int:
    instances = []
    try:
        for name, checkout in (("old", old), ("new", new)):
            print(f"== {name}: {checkout}", flush=True)
            instances.append(Path(tempfile.mkdtemp(prefix=f"chronoscope-equiv-{name}-")))
            outcomes = run(checkout, out / name, keep=True, instance=instances[-1])
            print("   sessions: " + ", ".join(f"{k}={v}" for k, v in sorted(outcomes.items())),
                  flush=True)
        report = compare_dirs(out / "old", out / "new",
                              media=(instances[0] / "stimuli", instances[1] / "stimuli"))
    finally:
        for instance in instances:
            shutil.rmtree(instance, ignore_errors=True)
    print(f"== exports in {out}/old and {out}/new")
    print("normalised (wall clock; no CLI option seeds it): "
          + (", ".join(sorted(NORMALISED)) or "nothing"))
    for line in report.info:
        print("INFO (differs by construction between two checkouts) " + line)
    for file, count in sorted(report.expected.items()):
        print(f"EXPECTED {file}: {count} x" + ("" if "$.files" in file else f" ({EXPECTED})"))
    for line in report.unexpected:
        print("DIFF " + line)
    if report.unexpected:
        print(f"FAIL: {len(report.unexpected)} unexpected difference(s)")
        return 1
    print("OK: no unexpected differences" + (" (expected change seen)" if report.expected
                                              else " (expected change not seen)"))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("run", help="fill and export one checkout's studies")
    one.add_argument("out", type=Path)
    one.add_argument("--checkout", type=Path, default=HERE)
    one.add_argument("--keep-instance", action="store_true")
    both = commands.add_parser("compare", help="run two checkouts and diff their exports")
    both.add_argument("old", type=Path)
    both.add_argument("new", type=Path)
    both.add_argument("--out", type=Path, default=None,
                      help="where to keep both exports (default: a temporary folder)")
    args = parser.parse_args(argv)
    if args.command == "run":
        instance = Path(tempfile.mkdtemp(prefix="chronoscope-equiv-"))
        outcomes = run(args.checkout, args.out, args.keep_instance, instance)
        if args.keep_instance:
            print(f"instance kept at {instance}")
        print(json.dumps(outcomes, indent=1, sort_keys=True))
        print(f"exports written to {args.out}")
        return 0
    out = args.out or Path(tempfile.mkdtemp(prefix="export-equivalence-"))
    return compare(args.old.resolve(), args.new.resolve(), out)


if __name__ == "__main__":
    sys.exit(main())
