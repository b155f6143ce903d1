"""apply writes each row as its input holds it (a table's rows as a table, JSON rows as JSON): an
output named for another kind (``-o out.jsonl`` of CSV rows, ``-o out.csv`` of JSON rows) would
not read back, and was written without a word. It is exit 2, nothing written; a compression
suffix is looked through, and a name of no known kind is written as it comes."""

from __future__ import annotations

import pytest
from harness import run, write_jsonl

ROWS = [{"confidence": 0.05 + 0.9 * i / 39, "correct": i % 3 != 0} for i in range(40)]
# rows the calibrator was not fitted on: apply refuses those it was (they would score in-sample)
HELD_OUT = [{"confidence": 0.03 + 0.9 * i / 41, "correct": i % 4 != 0} for i in range(40)]


@pytest.fixture
def calibrator(tmp_path):
    rows = write_jsonl(tmp_path / "fit.jsonl", ROWS)
    out = tmp_path / "cal.json"
    made = run(["fit", rows, "--method", "histogram", "-o", out, "-q"])
    assert made.exit_code == 0, made.stderr
    return out


@pytest.fixture
def table(tmp_path):
    body = "".join(f"{r['confidence']!r},{str(r['correct']).lower()}\n" for r in HELD_OUT)
    path = tmp_path / "rows.csv"
    path.write_text("confidence,correct\n" + body, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["out.jsonl", "out.ndjson.gz", "out.JSON", "out.tsv"])
def test_table_rows_to_another_kind_are_refused(tmp_path, calibrator, table, name):
    result = run(["apply", calibrator, table, "-o", tmp_path / name])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: {tmp_path / name}: the rows are written as their input holds them, a CSV "
        "table; name the output .csv"
    )
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["out.csv", "out.tsv.zst"])
def test_json_rows_to_a_table_name_are_refused(tmp_path, calibrator, name):
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    result = run(["apply", calibrator, rows, "-o", tmp_path / name])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: {tmp_path / name}: the rows are written as their input holds them, JSON; name "
        "the output .jsonl"
    )
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["out.csv", "out.csv.gz", "out.txt"])
def test_matching_or_unknown_names_are_written(tmp_path, calibrator, table, name):
    result = run(["apply", calibrator, table, "-o", tmp_path / name, "-q"])
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / name).stat().st_size > 0
