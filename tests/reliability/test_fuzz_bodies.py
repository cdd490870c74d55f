"""B1, Hypothesis half: thousands of bodies per write endpoint, 0 server errors, and the known
breakages (undeclared keys, bools for numbers, non-finite numbers, wrong types, lone
surrogates in strings) refused with 400 and the right code.  Sent through the app's test client, not HTTP, to stay fast.

How many bodies each endpoint gets follows how many different answers it can give: the
trials endpoint (two trial types, dozens of fields) >= 3,000, the device check (nine fields)
>= 1,000, and consent (one field), heartbeat and complete (none) >= 300.  Each smaller count
reached every answer that 3,000 bodies reached there (every kind of body, status and error
code, and every field an error names; measured with the bodies' kinds and the answers'
status, code and message, FUZZ_BODIES=3000 against the counts here)."""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.trial_types import TRIAL_TYPES
from tests.reliability.bodies import cases
from webapp.participant.api import CONSENT_FIELDS, DEVICE_FIELDS

BODIES = int(__import__("os").environ.get("FUZZ_BODIES", 3000))  # the trials endpoint's
DEVICE_BODIES = BODIES // 3
FIELDLESS_BODIES = BODIES // 10  # consent's one field, and the endpoints with none
SETTINGS = settings(max_examples=BODIES, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
CONTENT_TYPES = st.sampled_from(["application/json", "text/plain", "application/json; charset=utf-8"])


def check(answer, kind, expected):
    assert answer.status_code < 500, (kind, answer.status_code, answer.get_data(as_text=True))
    if answer.status_code >= 400:
        body = answer.get_json()
        assert set(body) >= {"error", "message"}, body
    if expected is not None:
        assert answer.status_code == 400 and answer.get_json()["error"] in expected, \
            (kind, answer.status_code, answer.get_json())


def fuzz(client, url, strategy, examples: int) -> int:
    sent = []

    @settings(SETTINGS, max_examples=examples)
    @given(case=strategy, content_type=CONTENT_TYPES)
    def run(case, content_type):
        kind, text, expected = case
        check(client.post(url, data=text, content_type=content_type), kind, expected)
        sent.append(kind)

    run()
    return len(sent)


@pytest.mark.parametrize("endpoint,fields,examples", [
    ("consent", CONSENT_FIELDS, FIELDLESS_BODIES), ("device", DEVICE_FIELDS, DEVICE_BODIES),
    ("heartbeat", (), FIELDLESS_BODIES), ("complete", (), FIELDLESS_BODIES)])
def test_session_endpoints_survive_fuzzed_bodies(sessions, endpoint, fields, examples):
    api = sessions.new(consent=endpoint != "consent")
    assert fuzz(sessions.client, f"{api}/{endpoint}", cases(fields), examples) >= examples


def test_trials_endpoint_survives_fuzzed_bodies(sessions):
    apis = {"study": sessions.new("study"), "order": sessions.new("order")}
    schedules = {slug: sessions.client.get(api).get_json()["trials"] for slug, api in apis.items()}
    trials = [(slug, t) for slug, schedule in schedules.items() for t in schedule]

    @st.composite
    def trial_cases(draw):
        slug, trial = draw(st.sampled_from(trials))
        fixed = {"trial_index": trial["trial_index"], "trial_type": trial["trial_type"]}
        return slug, draw(cases(TRIAL_TYPES[trial["trial_type"]].FIELDS, fixed))

    sent = []

    @SETTINGS
    @given(case=trial_cases(), content_type=CONTENT_TYPES)
    def run(case, content_type):
        slug, (kind, text, expected) = case
        if expected is not None:
            # A failed practice attempt inserts a new practice block and renumbers the main
            # trials, so an index may since have changed type or left the schedule.
            expected = expected | {"trial_type_mismatch", "unknown_trial"}
        answer = sessions.client.post(f"{apis[slug]}/trials", data=text, content_type=content_type)
        check(answer, kind, expected)
        sent.append(kind)

    run()
    assert len(sent) >= BODIES
    assert {"valid", "unknown_key", "bool", "non_finite", "wrong_type", "any_json",
            "surrogate"} <= set(sent)


def test_oversize_and_non_json_bodies_are_refused_cleanly(sessions):
    api = sessions.new()
    big = sessions.client.post(f"{api}/trials", data="[" + "1," * 200_000 + "1]",
                               content_type="application/json")
    assert big.status_code == 413 and big.get_json()["error"] == "too_large"
    form = sessions.client.post(f"{api}/trials", data="a=1", content_type="application/x-www-form-urlencoded")
    assert form.status_code == 415
    deep = sessions.client.post(f"{api}/trials", data="[" * 50_000 + "]" * 50_000,
                                content_type="application/json")
    assert deep.status_code in (400, 413)
