"""The product's purpose end to end: people take a study in a real browser (Chromium, real key
presses), a model answers the same study through ``run-models``, and ``report`` compares them.

tests/analysis/vlm/test_run_models_report.py stores people in the data model; this one takes
them through the participant path, so that what the browser stores (statuses, catch trials,
practice, the server's own clock) is what the report reads.  With two people the report must
still show the human-vs-model comparison, say which sections cannot be estimated instead of
printing intervals, and never label an observer with a missing value.
"""
from urllib.parse import urlencode

import pandas as pd
import pytest

from analysis.report.labels import LABELLED_COLUMNS
from experiments.exclusions import trial_reasons
from experiments.schedule import PRACTICE
from tests.browser.participant import run_by_hand, stored
from tests.factories import open_site_study, tiny_designs

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SLUG = "people-beside-model"
PEOPLE = ("hand-1", "hand-2")
RT_MS = 450  # slower than an anticipation (experiments/exclusions.py), faster than a timeout


def _take_part(page, site, participant: str) -> str:
    page.goto(f"{site.base_url}/p/{SLUG}?{urlencode({'participant': participant})}")
    page.wait_for_url("**/run/**")
    token = page.url.rstrip("/").split("/")[-1]
    run_by_hand(page, site=site, token=token, rt_ms=RT_MS)
    return token


def _cli(runner, *args) -> str:
    result = runner.invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_people_from_the_browser_and_a_model_run_meet_in_one_report(page, site, tiny_model,
                                                                     tmp_path):
    design = tiny_designs()["aot"]
    open_site_study(site.app, SLUG, design)
    sessions = [stored(site.app, _take_part(page, site, person)) for person in PEOPLE]
    assert {s["status"] for s in sessions} == {"completed"}
    # A loaded machine can drop a clip's frames, and a trial-level rule then removes it: every
    # stored answer that no rule removes is analysed.
    main_trials = sum(t["block"] != PRACTICE and t["trial_type"] == "aot"
                      and not trial_reasons(t, design.exclusions)
                      for s in sessions for t in s["trials"])
    assert not page.js_errors

    runner = site.app.test_cli_runner()
    _cli(runner, "run-models", "--study", SLUG, "--model", tiny_model("qwen2_5_vl"),
         "--no-progress", "--max-new-tokens", "4", "--fps", "4")
    out = tmp_path / "report"
    _cli(runner, "report", SLUG, "--out", str(out), "--n-boot", "200")
    tables = {p.stem: pd.read_csv(p) for p in (out / "tables").glob("*.csv")}

    overall = tables["aot_overall"].query("subset == 'full'").set_index("observer")
    assert sorted(overall.index) == sorted(["human", "qwen2_5_vl0"]), overall.index
    assert overall.loc["human", "n_trials"] == main_trials  # every stored answer, analysed
    assert not tables["human_model_gap"].empty
    # Two people are too few for an interval over participants: said, not printed.
    human = overall.loc["human"]
    assert human["ci_method"].startswith("not estimated: needs at least")
    assert human.filter(like="_ci_").isna().all()
    for name, table in tables.items():
        for column in [c for c in (*LABELLED_COLUMNS, "label") if c in table]:
            assert table[column].notna().all(), (name, column)
            assert not table[column].astype(str).str.contains(r"(?:^|/ )nan$").any(), (name, column)
