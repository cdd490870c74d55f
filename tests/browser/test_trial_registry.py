"""The browser's trial types (static/js/trials/index.js, one module per type) are the server's:
the registry, loaded in the real browser, names exactly ``BROWSER_TYPES``, and every module
is the whole browser side of its type (run, feedback, simulate, instructions)."""
import json
import re
from pathlib import Path

import pytest

from experiments import texts
from experiments.trial_types import BROWSER_TYPES

pytestmark = pytest.mark.browser

JS = Path(__file__).resolve().parents[2] / "static" / "js"
REGISTRY = "/static/js/trials/index.js"
PARTS = ("run", "feedback", "simulate", "instructions")


@pytest.fixture
def registry(page, site):
    page.goto(f"{site.base_url}/static/css/runner.css")  # any same-origin page
    got = page.evaluate(f"""async () => {{
        const {{ TRIAL_TYPES }} = await import('{REGISTRY}');
        return Object.entries(TRIAL_TYPES).map(([key, type]) => ({{
            key, name: type.name,
            parts: Object.fromEntries({json.dumps(PARTS)}.map((p) => [p, typeof type[p]])),
        }}));
    }}""")
    assert not page.js_errors
    return got


def test_registry_names_are_the_servers_browser_types(registry):
    assert sorted(entry["key"] for entry in registry) == sorted(BROWSER_TYPES)
    assert all(entry["key"] == entry["name"] for entry in registry)


def test_every_trial_module_exports_its_parts(registry):
    for entry in registry:
        assert entry["parts"] == {part: "function" for part in PARTS}, entry["key"]


def test_instructions_are_paragraphs_of_known_texts(page, site):
    page.goto(f"{site.base_url}/static/css/runner.css")
    session = {"response_keys": ["f", "j"], "key_mapping": {"f": "F", "j": "B"}, "trials": []}
    got = page.evaluate(f"""async () => {{
        const {{ TRIAL_TYPES }} = await import('{REGISTRY}');
        return Object.values(TRIAL_TYPES).map((type) => type.instructions({json.dumps(session)}));
    }}""")
    assert len(got) == len(BROWSER_TYPES)
    # Paragraphs are text keys, or [key, placeholders]: the runner holds no English itself.
    keys = set(texts.text_keys())
    for paragraphs in got:
        assert paragraphs
        for paragraph in paragraphs:
            key = paragraph if isinstance(paragraph, str) else paragraph[0]
            assert key in keys, paragraph


def test_no_other_script_lists_trial_type_names():
    # The registry and the types' own modules are the only places a type is named.
    names = re.compile("|".join(rf"[\"'`]{re.escape(name)}[\"'`]" for name in BROWSER_TYPES))
    others = [p for p in JS.rglob("*.js") if p.parent.name != "trials"]
    assert others
    found = {str(p.relative_to(JS)): names.findall(p.read_text()) for p in others}
    assert not {path: hits for path, hits in found.items() if hits}
