"""experiments.manifest and experiments.categories: every problem reported with its line."""
import json

import pytest

from experiments.categories import CATEGORIES, validate_categories
from experiments.manifest import ManifestError, read_manifest


@pytest.fixture
def clips(tiny_clip, tmp_path):
    """A manifest folder with one good clip (videos/a.mp4) and a broken one."""
    (tmp_path / "videos").mkdir()
    good = tmp_path / "videos" / "a.mp4"
    good.write_bytes(tiny_clip.read_bytes())
    (tmp_path / "videos" / "broken.mp4").write_text("this is not a video")
    return tmp_path


def _write(folder, name, text):
    path = folder / name
    path.write_text(text)
    return path


def test_categories_validation():
    assert CATEGORIES == ("Proceed", "Fall", "Diffusion", "Division", "Put", "Reciprocal")
    assert validate_categories(["Fall", "Diffusion", "Fall"]) == ["Fall", "Diffusion"]
    assert validate_categories([]) == []
    with pytest.raises(ValueError, match="'fall', 'Explosion'"):
        validate_categories(["fall", "Put", "Explosion"])
    with pytest.raises(ValueError, match="list of names"):
        validate_categories("Fall")


def test_valid_csv(clips):
    path = _write(clips, "m.csv",
                  "clip_key,path,categories,annotation_brief,split,item_id_forward\n"
                  "a1,videos/a.mp4,Fall;Diffusion,A ball falls.,test,00001\n"
                  f"a2,{clips / 'videos' / 'a.mp4'},Reciprocal,,,\n")
    specs = read_manifest(path)
    assert [s.clip_key for s in specs] == ["a1", "a2"]
    assert specs[0].path == clips / "videos" / "a.mp4" and specs[1].path.is_absolute()
    assert specs[0].categories == ["Fall", "Diffusion"] and specs[1].categories == ["Reciprocal"]
    assert (specs[0].annotation_brief, specs[0].split) == ("A ball falls.", "test")
    assert (specs[1].annotation_brief, specs[1].split) == (None, None)
    assert specs[0].params == {"item_id_forward": "00001", "source_path": "videos/a.mp4"}


def test_valid_json_with_id_column(clips):
    items = [{"id": "x", "path": "videos/a.mp4", "categories": ["Put"],
              "annotation_comprehensive": "Blocks are stacked."}]
    for text in (json.dumps(items), json.dumps({"clips": items})):
        specs = read_manifest(_write(clips, "m.json", text))
        assert specs[0].clip_key == "x" and specs[0].categories == ["Put"]
        assert specs[0].annotation_comprehensive == "Blocks are stacked."


def test_csv_reports_every_problem_with_its_line(clips):
    path = _write(clips, "m.csv",
                  "clip_key,path,categories\n"            # line 1
                  "ok,videos/a.mp4,Fall\n"                 # line 2
                  "gone,videos/missing.mp4,Fall\n"         # line 3: missing file
                  "junk,videos/broken.mp4,Put\n"           # line 4: unreadable video
                  "odd,videos/a.mp4,Fall;Flying\n"         # line 5: unknown category
                  "ok,videos/a.mp4,Put\n"                  # line 6: duplicate id
                  ",videos/a.mp4,Put\n")                   # line 7: empty id
    with pytest.raises(ManifestError) as caught:
        read_manifest(path)
    problems = caught.value.problems
    assert [line for line, _ in problems] == [3, 4, 5, 6, 7]
    messages = dict(problems)
    assert "file not found" in messages[3] and "unreadable video" in messages[4]
    assert "'Flying'" in messages[5] and "duplicate clip_key 'ok' (first on line 2)" in messages[6]
    assert "empty clip_key" in messages[7]
    text = str(caught.value)
    assert text.startswith("m.csv: 5 problems") and all(f"line {n}:" in text for n in (3, 4, 5, 6, 7))


def test_missing_columns_are_reported_on_the_header(clips):
    path = _write(clips, "m.csv", "name,path\nx,videos/a.mp4\n")
    with pytest.raises(ManifestError) as caught:
        read_manifest(path)
    assert caught.value.problems == [(1, "missing column 'categories'"),
                                     (1, "missing column 'clip_key'")]


def test_multiline_csv_records_keep_their_starting_line(clips):
    path = _write(clips, "m.csv", 'clip_key,path,categories,annotation_brief\n'
                                  'a,videos/a.mp4,Fall,"two\nlines"\n'
                                  'b,videos/missing.mp4,Fall,x\n')
    with pytest.raises(ManifestError) as caught:
        read_manifest(path)
    assert [line for line, _ in caught.value.problems] == [4]


def test_json_problems_carry_line_numbers(clips):
    text = """[
  {"clip_key": "a", "path": "videos/a.mp4", "categories": ["Fall"]},
  {"clip_key": "b",
   "path": "videos/broken.mp4", "categories": ["Fall"]},
  {"clip_key": "c", "categories": ["Fall"]},
  {"clip_key": "a", "path": "videos/a.mp4", "categories": "Put;Nope"},
  "not an object"
]"""
    with pytest.raises(ManifestError) as caught:
        read_manifest(_write(clips, "m.json", text))
    lines = [line for line, _ in caught.value.problems]
    messages = [message for _, message in caught.value.problems]
    assert lines == [3, 5, 6, 6, 7]
    assert "unreadable video" in messages[0] and messages[1] == "missing column 'path'"
    assert any("duplicate clip_key 'a' (first on line 2)" in m for m in messages[2:4])
    assert any("'Nope'" in m for m in messages[2:4])
    assert messages[4] == "expected an object, got str"


@pytest.mark.parametrize("name, text, expected", [
    ("m.json", '[{"clip_key": "a",\n  "path": }]', 2),
    ("m.json", '{"videos": []}', 1),
    ("m.csv", "clip_key,path,categories\n", 1),
    ("m.txt", "whatever", 0),
])
def test_broken_manifests(clips, name, text, expected):
    with pytest.raises(ManifestError) as caught:
        read_manifest(_write(clips, name, text))
    assert caught.value.problems[0][0] == expected
