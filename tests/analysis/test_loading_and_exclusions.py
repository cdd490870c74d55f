"""Loading the exported CSV, category views and the exclusion flow."""
import csv

import numpy as np
import pandas as pd
import pytest

from analysis import exclusions, loading, simulate
from analysis.csv_cells import escape_cells, unescape_cells


@pytest.fixture(scope="module")
def study():
    spec = simulate.StudySpec(n_participants=30, trials_per_participant=40,
                              practice_gate_fail_rate=0.2, fast_trial_rate=0.05,
                              ordering_share=0.25, models={"m": simulate.Observer()})
    return simulate.simulate_study(spec, np.random.default_rng(4))


def test_csv_round_trip(study, tmp_path):
    path = tmp_path / "trials.csv"
    loading.write_trials_csv(study, path)
    back = loading.read_trials(path)
    direct = loading.normalize_trials(study)
    assert back["categories"].tolist() == direct["categories"].tolist()
    assert back["extra"].tolist() == direct["extra"].tolist()
    assert back["correct"].equals(direct["correct"])
    assert back["response"].astype(object).tolist() == direct["response"].astype(object).tolist()


def test_ids_that_look_like_missing_values_stay_participants(study, tmp_path):
    # The red team: participants "NaN" and "null" were read back as one blank subject.
    first = study["subject_id"].iloc[0]
    other = study["subject_id"].drop_duplicates().iloc[1]
    renamed = study.assign(subject_id=study["subject_id"].replace({first: "NaN", other: "null"}))
    path = tmp_path / "trials.csv"
    loading.write_trials_csv(renamed, path)
    back = loading.read_trials(path)
    assert back["subject_id"].isna().sum() == 0
    assert back.groupby("subject_id").size().to_dict() == \
        renamed.groupby("subject_id").size().to_dict()


# (text, as written to CSV): formula starts and quotes gain one quote; numbers stay numbers.
CELLS = [('=HYPERLINK("http://x","click")', '\'=HYPERLINK("http://x","click")'),
         ("+1", "+1"), ("+A1", "'+A1"), ("-0.5", "-0.5"), ("-3e-2", "-3e-2"), ("-.5", "-.5"),
         ("-2+3", "'-2+3"), ("-", "'-"), ("-1e", "'-1e"), ("-\u0663", "'-\u0663"),
         ("@SUM(A1)", "'@SUM(A1)"), ("\t=1", "'\t=1"), ("\r=1", "'\r=1"), ("'a", "''a"),
         ("''", "'" * 3), ("a=b", "a=b"), (" =1", " =1"), ("", "")]


def test_csv_cells_quote_formula_text_only():
    frame = pd.DataFrame({"text": [c for c, _ in CELLS], "number": -0.5,
                          "mixed": [{"=": 1}, True, None, "=x"] + ["ok"] * (len(CELLS) - 4),
                          "label": pd.Categorical(["=cat"] * len(CELLS))},
                         index=[0] * len(CELLS))  # duplicate labels must not matter
    frame["=header"] = 1
    out = escape_cells(frame)
    assert out["text"].tolist() == [w for _, w in CELLS]
    assert out["number"].tolist() == [-0.5] * len(CELLS) and out["number"].dtype == float
    assert out["mixed"].tolist()[:4] == [{"=": 1}, True, None, "'=x"]
    assert set(out["label"]) == {"'=cat"} and "'=header" in out.columns
    assert frame["text"].tolist() == [c for c, _ in CELLS]  # the input is left alone
    back = unescape_cells(out)
    assert back["text"].tolist() == [c for c, _ in CELLS] and "=header" in back.columns
    assert back["mixed"].tolist()[3] == "=x"


@pytest.fixture
def hostile(study):
    """The simulated study, its people renamed to formulas and their onset_method text too."""
    data = study.copy()
    names = {'=HYPERLINK("http://x","click")', "@SUM(A1)", "-A1", "'quote", "-7"}
    humans = data["subject_kind"] == "human"
    ids = sorted(data.loc[humans, "subject_id"].unique())
    rename = dict(zip(ids, sorted(names) + ids[len(names):]))
    data.loc[humans, "subject_id"] = data.loc[humans, "subject_id"].map(rename)
    data.loc[humans, "onset_method"] = data.loc[humans, "subject_id"]
    return data, names


def test_formula_text_is_quoted_in_the_trial_csv_and_read_back(hostile, tmp_path):
    data, names = hostile
    path = tmp_path / "trials.csv"
    loading.write_trials_csv(data, path)
    with path.open(newline="") as handle:
        written = {row["subject_id"] for row in csv.DictReader(handle)}
    assert {'\'=HYPERLINK("http://x","click")', "'@SUM(A1)", "'-A1", "''quote", "-7"} <= written
    assert not (names - {"-7"}) & written
    back = loading.read_trials(path)
    assert back["subject_id"].tolist() == data["subject_id"].astype(str).tolist()
    humans = data["subject_kind"] == "human"
    assert back["onset_method"][humans].astype(str).tolist() == \
        data["onset_method"][humans].tolist()
    assert np.allclose(back["rt_ms"], data["rt_ms"], equal_nan=True)


