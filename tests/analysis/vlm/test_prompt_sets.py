"""Translated prompt sets (issue 28): the arrow-of-time prompt in the study's language,
chosen per run and part of the run's identity."""
import hashlib
import json
import re
from dataclasses import asdict, replace

import pytest
from sqlalchemy import select

from analysis.vlm import prompt_sets, prompts
from analysis.vlm.run_config import effective_scoring, run_config, run_key
from analysis.vlm.tasks import TaskSpec
from tests.analysis.vlm.test_backend_registry import _options
from webapp.extensions import db
from webapp.models import ModelRun, Session
from webapp.researcher import studies


def texts_of(messages):
    return [part["text"] for m in messages for part in m["content"] if part["type"] == "text"]


@pytest.mark.parametrize("language", list(prompt_sets.TRANSLATIONS))
def test_a_translated_set_asks_in_its_language_with_the_same_labels(language):
    translated = prompt_sets.TRANSLATIONS[language]
    for order in ("FB", "BF"):
        messages = prompts.aot_messages("few-shot-2", order, language=language)
        assert texts_of(messages) == [translated[f"system_{order}"], translated["user"], "F",
                                      translated["user"], "B", translated["user"]]
        system = translated[f"system_{order}"]
        first, second = (re.search(rf"\b{label}\b", system).start() for label in order)
        assert first < second  # the labels named in the run's order
    assert prompts.aot_messages("zero-shot", language=language) != prompts.aot_messages("zero-shot")


def test_the_papers_prompt_is_unchanged_by_default():
    assert texts_of(prompts.aot_messages("zero-shot")) == [prompts.AOT_SYSTEM["FB"],
                                                           prompts.AOT_USER]


@pytest.mark.parametrize(("change", "message"), [
    ({"prompt_language": "fr"}, "no prompt set in 'fr'"),
    ({"prompt_language": "ja", "setting": "simple-cot"}, "English reasoning traces"),
    ({"prompt_language": "ja", "task": "frame_order"}, "is for --task aot"),
])
def test_a_prompt_language_a_run_cannot_use_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        TaskSpec(**change)


def test_the_prompt_language_is_part_of_the_runs_identity():
    english = run_config(_options("hf"))
    japanese = run_config(_options("hf", prompt_language="ja"))
    assert japanese.spec.prompt_language == "ja"
    assert run_key(english, {}) != run_key(japanese, {})
    # A run in the papers' English keeps the identity it had before prompt sets existed.
    before = asdict(english.spec)
    del before["prompt_language"]
    identity = {"backend": "hf", "model": "some/model", "description": {}, "spec": before,
                "params": english.params.to_dict(), "scoring": effective_scoring(english)}
    old = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
    assert run_key(english, {}) == old
    assert run_key(replace(english, spec=replace(english.spec, prompt_language="de")), {}) \
        not in (run_key(english, {}), run_key(japanese, {}))


def test_run_models_in_japanese_is_its_own_run(app, runner, stimulus_set, tiny_model):
    with app.app_context():
        studies.create_study("tiny-study", "arrow-of-time", stimulus_set)
    model = tiny_model("qwen2_5_vl")
    for language in ("en", "ja", "ja"):
        result = runner.invoke(args=["run-models", "--model", model, "--no-progress",
                                     "--max-new-tokens", "4", "--fps", "4", "--study",
                                     "tiny-study", "--limit", "2", "--prompt-language", language])
        assert result.exit_code == 0, result.output
    assert "Stored 0 new trials" in result.output  # the Japanese rerun resumed its own run
    with app.app_context():
        runs = db.session.scalars(select(ModelRun).join(Session).order_by(Session.id)).all()
        assert [run.task["prompt_language"] for run in runs] == ["en", "ja"]
        assert len({run.run_key for run in runs}) == 2
