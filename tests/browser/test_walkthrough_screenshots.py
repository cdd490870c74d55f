"""The screenshots of docs/walkthrough.md, taken by walking sessions as a participant does.

Every run takes them; with CHRONOSCOPE_SCREENSHOTS=docs set (`make screenshots`) it writes them
into docs/img/walkthrough/ to be committed, otherwise into a temporary folder, so that a test run
leaves the checkout as it was (three screens differ on every run: the clip's frame, the key
mapping and the completion code). `make docs` fails while the page names a picture that is
missing, and this test fails when the page and the screens a participant meets disagree.
"""
import os
import re
from pathlib import Path

import pytest

from tests.browser.participant import WAITING, answer, enter, screen_state, wait_change

pytestmark = pytest.mark.browser
DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGE = DOCS / "walkthrough.md"
FOLDER = DOCS / "img" / "walkthrough"


def walk(page, site, folder: Path, kind: str, until: str,
         only: tuple[str, ...] = ()) -> list[str]:
    """Answers a session of ``kind`` by hand up to the screen ``until``, saving the first
    sight of each screen that waits for the participant (of ``only``, if given) as
    ``<kind>-<screen>.png``."""
    token = enter(page, site, kind, f"walkthrough-{kind}")
    taken: list[str] = []
    state = screen_state(page)
    while True:
        screen = state["screen"]
        asks = screen not in WAITING and (screen != "clip" or state["onset"] is not None)
        wanted = screen in only if only else asks or screen == until
        if screen and wanted and f"{kind}-{screen}" not in taken:
            taken.append(f"{kind}-{screen}")
            page.screenshot(path=str(folder / f"{kind}-{screen}.png"))
        if screen == until:
            return taken
        if asks:
            answer(page, state, site=site, token=token)
        state = wait_change(page, state)


def test_the_walkthrough_shows_every_screen_a_participant_meets(page, site, tmp_path):
    folder = FOLDER if os.environ.get("CHRONOSCOPE_SCREENSHOTS") == "docs" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    taken = walk(page, site, folder, "aot", until="done")
    taken += walk(page, site, folder, "frame_order", until="frame_order", only=("frame_order",))
    assert all((folder / f"{name}.png").stat().st_size for name in taken)
    shown = re.findall(r"img/walkthrough/([\w-]+)\.png", PAGE.read_text(encoding="utf-8"))
    assert sorted(shown) == sorted(taken), "docs/walkthrough.md and the screens disagree"
    assert not page.js_errors
