"""The OpenAPI description of the participant API, derived from the declared payload fields.

``participant.json`` next to this module is the description kept in the repository and served
at ``GET /api/openapi.json``; :func:`participant_schema` rebuilds it from the trial-type and
API field declarations, and a test checks the two agree, so the file cannot drift from what
the server validates.  Regenerate with ``python -m webapp.openapi``.
"""
from __future__ import annotations

import json
from pathlib import Path

from experiments.trial_types import TRIAL_TYPES, browser_types
from experiments.trial_types.base import OUT_OF_BOUNDS, Field

SCHEMA_FILE = Path(__file__).resolve().parent / "participant.json"
_TYPES = {"number": "number", "int": "integer", "bool": "boolean", "str": "string",
          "uuid": "string", "list": "array", "object": "object"}


def field_schema(spec: Field) -> dict:
    schema: dict = {"type": _TYPES[spec.kind]}
    if spec.kind == "uuid":
        schema["format"] = "uuid"
    if spec.measurement:  # out of its bounds it is accepted, not refused: no min/max here
        schema["description"] = (
            f"a measurement of the browser, plausible within [{spec.minimum}, "
            f"{spec.maximum}]; a value outside is accepted, left out and the trial stored "
            f"as technical (reason {OUT_OF_BOUNDS}), not refused")
    else:
        if spec.minimum is not None:
            schema["minimum"] = spec.minimum
        if spec.maximum is not None:
            schema["maximum"] = spec.maximum
    if spec.choices is not None:
        schema["enum"] = list(spec.choices)
    if spec.max_length is not None:
        schema["maxItems" if spec.kind == "list" else "maxLength"] = spec.max_length
    if spec.kind == "str":
        schema["pattern"] = "^[^\\x00-\\x1f\\x7f]*$"  # control characters are refused
    if spec.items is not None:  # list fields
        schema["items"] = field_schema(spec.items)
    if spec.keys is not None:  # object fields
        schema.update(object_schema(spec.keys))
    if spec.nullable:
        schema["nullable"] = True
    return schema


def object_schema(fields: tuple[Field, ...], **fixed) -> dict:
    properties = {spec.name: field_schema(spec) for spec in fields}
    for name, value in fixed.items():
        properties[name] = {"type": "string", "enum": [value]}
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    required = [spec.name for spec in fields if spec.required]
    if required:
        schema["required"] = required
    return schema


# The reply to a trial POST (webapp.participant.progress.store_trial, feedback.stored_verdict).
TRIAL_REPLY = {
    "type": "object", "required": ["stored", "trial_index"], "additionalProperties": False,
    "properties": {
        "stored": {"type": "boolean", "description": "false: a replay of a stored trial"},
        "duplicate": {"type": "boolean", "enum": [True]},
        "trial_index": {"type": "integer", "minimum": 0},
        "practice_passed": {"type": "boolean", "nullable": True, "description":
                            "after a practice trial: passed, failed (the session ended: "
                            "failed_practice), or null (not decided yet, or another attempt "
                            "is scheduled)"},
        "schedule_changed": {"type": "boolean", "enum": [True],
                             "description": "read the session again: trials were added "
                                            "(a practice attempt) or skipped (an adaptive "
                                            "sweep that stopped early)"},
        "feedback": {"type": "object", "required": ["correct"], "additionalProperties": False,
                     "description": "a practice trial with feedback, once stored",
                     "properties": {"correct": {"type": "boolean",
                                                "description": "whether the stored answer "
                                                               "was right"}}},
    },
}


def _error(description: str) -> dict:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _body(schema: dict, required: bool = True) -> dict:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def _write(summary: str, body: dict | None, ok: dict, **extra_errors) -> dict:
    responses = {**ok, "400": _error("invalid body"), "404": _error("unknown session"),
                 "409": _error("another tab runs the session, or it has ended"),
                 "413": _error("body too large"), "415": _error("not JSON"),
                 "503": _error("database busy: retry after Retry-After seconds"), **extra_errors}
    operation = {"summary": summary, "responses": responses}
    if body is not None:
        operation["requestBody"] = body
    return {"post": operation}


