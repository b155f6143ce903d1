"""``--part`` cuts plain JSON Lines at line starts; a file of another kind is refused (exit 2)
with a line naming what it is, not taken for a JSON document."""

from __future__ import annotations

import json

import pytest
from harness import run


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "text", "what"),
    [
        ("a.csv", "confidence,correct\n0.5,true\n0.9,false\n", "a CSV table"),
        ("a.tsv", "confidence\tcorrect\n0.5\ttrue\n", "a TSV table"),
        ("a.json", json.dumps([{"confidence": 0.5, "correct": True}]), "a whole JSON document"),
    ],
)
def test_a_file_that_cannot_be_cut_is_named_as_what_it_is(tmp_path, name, text, what):
    path = write(tmp_path / name, text)
    result = run(["summarize", path, "--part", "1/2", "-o", tmp_path / "p.cbs"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {path}: --part cuts plain JSON Lines at line starts; this is {what}"
    )
    assert not (tmp_path / "p.cbs").exists()


def test_a_parquet_table_is_named_too(tmp_path):
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (calibcli[parquet])")
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"confidence": [0.5, 0.9], "correct": [True, False]}), path)
    result = run(["summarize", path, "--part", "1/2", "-o", tmp_path / "p.cbs"])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith("this is a Parquet table")
