"""The session's task in its GET (webapp/participant/progress.py): the runner's instructions
follow it, since catch trials are presented as clips whatever the task, and it names only
the design's task, never which trials check attention."""
from bench.harness.stored_study import add_catch_set, add_stimulus_set, open_study
from tests.webapp.test_api import start


def test_a_frame_ordering_session_says_its_task_not_the_clip_task(app, client):
    with app.app_context():
        add_stimulus_set()
        add_catch_set()
        open_study(design="frame-ordering")
    state = client.get(start(client)).get_json()
    assert state["task"] == "frame_order"
    assert state["attention_checks"] is True
    # Catch trials are still presented as clips, so the trials' types cannot say the task.
    assert "aot" in {t["trial_type"] for t in state["trials"]}


def test_an_arrow_of_time_session_says_its_task(app, client):
    with app.app_context():
        add_stimulus_set()
        add_catch_set()
        open_study()
    assert client.get(start(client)).get_json()["task"] == "aot"
