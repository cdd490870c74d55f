"""Every trial cell is checked against the codebook before anything is analysed.

The seven spellings below each passed ``manage.py analyze`` once and silently changed the
results (the statistics issue): lower-case answers scored as errors, "forward" as the
correct answer emptied the report, Y/N kept excluded trials, "participant" dropped the
accuracy model, "reversed" dropped the backward terms, "Explode" the Diffusion terms, and
a category given as plain text failed without a line or the expected form.

Line numbers count the CSV header as line 1, so the first data row is line 2.
"""
import doctest
import json

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis import loading, simulate
from analysis.csv_cells import escape_cells


@pytest.fixture(scope="module")
def canonical():
    """A small simulated study as the export writes it, with a Diffusion clip, a frame-order
    block and a model, and a stimulus id that spans two lines of the CSV."""
    spec = simulate.StudySpec(n_participants=4, trials_per_participant=12, n_clips=12,
                              ordering_share=0.25, models={"m": simulate.Observer()})
    data = simulate.simulate_study(spec, np.random.default_rng(3))
    data.at[0, "categories"] = ["Diffusion", "Fall"]
    data.at[0, "stimulus_id"] = "smoke\nplume"  # a quoted cell holding a line break
    return data


def _csv(data: pd.DataFrame, tmp_path, row: int | None = None, **cells) -> str:
    """The export of ``data`` with the raw text ``cells`` put on row ``row`` (every row if
    None), as a person editing the CSV by hand would."""
    out = data.copy()
    for column in C.JSON_COLUMNS:
        out[column] = out[column].map(json.dumps)
    for column, value in cells.items():
        out[column] = out[column].astype(object)
        if row is None:
            out[column] = [value] * len(out)
        else:
            out.at[row, column] = value
    path = tmp_path / "trials.csv"
    escape_cells(out).to_csv(path, index=False)
    return str(path)


def _aot_row(data, direction="forward", kind="human"):
    rows = data[(data.trial_type == "aot") & (data.direction == direction)
                & (data.subject_kind == kind)]
    return int(rows.index[2])


def _line(row: int) -> int:
    """CSV line of data row ``row``: the header is line 1, and row 0 spans two lines."""
    return row + 2 + (row > 0)


# (name, column, bad value, how the message shows it, allowed values as the message says)
VARIANTS = [
    ("lower-case answer", "response", "f", "'f'", "'F', 'B' or empty for trial_type 'aot'"),
    ("direction word as correct answer", "correct_response", "backward", "'backward'",
     "'F' or 'B' for trial_type 'aot'"),
    ("excluded as Y/N", "excluded", "N", "'N'", "true or false (or 1 or 0)"),
    ("participant", "subject_kind", "participant", "'participant'", "'human' or 'model'"),
    ("reversed", "direction", "reversed", "'reversed'",
     "'forward' or 'backward' (empty only for trial_type 'frame_order' or 'pair_order')"),
    ("release category name", "categories", '["Explode", "Fall"]', "'[\"Explode\", \"Fall\"]'",
     "a JSON list of category names (Proceed, Fall, Diffusion, Division, Put, Reciprocal; "
     'exact spelling), e.g. ["Fall", "Diffusion"] or empty'),
    ("category as plain text", "categories", "Fall", "'Fall'",
     "a JSON list of category names (Proceed, Fall, Diffusion, Division, Put, Reciprocal; "
     'exact spelling), e.g. ["Fall", "Diffusion"] or empty'),
]


@pytest.mark.parametrize("name, column, value, shown, allowed", VARIANTS,
                         ids=[v[0] for v in VARIANTS])
