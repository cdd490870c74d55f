"""The session's task in its GET (webapp/participant/progress.py): the runner's instructions
follow it, since catch trials are presented as clips whatever the task, and it names only
the design's task, never which trials check attention."""
from tests.webapp.test_api import start


def test_a_frame_ordering_session_says_its_task_not_the_clip_task(client, factory):
    factory.stimulus_set("tiny", per_category=2)
    factory.catch_set()
    factory.open_study(design="frame-ordering")
    state = client.get(start(client)).get_json()
    assert state["task"] == "frame_order"
    assert state["attention_checks"] is True
    # Catch trials are still presented as clips, so the trials' types cannot say the task.
    assert "aot" in {t["trial_type"] for t in state["trials"]}


def test_an_arrow_of_time_session_says_its_task(client, factory):
    factory.stimulus_set("tiny", per_category=2)
    factory.catch_set()
    factory.open_study()
    assert client.get(start(client)).get_json()["task"] == "aot"
