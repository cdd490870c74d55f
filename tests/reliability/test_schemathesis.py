"""B1, Schemathesis half: >= 1,000 generated cases per write endpoint of the OpenAPI
description served by the app, called in-process through WSGI: 0 server errors, and answers
that conform to the description (status codes, content types).  Positive and negative cases
(schema-violating bodies) are mixed; each case runs against a real, consented session so that
bodies reach validation and storage rather than stopping at an unknown token.

(The schemathesis pytest plugin's lazy fixtures do not work with pytest 9 here, so the
operations' Hypothesis strategies are driven directly.)"""
import itertools

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, status_code_conformance

CASES = 1000
WRITE_ENDPOINTS = ("consent", "device", "trials", "heartbeat", "complete")
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance]


def operation(app, endpoint: str):
    schema = schemathesis.openapi.from_wsgi("/api/openapi.json", app)
    return schema[f"/api/session/{{token}}/{endpoint}"]["POST"]


@pytest.mark.parametrize("endpoint", WRITE_ENDPOINTS)
def test_write_endpoint_never_fails(study, sessions, endpoint):
    post = operation(study, endpoint)
    strategy = st.one_of(post.as_strategy(GenerationMode.POSITIVE),
                         post.as_strategy(GenerationMode.NEGATIVE))
    serial = itertools.count()
    tokens = {}
    statuses = []

    def token() -> str:
        # A fresh consented session every 100 cases, so ended sessions do not dominate.
        block = next(serial) // 100
        if block not in tokens:
            tokens[block] = sessions.new(consent=endpoint != "consent").rsplit("/", 1)[-1]
        return tokens[block]

    @settings(max_examples=CASES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case):
        case.path_parameters = {**(case.path_parameters or {}), "token": token()}
        response = case.call_and_validate(checks=CHECKS)
        statuses.append(response.status_code)

    run()
    assert len(statuses) >= CASES
    assert max(statuses) < 500
