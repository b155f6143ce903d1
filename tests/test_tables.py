"""Parquet and Arrow IPC inputs: the same rows written as JSON Lines and as a table give the same
report, byte for byte but for the names of the files; errors name the row; a dotted field path
reaches into a struct column; without pyarrow the message says how to add it."""

from __future__ import annotations

import json
import sys

import pytest
from harness import make_rows, run, write_jsonl

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (calibcli[parquet])")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")
feather = pytest.importorskip("pyarrow.feather", reason="pyarrow is not installed")


def write_table(path, rows, *, row_group_size=None):
    table = pa.Table.from_pylist(rows)
    if path.suffix == ".parquet":
        pq.write_table(table, path, row_group_size=row_group_size)
    else:
        feather.write_feather(table, path, chunksize=row_group_size)
    return path


def report(args):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def same_apart_from_file_names(jsonl_out: str, table_out: str, jsonl, table) -> None:
    assert table_out.replace(json.dumps(str(table)), json.dumps(str(jsonl))) == jsonl_out


@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".feather"])
@pytest.mark.parametrize("extra", [[], ["--by", "group"], ["--ci", "0.9", "--bootstrap", "200"]])
def test_calibration_report_is_the_jsonl_report(tmp_path, suffix, extra):
    rows = [{**r, "group": "ab"[i % 2]} for i, r in enumerate(make_rows(3000, seed=3))]
    jsonl = write_jsonl(tmp_path / "rows.jsonl", rows)
    table = write_table(tmp_path / f"rows{suffix}", rows, row_group_size=700)
    same_apart_from_file_names(
        report(["calibrate", str(jsonl), *extra]),
        report(["calibrate", str(table), *extra]),
        jsonl,
        table,
    )


def test_perplexity_report_is_the_jsonl_report(tmp_path):
    rows = [{"nll": 1.25 * (i % 7) + 0.5, "tokens": 3 + i % 5, "bytes": 11 + i} for i in range(500)]
    jsonl = write_jsonl(tmp_path / "p.jsonl", rows)
    table = write_table(tmp_path / "p.parquet", rows, row_group_size=128)
    same_apart_from_file_names(
        report(["perplexity", str(jsonl)]), report(["perplexity", str(table)]), jsonl, table
    )


def test_compare_and_threshold_read_tables(tmp_path):
    rows = make_rows(400, seed=5)
    jsonl = write_jsonl(tmp_path / "a.jsonl", rows)
    table = write_table(tmp_path / "a.parquet", rows, row_group_size=100)
    body = json.loads(report(["compare", str(jsonl), str(table)]))
    assert body["matched"] == 400
    assert body["figures"]["ece"]["base"] == body["figures"]["ece"]["new"]
    same_apart_from_file_names(
        report(["threshold", str(jsonl), "--target-accuracy", "0.7"]),
        report(["threshold", str(table), "--target-accuracy", "0.7"]),
        jsonl,
        table,
    )


def test_an_error_names_the_row(tmp_path):
    rows = [{"confidence": 0.5, "correct": True} for _ in range(2000)]
    rows[1233]["confidence"] = 1.5
    table = write_table(tmp_path / "file.parquet", rows, row_group_size=500)
    result = run(["calibrate", str(table)])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {table}: row 1234: confidence 1.5 is outside [0, 1]\n"
    rows[1233] = {"confidence": 0.5, "correct": None}
    table = write_table(tmp_path / "file.arrow", rows, row_group_size=500)
    result = run(["calibrate", str(table)])
    assert result.stderr == f"Error: {table}: row 1234: correct null is not true/false/0/1\n"


def test_dotted_fields_reach_into_struct_columns(tmp_path):
    rows = [
        {"pred": {"p": r["confidence"], "ok": r["correct"]}, "doc": {"subject": "s" + str(i % 3)}}
        for i, r in enumerate(make_rows(300, seed=9))
    ]
    flat = [
        {"confidence": r["pred"]["p"], "correct": r["pred"]["ok"], "subject": r["doc"]["subject"]}
        for r in rows
    ]
    jsonl = write_jsonl(tmp_path / "flat.jsonl", flat)
    table = write_table(tmp_path / "nested.parquet", rows)
    nested = [
        "--confidence-field",
        "pred.p",
        "--correct-field",
        "pred.ok",
        "--by",
        "doc.subject",
    ]
    from_table = json.loads(report(["calibrate", str(table), *nested]))
    from_jsonl = json.loads(report(["calibrate", str(jsonl), "--by", "subject"]))
    for key in ("n", "accuracy", "ece", "brier", "smece"):
        assert from_table[key] == from_jsonl[key]
    assert from_table["groups"].keys() == from_jsonl["groups"].keys()


def test_a_folder_reads_its_tables(tmp_path):
    rows = make_rows(200, seed=2)
    jsonl = write_jsonl(tmp_path / "all.jsonl", rows)
    folder = tmp_path / "parts"
    folder.mkdir()
    write_table(folder / "a.parquet", rows[:120])
    write_table(folder / "b.feather", rows[120:])
    from_folder = json.loads(report(["calibrate", str(folder)]))
    from_jsonl = json.loads(report(["calibrate", str(jsonl)]))
    for key in ("n", "accuracy", "ece", "brier"):
        assert from_folder[key] == pytest.approx(from_jsonl[key], rel=1e-12)


def test_without_pyarrow_the_message_says_how_to_add_it(tmp_path, monkeypatch):
    from calibcli.io import InputError, read_calibration

    table = write_table(tmp_path / "t.parquet", make_rows(10, seed=1))
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(InputError) as info:
        read_calibration([str(table)])
    assert str(info.value) == (
        f"{table}: reading Parquet and Arrow files needs pyarrow: pip install "
        "'calibcli[parquet]' (or pip install pyarrow)"
    )


def test_a_damaged_table_is_named(tmp_path):
    table = write_table(tmp_path / "t.parquet", make_rows(50, seed=1))
    table.write_bytes(table.read_bytes()[:-40] + b"PAR1")
    result = run(["calibrate", str(table)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"Error: {table}: cannot read the parquet file: ")


def test_apply_refuses_a_table(tmp_path):
    table = write_table(tmp_path / "t.parquet", make_rows(50, seed=1))
    fitted = tmp_path / "cal.json"
    assert run(["fit", str(table), "--method", "platt", "-o", str(fitted), "-q"]).exit_code == 0
    result = run(["apply", str(fitted), str(table)])
    assert result.exit_code == 2
    assert "apply writes JSON Lines: a parquet table is read, not rewritten" in result.stderr
