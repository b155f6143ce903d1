"""CSV and TSV tables: each record is read as the JSON row its cells spell, so a table written
from JSON Lines gives the JSON Lines' figures, and errors name the file and the line a record
starts on.

The references are independent of the table reader: the same rows written as JSON Lines (read
by the line reader), tables written by Python's csv module and by pandas, and a Brier score
computed here by hand."""

from __future__ import annotations

import csv
import gzip
import io
import json
import math

import pytest
from harness import make_rows, run, write_jsonl

from calibcli.io.delimited import cell, cell_span


def report(*args):
    result = run([*map(str, args), "--json", "-q"])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def write_table(path, rows, delimiter=","):
    fields = list(rows[0])
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fields, delimiter=delimiter)
        writer.writeheader()
        for row in rows:
            writer.writerow({k: spelled(v) for k, v in row.items()})
    return path


def spelled(value):
    """A cell's text: booleans as JSON spells them, a float's every digit (repr)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else repr(value)


FIGURES = ("n", "accuracy", "ece", "brier", "smece", "nll", "auroc", "mce", "rmsce")


@pytest.mark.parametrize(("name", "delimiter"), [("p.csv", ","), ("p.tsv", "\t")])
def test_a_table_gives_the_figures_of_the_json_lines_it_was_written_from(tmp_path, name, delimiter):
    rows = make_rows(500, seed=3)
    lines = report("calibrate", write_jsonl(tmp_path / "p.jsonl", rows))
    table = report("calibrate", write_table(tmp_path / name, rows, delimiter))
    assert {k: table[k] for k in FIGURES} == {k: lines[k] for k in FIGURES}
    assert table["reliability"] == lines["reliability"]


def test_brier_of_a_small_table_by_hand(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,confidence,correct\nq1,0.9,true\nq2,0.2,False\nq3,0.7,1\nq4,0.6,0\n")
    got = report("calibrate", path)
    assert got["n"] == 4
    brier = ((0.9 - 1) ** 2 + 0.2**2 + (0.7 - 1) ** 2 + 0.6**2) / 4
    assert got["brier"] == pytest.approx(brier, rel=1e-15)
    assert got["accuracy"] == 0.5


def test_pandas_to_csv_with_its_index_and_true_false(tmp_path):
    import pandas as pd

    rows = make_rows(300, seed=5)
    frame = pd.DataFrame(rows)
    frame["subject"] = ["law" if i % 3 else "history" for i in range(len(rows))]
    frame.to_csv(tmp_path / "p.csv")  # an unnamed index column first, True/False, repr floats
    records = frame.to_dict("records")  # the same values, as JSON Lines the line reader reads
    reference = report("calibrate", write_jsonl(tmp_path / "p.jsonl", records), "--by", "subject")
    got = report("calibrate", tmp_path / "p.csv", "--by", "subject")
    assert {k: got[k] for k in FIGURES} == {k: reference[k] for k in FIGURES}
    assert got["groups"] == reference["groups"]


def test_perplexity_rows(tmp_path):
    rows = [{"nll": 12.5, "tokens": 10}, {"nll": 3.25, "tokens": 4}, {"nll": 0.0, "tokens": 0}]
    lines = report("perplexity", write_jsonl(tmp_path / "p.jsonl", rows))
    table = report("perplexity", write_table(tmp_path / "p.csv", rows))
    assert table == lines
    assert table["total_tokens"] == 14
    assert table["perplexity"] == pytest.approx(math.exp(15.75 / 14), rel=1e-15)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "id,confidence,correct\nq1,0.9,true\n\nq4,1.5,true\n",
            "p.csv:4: confidence 1.5 is outside [0, 1]",
        ),
        (
            "id,confidence,correct\nq1,0.9,true,3\n",
            "p.csv:2: 4 cells where the header names 3 columns",
        ),
        ("id,confidence,correct\nq1,0.9\n", "p.csv:2: 2 cells where the header names 3 columns"),
        ("id,confidence,id\nq1,0.9,true\n", "p.csv:1: the header names column 'id' twice"),
        ("id,confidence,correct\nq1,0.9,yes\n", 'p.csv:2: correct "yes" is not true/false/0/1'),
        ("id,confidence,correct\nq1,,true\n", "p.csv:2: confidence null is not a number"),
        ("id,confidence,correct\nq1,nan,true\n", "p.csv:2: confidence NaN is not a number"),
        # a quoted cell over two lines: the record after it starts on line 4
        (
            'id,confidence,correct\n"q\n1",0.5,true\nq2,2,true\n',
            "p.csv:4: confidence 2 is outside [0, 1]",
        ),
        ('id,confidence,correct\nq1,"0.9,true\n', "p.csv:2: malformed CSV: unexpected end of data"),
    ],
)
def test_bad_records_are_named_by_file_and_line(tmp_path, monkeypatch, text, message):
    monkeypatch.chdir(tmp_path)
    path = "p.csv"
    (tmp_path / path).write_text(text, encoding="utf-8")
    result = run(["calibrate", path, "--json"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"Error: {message}"]


def test_encodings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    utf16 = tmp_path / "u.csv"
    utf16.write_text("id,confidence,correct\nq1,0.9,true\n", encoding="utf-16")
    result = run(["calibrate", "u.csv"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: u.csv: UTF-16 text; calibcli reads UTF-8"
    latin = tmp_path / "l.csv"
    latin.write_bytes(
        "id,subject,confidence,correct\nq1,law,0.9,true\nq2,d\u00e9j\u00e0,0.1,false\n".encode(
            "latin-1"
        )
    )
    result = run(["calibrate", "l.csv"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: l.csv:3: the text is not UTF-8; calibcli reads UTF-8"


def test_bom_crlf_semicolons_spaces_and_gzip_read_as_the_plain_table(tmp_path):
    plain = tmp_path / "plain.csv"
    plain.write_text("id,confidence,correct\nq1,0.9,true\nq2,0.25,false\nq3,0.5,true\n")
    expected = report("calibrate", plain)
    variants = {
        "bom.csv": "\ufeffid,confidence,correct\r\nq1,0.9,true\r\nq2,0.25,false\r\nq3,0.5,true\r\n",
        "semi.csv": "id;confidence;correct\nq1;0.9;TRUE\nq2;0.25;FALSE\nq3;0.5;True\n",
        "spaces.csv": "id, confidence, correct\nq1, 0.9, true\nq2, 0.25, false\n\n\nq3, 0.5, 1\n",
    }
    for name, text in variants.items():
        (tmp_path / name).write_text(text, encoding="utf-8", newline="")
        got = report("calibrate", tmp_path / name)
        assert {k: got[k] for k in FIGURES} == {k: expected[k] for k in FIGURES}, name
    packed = tmp_path / "packed.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    got = report("calibrate", packed)
    assert {k: got[k] for k in FIGURES} == {k: expected[k] for k in FIGURES}


def test_a_folder_reads_its_tables_and_a_dotted_header_names_a_field(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "a.csv").write_text("id,doc.subject,confidence,correct\na1,law,0.9,true\n")
    (folder / "b.tsv").write_text("id\tdoc.subject\tconfidence\tcorrect\nb1\tart\t0.3\tfalse\n")
    got = report("calibrate", folder, "--by", "doc.subject")
    assert got["n"] == 2
    assert sorted(got["groups"]) == ["art", "law"]


def test_compare_matches_the_rows_of_two_tables_by_id(tmp_path):
    base = [
        {"id": f"q{i}", "confidence": (i % 9 + 1) / 10, "correct": i % 2 == 0} for i in range(40)
    ]
    new = [{**row, "confidence": 0.5} for row in reversed(base)]  # another order
    tables = report(
        "compare", write_table(tmp_path / "b.csv", base), write_table(tmp_path / "n.csv", new)
    )
    lines = report(
        "compare", write_jsonl(tmp_path / "b.jsonl", base), write_jsonl(tmp_path / "n.jsonl", new)
    )
    assert tables["matched"] == 40
    assert tables["unmatched_base"] == tables["unmatched_new"] == 0
    assert json.dumps(tables).replace(".csv", ".jsonl") == json.dumps(lines)


def fitted(tmp_path, method="platt", by=()):
    rows = make_rows(400, seed=9)
    for i, row in enumerate(rows):
        row["subject"] = "law" if i % 2 else "art"
    path = tmp_path / "cal.json"
    args = ["fit", write_jsonl(tmp_path / "dev.jsonl", rows), "--method", method, "-o", path]
    result = run([*args, *by, "-q"])
    assert result.exit_code == 0, result.stderr
    return path


TABLE = (
    "id,subject,confidence,correct\r\n"
    "q1,law,0.9,true\r\n"
    '"q,2",art, 0.2,False\r\n'
    "\r\n"
    'q3,"his\r\ntory ""x""","0.7",1\r\n'
    "q4,law,1e-1,0"  # no line break after the last record
)


