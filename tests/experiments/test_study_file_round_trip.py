"""A study written back as a file (``export-config``, the edit page) reads back as the same
study, for every character the reader accepts.

The files read first are written here with every character escaped (``\\UXXXXXXXX``), so that
what the reader accepts does not depend on the writer under test.  U+007F was written as it
was, which TOML refuses: the edit page of such a study gave a 500 and ``export-config`` wrote
a file ``validate`` refused.
"""
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from experiments import study_file

MINIMAL = '[study]\ndesign = "arrow-of-time"\nstimulus_set = "s"\n'
# Every code point a TOML string can hold (surrogates cannot be escaped), and the characters
# each way of writing a string has to take care of, drawn more often.
ANY = st.characters(exclude_categories=("Cs",))
AWKWARD = st.sampled_from(list("\"'\\\n\r\t\x00\x1f\x7f\x85\u2028\ufeff{}#[]= ") + ["'''", '"""'])
TEXT = st.lists(ANY | AWKWARD, max_size=30).map("".join)
# A title holds no control, invisible or bidirectional-formatting character, and is not blank.
TITLE = st.text(st.characters(exclude_categories=("Cs", "Cc", "Cf", "Co", "Cn", "Zl", "Zp")),
                min_size=1, max_size=30).filter(str.strip)


def escaped(text: str) -> str:
    return '"' + "".join(f"\\U{ord(char):08X}" for char in text) + '"'


@settings(max_examples=300, deadline=None, derandomize=True)
@given(title=TITLE, contact=TEXT, consent=TEXT, debrief=TEXT)
def test_read_write_read_is_identity(title, contact, consent, debrief):
    source = (MINIMAL + f"title = {escaped(title)}\ncontact = {escaped(contact)}\n"
              f"[texts.en]\nconsent = {escaped(consent)}\ndebrief = {escaped(debrief)}\n")
    config, problems, _ = study_file.check(source)
    assume(config is not None)
    assert study_file.loads(study_file.to_toml(config)) == config


def test_del_in_a_text_is_written_escaped():
    config = study_file.loads(MINIMAL + 'contact = "Room 7\\u007f"\n')
    written = study_file.to_toml(config)
    assert "\x7f" not in written and 'contact = "Room 7\\u007f"' in written
    assert study_file.loads(written) == config
