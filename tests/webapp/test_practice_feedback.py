"""Practice feedback comes after the answer is stored: the browser is never sent an answer
(issue 25: a script answered practice from the schedule's ``correct_response``)."""
import json

import pytest

from tests.webapp.test_api import answer, schedule_of, start


@pytest.fixture
def study(factory):
    factory.aot_study()
    factory.open_study(design="frame-ordering", slug="order", main_blocks=1)


@pytest.mark.parametrize("slug", ["study", "order"])
def test_the_reply_to_a_stored_practice_trial_tells_whether_it_was_right(app, client, study,
                                                                         slug):
    api = start(client, slug=slug)
    scheduled = schedule_of(app, api)
    practice = [t for t in scheduled if t["block"] == "practice"]
    for trial, right in zip(practice, [True, False] * len(practice)):
        reply = client.post(f"{api}/trials", json=answer(trial, correct=right))
        assert reply.status_code == 201
        assert reply.json["feedback"] == {"correct": right}, trial["trial_index"]


def test_no_verdict_before_storing_and_none_for_main_trials(app, client, study):
    api = start(client)
    scheduled = schedule_of(app, api)
    first = next(t for t in scheduled if t["block"] == "practice")
    refused = client.post(f"{api}/trials", json=answer(first, rt_ms="fast"))
    assert refused.status_code == 400 and "feedback" not in refused.json
    for trial in scheduled:
        reply = client.post(f"{api}/trials", json=answer(trial))
        assert reply.status_code == 201
        assert ("feedback" in reply.json) is (trial["block"] == "practice")


def test_no_practice_trial_is_sent_its_answer(app, client, study):
    for slug in ("study", "order"):
        state = client.get(start(client, participant=f"p-{slug}", slug=slug)).json
        practice = [t for t in state["trials"] if t["block"] == "practice"]
        assert practice and all(t["params"]["feedback"] is True for t in practice)
        for trial in practice:
            text = json.dumps(trial)
            assert "correct" not in text and "preview_answer" not in text, text


def test_every_trial_reply_is_as_the_openapi_description_documents_it(app, client, study):
    import schemathesis
    from schemathesis.openapi.checks import JsonSchemaError

    trials = schemathesis.openapi.from_wsgi("/api/openapi.json", app)[
        "/api/session/{token}/trials"]["POST"]
    api = start(client)
    practice = [t for t in schedule_of(app, api) if t["block"] == "practice"]
    payloads = [answer(t, correct=False) for t in practice]
    replies = [client.post(f"{api}/trials", json=payload) for payload in payloads]
    replies.append(client.post(f"{api}/trials", json=payloads[0]))  # a replay
    assert [r.status_code for r in replies] == [201] * len(practice) + [200]
    assert replies[-2].json["practice_passed"] is None and replies[-1].json["duplicate"]
    for reply in replies:
        trials.validate_response(reply)
    # Every field is documented: one more would not be.
    reply = replies[0]
    reply.set_data(json.dumps({**reply.json, "correct_response": "F"}))
    with pytest.raises(JsonSchemaError, match="correct_response"):
        trials.validate_response(reply)