@pytest.mark.parametrize("by", [(), ("--by", "subject")])
def test_apply_writes_a_table_back_with_the_confidence_cells_replaced(tmp_path, by):
    calibrator = fitted(tmp_path, by=by)
    table = tmp_path / "p.csv"
    table.write_text(TABLE, encoding="utf-8", newline="")
    result = run(["apply", calibrator, table, *by, "-q"])
    assert result.exit_code == 0, result.stderr
    # the expected confidences: apply on the same rows as JSON Lines
    with open(table, newline="", encoding="utf-8") as f:
        records = list(csv.DictReader(f, skipinitialspace=True))
    rows = [{**r, "confidence": float(r["confidence"])} for r in records]
    lines = run(["apply", calibrator, write_jsonl(tmp_path / "p.jsonl", rows), *by, "-q"])
    assert lines.exit_code == 0, lines.stderr
    mapped = [json.loads(line)["confidence"] for line in lines.stdout.splitlines()]
    # every other character kept; the header as written; each record ends with a newline
    expected = (
        "id,subject,confidence,correct\n"
        f"q1,law,{mapped[0]!r},true\n"
        f'"q,2",art,{mapped[1]!r},False\n'
        f'q3,"his\r\ntory ""x""",{mapped[2]!r},1\n'
        f"q4,law,{mapped[3]!r},0\n"
    )
    assert result.stdout_bytes.decode("utf-8") == expected  # stdout would turn \r\n into \n
    assert mapped != [0.9, 0.2, 0.7, 0.1]


