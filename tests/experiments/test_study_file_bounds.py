"""Reading a study file is bounded: the files that took a worker down are refused at once, in
little memory, each with its file, line, field and limit; a fuzzer holds the bounds for any
file the upload limit admits; ``{file = ...}`` texts stay in the study file's folder.

Time is CPU time of this thread (``time.process_time``), so other work on the machine does not
count; the bounds here are generous (the old code took 10 s to 30 s on each attack), the
figures against the goal (50 ms) are bench/study_file_limits.py's.
"""
import json
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from experiments import study_file, study_scan, texts

MINIMAL = '[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'
MIB = 2**20


def read(source: str, name="study.toml", base_dir=None):
    """study_file.check of ``source``: (config, problems as text, CPU seconds, peak bytes).

    Time and memory are measured in two runs: tracing every allocation slows the parse by
    an amount that grows with the file's size, and a time taken under tracemalloc failed the
    1 s bound on a loaded machine for a parse that takes 50 ms."""
    started = time.process_time()
    config, problems, _ = study_file.check(source, name, base_dir)
    seconds = time.process_time() - started
    tracemalloc.start()
    try:
        study_file.check(source, name, base_dir)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return config, [str(p) for p in problems], seconds, peak


@pytest.mark.parametrize("line", ["[" + " " * 3000, "[ a" + " " * 3000 + "x", "a" + " ." * 1500])
def test_a_long_line_is_read_in_linear_time(line):
    # Issue 25: the table-header pattern backtracked (a 4.5 KB line stalled a worker 30 s).
    _, problems, seconds, _ = read(MINIMAL + line + "\n")
    assert seconds < 2
    assert problems and problems[0].startswith("study.toml:4: ")


def test_a_long_dotted_key_is_refused_in_little_memory():
    # Issue 25: a 16 KB dotted key peaked a worker at ~700 MB (memory grew with its square).
    _, problems, seconds, peak = read(MINIMAL + ".".join(["a"] * 4000) + " = 1\n")
    assert problems == ["study.toml:4: a.a.a.a.a.a…: expected a key of at most 6 dotted "
                        "parts, got 4000"]
    assert peak < 10 * MIB and seconds < 2


@pytest.mark.parametrize(("nested", "field"), [("languages = " + "[" * 1000 + "]" * 1000,
                                                "study.languages"),
                                               ("[" * 1000, "(file)")])
def test_deep_nesting_is_refused_before_it_recurses(nested, field):
    # Issue 25: 1,000 nested [ raised a RecursionError (a 500 and ~3,000 log lines).
    assert read(MINIMAL + nested + "\n")[1] == [
        f"study.toml:4: {field}: expected arrays and inline tables nested at most 8 deep, got "
        "deeper"]


# 20 language codes that CLDR knows: the most a study may offer.
TWENTY_LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "pl", "cs", "sv", "da", "fi", "el", "tr",
                    "ru", "uk", "ja", "zh", "ko", "ar", "he")


