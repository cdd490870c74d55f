"""Hypothesis strategies for request bodies, built from the server's own field declarations.

A case is ``(kind, raw body text, expected error codes)``: a valid body, or one broken in a
known way (an undeclared key, a bool where a number belongs, a non-finite number, a value of
the wrong type, a lone surrogate in a string), or any JSON value at all.  Known breakages
must be answered 400 with the expected code; everything must be answered without a server
error.
"""
import functools
import json
import string

from hypothesis import strategies as st

from experiments.trial_types.base import Field

NONFINITE = "__non_finite__"
NONFINITE_TOKENS = ("NaN", "Infinity", "-Infinity", "1e999", "-1e999")
TEXT = st.text(alphabet=string.ascii_letters + string.digits + " ._-/é", max_size=12)
# Lone UTF-16 surrogates (JSON "\ud800") decode to Python strings that no database can store;
# Hypothesis leaves them out of text unless asked, so half of these characters are surrogates.
SURROGATE = st.characters(categories=["Cs"])
ANY_CHARACTER = st.characters() | SURROGATE
ANY_TEXT = st.text(alphabet=ANY_CHARACTER, max_size=20)
JSON_LEAVES = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
               | st.floats(allow_nan=False, allow_infinity=False) | ANY_TEXT)
ANY_JSON = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(ANY_CHARACTER, max_size=12), inner, max_size=5),
                        max_leaves=12)


# Each strategy below is built once per field (functools.cache): building and validating
# Hypothesis strategies anew for every body took two thirds of the fuzz tests' time.  The
# same strategies draw the same bodies.
@functools.cache
def value_for(spec: Field) -> st.SearchStrategy:
    """Valid values of one declared field."""
    if spec.choices is not None:
        base = st.sampled_from(spec.choices)
    elif spec.kind == "number":
        base = st.floats(spec.minimum, spec.maximum, allow_nan=False, allow_infinity=False)
    elif spec.kind == "int":
        base = st.integers(int(spec.minimum or 0), int(min(spec.maximum or 10**6, 10**6)))
    elif spec.kind == "bool":
        base = st.booleans()
    elif spec.kind == "uuid":
        base = st.uuids().map(str)
    elif spec.kind == "str":
        base = TEXT.map(lambda s: s[: spec.max_length or 12])
    elif spec.kind == "list":
        base = st.lists(value_for(spec.items), max_size=min(spec.max_length or 4, 4))
    else:
        base = body_for(spec.keys)
    return (st.none() | base) if spec.nullable else base


@st.composite
def body_for(draw, fields, fixed=None):
    """A valid body: every required field, some optional ones; ``fixed`` values win."""
    body = {}
    for spec in fields:
        if spec.required or draw(st.booleans()):
            body[spec.name] = draw(value_for(spec))
    body.update(fixed or {})
    return body


def _numeric(fields, body):
    return [f for f in fields if f.kind in ("number", "int") and f.name not in ("trial_index",)]


@functools.cache
def _undeclared_key(declared: frozenset) -> st.SearchStrategy:
    return st.text(ANY_CHARACTER, min_size=1, max_size=12).filter(lambda k: k not in declared)


@functools.cache
def _wrong_type(spec: Field) -> st.SearchStrategy:
    return st.sampled_from(([[1]], {"a": 1}, "x", 1.5, True)).filter(lambda v: not _fits(spec, v))


@st.composite
def cases(draw, fields, fixed=None):
    """(kind, raw JSON text, expected error codes or None) for one endpoint."""
    body = draw(body_for(fields, fixed))
    declared = {f.name for f in fields}
    numeric = _numeric(fields, body)
    text = [f for f in fields if f.kind == "str"]
    kinds = ["valid", "unknown_key", "wrong_type", "any_json"] + \
        (["bool", "non_finite"] if numeric else []) + (["surrogate"] if text else [])
    kind = draw(st.sampled_from(kinds))
    expected = None
    if kind == "unknown_key":
        body[draw(_undeclared_key(frozenset(declared)))] = draw(JSON_LEAVES)
        expected = {"unknown_field"}
    elif kind == "bool":
        body[draw(st.sampled_from(numeric)).name] = draw(st.booleans())
        expected = {"wrong_type"}
    elif kind == "non_finite":
        body[draw(st.sampled_from(numeric)).name] = NONFINITE
        expected = {"non_finite", "wrong_type"}
    elif kind == "wrong_type" and fields:
        spec = draw(st.sampled_from(fields))
        body[spec.name] = draw(_wrong_type(spec))
        expected = {"wrong_type", "invalid_uuid", "out_of_range", "unknown_trial_type",
                    "trial_type_mismatch"}
    elif kind == "surrogate":
        spec = draw(st.sampled_from(text))  # 25 characters at most: within every max_length
        body[spec.name] = draw(TEXT) + draw(SURROGATE) + draw(TEXT)
        expected = {"invalid_string", "unknown_trial_type"}
    elif kind == "any_json":
        body = draw(ANY_JSON)
    raw = json.dumps(body)  # ensure_ascii: a surrogate goes on the wire as "\udXXX"
    if kind == "non_finite":
        raw = raw.replace(json.dumps(NONFINITE), draw(st.sampled_from(NONFINITE_TOKENS)))
    return kind, raw, expected


def _fits(spec: Field, value) -> bool:
    """Whether ``value`` could pass ``spec`` (so it is no wrong-type case)."""
    if spec.kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if spec.kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    return {"bool": bool, "str": str, "uuid": str, "list": list, "object": dict}[spec.kind] is type(value)
