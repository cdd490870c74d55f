"""Keys a browser keeps for itself: a study's response keys should avoid them.

Keys are named as the runner compares them (``static/js/trials/aot.js``, ``keyName``): a
letter key by its physical letter in lower case ("f"), any other key by its lower-cased
``KeyboardEvent.key`` ("escape", "f11").  A study's keys are a design setting
(``Design.response_keys``, "f" and "j" in both shipped designs); the warnings apply to them
whichever way they were chosen, for the browser engines the study accepts (a key only one
engine keeps is no concern for a study that refuses that engine).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class ReservedKey:
    key: str
    where: str
    what: str
    source: str
    # The engines (``experiments.study_file.BROWSERS``) that keep the key.
    engines: tuple[str, ...] = ("chromium", "firefox", "webkit")


# Only keys that, pressed during a trial, can never count as an answer in a browser that
# participants use.  The runner asks for fullscreen, so keys that leave it are the ones to fear.
RESERVED_KEYS = (
    # Browsers leave fullscreen on Escape and keep the key from the page, as the Fullscreen
    # API lets them (it names Escape as the way out).
    ReservedKey("escape", "every browser in fullscreen",
                "leaves fullscreen and never reaches the page",
                "https://fullscreen.spec.whatwg.org/#ui"),
    # WebKitGTK (GNOME Web / Epiphany and other GTK web views) leaves fullscreen on Escape, f
    # and F before the page sees the key: webkitWebViewBaseKeyPressEvent.
    ReservedKey("f", "WebKitGTK browsers (GNOME Web / Epiphany) in fullscreen",
                "leaves fullscreen and never reaches the page",
                "WebKit/WebKit Source/WebKit/UIProcess/API/gtk/WebKitWebViewBase.cpp",
                ("webkit",)),
    # F11 is the browser's own fullscreen toggle in Chromium and Firefox on Windows and Linux;
    # a page sees it only under the Keyboard Lock API, which exists for exactly such keys.
    ReservedKey("f11", "Chromium and Firefox on Windows and Linux",
                "toggles the browser's fullscreen and never reaches the page",
                "https://wicg.github.io/keyboard-lock/", ("chromium", "firefox")),
)

_ALIASES = {"esc": "escape"}  # the name pre-Chromium Edge gave Escape


def key_name(key: str) -> str:
    """A key as the runner names it: lower case, with old aliases resolved."""
    name = key.strip().lower()
    return _ALIASES.get(name, name)


def reserved_key_warnings(keys: Iterable[str], browsers: Iterable[str] | None = None,
                          ) -> list[str]:
    """One warning per response key that a browser the study accepts keeps from the page.

    Parameters
    ----------
    keys
        The study's response keys (``Design.response_keys``).
    browsers
        The engines the study accepts (``StudyConfig.browsers``); None: every engine.

    Returns
    -------
    list of str
        Human-readable warnings, in the order of ``keys`` and of :data:`RESERVED_KEYS`;
        empty when every key is safe.

    Examples
    --------
    >>> reserved_key_warnings(["j", "k"])
    []
    >>> reserved_key_warnings(["F", "j"])[0].startswith("Response key 'f': in WebKitGTK")
    True
    >>> reserved_key_warnings(["f", "j"], browsers=["chromium", "firefox"])
    []
    """
    accepted = None if browsers is None else set(browsers)
    warnings = []
    for key in dict.fromkeys(key_name(k) for k in keys):
        for reserved in RESERVED_KEYS:
            if reserved.key == key and (accepted is None or accepted & set(reserved.engines)):
                warnings.append(
                    f"Response key {key!r}: in {reserved.where} it {reserved.what}, so no "
                    f"press of it is ever an answer there: each presentation is lost and the "
                    f"trial offered again, then stored technical (source: {reserved.source}).")
    return warnings