def test_analyze_from_the_csv_writes_quoted_report_tables(hostile, tmp_path):
    """Export -> ``manage.py analyze --trials`` -> report tables: formulas stay inert, and
    stripping one quote gives back the participants' text."""
    from analysis.report.output import report_to_folder

    data, names = hostile
    loading.write_trials_csv(data, tmp_path / "trials.csv")
    paths = report_to_folder(loading.read_trials(tmp_path / "trials.csv"), tmp_path / "report",
                             n_boot=10)
    for table in paths["tables"]:
        with table.open(newline="") as handle:
            for row in csv.reader(handle):
                for cell in row:
                    assert not cell.startswith(("=", "+", "@", "\t", "\r")) and \
                        (not cell.startswith("-") or _is_number(cell)), (table.name, cell)
    by_subject = pd.read_csv(tmp_path / "report" / "tables" / "aot_by_subject.csv",
                             dtype={"subject_id": object})
    shown = set(unescape_cells(by_subject)["subject_id"])
    assert shown <= set(data["subject_id"]) and len(shown & names) >= 3  # some are excluded


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("text, message", [
    ("subject_id,response\n1,F\n", "lacks required"),
    ("", "not a readable"),
])
def test_bad_files_are_value_errors(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        loading.read_trials(path)
    with pytest.raises(ValueError, match="not found"):
        loading.read_trials(tmp_path / "missing.csv")


def test_bad_json_cell_is_a_value_error(study):
    broken = study.head(3).copy()
    broken["extra"] = ["{}", "{oops", "{}"]
    with pytest.raises(ValueError, match=r"row 2 .*column 'extra': '\{oops'; allowed: a JSON "
                                         "object"):
        loading.normalize_trials(broken)


def test_explode_and_benchmark_subset(study):
    data = loading.normalize_trials(study)
    exploded = loading.explode_categories(data)
    assert len(exploded) == data["categories"].map(len).sum()
    assert (exploded.groupby(level=0)["category"].apply(list) == data["categories"]).all()
    bench = loading.benchmark_subset(data)
    assert not bench["categories"].map(lambda c: "Reciprocal" in c).any()


def test_exclusion_flow_adds_up(study):
    data = loading.normalize_trials(study)
    flow = exclusions.trial_exclusion_flow(data).set_index("step")
    humans = data[data.subject_kind == "human"]
    assert flow.loc["entered", "n_trials_remaining"] == len(humans)
    assert flow.loc["remaining", "n_trials_remaining"] == (~humans.excluded).sum()
    removed = flow.drop(index=["entered", "remaining"])["n_trials_removed"].sum()
    assert removed == humans.excluded.sum()
    gate = humans[humans.exclusion_reasons.map(lambda r: "practice_gate" in r)]
    assert flow.loc["practice_gate", "n_participants_removed"] == gate.subject_id.nunique()
    assert list(flow.index[:2]) == ["entered", "practice_gate"]


def test_people_without_trials_enter_the_flow_from_the_sessions_table():
    trials = pd.DataFrame({"subject_id": ["a", "a", "b"], "subject_kind": "human",
                           "excluded": [False, False, True],
                           "exclusion_reasons": [[], [], ["catch_failed"]]})
    sessions = pd.DataFrame({"subject_id": ["a", "b", "s1", "s2", "n", "gpt"],
                             "subject_kind": ["human"] * 5 + ["model"],
                             "status": ["completed", "failed_attention", "screened_out",
                                        "screened_out", "no_consent", "completed"]})
    flow = exclusions.trial_exclusion_flow(trials, participants=sessions)
    assert flow[["step", "n_participants_removed", "n_participants_remaining",
                 "n_trials_remaining"]].values.tolist() == [
        ["entered", 0, 5, 3], ["screened_out", 2, 3, 3], ["no_consent", 1, 2, 3],
        ["practice_gate", 0, 2, 3], ["catch_failed", 1, 1, 2], ["remaining", 0, 1, 2]]


def test_session_rule_leaves_out_unfinished_sessions_of_people_only(study):
    data = loading.normalize_trials(study)
    people = data["subject_kind"] == "human"
    gated = people & data["exclusion_reasons"].map(lambda r: "practice_gate" in r)
    first_gated = data.loc[gated, "subject_id"].iloc[0]
    clean = sorted(set(data.loc[people & ~gated, "subject_id"]))[0]
    data["session_status"] = data["session_status"].astype(object)
    data.loc[data.subject_id.isin([first_gated, clean]), "session_status"] = "in_progress"
    data.loc[~people, "session_status"] = "incomplete"  # a model run that lacks items
    kept, info = exclusions.apply_session_rule(data)
    assert info["n_sessions_left_out"] == 2 and info["statuses_left_out"] == {"in_progress": 2}
    assert not kept.loc[~people, "excluded"].any()  # model runs are taken as stored
    flow = exclusions.trial_exclusion_flow(kept).set_index("step")
    # The rule is charged only with what no recorded reason removes: the gated participant
    # stays a practice-gate exclusion.
    left = kept[(kept.subject_id == clean) & ~data.excluded]
    assert flow.loc["session_not_completed", "n_trials_removed"] == len(left)
    assert flow.loc["session_not_completed", "n_participants_removed"] == 1
    assert flow.index[-2:].tolist() == ["session_not_completed", "remaining"]
    same, info = exclusions.apply_session_rule(data, "all")
    assert same is data and info["n_sessions_left_out"] == 0


def test_session_rule_needs_a_known_rule_and_a_status(study):
    data = loading.normalize_trials(study)
    with pytest.raises(ValueError, match="unknown session rule 'done'; allowed: 'completed', "
                                         "'all'"):
        exclusions.apply_session_rule(data, "done")
    with pytest.raises(ValueError, match="have no session_status.*--sessions all"):
        exclusions.apply_session_rule(data.assign(session_status=None))
