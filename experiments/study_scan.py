"""A study file's text before TOML reads it: the limits that keep reading it bounded, and the
line of every key.

``tomllib`` is not bounded by a file's size alone: a dotted key of n parts takes memory growing
with n² (a 16 KB key peaked a worker at ~700 MB), every ``[`` recurses once (a RecursionError
at ~1,000), and each key, array item, line or escape costs a microsecond or more of Python.
:func:`scan` refuses a file past any limit before ``tomllib`` sees it, in two passes whose
Python work is bounded by what the first one counts:

1. Strings and comments are cut out by one substitution that runs in C; what remains is the
   file's structure, whose brackets, separators and lines are counted with ``str.count``.
2. One ``finditer`` finds each line's table header or key (for their lines), every string
   and comment (to step over them), every chain of more dotted parts than a key may have,
   every bracket (for the nesting depth) and every run of letters and digits (for its
   length), so that each refusal names its line and key.

No pattern can backtrack: quantifiers are possessive (``*+``) and the alternatives of a
repeated group start with different characters, so a match costs time linear in its length.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# The largest study file read anywhere (an upload, a file on disk).  The shipped files are
# 2 KB; a study with all its own texts in ten languages is ~110 KB.
MAX_FILE_BYTES = 256 * 1024
MAX_DEPTH = 8  # arrays and inline tables within each other (a study file needs 2)
MAX_KEY_PARTS = 6  # texts.de.consent.file is 4
# Each part of a key (the longest schema key is 25 characters), and each run of letters and
# digits in a value: tomllib converts a 5,000-digit integer into a ValueError, not a problem.
MAX_KEY_CHARS = 64
MAX_KEYS = 2_000  # the schema's ~45 settings and ~127 texts in each of 15 languages fit
# Strings, keys and values, separators and brackets, lines and comments outside strings,
# escapes inside them: each is a step of tomllib's Python (0.1-2 us), so this bounds its time
# (~15 ms); ~130 texts in each of ten languages take ~4,000.
MAX_ITEMS = 12_000

_ML_BASIC = r'"""(?:[^"\\]++|\\.|"(?!""))*+(?:"{3,5}|\Z)'
_ML_LITERAL = r"'''(?:[^']++|'(?!''))*+(?:'{3,5}|\Z)"
_BASIC = r'"(?:[^"\\\r\n]++|\\.)*+"'
_LITERAL = r"'[^'\r\n]*+'"
_COMMENT = r"\#[^\r\n]*+"
_PART = rf"(?:[A-Za-z0-9_-]++|{_BASIC}|{_LITERAL})"
_DOTTED = rf"{_PART}(?:[ \t]*+\.[ \t]*+{_PART})*+"
_FLAGS = re.VERBOSE | re.DOTALL | re.MULTILINE
_STRINGS = re.compile(f"{_ML_BASIC}|{_ML_LITERAL}|{_BASIC}|{_LITERAL}|{_COMMENT}", _FLAGS)
_WORDS = re.compile(r"[A-Za-z0-9_+:-]++")  # bare keys, numbers, dates, true and false
_PARTS = re.compile(_PART)
_WALK = re.compile(rf"""
  ^[ \t]*+(?P<header>\[\[?[ \t]*+)?(?P<key>{_DOTTED})[ \t]*+(?(header)\]|=)
| (?<![A-Za-z0-9_-])(?P<chain>{_PART}(?:[ \t]*+\.[ \t]*+{_PART}){{{MAX_KEY_PARTS}}})
| (?P<open>{_ML_BASIC}|{_ML_LITERAL})
| {_BASIC} | {_LITERAL} | {_COMMENT}
| (?P<bracket>[][{{}}]) | (?P<word>[A-Za-z0-9_-]++) | [^][{{}}\n"'\#A-Za-z0-9_-]++
""", _FLAGS)


@dataclass
class Scan:
    """What :func:`scan` found: ``lines`` maps each table header and key (a tuple path) to its
    first line, ``twice`` lists ``(path, line, first line)`` of keys written twice,
    ``refusal`` is ``(line, field, message)`` of a limit the file passes (None if none),
    ``open_string`` the line of a multi-line string left open to the end of the file."""

    lines: dict[tuple, int] = field(default_factory=dict)
    twice: list[tuple[tuple, int, int]] = field(default_factory=list)
    refusal: tuple[int, str, str] | None = None
    open_string: int | None = None


def scan(source: str) -> Scan:
    """Limits and lines of ``source`` (see the module docstring)."""
    found = Scan()
    found.refusal = _count(source)
    if found.refusal is None:
        found.refusal = _walk(source, found)
    return found


def _count(source: str) -> tuple[int, str, str] | None:
    """The first pass: size, items and nesting depth."""
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        return 1, "(file)", (f"expected a study file of at most {MAX_FILE_BYTES // 1024} KiB, "
                             f"got {size / 1024:.1f} KiB")
    structure, strings = _STRINGS.subn("", source)
    keys = structure.count("=")
    if keys > MAX_KEYS:
        return 1, "(file)", f"expected at most {MAX_KEYS} keys, got {keys}"
    words = _WORDS.subn("", structure)[1]
    items = strings + words + source.count("\\") + sum(map(structure.count, ",=[]{}.\n"))
    if items > MAX_ITEMS:
        return 1, "(file)", (f"expected at most {MAX_ITEMS} strings, keys, values, lines and "
                             f"escapes, got {items}")
    return None


def _walk(source: str, found: Scan) -> tuple[int, str, str] | None:
    """The second pass: every header's and key's line, the limits of keys and nesting."""
    table = path = ()
    line, counted, depth, path_line = 1, 0, 0, 0
    for match in _WALK.finditer(source):
        line += source.count("\n", counted, match.start())
        counted = match.start()
        if match["bracket"] is not None:
            if depth == 0 and line != path_line:  # not the value of the last key
                path = ()
            depth = depth + 1 if match["bracket"] in "[{" else max(depth - 1, 0)
            if depth > MAX_DEPTH:
                return line, ".".join(path) or "(file)", (
                    f"expected arrays and inline tables nested at most {MAX_DEPTH} deep, got "
                    "deeper")
            continue
        if match["word"] is not None:
            if len(match["word"]) > MAX_KEY_CHARS:
                return line, ".".join(path) or "(file)", (
                    f"expected numbers, dates and words of at most {MAX_KEY_CHARS} characters, "
                    f"got {len(match['word'])}")
            continue
        if match["open"] is not None and not match["open"].endswith(match["open"][0] * 3):
            found.open_string = line
        key = match["key"] or match["chain"]
        if key is None:
            continue
        parts = tuple(part.strip("\"'") for part in _PARTS.findall(key))
        refusal = _key_limits(parts, line)
        if refusal or match["chain"]:
            return refusal or (line, ".".join(parts[:MAX_KEY_PARTS]) + "…",
                               f"expected a key of at most {MAX_KEY_PARTS} dotted parts, got "
                               "more")
        path_line = line
        if match["header"]:
            table = path = parts
            found.lines.setdefault(path, line)
            continue
        path = table + parts
        if path in found.lines:
            found.twice.append((path, line, found.lines[path]))
        for end in range(len(table) + 1, len(path) + 1):  # a dotted key's tables, and the key
            found.lines.setdefault(path[:end], line)
    return None


def _key_limits(path: tuple, line: int) -> tuple[int, str, str] | None:
    shown = ".".join(part[:MAX_KEY_CHARS] for part in path[:MAX_KEY_PARTS])
    if len(path) > MAX_KEY_PARTS:
        return line, shown + "…", f"expected a key of at most {MAX_KEY_PARTS} dotted parts, " \
                                  f"got {len(path)}"
    longest = max(map(len, path))
    if longest > MAX_KEY_CHARS:
        return line, shown, f"expected each part of a key to have at most {MAX_KEY_CHARS} " \
                            f"characters, got {longest}"
    return None
