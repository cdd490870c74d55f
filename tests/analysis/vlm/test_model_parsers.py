"""Every parser case: answers taken, decorations stripped, and unparseable text never guessed."""
import pytest

from analysis.vlm.parsers import (
    PARSE_OK,
    PARSE_UNPARSEABLE,
    parse_arrow_of_time,
    parse_choice,
    parse_frame_order,
)


@pytest.mark.parametrize("text, expected", [
    ("F", "F"),
    ("B", "B"),
    ("  B\n", "B"),
    ("B.", "B"),
    ("**F**", "F"),
    ("Answer: F", "F"),
    ("(B)", "B"),
    ("'F'", "F"),
    ("\\boxed{B}", "B"),
    # JSON and key-value answers, with or without a space after the colon.
    ('{"answer": "F"}', "F"),
    ('{"answer":"F"}', "F"),
    ("Answer:B", "B"),
    ("answer=B", "B"),
    # LaTeX and markdown wrappings models end with (QVQ: "**Final Answer**" then \[ \boxed{B} \]).
    ("**Final Answer**\n\n\\[ \\boxed{B} \\]", "B"),
    ("$\\boxed{F}$", "F"),
    ("\\boxed{\\text{B}}", "B"),
    ('```json\n{"answer": "B"}\n```', "B"),
    # A JSON object answers with its answer field, whatever follows it.
    ('{"answer":"F","confidence":"high"}', "F"),
    ('{"Answer": "B", "reason": {"cue": "splash"}}', "B"),
    ('The splash shrinks.\n```json\n{"answer": "B", "confidence": 0.9}\n```', "B"),
    # AoT-PsyPhyBENCH Figure 2/3 traces end with the label on its own line.
    ("Observation: the splash shrinks.\nConclusion: it is played backward.\nB", "B"),
    ("Since the splash starts large, this video is being played backward.\n\nB  ", "B"),
])
def test_arrow_of_time_answers(text, expected):
    parsed = parse_arrow_of_time(text)
    assert (parsed.response, parsed.status) == (expected, PARSE_OK)


@pytest.mark.parametrize("text", [
    None, "", "   \n ", "forward", "Backward.", "The video is played forward.",
    "f", "b",  # lowercase letters are words, not labels
    "F or B",  # an echo of the instruction names both labels
    "Answer F or B only.", "F/B", "FB", "I think F but maybe B\nunsure",
    "Final answer: B (backward)",  # strict: the last token is not a label
    '{"answer":"F or B"}', '{"answer":"forward"}', "Answer:",
    '{"answer": "F", "answer": "B"}', '{"answer": "F", "Answer": "F"}', '{"answer": ["F"]}',
    '{"answer": null, "confidence": "F"}', '{"answer":"b","confidence":"high"}',
])
def test_arrow_of_time_unparseable(text):
    parsed = parse_arrow_of_time(text)
    assert parsed.response is None
    assert parsed.status == PARSE_UNPARSEABLE
    assert parsed.detail


def test_choice_labels_are_respected():
    assert parse_choice("A", ("A", "B")).response == "A"
    assert parse_choice("F", ("A", "B")).status == PARSE_UNPARSEABLE
    assert parse_choice("Frame A happens first.\nA", ("A", "B")).response == "A"


@pytest.mark.parametrize("text, n, expected", [
    ("The correct temporal order is: 3, 1, 4, 2", 4, [3, 1, 4, 2]),
    ('"The correct temporal order is: 2, 1"', 2, [2, 1]),
    ("**The correct temporal order is:** 1,2,3,4", 4, [1, 2, 3, 4]),
    ("the correct temporal order is 4 -> 3 -> 2 -> 1", 4, [4, 3, 2, 1]),
    ("The correct temporal order is: [2, 4, 1, 3].", 4, [2, 4, 1, 3]),
    # the format is often restated first; the last statement counts
    ("Format: The correct temporal order is: 5, 2, 8, 1, 4, 7, 3, 6\n...\n"
     "The correct temporal order is: 8, 7, 6, 5, 4, 3, 2, 1", 8, [8, 7, 6, 5, 4, 3, 2, 1]),
])
def test_frame_order_answers(text, n, expected):
    parsed = parse_frame_order(text, n)
    assert (parsed.response, parsed.status) == (expected, PARSE_OK)


@pytest.mark.parametrize("text, n", [
    (None, 4), ("", 4), ("3, 1, 4, 2", 4),  # no statement
    ("The correct temporal order is: 3, 1, 4", 4),  # too short
    ("The correct temporal order is: 3, 1, 4, 4", 4),  # repeated label
    ("The correct temporal order is: 0, 1, 2, 3", 4),  # 0-based
    ("The correct temporal order is: 1, 2, 3, 4, 5", 4),  # too long
    ("The correct temporal order is: [comma-separated frame numbers]", 4),
])
def test_frame_order_unparseable(text, n):
    parsed = parse_frame_order(text, n)
    assert parsed.response is None and parsed.status == PARSE_UNPARSEABLE


def test_frame_order_needs_two_frames():
    with pytest.raises(ValueError):
        parse_frame_order("The correct temporal order is: 1", 1)
