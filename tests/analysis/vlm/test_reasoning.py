"""Thinking models: reasoning split from the scored answer (inline tags, a family's own tags,
a server's ``reasoning_content``), an item cut off while thinking stored as such, the thinking
switch and budget as part of the run, and logit scoring refused for a thinking run."""
import copy

import pytest

from analysis.vlm import reasoning as R
from analysis.vlm.backends import load_backend
from analysis.vlm.backends.base import GenerationParams
from analysis.vlm.backends.hf import TransformersBackend
from analysis.vlm.cache import ResultCache
from analysis.vlm.run_config import RunConfig, effective_scoring, run_key
from analysis.vlm.runner import Runner
from analysis.vlm.tasks import TaskSpec, build_items
from analysis.vlm.tiny import QWEN2_TEMPLATE
from tests.analysis.vlm.openai_server import TinyOpenAIServer

# A thinking model's template (R1 / GLM-4.1V-Thinking style): thinking on opens the reasoning
# in the prompt; off closes an empty one (Qwen3's enable_thinking=False).
THINKING_TEMPLATE = QWEN2_TEMPLATE.replace(
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined "
    "and enable_thinking is false %}<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}"
    "{% endif %}")


@pytest.fixture(scope="module")
def items(clips):
    return build_items(clips, TaskSpec(fps=4))  # 4 items: 2 clips, forward and backward


@pytest.fixture(scope="module")
def thinking_backend(hf_backend):
    processor = copy.deepcopy(hf_backend.processor)
    processor.chat_template = THINKING_TEMPLATE
    return TransformersBackend.from_loaded(hf_backend.model, processor, "tiny-thinking", "cpu",
                                           "0" * 64)


def test_inline_reasoning_is_split_from_the_answer():
    split = R.split_inline("<think>it shrinks, so\nreversed</think>\nB", "m")
    assert (split.status, split.text, split.answer) == (R.COMPLETE, "it shrinks, so\nreversed", "B")
    opened = R.split_inline("the ball rises</think> F", "m", opened=True)
    assert (opened.status, opened.answer) == (R.COMPLETE, "F")
    assert R.split_inline("F", "m") == R.Reasoning(R.NONE, None, "F")
    # Never parsed from a half thought, even one that ends in a label.
    cut = R.split_inline("<think>so the answer is F", "m")
    assert (cut.status, cut.answer) == (R.CUT_OFF, None)


def test_reasoning_tokens_are_counted_in_the_generated_ids(hf_backend):
    """Local runs counted reasoning tokens by re-tokenising the reasoning's text, which can
    exceed what was generated (outside review): they are the generated tokens up to the one
    that closes the reasoning, so reasoning and answer tokens add up to the tokens out."""
    tokenizer = hf_backend.processor.tokenizer

    def encode(text):
        return tokenizer.encode(text, add_special_tokens=False)

    def decode(ids):
        return tokenizer.decode(ids, skip_special_tokens=True)
    # A model may generate a word letter by letter, not as its tokenizer would encode it.
    spelled = [i for letter in "reversed" for i in encode(letter)]
    answer = encode("\nB")
    ids = encode("<think>") + spelled + encode("</think>") + answer
    split = R.split_generated(ids, decode, "m")
    assert (split.status, split.text, split.answer) == (R.COMPLETE, "reversed", "B")
    assert split.n_tokens == len(ids) - len(answer)
    opened = R.split_generated(spelled + encode("</think>F"), decode, "m", opened=True)
    assert opened.n_tokens == len(spelled) + len(encode("</think>"))
    cut = R.split_generated(encode("<think>") + spelled, decode, "m")
    assert (cut.status, cut.n_tokens) == (R.CUT_OFF, len(spelled) + len(encode("<think>")))
    assert R.split_generated(answer, decode, "m").n_tokens == 0


def test_a_family_thinks_in_its_own_tags():
    text = "\u25c1think\u25b7the wave breaks\u25c1/think\u25b7F"
    assert R.split_inline(text, "/models/Kimi-VL-A3B-Thinking-2506/").answer == "F"
    assert R.split_inline(text, "other-model").status == R.NONE  # not its tags


def test_served_reasoning_and_hidden_reasoning_tokens():
    sent = R.split_served("F", "the shadow grows", "stop", "m", 12)
    assert (sent.status, sent.text, sent.answer, sent.n_tokens) == (
        R.COMPLETE, "the shadow grows", "F", 12)
    assert R.split_served("", "the shadow", "length", "m").status == R.CUT_OFF
    hidden = R.split_served("B", None, "stop", "o3-2025-04-16", 640)  # OpenAI's count only
    assert (hidden.status, hidden.text, hidden.answer) == (R.COMPLETE, None, "B")
    assert R.split_served("", None, "length", "o3", 512).status == R.CUT_OFF
    assert R.split_served("F", None, "stop", "m", 0).status == R.NONE


