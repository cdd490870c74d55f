"""The token and cost ledger: each item's tokens and seconds, a run's sums and cost under the
user's price file (never without one), and ``--budget`` stopping a run between items."""
import json
from pathlib import Path

import pytest
from sqlalchemy import select

from analysis.vlm.backends.base import GenerationParams
from analysis.vlm.ledger import (
    Budget,
    BudgetGuard,
    load_prices,
    parse_budget,
    summarise,
)
from analysis.vlm.runner import Runner
from analysis.vlm.tasks import TaskSpec, build_items
from experiments.study_file import StudyFileError
from webapp import model_runs
from webapp.extensions import db
from webapp.models import ModelRun, Session, Trial
from webapp.researcher import studies

PRICES = '''currency = "USD"
[models."gpt-5"]
input = 1.25
output = 10.0
'''


def _prices(tmp_path, text, name="prices.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_price_file_turns_tokens_into_cost(tmp_path):
    prices = load_prices(_prices(tmp_path, PRICES + '[models."/any/o3"]\ninput = 2\n'
                                 'output = 8\nreasoning = 4\n'))
    ledger = {"tokens_in": 1_000_000, "tokens_out": 2_000_000, "tokens_reasoning": 1_000_000,
              "model_s": 1.0}
    assert prices.price("gpt-5").cost(ledger) == pytest.approx(1.25 + 20.0)
    assert prices.price("/any/o3").cost(ledger) == pytest.approx(2 + 8 + 4)
    assert prices.price("unpriced") is None
    assert "cost" not in summarise([ledger], 1, None)  # no table, no cost
    assert summarise([ledger], 1, prices.price("gpt-5"))["cost"] == pytest.approx(21.25)


@pytest.mark.parametrize("text, problem", [
    (PRICES + "outptu = 3\n", "prices.toml:5: models.gpt-5.outptu: unknown key (did you "
                              "mean 'output'?)"),
    (PRICES.replace("10.0", '"ten"'), "prices.toml:4: models.gpt-5.output: expected a price "
                                      "per million output tokens (a number >= 0), got 'ten'"),
    (PRICES.replace("1.25", "-1"), "prices.toml:3: models.gpt-5.input: expected a price"),
    (PRICES.replace('"USD"', '"dollars"'), "prices.toml:1: currency: expected a currency code"),
    ('currency = "USD"\n', "prices.toml:1: models: expected at least one"),
    (PRICES + "[models", "prices.toml:5: (file): not valid TOML"),
    ("#" * 300_000, "prices.toml:1: (file): expected a price file of at most 256 KiB, got more"),
])
def test_a_bad_price_file_names_file_line_and_field(tmp_path, text, problem):
    with pytest.raises(StudyFileError) as error:
        load_prices(_prices(tmp_path, text))
    assert problem in str(error.value)


@pytest.mark.parametrize("text, budget", [
    ("50000tok", Budget(50000, "tok")), ("2.50USD", Budget(2.5, "USD")),
    ("3 eur", Budget(3, "EUR")), ("10TOK", Budget(10, "tok"))])
def test_budgets_in_tokens_or_money(text, budget):
    assert parse_budget(text) == budget


@pytest.mark.parametrize("text", ["", "50000", "-3tok", "0tok", "2.5 dollars", "1e9tok"])
def test_a_budget_that_is_neither_is_refused(text):
    with pytest.raises(ValueError, match="expected tokens or money"):
        parse_budget(text)


def test_a_money_budget_needs_the_models_price():
    with pytest.raises(ValueError, match="needs the price of 'm' in a price file"):
        BudgetGuard(Budget(2.5, "USD"), None, "m")


def test_the_budget_stops_between_items_on_the_mean_so_far(hf_backend, clips):
    items = build_items(clips, TaskSpec(fps=4))
    params = GenerationParams(max_new_tokens=2)
    free = Runner(hf_backend, _NoCache(), params, "generate", batch_size=4, progress=False)
    rows = free.run(items)
    per_item = [r["extra"]["tokens_in"] + r["extra"]["tokens_out"] for r in rows]
    assert all(r["extra"]["tokens_in"] > 0 and r["extra"]["model_s"] > 0 for r in rows)
    # The first item runs alone (nothing to estimate from), the second on the first's cost;
    # a third would pass the budget on the mean of the two.
    limit = per_item[0] + per_item[1] + 0.5 * min(per_item[:2])
    guard = BudgetGuard(Budget(limit, "tok"), None, "m")
    runner = Runner(hf_backend, _NoCache(), params, "generate", batch_size=4, progress=False,
                    budget=guard)
    stopped = runner.run(items)
    assert [r["stimulus_id"] for r in stopped] == [r["stimulus_id"] for r in rows[:2]]
    assert runner.stats.computed == guard.computed == guard.counted == 2
    assert guard.spent == per_item[0] + per_item[1]
    assert runner.stats.stopped.startswith(f"stopped by --budget {limit:g}tok")
    assert "their mean" in runner.stats.stopped


@pytest.fixture
def study(app, stimulus_set):
    with app.app_context():
        studies.create_study("tiny-study", "arrow-of-time", stimulus_set)
    return "tiny-study"


def _run(runner, model, *args):
    return runner.invoke(args=["run-models", "--model", model, "--no-progress", "--study",
                               "tiny-study", "--max-new-tokens", "2", "--fps", "4",
                               "--scoring", "generate", *args])


def test_a_budgeted_run_stops_and_a_larger_budget_completes_the_session(
        app, runner, study, tiny_model, tmp_path):
    model = tiny_model("qwen2_5_vl")
    first = _run(runner, model, "--budget", "1tok")
    assert first.exit_code == 0, first.output
    assert "1 trials (0 cached, 1 computed" in first.output
    assert "stopped by --budget 1tok" in first.output and "cost" not in first.output
    with app.app_context():
        session = db.session.scalar(select(Session))
        assert session.status == "incomplete"
        assert len(db.session.scalars(select(Trial)).all()) == 1
    prices = _prices(tmp_path, PRICES.replace("gpt-5", Path(model).name))
    second = _run(runner, model, "--budget", "100USD", "--prices", str(prices))
    assert second.exit_code == 0, second.output
    assert "4 trials (1 cached, 3 computed" in second.output and "stopped" not in second.output
    with app.app_context():
        sessions = db.session.scalars(select(Session)).all()
        assert len(sessions) == 1 and sessions[0].status == "completed"  # the same session
        trials = db.session.scalars(select(Trial)).all()
        assert len(trials) == 4 and all(t.extra["tokens_in"] > 0 for t in trials)
        ledger = db.session.scalar(select(ModelRun)).ledger
    assert ledger["items"] == 4 and ledger["currency"] == "USD"
    assert ledger["tokens_in"] == sum(t.extra["tokens_in"] for t in trials)
    assert ledger["cost"] == pytest.approx((ledger["tokens_in"] * 1.25
                                            + ledger["tokens_out"] * 10.0) / 1e6)
    assert f"cost {ledger['cost']:.4f} USD" in second.output
    folder = Path(second.output.split("run folder ")[1].split()[0])
    assert json.loads((folder / "manifest.json").read_text())["ledger"] == ledger


def test_the_budget_is_the_runs_total_across_reruns(app, runner, study, tiny_model):
    """--budget was per command: a rerun under the same budget computed on, as if its stored
    items were free (outside review).  It is the run's total: a rerun counts the items the
    session already holds, computes nothing new under the same budget and says so, and
    completes the session under twice the budget."""
    model = tiny_model("qwen2_5_vl")
    assert _run(runner, model, "--budget", "1tok").exit_code == 0  # one item, to measure
    with app.app_context():
        first = db.session.scalar(select(Trial))
        per_item = first.extra["tokens_in"] + first.extra["tokens_out"]
    budget = f"{2.5 * per_item:g}tok"  # two items of this run, not three
    stopped = _run(runner, model, "--budget", budget)
    assert stopped.exit_code == 0, stopped.output
    assert "2 trials (1 cached, 1 computed" in stopped.output
    again = _run(runner, model, "--budget", budget)
    assert again.exit_code == 0, again.output
    assert "2 trials (2 cached, 0 computed" in again.output
    assert (f"stopped by --budget {budget}: {2 * per_item} tokens spent on the run's 2 items, "
            "0 of them computed now (nothing new: the items stored already cost that)"
            ) in again.output
    assert "Stored 0 new trials" in again.output
    done = _run(runner, model, "--budget", f"{5 * per_item:g}tok")
    assert done.exit_code == 0, done.output
    assert "4 trials (2 cached, 2 computed" in done.output and "stopped" not in done.output
    with app.app_context():
        session = db.session.scalar(select(Session))
        assert session.status == "completed"
        assert len(db.session.scalars(select(Trial)).all()) == 4


def test_a_fully_cached_rerun_keeps_the_stored_runs_ledger_and_file(
        app, runner, study, tiny_model, tmp_path):
    """A rerun that read every item from the cache replaced the stored run's ledger, timing
    and run file with its own (here: two items, no cost, another batch size; outside
    review): the run that computed the answers is the one kept."""
    model = tiny_model("qwen2_5_vl")
    prices = _prices(tmp_path, PRICES.replace("gpt-5", Path(model).name))
    assert _run(runner, model, "--prices", str(prices)).exit_code == 0
    with app.app_context():
        stored = db.session.scalar(select(ModelRun))
        before = (stored.ledger, stored.timing, stored.manifest, stored.counts)
        files = model_runs.model_run_files(stored.session.subject.study_id)
    assert before[0]["items"] == 4 and before[0]["cost"] > 0
    rerun = _run(runner, model, "--limit", "2", "--batch-size", "1")
    assert rerun.exit_code == 0, rerun.output
    assert "2 trials (2 cached, 0 computed" in rerun.output
    with app.app_context():
        stored = db.session.scalar(select(ModelRun))
        assert (stored.ledger, stored.timing, stored.manifest, stored.counts) == before
        assert model_runs.model_run_files(stored.session.subject.study_id) == files
        assert stored.session.status == "completed"


def test_a_budget_in_another_currency_than_the_prices_is_refused(runner, study, tiny_model,
                                                                  tmp_path):
    model = tiny_model("qwen2_5_vl")
    prices = _prices(tmp_path, PRICES.replace("gpt-5", Path(model).name))
    result = _run(runner, model, "--budget", "2EUR", "--prices", str(prices))
    assert result.exit_code == 1 and "the price file prices.toml is in USD" in result.output
    unpriced = _run(runner, model, "--limit", "1", "--prices", str(_prices(tmp_path, PRICES)))
    assert unpriced.exit_code == 0, unpriced.output
    assert f"no price for {model!r} in prices.toml: no cost shown" in unpriced.output
    assert _run(runner, model, "--budget", "lots").exit_code == 2


class _NoCache:
    def get(self, key):
        return None

    def put(self, key, kind, value):
        pass


def test_a_cost_is_the_runs_tokens_at_the_prices_given_now_and_says_so(
        app, runner, study, tiny_model, tmp_path):
    """Another price file repriced the stored items with no word of it (outside review): a
    cost is a reporting-time figure, the stored tokens at the prices given now, and every
    cost shown names the file whose prices it is."""
    model = tiny_model("qwen2_5_vl")
    text = PRICES.replace("gpt-5", Path(model).name)
    cheap = _prices(tmp_path, text, "cheap.toml")
    dear = _prices(tmp_path, text.replace("1.25", "2.5").replace("10.0", "20.0"), "dear.toml")
    first = _run(runner, model, "--prices", str(cheap))
    assert first.exit_code == 0, first.output
    with app.app_context():
        ledger = db.session.scalar(select(ModelRun)).ledger
    assert ledger["priced_by"] == "cheap.toml"
    assert (f"cost {ledger['cost']:.4f} USD at the prices of cheap.toml (its tokens at the "
            "prices given now)") in first.output
    again = _run(runner, model, "--prices", str(dear))
    assert "4 trials (4 cached, 0 computed" in again.output
    assert f"cost {2 * ledger['cost']:.4f} USD at the prices of dear.toml" in again.output
    prices = load_prices(dear)
    guard = BudgetGuard(parse_budget("0.0001USD"), prices.price(model), model, prices)
    guard.add({"tokens_in": 1000, "tokens_out": 100, "tokens_reasoning": 0}, computed=False)
    assert not guard.allows(0)
    assert ("stopped by --budget 0.0001USD: 0.0045 USD spent on the run's 1 items at the "
            "prices of dear.toml, 0 of them computed now") in guard.stopped