def participant_schema() -> dict:
    """The OpenAPI 3.0 description of the participant API (dict, JSON-serialisable)."""
    from webapp.participant.api import (
        CLAIM_FIELDS,
        CONSENT_FIELDS,
        DEVICE_FIELDS,
        SCREEN_OUT_FIELDS,
        SWITCH_FIELDS,
    )

    trial = {"oneOf": [object_schema(TRIAL_TYPES[name].FIELDS, trial_type=name)
                       for name in browser_types()]}  # read now: never a copy from import
    for variant in trial["oneOf"]:
        variant["required"] = sorted(set(variant["required"]) | {"trial_type"})
    empty = {"type": "object", "additionalProperties": False, "maxProperties": 0}
    json_ok = {"description": "done", "content": {"application/json": {"schema": {"type": "object"}}}}
    trial_reply = {"description": "stored (201) or a replay of a stored trial (200)", "content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/TrialReply"}}}}
    token = {"name": "token", "in": "path", "required": True, "schema": {"type": "string", "maxLength": 64}}
    trial_index = {"name": "trial_index", "in": "path", "required": True,
                   "schema": {"type": "integer", "minimum": 0}}
    range_header = {"name": "Range", "in": "header", "required": False, "schema": {"type": "string"}}
    media_ok = {"200": {"description": "the file"}, "206": {"description": "partial content"},
                "404": _error("no such file"),
                "409": _error("an adaptive trial whose level waits for an earlier answer"),
                "416": _error("range not satisfiable")}
    client = {"name": "client", "in": "query", "required": False,
              "description": "the browser tab's id; writes from a tab other than the one that "
                             "claimed the session last are refused (409 other_tab)",
              "schema": {"type": "string", "maxLength": 64}}
    session_path = "/api/session/{token}"
    paths = {
        session_path: {"parameters": [token], "get": {
            "summary": "The session as the browser sees it (no main-trial answers)",
            "responses": {"200": json_ok, "404": _error("unknown session"),
                          "503": _error("database busy")}}},
        f"{session_path}/consent": {"parameters": [token, client], **_write(
            "Record consent", _body(object_schema(CONSENT_FIELDS)), {"200": json_ok})},
        f"{session_path}/device": {"parameters": [token, client], **_write(
            "Record the device check", _body(object_schema(DEVICE_FIELDS)),
            {"204": {"description": "recorded"}})},
        f"{session_path}/screen-out": {"parameters": [token, client], **_write(
            "End a session whose device check failed (status screened_out, its code)",
            _body(object_schema(SCREEN_OUT_FIELDS)), {"200": json_ok})},
        f"{session_path}/switch": {"parameters": [token, client], **_write(
            "Ask the participant to switch browser or device (before consent): the next "
            "browser entering with the same id continues the session", _body(
                object_schema(SWITCH_FIELDS)), {"200": json_ok})},
        f"{session_path}/trials": {"parameters": [token, client], **_write(
            "Store one trial at most once (replays of a client_uuid answer 200 duplicate)",
            _body(trial), {"200": trial_reply, "201": trial_reply}, **{"409": _error("conflict")})},
        f"{session_path}/claim": {"parameters": [token], **_write(
            "Make this browser tab the one that runs the session (others get 409 other_tab)",
            _body(object_schema(CLAIM_FIELDS)), {"204": {"description": "claimed"}})},
        f"{session_path}/heartbeat": {"parameters": [token, client], **_write(
            "Keep the session alive", _body(empty, required=False),
            {"204": {"description": "recorded"}})},
        f"{session_path}/complete": {"parameters": [token, client], **_write(
            "Finish the session once every trial is stored", _body(empty, required=False),
            {"200": json_ok}, **{"409": _error("missing trials / not started")})},
        f"{session_path}/calendar.ics": {"parameters": [token, {
            "name": "lang", "in": "query", "required": False,
            "description": "the texts' language (else the browser's, else the study's first)",
            "schema": {"type": "string", "maxLength": 16}}], "get": {
            "summary": "The next session's calendar file (RFC 5545, DTSTART in UTC) of a "
                       "completed session whose design has a session after it",
            "responses": {"200": {"description": "the calendar file",
                                  "content": {"text/calendar": {"schema": {"type": "string"}}}},
                          "400": _error("unknown query field"),
                          "404": _error("unknown session, or no next session to come")}}},
        "/media/{token}/{trial_index}": {"parameters": [token, trial_index, range_header], "get": {
            "summary": "The clip of one trial of the session (Range requests supported)",
            "responses": media_ok}},
        "/media/{token}/{trial_index}/{slot}": {"parameters": [token, trial_index, {
            "name": "slot", "in": "path", "required": True,
            "schema": {"type": "integer", "minimum": 0}}, range_header], "get": {
            "summary": "The frame shown in presented slot `slot` of a frame-ordering trial",
            "responses": media_ok}},
    }
    error = {"type": "object", "required": ["error", "message"],
             "properties": {"error": {"type": "string"}, "message": {"type": "string"}}}
    return {"openapi": "3.0.3",
            "info": {"title": "Chronoscope participant API", "version": "1"},
            "paths": paths, "components": {"schemas": {"Error": error, "TrialReply": TRIAL_REPLY}}}


def schema_text() -> str:
    return json.dumps(participant_schema(), indent=1, sort_keys=True) + "\n"