def _served(reply_for):
    """A script answering every generation with ``reply_for(index)``'s message fields."""
    seen: list = []

    def script(method, path, body):
        if path != "/v1/chat/completions":
            return None
        seen.append(body)
        message, finish, usage = reply_for(len(seen) - 1)
        return 200, {"id": "x", "object": "chat.completion", "model": "tiny",
                     "choices": [{"index": 0, "finish_reason": finish,
                                  "message": {"role": "assistant", **message}}],
                     "usage": usage}, {}
    return script, seen


def _run_http(server, items, cache, params):
    http = load_backend("openai", "tiny", base_url=server.base_url, backoff_s=0.001,
                        concurrency=1)  # replies in the order of the items
    try:
        runner = Runner(http, cache, params, "generate", batch_size=4, progress=False)
        rows = runner.run(items)
    finally:
        http.close()
    return runner, rows


def test_a_servers_reasoning_content_is_kept_apart_and_never_scored(hf_backend, items, tmp_path):
    replies = [  # the reasoning names the wrong label last; the answer is what counts
        ({"content": "F", "reasoning_content": "at first B? no, it falls"}, "stop",
         {"prompt_tokens": 100, "completion_tokens": 30,
          "completion_tokens_details": {"reasoning_tokens": 28}}),
        ({"content": "<think>it rises, so B</think>\nF"}, "stop",
         {"prompt_tokens": 100, "completion_tokens": 9}),
        ({"content": "", "reasoning": "the splash grows, so the answer is"}, "length",
         {"prompt_tokens": 100, "completion_tokens": 64}),
        ({"content": "B"}, "stop", {"prompt_tokens": 100, "completion_tokens": 1}),
    ]
    script, seen = _served(lambda i: replies[i])
    params = GenerationParams(max_new_tokens=64, thinking=True)
    with TinyOpenAIServer(hf_backend, "tiny", script=script) as server, \
            ResultCache(tmp_path / "c.sqlite3") as cache:
        runner, rows = _run_http(server, items, cache, params)
    assert all(b["chat_template_kwargs"] == {"enable_thinking": True} for b in seen)
    extras = [row["extra"] for row in rows]
    assert [row["response"] for row in rows] == ["F", "F", None, "B"]
    assert [e["reasoning_status"] for e in extras] == ["complete", "complete", "cut_off", "none"]
    assert extras[0]["reasoning_text"] == "at first B? no, it falls"
    assert extras[0]["raw_text"] == "F" and extras[0]["tokens_reasoning"] == 28
    assert "reasoning_text" not in extras[1]  # inline: the raw text holds it
    assert extras[1]["raw_text"] == "<think>it rises, so B</think>\nF"
    assert extras[2]["parse_status"] == "reasoning_cut_off"
    assert [e["tokens_in"] for e in extras] == [100] * 4
    assert [e["tokens_out"] for e in extras] == [30, 9, 64, 1]
    assert all(e["thinking"] == "on" and e["model_s"] >= 0 for e in extras)
    assert (runner.stats.cut_off, runner.stats.unparseable) == (1, 0)


def test_a_thinking_budget_cuts_the_reasoning_and_the_item_is_stored_as_cut_off(
        thinking_backend, items):
    budget = GenerationParams(max_new_tokens=8, thinking=True, thinking_budget=3)
    runner = Runner(thinking_backend, _NoCache(), budget, "generate", batch_size=2,
                    progress=False)
    rows = runner.run(items[:2])
    assert thinking_backend.render(items[0].request).endswith("<think>\n")
    assert [r["extra"]["n_new_tokens"] for r in rows] == [3, 3]  # stopped at the budget
    # Every token generated is reasoning: none is left for an answer.
    assert [r["extra"]["tokens_reasoning"] for r in rows] == [3, 3]
    assert {r["extra"]["parse_status"] for r in rows} == {"reasoning_cut_off"}
    assert all(r["response"] is None and r["extra"]["tokens_reasoning"] > 0 for r in rows)
    off = Runner(thinking_backend, _NoCache(), GenerationParams(max_new_tokens=4, thinking=False),
                 "generate", progress=False)
    off_rows = off.run(items[:1])
    assert thinking_backend.render(items[0].request).endswith("</think>\n\n")
    assert off_rows[0]["extra"]["reasoning_status"] == "none"
    assert off_rows[0]["extra"]["thinking"] == "off"


