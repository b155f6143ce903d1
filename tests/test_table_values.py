"""Table values JSON has no type for, read as the same column written to JSON reads.

- A decimal confidence column is read as the double nearest its digits, on the engines'
  partition route too: 0.900000 in a decimal(38, 6) column is 0.9, in the bin [0.9, 1.0), not
  the 0.8999999999999999 of a plain Arrow cast, which would put it in the bin below. The ECE
  of the rows below is computed by hand with Fractions (uniform bins, [k/10, (k+1)/10)).
- ``--by`` on a Parquet date or timestamp column groups by its ISO text, as the same column
  written as JSON strings does; a binary column is refused (exit 2), not a traceback."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from fractions import Fraction

import pytest
from harness import run

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

# (confidence, rows, right): 0.85 and 0.90 fall in two bins; in one they would cancel
CELLS = [("0.30", 100, 30), ("0.50", 100, 50), ("0.85", 100, 95), ("0.90", 100, 80)]


def by_hand_ece() -> Fraction:
    n = sum(rows for _, rows, _ in CELLS)
    bins: dict[int, list[Fraction]] = {}
    for text, rows, right in CELLS:
        c = Fraction(text)
        k = min(int(c * 10), 9)
        conf, acc, count = bins.get(k, [Fraction(0), Fraction(0), 0])
        bins[k] = [conf + c * rows, acc + right, count + rows]
    return sum(abs(conf - acc) for conf, acc, _ in bins.values()) / n


def decimal_batch(scale: int):
    conf, correct = [], []
    for text, rows, right in CELLS:
        conf += [Decimal(text).quantize(Decimal(1).scaleb(-scale))] * rows
        correct += [True] * right + [False] * (rows - right)
    return pa.RecordBatch.from_arrays(
        [pa.array(conf, pa.decimal128(38, scale)), pa.array(correct)],
        names=["confidence", "correct"],
    )


@pytest.mark.parametrize("scale", [2, 6, 11, 20])
def test_the_partition_route_reads_decimals_by_their_digits(scale):
    from calibcli.engines import finish, frame_spec, frame_task

    batch = decimal_batch(scale)
    spec, table = frame_spec("calibration", ("confidence", "correct"), label="t")
    body = finish(frame_task(spec, table, 0, [batch])).report(limits={"ece": 0.04})
    assert body["ece"] == pytest.approx(float(by_hand_ece()), abs=1e-15)
    assert float(by_hand_ece()) == 0.05
    assert body["gate"]["passed"] is False
    assert body["reliability"]["count"] == [0, 0, 0, 100, 0, 100, 0, 0, 100, 100]


def test_the_file_route_reads_decimals_alike(tmp_path):
    path = tmp_path / "dec.parquet"
    pq.write_table(pa.Table.from_batches([decimal_batch(6)]), path)
    result = run(["calibrate", path, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["ece"] == pytest.approx(0.05, abs=1e-15)


def rows_by_day(tmp_path, values, name):
    conf = [0.2 + 0.6 * i / 119 for i in range(120)]
    correct = [i % 3 != 0 for i in range(120)]
    days = [values[i % 3] for i in range(120)]
    path = tmp_path / name
    pq.write_table(pa.table({"confidence": conf, "correct": correct, "day": days}), path)
    return path, conf, correct


@pytest.mark.parametrize(
    "values, names",
    [
        ([dt.date(2024, 1, d) for d in (1, 2, 3)], ["2024-01-01", "2024-01-02", "2024-01-03"]),
        (
            [dt.datetime(2024, 1, d, 12, 30) for d in (1, 2, 3)],
            ["2024-01-01T12:30:00", "2024-01-02T12:30:00", "2024-01-03T12:30:00"],
        ),
    ],
)
def test_by_a_date_column_groups_by_its_iso_text(tmp_path, values, names):
    path, conf, correct = rows_by_day(tmp_path, values, "days.parquet")
    same = tmp_path / "days.jsonl"
    same.write_text(
        "".join(
            json.dumps({"confidence": c, "correct": k, "day": names[i % 3]}) + "\n"
            for i, (c, k) in enumerate(zip(conf, correct, strict=True))
        )
    )
    table = run(["calibrate", path, "--by", "day", "--json", "-q"])
    assert table.exit_code == 0, table.stderr
    text = run(["calibrate", same, "--by", "day", "--json", "-q"])
    got, want = json.loads(table.stdout), json.loads(text.stdout)
    assert sorted(got["groups"]) == names
    for body in (got, want):
        body.pop("input", None)
        body.pop("inputs", None)
    assert got == want


def test_by_a_binary_column_is_refused(tmp_path):
    path, _, _ = rows_by_day(tmp_path, [b"a", b"b", b"c"], "bin.parquet")
    result = run(["calibrate", path, "--by", "day"])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "row 1: day is binary: a group is named by text, a number, a boolean or a date"
    )
