"""What a model run spends: each item's tokens and seconds, a run's sums, their cost under the
user's price table, and the ``--budget`` that stops a run between items when its total
would pass it.

An item's ledger (``analysis.columns.LEDGER_FIELDS``) adds up all its model calls (a generated
answer and a logit score): tokens in and out as the server's ``usage`` or the local processor
counted them, the reasoning tokens among those out, and the model's seconds.  A cached item
keeps the ledger of the call that computed it, and a budget counts its tokens.

A cost is a reporting-time figure, never stored: the run's tokens at the prices of the file
given now, so another price file reprices every item of the run (the ledger names the file).

Prices are never guessed: a price file (TOML) gives, per model, the price of a million input
and output tokens (and of reasoning tokens, if they are priced apart from output), and without
one no cost is shown anywhere.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from analysis import columns as C
from experiments.study_file import Reader, StudyFileError, parse_tables, read_source

TOKEN_KINDS = ("input", "output", "reasoning")  # price per million tokens of each
PER = 1_000_000


def item_ledger(outcome: dict) -> dict:
    """The ledger of one item from its calls' cache values (``{"generate": ..., "score":
    ...}``); seconds are None when a call did not record them (cached before they were)."""
    calls = [value for value in outcome.values() if value]
    seconds = [value.get("wall_s") for value in calls]
    reasoning = (outcome.get("generate") or {}).get("reasoning") or {}
    return {"tokens_in": sum(int(v.get("n_prompt_tokens") or 0) for v in calls),
            "tokens_out": sum(int(v.get("n_new_tokens") or 0) for v in calls),
            "tokens_reasoning": int(reasoning.get("n_tokens") or 0),
            "model_s": None if None in seconds else round(sum(seconds), 6)}


@dataclass(frozen=True)
class Price:
    input: float  # per million tokens
    output: float
    reasoning: float | None = None  # None: reasoning tokens cost what output tokens cost

    def cost(self, ledger: dict) -> float:
        reasoning = ledger["tokens_reasoning"] if self.reasoning is not None else 0
        return (ledger["tokens_in"] * self.input + (ledger["tokens_out"] - reasoning)
                * self.output + reasoning * (self.reasoning or 0.0)) / PER


@dataclass(frozen=True)
class Prices:
    currency: str
    models: dict[str, Price]
    source: str  # the file's name, for messages

    def price(self, model: str) -> Price | None:
        """The price of ``model`` (as given to ``--model``, or its folder's name)."""
        return self.models.get(model) or self.models.get(Path(model).name)


def load_prices(path: str | Path) -> Prices:
    """Read and check a price file; raises ``StudyFileError`` naming file, line and field::

        currency = "USD"             # the unit of every price below
        [models."gpt-5-2025-08-07"]  # a model as given to --model, or its folder's name
        input = 1.25                 # per million input tokens
        output = 10.0                # per million output tokens (reasoning included)
        reasoning = 10.0             # optional: reasoning tokens priced apart from output
    """
    path = Path(path)
    source = read_source(path, kind="price file")
    reader = Reader(path.name, source, None)
    data = parse_tables(reader, source)
    prices = None if data is None else _check(reader, data, path.name)
    if reader.problems or prices is None:
        raise StudyFileError(reader.problems)
    return prices


def _check(reader: Reader, data: dict, name: str) -> Prices | None:
    for key in data.keys() - {"currency", "models"}:
        reader.unknown((), key, ("currency", "models"))
    currency = data.get("currency")
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
        reader.error(("currency",), f"expected a currency code such as \"USD\", got {currency!r}")
    models = data.get("models")
    if not isinstance(models, dict) or not models:
        reader.error(("models",), "expected at least one [models.\"<model>\"] table")
        return None
    out = {}
    for model, fields in models.items():
        where = ("models", model)
        if not isinstance(fields, dict):
            reader.error(where, "expected a table with input and output prices")
            continue
        for key in fields.keys() - set(TOKEN_KINDS):
            reader.unknown(where, key, TOKEN_KINDS)
        values = {}
        for kind in TOKEN_KINDS:
            value = fields.get(kind)
            if value is None and kind == "reasoning":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                reader.error(where + (kind,), f"expected a price per million {kind} tokens "
                                              f"(a number >= 0), got {value!r}")
                continue
            values[kind] = float(value)
        if len(values) >= 2 and "input" in values and "output" in values:
            out[model] = Price(**values)
    return None if reader.problems else Prices(str(currency), out, name)


def summarise(ledgers: list[dict], n_correct: int, price: Price | None) -> dict:
    """A run's sums: tokens and seconds in all, per item and per correct answer; with a
    price, the cost too (never without)."""
    totals = {key: sum(ledger[key] or 0 for ledger in ledgers) for key in C.LEDGER_FIELDS}
    totals["model_s"] = round(totals["model_s"], 3)
    n = len(ledgers)
    out = {"items": n, "correct": n_correct, **totals}
    tokens = totals["tokens_in"] + totals["tokens_out"]
    out["tokens_per_item"] = tokens / n if n else None
    out["tokens_per_correct"] = tokens / n_correct if n_correct else None
    if price is not None:
        cost = sum(price.cost(ledger) for ledger in ledgers)
        out.update(cost=round(cost, 6), cost_per_correct=cost / n_correct if n_correct else None)
    return out


# --- the budget -------------------------------------------------------------------------------
_BUDGET = re.compile(r"\s*(\d{1,15}(?:\.\d{1,9})?)\s*(tok|[A-Za-z]{3})\s*")


@dataclass(frozen=True)
class Budget:
    amount: float
    unit: str  # "tok", or a currency code

    def __str__(self) -> str:
        return f"{self.amount:g}{self.unit}"


def parse_budget(text: str) -> Budget:
    """``50000tok`` (tokens in and out) or ``2.50USD`` (money, under a price table)."""
    match = _BUDGET.fullmatch(text or "")
    if match is None or float(match[1]) <= 0:
        raise ValueError(f"--budget {text!r}: expected tokens or money, e.g. 50000tok or "
                         "2.50USD")
    unit = match[2]
    return Budget(float(match[1]), "tok" if unit.lower() == "tok" else unit.upper())


class BudgetGuard:
    """Lets items be computed while the run's total stays within the budget.

    The total is the run's ledger: every item of the run counts, one read from the cache at
    its stored tokens (in money, at the price file given now), so that a rerun of a run the budget stopped computes
    nothing new under the same budget and goes on under a larger one.  An item to compute is
    estimated at the mean of the items counted so far; before any, one runs alone to
    measure it.
    """

    def __init__(self, budget: Budget, price: Price | None, model: str,
                 prices: Prices | None = None):
        if budget.unit != "tok":
            if price is None:
                where = f"the price file {prices.source}" if prices else "a price file (--prices)"
                raise ValueError(f"--budget {budget}: needs the price of {model!r} in {where}")
            if prices is not None and budget.unit != prices.currency:
                raise ValueError(f"--budget {budget}: the price file {prices.source} is in "
                                 f"{prices.currency}")
        self.budget, self.price = budget, price
        self.priced_by = (f" at the prices of {prices.source}"
                          if prices and price and budget.unit != "tok" else "")
        self.spent, self.counted, self.computed = 0.0, 0, 0
        self.stopped: str | None = None

    def cost(self, ledger: dict) -> float:
        if self.budget.unit == "tok":
            return ledger["tokens_in"] + ledger["tokens_out"]
        assert self.price is not None
        return self.price.cost(ledger)

    def allows(self, pending: int) -> bool:
        """Whether one more item may be computed, ``pending`` being let through already and
        not yet counted; a refusal with none pending stops the run, and says why."""
        if self.counted == 0:
            estimate = None
            allowed = pending == 0 and self.spent < self.budget.amount
        else:
            estimate = self.spent / self.counted
            allowed = self.spent + (pending + 1) * estimate <= self.budget.amount
        if not allowed and pending == 0:
            self.stopped = (f"stopped by --budget {self.budget}: {self._amount(self.spent)} "
                            f"spent on the run's {self.counted} items{self.priced_by}, "
                            f"{self.computed} of them computed now" + (
                                " (nothing new: the items stored already cost that)"
                                if not self.computed else "")
                            + (f"; the next estimated at {self._amount(estimate)}, their mean"
                               if estimate is not None else "")
                            + "; what was stored stays, and a rerun with a larger --budget "
                              "completes the session")
        return allowed

    def add(self, ledger: dict, computed: bool) -> None:
        """Count an item of the run (``computed`` now, else read from the cache)."""
        self.spent += self.cost(ledger)
        self.counted += 1
        self.computed += computed

    def _amount(self, value: float) -> str:
        unit = self.budget.unit
        return f"{value:.0f} tokens" if unit == "tok" else f"{value:.4f} {unit}"