def test_each_spelling_variant_is_rejected_with_line_column_value_and_allowed(
        runner, canonical, tmp_path, name, column, value, shown, allowed):
    row = _aot_row(canonical, direction="backward")
    path = _csv(canonical, tmp_path, row, **{column: value})
    with pytest.raises(ValueError) as error:
        loading.read_trials(path)
    message = str(error.value)
    assert "line numbers count the CSV header as line 1" in message
    assert f"line {_line(row)}, column {column!r}: {shown}; allowed: {allowed}" in message
    result = runner.invoke(args=["analyze", "--trials", path, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and f"line {_line(row)}, column {column!r}" in result.output
    assert not (tmp_path / "o").exists()  # nothing was written


def test_direction_and_correct_response_must_agree(canonical, tmp_path):
    row = _aot_row(canonical, direction="forward")
    path = _csv(canonical, tmp_path, row, correct_response="B")
    with pytest.raises(ValueError, match=rf"line {_line(row)}, column 'direction/correct_response'"
                                         r": 'forward' with 'B'; allowed: forward goes with "
                                         r"correct_response 'F' and backward with 'B'"):
        loading.read_trials(path)


def test_every_bad_value_is_named_once_with_its_count(canonical, tmp_path):
    path = _csv(canonical, tmp_path, None, response="f")  # every answer, frame orders too
    message = str(pytest.raises(ValueError, loading.read_trials, path).value)
    aot = (canonical.trial_type == "aot").to_numpy()
    first = int(np.flatnonzero(aot)[0])
    assert f"line {_line(first)}, column 'response': 'f'; allowed: 'F', 'B' or empty" in message
    assert f"and {aot.sum() - 5} more)" in message
    assert "for trial_type 'frame_order'" in message  # a frame order answers with a list


def test_canonical_spellings_pass(canonical, tmp_path):
    trials = loading.read_trials(_csv(canonical, tmp_path))
    assert len(trials) == len(canonical)
    assert trials.loc[0, "categories"] == ["Diffusion", "Fall"]
    # Booleans as spreadsheets and databases write them; JSON cells already parsed.
    for spelling in ("true", "FALSE", "1", "0", True, 0):
        frame = canonical.assign(excluded=spelling)
        assert loading.normalize_trials(frame)["excluded"].all() == \
            (str(spelling).lower() in ("true", "1"))


def test_a_database_row_is_named_by_session_and_trial(canonical):
    bad = canonical.copy()
    row = _aot_row(canonical)
    bad.loc[row, "response"] = "b"
    session, index = bad.loc[row, "session_id"], bad.loc[row, "trial_index"]
    with pytest.raises(ValueError, match=rf"row {row + 1} \(session_id {session}, trial_index "
                                         rf"{index}\), column 'response': 'b'"):
        loading.normalize_trials(bad)


@pytest.mark.parametrize("column, value, allowed", [
    ("trial_type", "aot_practice", "'aot', 'catch', 'frame_order' or 'pair_order'"),
    ("session_status", "done", "'started', 'in_progress', 'completed'"),
    ("rt_ms", "fast", "a finite number or empty"),
    ("trial_index", "2.5", "a whole number or empty"),
    ("extra", "[1]", "a JSON object"),
    ("subject_id", None, r"any text \(not empty\)"),
])
def test_other_columns_follow_their_rule(canonical, column, value, allowed):
    bad = canonical.copy()
    bad[column] = bad[column].astype(object)
    bad.at[5, column] = value
    with pytest.raises(ValueError, match=rf"row 6 .*column '{column}': .*allowed: {allowed}"):
        loading.normalize_trials(bad)


def test_frame_orders_are_checked_as_frame_lists(canonical):
    rows = canonical.index[canonical.trial_type == "frame_order"]
    bad = canonical.copy()
    bad.loc[rows[0], "correct_response"] = json.dumps([1, 1, 3])
    with pytest.raises(ValueError, match=r"column 'correct_response': '\[1, 1, 3\]'; allowed: a "
                                         r"JSON list of the presented frame labels 1..N"):
        loading.normalize_trials(bad)


def test_every_trial_column_has_a_rule_and_the_codebook_lists_its_values():
    from webapp.researcher.codebook import TRIAL_CODEBOOK

    assert set(C.TRIAL_COLUMNS) <= set(C.COLUMN_RULES)
    described = {column: text for column, _, text in TRIAL_CODEBOOK}
    for column, rule in C.COLUMN_RULES.items():
        assert column in described, column
        if rule.kind == "choice" or column == "categories":
            for value in rule.allowed:
                assert value in described[column], (column, value)


def test_the_docstring_example_runs():
    from analysis import validation

    result = doctest.testmod(validation, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted and not result.failed


def test_correct_must_agree_with_the_responses_on_every_trial_type(runner, canonical, tmp_path):
    # correct=1.0 on every row once passed analyze with exit 0 and corrupted the GEE and kappa.
    path = _csv(canonical, tmp_path, None, correct="1.0")
    message = str(pytest.raises(ValueError, loading.read_trials, path).value)
    # Independently: the rows whose response is empty or differs from the answer.
    wrong = canonical.response.isna() | (canonical.response != canonical.correct_response)
    first = int(np.flatnonzero(wrong.to_numpy())[0])
    assert (f"line {_line(first)}, column 'correct': 1.0; allowed: false, as response "
            "differs from correct_response or is empty") in message
    assert f"the trial table has {wrong.sum()} invalid values" in message
    result = runner.invoke(args=["analyze", "--trials", path, "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "column 'correct'" in result.output
    for kind in ("aot", "frame_order"):  # frame orders: exact match of the lists
        row = int(canonical.index[(canonical.trial_type == kind)
                                  & (canonical.response == canonical.correct_response)][0])
        bad = _csv(canonical, tmp_path, row, correct="false")
        with pytest.raises(ValueError, match=rf"line {_line(row)}, column 'correct': 'false'; "
                                             r"allowed: true, as response equals"):
            loading.read_trials(bad)


def test_a_frame_order_written_with_other_spacing_is_still_correct(canonical):
    row = canonical.index[(canonical.trial_type == "frame_order")
                          & (canonical.response == canonical.correct_response)][0]
    frame = canonical.astype({"response": object, "correct": object})
    frame.at[row, "response"] = json.dumps(json.loads(frame.at[row, "response"]), indent=1)
    frame.at[row, "correct"] = True
    loading.normalize_trials(frame)  # no error


@pytest.mark.parametrize("value", ["Practice", "main1", "main-0", "Main-2", "training"])
def test_block_must_be_practice_or_a_main_block(canonical, tmp_path, value):
    # block=Practice once analysed practice trials as main trials without a word.
    row = _aot_row(canonical)
    with pytest.raises(ValueError, match=rf"line {_line(row)}, column 'block': '{value}'; "
                                         r"allowed: 'practice', 'main', 'main-1', 'main-2', "
                                         r"\.\.\. \(exact spelling\) or empty"):
        loading.read_trials(_csv(canonical, tmp_path, row, block=value))


@pytest.mark.parametrize("value", ["practice", "main", "main-1", "main-12", None])
def test_the_blocks_the_app_writes_pass(canonical, value):
    frame = canonical.copy()
    frame["block"] = frame["block"].astype(object)
    frame.at[3, "block"] = value
    loading.normalize_trials(frame)


def test_list_cells_are_told_apart_by_value_whether_shared_or_not():
    # Equal lists count as one value whether rows share the object or not, dicts as one.
    from analysis.validation import _factorize

    shared = ["Fall"]
    cells = np.empty(6, dtype=object)
    cells[:] = [shared, ["Put"], shared, ["Fall"], {}, None]
    codes, uniques = _factorize(cells)
    assert list(codes) == [0, 1, 0, 0, 2, 3]
    assert [u if not isinstance(u, tuple) else list(u) for u in uniques][:2] == [["Fall"],
                                                                                ["Put"]]
    assert repr(uniques[2]) == "{...}" and pd.isna(uniques[3])


def test_missing_cells_are_one_value_whether_none_or_nan(canonical):
    """Validation's codes (every missing cell one value) are reused to type the columns:
    None and NaN are both missing, reported once and typed alike."""
    data = canonical.astype({"subject_id": object})
    data.loc[[1, 2], "subject_id"] = [None, np.nan]
    with pytest.raises(ValueError, match=r"row 2 .*column .subject_id.: empty; .*\(also rows 3\)"):
        loading.normalize_trials(data)
    data = canonical.astype({"response": object, "correct": object})
    data.loc[[1, 2], "response"] = [None, np.nan]
    data.loc[[1, 2], "correct"] = [False, np.nan]
    data.loc[3, "correct"] = ""
    typed = loading.normalize_trials(data)
    assert typed.loc[[1, 2], "response"].isna().all()
    assert typed.loc[1, "correct"] == 0.0 and typed.loc[2, "correct"] == 0.0  # a timeout
    expected = float(typed.loc[3, "response"] == typed.loc[3, "correct_response"])
    assert typed.loc[3, "correct"] == expected
    assert typed["subject_id"].tolist() == canonical["subject_id"].astype(str).tolist()