def test_thinking_on_and_off_are_two_runs_and_two_cache_keys(thinking_backend, items):
    keys, runs = set(), set()
    description = thinking_backend.describe()
    for thinking in (True, False, None):
        params = GenerationParams(max_new_tokens=8, thinking=thinking)
        runner = Runner(thinking_backend, _NoCache(), params, "generate", progress=False)
        thinking_backend.check(params, {"generate"})
        keys.add(runner.key(items[0], "generate"))
        runs.add(run_key(RunConfig("hf", "m", TaskSpec(fps=4), params, "generate"), description))
    assert len(keys) == 3 and len(runs) == 3
    budgeted = GenerationParams(max_new_tokens=8, thinking=True, thinking_budget=100)
    assert run_key(RunConfig("hf", "m", TaskSpec(fps=4), budgeted, "generate"),
                   description) not in runs
    # Runs that never set the switch keep the keys they had before it existed.
    assert "thinking" not in GenerationParams().to_dict()


def test_a_template_without_the_switch_refuses_it(hf_backend):
    with pytest.raises(ValueError, match="has no enable_thinking switch"):
        hf_backend.check(GenerationParams(thinking=False), {"generate"})
    hf_backend.check(GenerationParams(), {"generate", "score"})  # leaves it as it was


def test_logit_scoring_of_a_thinking_run_is_refused_with_the_reason():
    params = GenerationParams(thinking=True)
    with pytest.raises(ValueError, match="before any reasoning"):
        RunConfig("hf", "m", TaskSpec(fps=4), params, "logits")
    both = RunConfig("hf", "m", TaskSpec(fps=4), params, "both")
    assert effective_scoring(both) == "generate"
    assert Runner(_Backend(), None, params, "both")._kinds(_Item()) == ["generate"]


def test_openai_families_refuse_the_switch_and_served_budgets_are_refused(hf_backend):
    with TinyOpenAIServer(hf_backend, "gpt-4o") as server:
        http = load_backend("openai", "gpt-4o", base_url=server.base_url)
        with pytest.raises(ValueError, match="a thinking switch"):
            http.check(GenerationParams(thinking=True), {"generate"})
        with pytest.raises(ValueError, match="no standard reasoning budget"):
            http.check(GenerationParams(thinking=True, thinking_budget=10), {"generate"})
        http.close()


class _NoCache:
    def get(self, key):
        return None

    def put(self, key, kind, value):
        pass


class _Backend:
    name = "none"

    def describe(self):
        return {}


class _Item:
    scorable = True


def test_a_strange_usage_never_fails_the_item_or_the_ledger(hf_backend, items, tmp_path):
    script, _ = _served(lambda i: ({"content": "F", "reasoning_content": 7}, None,
                                   {"prompt_tokens": "many", "completion_tokens": -3,
                                    "completion_tokens_details": ["x"]}))
    with TinyOpenAIServer(hf_backend, "tiny", script=script) as server, \
            ResultCache(tmp_path / "c.sqlite3") as cache:
        runner, rows = _run_http(server, items[:1], cache, GenerationParams(max_new_tokens=4))
    assert not runner.stats.errors and rows[0]["response"] == "F"
    assert (rows[0]["extra"]["tokens_in"], rows[0]["extra"]["tokens_out"]) == (0, 0)
    assert rows[0]["extra"]["reasoning_status"] == "none"


def test_a_template_that_opens_reasoning_by_default_is_never_scored_from_its_first_token(
        thinking_backend, items):
    """With --thinking left unset, a template that opens <think> in the prompt (as many
    thinking VLMs' do) was scored from the logits of the first token, inside its reasoning
    (outside review): it is generated only, and --scoring logits is refused with why."""
    params = GenerationParams(max_new_tokens=4)
    assert thinking_backend.render(items[0].request).endswith("<think>\n")
    assert Runner(thinking_backend, _NoCache(), params, "both", progress=False)._kinds(
        items[0]) == ["generate"]
    with pytest.raises(ValueError, match="opens its reasoning in the prompt"):
        Runner(thinking_backend, _NoCache(), params, "logits", progress=False).run(items[:1])
    off = GenerationParams(max_new_tokens=4, thinking=False)  # the switch closes it: scored
    assert Runner(thinking_backend, _NoCache(), off, "both", progress=False)._kinds(
        items[0]) == ["generate", "score"]
