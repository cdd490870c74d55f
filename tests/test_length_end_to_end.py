"""Issue 31's clip-length path, as a researcher runs it: cut a stored set into a length set,
create the shipped aot-length-adaptive study on it, people take adaptive sessions, the motion
observer answers every cut (design_trials), and the report puts people's and the observer's
length thresholds side by side."""
import re
from pathlib import Path

import pandas as pd
import pytest

from experiments.adaptive_schedule import KEY
from experiments.catch import catch_specs
from tests.factories import tiny_specs
from tests.test_tra_end_to_end import _cli
from tests.webapp.test_adaptive_sessions import TAB, Participant, _schedule, _start
from webapp.stimuli import catalog

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("person_pace")]
SHIPPED = Path(__file__).parents[1] / "experiments" / "studies" / "aot-length-adaptive.toml"
LEVELS = "4,6,9,12,15,18"  # the motion observer needs 4 frames
PEOPLE = 3


class LengthPerson(Participant):
    """Right more often the more frames a cut shows (threshold 9 frames), 50% at 4."""

    def body(self, index):
        answer = super().body(index)
        trial = self.client.get(self.api).get_json()
        scheduled = _schedule(self.app, self.token)[index]
        if KEY in scheduled:
            level = scheduled[KEY]["level"]
            right = self.rng.random() < 0.5 + 0.5 * min(1.0, max(0.0, (level - 4) / 10))
            label = scheduled["correct_response"] if right else \
                {"F": "B", "B": "F"}[scheduled["correct_response"]]
            key = next(k for k, v in trial["key_mapping"].items() if v == label)
            answer.update(response=label, key=key)
        return answer


def _study_file(folder: Path) -> Path:
    text = SHIPPED.read_text("utf-8")
    for key, value in {"stimulus_set": '"tiny-len"', "adaptive_trials": "16", "count": "1",
                       "trials": "0"}.items():
        text = re.sub(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M)
    path = folder / "length.toml"
    path.write_text(text, "utf-8")
    return path


def test_cut_study_people_motion_observer_and_report(app, runner, tmp_path):
    root = Path(app.config["STIMULUS_ROOT"])
    with app.app_context():
        catalog.import_clips(tiny_specs(tmp_path, per_category=1), "tiny", root,
                             frame_set_sizes=())
        catalog.import_clips(catch_specs(tmp_path / "catch", keys=("f", "j")), "catch", root,
                             frame_set_sizes=())
    _cli(app, runner, "stimuli", "lengths", "--from", "tiny", "--set", "tiny-len",
         "--levels", LEVELS, "--practice", "2")
    _cli(app, runner, "study", "create", "study", "--from", str(_study_file(tmp_path)))
    _cli(app, runner, "study", "open", "study")
    for i in range(PEOPLE):
        client = app.test_client()  # a browser each
        token, api = _start(client, f"person-{i}")
        LengthPerson(app, client, token, api, seed=i).run()
        done = client.post(f"{api}/complete?client={TAB}")
        assert done.status_code == 200 and done.get_json()["status"] == "completed"
    out = _cli(app, runner, "run-models", "--backend", "motion", "--model", "motion-energy",
               "--study", "study", "--fps", "30", "--no-progress")
    assert "48 trials (0 cached, 48 computed, 0 errors" in out  # 4 clips x 6 lengths x 2
    _cli(app, runner, "report", "study", "--out", str(tmp_path / "report"), "--n-boot", "20")
    tables = tmp_path / "report" / "tables"
    fits = pd.read_csv(tables / "length_thresholds.csv")
    assert set(fits["observer_kind"]) == {"people", "vlm"}
    assert (fits["subject_id"] == "pooled").sum() == 1
    assert len(fits[(fits["observer_kind"] == "people") & (fits["subject_id"] != "pooled")]) \
        == PEOPLE
    sequence = pd.read_csv(tables / "length_sequence.csv")
    assert len(sequence) == PEOPLE * 16 and set(sequence["level"]) <= {4, 6, 9, 12, 15, 18}
    html = (tmp_path / "report" / "report.html").read_text("utf-8")
    assert "Arrow of time by clip length" in html
    assert not (tables / "tra_sweep_fits.csv").exists()