def test_apply_of_tables_writes_one_header_and_refuses_other_columns_or_json(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calibrator = fitted(tmp_path)
    (tmp_path / "a.csv").write_text("id,confidence\na1,0.5\n")
    (tmp_path / "b.csv").write_text("id,confidence\nb1,0.25\n")
    (tmp_path / "c.csv").write_text("id,p\nc1,0.25\n")
    write_jsonl(tmp_path / "d.jsonl", [{"id": "d1", "confidence": 0.5}])
    both = run(["apply", calibrator, "a.csv", "b.csv", "-q"])
    assert both.exit_code == 0, both.stderr
    assert both.stdout.splitlines()[0] == "id,confidence"
    assert [line.split(",")[0] for line in both.stdout.splitlines()] == ["id", "a1", "b1"]
    for files, message in (
        (["a.csv", "c.csv"], "c.csv:1: its header names other columns than a.csv's"),
        (
            ["a.csv", "d.jsonl"],
            "d.jsonl: apply writes the rows of a.csv as a table, and this file's as JSON Lines: "
            "rewrite tables and other files in separate runs",
        ),
    ):
        result = run(["apply", calibrator, *files, "-o", "out.csv"])
        assert result.exit_code == 2
        assert result.stderr.strip() == f"Error: {message}"
        assert not (tmp_path / "out.csv").exists()


def test_apply_names_a_bad_record_by_its_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calibrator = fitted(tmp_path)
    (tmp_path / "p.csv").write_text('id,confidence\n"a\n1",0.5\nq2,1.5\n')
    result = run(["apply", calibrator, "p.csv"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: p.csv:4: confidence 1.5 is outside [0, 1]"
    (tmp_path / "l.csv").write_bytes(b"id,confidence\nq1,0.5\nd\xe9j\xe0,0.5\n")
    result = run(["apply", calibrator, "l.csv"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "Error: l.csv:3: the text is not UTF-8; calibcli reads UTF-8"


def parsed(text):
    """The cells of one record as the csv module reads them (an empty text: one empty cell)."""
    records = list(csv.reader(io.StringIO(text, newline=""), skipinitialspace=True))
    assert len(records) <= 1, text
    return records[0] if records else [""]


@pytest.mark.parametrize("seed", range(5))
def test_a_cell_s_span_holds_what_the_csv_module_reads_there(seed):
    import random

    rng = random.Random(seed)
    alphabet = ["a", "1", ".", " ", ",", '"', "\n", ";", "x"]
    for _ in range(200):
        cells = ["".join(rng.choices(alphabet, k=rng.randrange(0, 6))) for _ in range(4)]
        buffer = io.StringIO()
        csv.writer(buffer).writerow(cells)  # quoting a cell with a line break in it
        text = buffer.getvalue().removesuffix("\r\n")
        read = parsed(text)
        for column in range(4):
            start, end = cell_span(text, column, ",")
            assert parsed(text[start:end]) == [read[column]], (text, column)
            replaced = text[:start] + "0.5" + text[end:]
            after = parsed(replaced)
            assert after == [*read[:column], "0.5", *read[column + 1 :]], (text, column)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("", None),
        ("true", True),
        ("FALSE", False),
        ("True", True),
        ("0", 0),
        ("-12", -12),
        ("007", "007"),  # leading zeros: an id, not a number
        ("0.5", 0.5),
        ("5.", 5.0),
        (".5", 0.5),
        ("1e-3", 0.001),
        ("-2.5E+2", -250.0),
        ("inf", float("inf")),
        ("-Infinity", float("-inf")),
        ("q12", "q12"),
        ("1,5", "1,5"),
        ("truth", "truth"),
        ("0x10", "0x10"),
        (" 1", " 1"),
    ],
)
def test_a_cell_is_the_json_value_it_spells(text, value):
    got = cell(text)
    assert got == value
    assert type(got) is type(value)


def test_a_nan_cell_is_a_float_nan():
    got = cell("NaN")
    assert isinstance(got, float) and got != got


def test_a_line_past_the_bound_is_refused_at_its_line(tmp_path, monkeypatch):
    from calibcli.io import sources

    monkeypatch.setattr(sources, "MAX_LINE_BYTES", 1 << 20)
    monkeypatch.chdir(tmp_path)
    long_id = "q" * (1 << 20)
    (tmp_path / "p.csv").write_text(f"id,confidence,correct\nq1,0.5,true\n{long_id},0.5,true\n")
    result = run(["calibrate", "p.csv"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: p.csv:3: line longer than 1 MiB, the most a table's line may hold"
    )


def test_a_table_under_another_name_is_refused_with_a_hint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = "id,confidence,correct\nq1,0.9,true\n"
    (tmp_path / "p.txt").write_text(text)
    hint = "; a CSV or TSV table is read from a file named .csv or .tsv"
    for args, name in ((["p.txt"], "p.txt"), (["-"], "<stdin>")):
        result = run(["calibrate", *args], input=text)
        assert result.exit_code == 2
        assert result.stderr.strip() == (
            f"Error: {name}:1: line is not a JSON object (Expecting value at column 1){hint}"
        )


@pytest.mark.parametrize(
    ("text", "column", "cells"),
    [
        ('a, "b,c",d', 1, ["a", "b,c", "d"]),  # a quoted cell after a space
        ('a,b"c,d', 2, ["a", 'b"c', "d"]),  # a quote inside an unquoted cell is a character
        ('"",,"x"', 1, ["", "", "x"]),
        ("a;b", 0, ["a;b"]),
    ],
)
def test_a_cell_s_span_in_written_by_hand_records(text, column, cells):
    assert parsed(text) == cells
    start, end = cell_span(text, column, ",")
    assert parsed(text[start:end]) == [cells[column]]
    assert parsed(text[:start] + "9" + text[end:]) == [*cells[:column], "9", *cells[column + 1 :]]


def test_compare_of_a_table_that_matches_nothing_says_how_its_ids_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [{"id": i, "confidence": 0.5, "correct": i % 2 == 0} for i in range(40)]
    write_table(tmp_path / "a.csv", rows)  # ids 0, 1, ...: numbers
    write_jsonl(tmp_path / "b.jsonl", [{**r, "id": str(r["id"])} for r in rows])
    result = run(["compare", "a.csv", "b.jsonl"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: no row of a.csv matches a row of b.jsonl by id; check --id-field, or use "
        "--unpaired; a table's id 12 reads as the number 12, which matches 12 in JSON, not "
        '"12"'
    )
    write_jsonl(tmp_path / "c.jsonl", rows)  # numbers too: every row matches
    assert run(["compare", "a.csv", "c.jsonl", "--json", "-q"]).exit_code == 0


def test_apply_keeps_a_header_whose_quoted_name_holds_a_line_break(tmp_path):
    calibrator = fitted(tmp_path)
    table = tmp_path / "p.csv"
    table.write_text('"question\nid",confidence\nq1,0.5\n')
    result = run(["apply", calibrator, table, "-q"])
    assert result.exit_code == 0, result.stderr
    header, _ = result.stdout.split("\nq1,", 1)
    assert header == '"question\nid",confidence'
    assert parsed(header) == ["question\nid", "confidence"]