def test_the_stored_form_holds_each_text_once():
    # Issue 25: per-language copies grew a 47 KB file into a 41.7 MB stored snapshot.
    languages = list(TWENTY_LANGUAGES)
    fact = "Ask us. " * (study_file.MAX_TEXT_CHARS // 8)
    source = MINIMAL + f"languages = {json.dumps(languages)}\n" + "".join(
        f'{name} = "{fact}"\n' for name in ("contact", "ethics", "data_retention"))
    config = study_file.loads(source)
    assert len(json.dumps(config.settings())) <= 2 * len(source)
    # What a participant reads is filled in for their language when it is read.
    read_in = study_file.study_texts(config.settings(), config.design.task, "ce")
    assert fact.strip() in read_in["ce"]["consent"]


LIMITS = [
    (MINIMAL + "title = 'x'\n" + "#" * study_scan.MAX_FILE_BYTES, "1: (file): expected a study "
     "file of at most 256 KiB, got 256.1 KiB"),
    (MINIMAL + "".join(f"k{i} = 1\n" for i in range(2001)), "1: (file): expected at most 2000 "
     "keys, got 2003"),
    (MINIMAL + "\n" * 12_000, "1: (file): expected at most 12000 strings, keys, values, lines "
     "and escapes, got 12012"),
    (MINIMAL + "x" * 65 + " = 1\n", "4: " + "x" * 64 + ": expected each part of a key to have "
     "at most 64 characters, got 65"),
    (MINIMAL + "[sessions]\ncount = " + "9" * 5000 + "\n", "5: sessions.count: expected numbers, "
     "dates and words of at most 64 characters, got 5000"),  # tomllib: a ValueError, a 500
    (MINIMAL + "texts.en.consent.file.a.b.c = 1\n", "4: texts.en.consent.file.a.b…: expected "
     "a key of at most 6 dotted parts, got 7"),
    (MINIMAL + "languages = [" + ", ".join(f'"a{c}"' for c in "abcdefghijklmnopqrstu") + "]\n",
     "4: study.languages: expected a list of at most 20 language codes such as [\"en\", "
     "\"de\"], got [\"aa\", \"ab\", \"ac\", \"ad\", \"ae\", \"af\", \"ag\", \"ah\", \"ai\", "
     "\"aj\",… (126 characters)"),
    (MINIMAL + f'[texts.en]\nconsent = "{"x" * 20_001}"\n', "5: texts.en.consent: expected "
     "Markdown of at most 20000 characters, got 20001"),
    (MINIMAL + f'contact = "{"x" * 20_001}"\n', "4: study.contact: expected text of at most "
     "20000 characters, got 20001"),
]


@pytest.mark.parametrize(("source", "problem"), LIMITS)
def test_each_limit_names_line_field_and_limit(source, problem):
    assert read(source)[1] == [f"study.toml:{problem}"]


def test_problems_past_the_first_fifty_are_counted_not_listed():
    _, problems, seconds, _ = read(MINIMAL + "".join(f"unknown_{i} = 1\n" for i in range(1500)))
    assert len(problems) == 51 and seconds < 2
    assert problems[-1] == "study.toml:1: (file): and 1450 more problem(s), shown once these " \
                           "are fixed"


def test_a_study_file_on_disk_is_read_no_further_than_the_limit(tmp_path):
    path = tmp_path / "big.toml"
    path.write_bytes(MINIMAL.encode() + b"#" * study_scan.MAX_FILE_BYTES)
    with pytest.raises(study_file.StudyFileError, match=r"big.toml:1: \(file\): expected a study "
                                                         "file of at most 256 KiB, got more"):
        study_file.load(path)
    path.write_bytes(MINIMAL.encode() + b'title = "\xff"\n')
    with pytest.raises(study_file.StudyFileError, match=r"big.toml:4: \(file\): expected UTF-8"):
        study_file.load(path)


def test_a_study_file_that_cannot_be_read_is_a_problem_of_the_file(tmp_path):
    with pytest.raises(study_file.StudyFileError) as raised:
        study_file.load(tmp_path)  # a folder: the study file's own reader, not a traceback
    assert [str(p) for p in raised.value.problems] == [
        f"{tmp_path.name}:1: (file): cannot be read: Is a directory"]


# --- {file = ...} -------------------------------------------------------------------------

def file_text(folder, name):
    source = MINIMAL + f'[texts.en]\nconsent = {{file = "{name}"}}\n'
    return read(source, "s.toml", folder)[1]


def test_a_text_file_outside_the_study_files_folder_is_refused(tmp_path):
    # Issue 25: {file = "/etc/hostname"} and "../" read any file the server could.
    study = tmp_path / "study"
    study.mkdir()
    (tmp_path / "secret.md").write_text("secret")
    (study / "link.md").symlink_to(tmp_path / "secret.md")
    for name, target in (("/etc/hostname", "/etc/hostname"), ("../secret.md", "secret.md"),
                         ("link.md", "secret.md")):
        assert file_text(study, name) == [
            f"s.toml:5: texts.en.consent: expected a file in the study file's folder ({study}), "
            f"got {name!r}, which is {tmp_path / target if target == 'secret.md' else target}"]


def test_a_text_file_must_be_a_regular_file_of_bounded_size(tmp_path):
    (tmp_path / "folder.md").mkdir()
    (tmp_path / "long.md").write_text("x" * (study_file.MAX_TEXT_CHARS + 1))
    (tmp_path / "fine.md").write_text("Consent, {duration_minutes} minutes.")
    assert file_text(tmp_path, "folder.md") == [
        "s.toml:5: texts.en.consent: expected a readable Markdown file, got 'folder.md' "
        "(not a regular file)"]
    assert file_text(tmp_path, "long.md") == [
        "s.toml:5: texts.en.consent: expected Markdown of at most 20000 characters, got 20001"]
    assert file_text(tmp_path, "fine.md") == []


def test_a_text_file_name_that_cannot_be_resolved_is_a_problem(tmp_path):
    # A NUL character raised a ValueError and a link loop a RuntimeError out of
    # `manage.py study validate` and `create --from` (a traceback, no line).
    (tmp_path / "a.md").symlink_to("b.md")
    (tmp_path / "b.md").symlink_to("a.md")
    assert file_text(tmp_path, "a\\u0000b") == [
        "s.toml:5: texts.en.consent: expected a readable Markdown file, got 'a\\x00b' "
        "(embedded null byte)"]
    assert file_text(tmp_path, "a.md") == [
        "s.toml:5: texts.en.consent: expected a readable Markdown file, got 'a.md' "
        f"(Symlink loop from '{tmp_path / 'a.md'}')"]


# --- the fuzzer -----------------------------------------------------------------------------

# Pieces of study files, benign and hostile; the fuzzer repeats them up to the upload limit.
PIECES = st.sampled_from([
    "a.", "[", "]", "{a = ", "}", '"x", ', "1, ", "\n", "# note\n", " ", "\t", "=", ".",
    'k = "\\n\\t\\u00e9"\n', '"""', "'''", '"', "'", "\\", "[texts.en]\n", "[study]\n",
    'consent = """\n# Consent\n\nAbout {duration_minutes} minutes.\n"""\n',
    'languages = ["en", "de"]\n', "title = 'Pilot'\n", "é€😀", "\x7f", "\r\n",
    "9", "0x", "e", ":00",
]) | st.text(max_size=12)
# What the repeated pieces follow: nothing, or the start of a statement they continue.
HEADS = st.sampled_from(["", MINIMAL] + [MINIMAL + head for head in (
    "[sessions]\ncount = ", "languages = ", 'title = "', "title = '''", "places = [",
    "contact = {en = ", "[texts.en]\nconsent = {file = ", "[blocks]\ncount = 1979-05-27T07:32:00.")])


@st.composite
def study_files(draw):
    """A study file of up to the upload limit: a head, then pieces, each repeated many times."""
    parts = [draw(HEADS)]
    for piece in draw(st.lists(PIECES, min_size=1, max_size=4)):
        parts.append(piece * draw(st.integers(1, study_scan.MAX_FILE_BYTES // max(len(piece), 1))))
    source = "".join(parts)
    while len(source.encode("utf-8", "surrogatepass")) > study_scan.MAX_FILE_BYTES:
        source = source[:len(source) * 3 // 4]
    return source


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(study_files())
def test_fuzzed_files_are_read_within_the_bounds(source):
    config, problems, seconds, peak = read(source)
    assert peak < 50 * MIB
    assert seconds < 1  # CPU time; the goal (50 ms) is measured in bench/study_file_limits.py
    assert all(problem.startswith("study.toml:") for problem in problems)
    if config is not None:
        assert len(json.dumps(config.settings())) <= 2 * len(source.encode()) + FIXED_STORED


# A stored form's part that no file can shrink: what a file of one line adds to the design's.
FIXED_STORED = len(json.dumps(study_file.loads(MINIMAL).settings()))


@st.composite
def valid_study_files(draw):
    """Study files that read as a study: up to 20 languages, lab facts and texts of any length
    up to the limits, as large as the upload limit admits."""
    languages = draw(st.lists(st.sampled_from(TWENTY_LANGUAGES),
                              min_size=1, max_size=20, unique=True))
    longest = study_file.MAX_TEXT_CHARS // 8
    parts = [MINIMAL, f"languages = {json.dumps(languages)}\n"]
    for fact in ("contact", "ethics", "data_retention"):
        parts.append(f'{fact} = "{"Ask us. " * draw(st.integers(1, longest))}"\n')
    for language in draw(st.lists(st.sampled_from(languages), max_size=20, unique=True)):
        parts.append(f"[texts.{language}]\n")
        for key in draw(st.lists(st.sampled_from(texts.text_keys()), max_size=12, unique=True)):
            text = "Lorem ipsum.\n" * draw(st.integers(1, study_file.MAX_TEXT_CHARS // 13))
            parts.append(f"{key} = '''\n{text}'''\n")
    source = "".join(parts)
    assume(len(source.encode()) <= study_scan.MAX_FILE_BYTES)
    return source


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.filter_too_much])
@given(valid_study_files())
def test_a_study_is_stored_in_at_most_twice_its_file(source):
    config, problems, _, peak = read(source)
    assert problems == [] and peak < 50 * MIB
    assert len(json.dumps(config.settings())) <= 2 * len(source.encode())
