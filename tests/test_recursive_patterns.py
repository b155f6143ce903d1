"""``**`` in a quoted pattern matches any depth of subfolders, as Python's recursive glob and the
shells' ``globstar`` read it: ``'g/**/*.jsonl'`` read only the files one folder down, fewer
rows without a word. Counts by construction: each file holds its own number of rows."""

from __future__ import annotations

import json

import pytest
from harness import run, write_jsonl


def rows(n, shift):
    return [{"confidence": (i + 1) / (n + 2) + shift, "correct": i % 2 == 0} for i in range(n)]


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "g" / "sub" / "deeper").mkdir(parents=True)
    write_jsonl(tmp_path / "g" / "top.jsonl", rows(5, 0.0))
    write_jsonl(tmp_path / "g" / "sub" / "mid.jsonl", rows(7, 0.001))
    write_jsonl(tmp_path / "g" / "sub" / "deeper" / "low.jsonl", rows(11, 0.002))
    (tmp_path / "g" / "sub" / "notes.txt").write_text("not rows\n", encoding="utf-8")
    return tmp_path / "g"


def n_of(*args):
    result = run(["calibrate", *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["n"]


def test_double_star_matches_every_depth(tree):
    # the folder itself (zero subfolders), one down and two down
    assert n_of(f"{tree}/**/*.jsonl") == 5 + 7 + 11


def test_single_star_stays_one_level(tree):
    assert n_of(f"{tree}/*/*.jsonl") == 7
    assert n_of(f"{tree}/*.jsonl") == 5


def test_a_double_star_pattern_stands_for_files_not_folders(tree):
    """``g/sub/**`` matches the folders too; each file is read once."""
    result = run(["calibrate", f"{tree}/sub/**", "--json", "-q"])
    # notes.txt is matched as a file, and read as one: refused, as it would be if named
    assert result.exit_code == 2
    assert "notes.txt" in result.stderr
    assert n_of(f"{tree}/sub/**/*.jsonl") == 7 + 11


def test_a_double_star_pattern_that_matches_nothing_is_an_error(tree):
    result = run(["calibrate", f"{tree}/**/*.parquet"])
    assert result.exit_code == 2
    assert "no file matches this pattern" in result.stderr
