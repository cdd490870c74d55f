"""The report registry is the one list of report tables: a simulated study that exercises
every section builds exactly the registered tables, and report.html, the CSVs, metrics.json
and the codebook show what the registry says."""
import importlib
import json
import pickle
import re

import numpy as np
import pandas as pd
import pytest

from analysis import columns as C
from analysis import loading, simulate
from analysis.report import build, codebook, output
from analysis.report import columns_doc as D
from analysis.report import registry as R
from experiments.designs import EGO_FLIGHT_CONDITIONS
from experiments.trial_types import TRIAL_TYPES
from tests.analysis import test_benchmark_reference as benchmark
from tests.analysis import test_report_length as length
from tests.analysis import test_report_tra as sweep
from tests.analysis import test_report_tra_adaptive as adaptive_sweep


def _every_section_trials(rng) -> pd.DataFrame:
    """People (timed by two onset methods) and two models on clips and frame orders in the
    EGO-FLIGHT conditions, one model also under a TOMATO frame condition and on ordered image
    pairs, people (one adaptive) and a VLM on the TRA sweeps, adaptive people and a model on
    clip-length cuts, and two models on AoT-PsyPhyBENCH items."""
    spec = simulate.StudySpec(
        n_participants=6, trials_per_participant=60, n_clips=24, ordering_share=0.25,
        practice_gate_fail_rate=0.0, fast_trial_rate=0.0,
        models={"m-a": simulate.Observer(d_prime=0.5, criterion=0.8),
                "m-b": simulate.Observer(d_prime=1.0)})
    data = simulate.simulate_study(spec, rng)
    people = data["subject_kind"] == C.HUMAN  # rt_median then has a row per method
    data.loc[people, "onset_method"] = np.where(data.index[people] % 2, "raf-next", "rvfc")
    conditions = [c.name for c in EGO_FLIGHT_CONDITIONS]
    orders = data["trial_type"] == C.FRAME_ORDER
    data.loc[orders, "extra"] = [{**e, "condition": conditions[i % len(conditions)]}
                                 for i, e in enumerate(data.loc[orders, "extra"])]
    model = data[(data["subject_id"] == "m-a") & (data["trial_type"] == C.AOT)]
    one_frame = model.assign(extra=[{**e, C.EXTRA_TASK_VARIANT: "single_frame"}
                                    for e in model["extra"]])
    first = model.head(20)
    image_pairs = first.assign(
        trial_type=C.PAIR_ORDER, direction=None, categories=[[]] * 20,
        correct_response=["A", "B"] * 10, response="A", correct=[1.0, 0.0] * 10,
        extra=[{**e, "pair_order": ("AB", "BA")[i % 2], "pair_id": i // 2}
               for i, e in enumerate(first["extra"])])
    sweeps = pd.DataFrame(sweep._people(rng, n_people=5, per_level=4) + sweep._vlm()
                          + adaptive_sweep._adaptive_people(rng, n_people=1, trials=20)
                          + length._people(rng, n_people=2, trials=20) + length._model())
    return pd.concat([data, one_frame, image_pairs, sweeps, benchmark._trials()],
                     ignore_index=True)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    rng = np.random.default_rng(5)
    trials = loading.normalize_trials(_every_section_trials(rng))
    report = build.build_report(trials, n_boot=20, tra_data=sweep._tra(rng),
                                sweep_levels=pd.concat([sweep._levels(), length._levels()]))
    out = tmp_path_factory.mktemp("report")
    output.write_report(report, out)
    return report, out


def test_every_registered_table_is_built_and_nothing_else(written):
    report, out = written
    assert not report.failures
    # A new table: add it to the registry, and to this study if the study lacks it.
    assert set(report.tables) == set(R.TABLES)
    assert {p.stem for p in (out / "tables").glob("*.csv")} == set(R.TABLES)
    assert all(table.when for table in R.TABLES if table != R.EXCLUSION_FLOW)  # says why


def test_a_table_outside_the_registry_fails():
    with pytest.raises(ValueError, match="'aot_by_weekday' is not in"):
        R.check_built({"aot_by_weekday": pd.DataFrame()})


def test_every_table_names_a_builder_that_exists():
    # The codebook says "Computed by `builder`": a renamed function must not leave it stale.
    missing = []
    for table in R.TABLES:
        module, _, name = table.builder.rpartition(".")
        if not callable(getattr(importlib.import_module(module), name, None)):
            missing.append(f"{table}: {table.builder}")
    assert not missing, missing

def test_a_table_is_its_name_and_survives_pickling():
    assert R.AOT_OVERALL == "aot_overall" and f"{R.AOT_OVERALL}.csv" == "aot_overall.csv"
    assert pickle.loads(pickle.dumps(R.AOT_OVERALL)) is R.AOT_OVERALL


def test_trial_types_metrics_decide_the_sections(monkeypatch):
    assert {s.id for s in R.sections()} == {s.id for s in R.SECTIONS}
    monkeypatch.setattr(TRIAL_TYPES["frame_order"], "METRICS", ("non_response",))
    assert R.ORDERING not in R.sections() and R.DIAGNOSTICS in R.sections()  # study-wide
    with pytest.raises(ValueError, match="'ordering' is named by no trial type"):
        R.check_built({R.ORDERING_ANCHORING: pd.DataFrame()})


def test_the_html_shows_every_table_and_figure_in_its_section(written):
    report, out = written
    html = (out / "report.html").read_text(encoding="utf-8")
    for section in R.SECTIONS:
        part = html.split(f'<section id="{section.id}">')[1].split("</section>")[0]
        shown = set(re.findall(r"<h3>([^<]+)</h3>", part))
        tables = {t for t in R.TABLES if t.section == section}
        assert shown == {t for t in tables if t.html}, section.id
        drawn = [f for t in tables for f in t.figures if f in report.figures]
        assert part.count('class="plotly-graph-div"') == len(drawn), section.id
    assert set(report.figures) <= {f for t in R.TABLES for f in t.figures}


def test_metrics_json_carries_the_tables_the_registry_marks(written):
    report, out = written
    metrics = json.loads((out / "metrics.json").read_text())
    for table in R.TABLES:  # as records; a model fit's entry is what it was fitted on
        records = metrics.get(table) if isinstance(metrics.get(table), list) else None
        assert (records is not None) == table.metrics_json, table
        assert records is None or len(records) == len(report.tables[table])


def _documented(table: R.Table, built: pd.DataFrame) -> dict[str, str]:
    """Each column of ``built`` -> the documented name that covers it: its own, or a pattern
    ``<metric>_ci_low`` whose ``<metric>`` is another column of the table."""
    names = [c for group in [*table.columns, *D.COMMON_COLUMNS] for c in group.split(", ")]
    covered = {}
    for column in built.columns:
        for name in names:
            head, _, tail = name.partition("<metric>")
            if column == name or (tail and column.startswith(head) and column.endswith(tail)
                                  and column[len(head):-len(tail)] in built):
                covered[column] = name
                break
    return covered


def test_every_column_of_every_table_is_documented_and_exists(written):
    report, _ = written
    built_names = set()
    for table in R.TABLES:
        built = report.tables[table]
        covered = _documented(table, built)
        assert set(built.columns) == set(covered), (table, set(built.columns) - set(covered))
        # a pattern is documented only in COMMON_COLUMNS, for columns made per metric
        assert not any("<" in group for group in table.columns), table
        for group in table.columns:
            for column in group.split(", "):
                assert column in built, (table, column)
        built_names |= set(covered.values())
    assert {c for group in D.COMMON_COLUMNS for c in group.split(", ")} <= built_names


def test_a_table_that_grows_an_undocumented_column_is_caught(written):
    report, _ = written
    grown = report.tables[R.AOT_OVERALL].assign(accuracy_by_weekday=0.5)
    assert "accuracy_by_weekday" not in _documented(R.AOT_OVERALL, grown)
    assert "accuracy_ci_low" in _documented(R.AOT_OVERALL, grown)


def test_the_codebook_names_every_table_and_documented_column(written):
    _, out = written
    reference = codebook.codebook_markdown()
    assert (out / "codebook.md").read_text(encoding="utf-8") == reference
    for table in R.TABLES:
        assert f"### `{table}`" in reference and table.builder in reference
        for group in table.columns:
            assert f"| `{group}` |" in reference
    cells = [line.replace("\\|", "") for line in reference.splitlines() if line.startswith("| `")]
    assert all(line.count("|") == 3 for line in cells)  # two cells a row, "|" escaped
    rows = pd.read_csv(out / "codebook.csv")
    assert set(rows["table"]) == {*(t for t in R.TABLES if t.columns), "*"}
