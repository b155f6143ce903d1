"""Inputs holding the same rows are refused whether or not the rows carry ids.

A copy's ids need not be its original's: a JSON Lines file with the string ids "0" .. "499"
written to CSV (as pandas' ``to_csv`` or the csv module write it) reads back with the numbers
0 .. 499 (CSV cells are typed as JSON), and ids may be renamed ("q0" ..). Ids that differ say
nothing of whether the rows do, so the rows' content is compared on every route: files, a
folder, summaries, merge, ``--part`` pieces and the API. Two files of other rows read as ever,
and --all-runs still pools a copy on purpose.

Every input holds 500 rows of random.Random(seed): a confidence drawn to 4 decimals and an
outcome drawn with probability 1/2, so equal rows in two inputs are a copy (the chance that two
draws hold the same multiset is nil). Counts expected are those sums: 500 rows read once, 1,000
read from two inputs of other rows.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from harness import run

import calibcli
from calibcli.errors import InputError

N = 500
SAME_ROWS = "(the same confidences and outcomes, in any order)"


def draws(n=N, seed=1):
    rng = random.Random(seed)
    return [(round(rng.random(), 4), rng.random() < 0.5) for _ in range(n)]


def write_jsonl(path, rows, ids):
    lines = [
        json.dumps({"id": i, "confidence": c, "correct": y})
        for i, (c, y) in zip(ids, rows, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_csv(path, rows, ids):
    """The rows as pandas' ``to_csv(index=False)`` writes them: a header, the ids and the
    booleans as Python prints them (``0``, ``True``)."""
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(["id", "confidence", "correct"])
        out.writerows([i, c, y] for i, (c, y) in zip(ids, rows, strict=True))
    return path


@pytest.fixture(autouse=True)
def here(tmp_path, monkeypatch):
    """Every test in its own folder, its files named as given (messages name them so)."""
    monkeypatch.chdir(tmp_path)


def string_ids(start=0, n=N, prefix=""):
    return [f"{prefix}{i}" for i in range(start, start + n)]


@pytest.fixture
def sid():
    """sid.jsonl (string ids "0" ..), sid.csv (the same rows, their ids read as 0 ..) and
    base.jsonl (the same rows under the ids "q0" ..)."""
    rows = draws()
    jsonl = write_jsonl(Path("sid.jsonl"), rows, string_ids())
    table = write_csv(Path("sid.csv"), rows, list(range(N)))
    renamed = write_jsonl(Path("base.jsonl"), rows, string_ids(prefix="q"))
    return jsonl, table, renamed


def calibrate(*args):
    return run(["calibrate", *args, "-q", "--json"])


def summarize(source, out, *args):
    made = run(["summarize", source, "--id-field", "id", "-q", "-o", out, *args])
    assert made.exit_code == 0, made.stderr
    return out


def error_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def test_the_csv_written_from_a_file_is_refused_without_ids(sid):
    jsonl, table, _ = sid
    result = calibrate(jsonl, table)
    assert result.exit_code == 2
    assert error_line(result).startswith(f"Error: {table.name}: holds the rows of {jsonl.name} ")


def test_the_csv_written_from_a_file_is_refused_with_ids(sid):
    jsonl, table, _ = sid
    result = calibrate(jsonl, table, "--id-field", "id", "--min-rows", "600")
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert line.startswith(f"Error: {table.name}: holds the rows of {jsonl.name} {SAME_ROWS}")


def test_a_folder_of_a_file_and_its_csv_is_refused_with_ids(sid):
    jsonl, table, _ = sid
    folder = Path("dsid")
    folder.mkdir()
    for path in (jsonl, table):
        (folder / path.name).write_bytes(path.read_bytes())
    result = calibrate(folder, "--id-field", "id", "--min-rows", "600")
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert "holds the rows of" in line and "sid.jsonl" in line and "sid.csv" in line


def test_the_rows_under_renamed_ids_are_refused(sid):
    jsonl, _, renamed = sid
    result = calibrate(jsonl, renamed, "--id-field", "id")
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert line.startswith(f"Error: {renamed.name}: holds the rows of {jsonl.name} {SAME_ROWS}")


def test_a_file_beside_its_shards_is_refused_with_ids(sid):
    _, _, renamed = sid
    rows = draws()
    first = write_jsonl(Path("h1.jsonl"), rows[:200], string_ids(0, 200))
    second = write_jsonl(Path("h2.jsonl"), rows[200:], string_ids(200, 300))
    result = calibrate(first, second, renamed, "--id-field", "id")
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert line.startswith(
        f"Error: {renamed.name}: holds the rows of h1.jsonl and h2.jsonl together"
    )


def test_summaries_with_ids_of_the_same_rows_are_not_merged(sid):
    jsonl, table, renamed = sid
    a = summarize(jsonl, Path("j.cbs"))
    b = summarize(table, Path("c.cbs"))
    result = run(["merge", a, b, "-o", Path("m.cbs"), "-q"])
    assert result.exit_code == 2
    assert f"both hold the same {N} rows, read from sid.jsonl and sid.csv" in error_line(result)
    assert not (Path("m.cbs")).exists()
    # a summary beside another, and beside the file its rows were written to
    c = summarize(renamed, Path("b.cbs"))
    assert calibrate(a, c).exit_code == 2
    result = calibrate(a, table, "--id-field", "id")
    assert result.exit_code == 2
    assert f"sid.csv is read here and its {N} rows are counted in" in error_line(result)


def test_part_pieces_with_ids_beside_a_copy_are_refused(sid):
    jsonl, _, renamed = sid
    pieces = [summarize(jsonl, Path(f"p{k}.cbs"), "--part", f"{k}/2") for k in (1, 2)]
    copy = summarize(renamed, Path("b.cbs"))
    result = run(["merge", *pieces, copy, "-o", Path("m.cbs"), "-q"])
    assert result.exit_code == 2
    assert "base.jsonl (in" in error_line(result) and "holds the rows of sid.jsonl" in result.stderr
    result = calibrate(*pieces, renamed, "--id-field", "id")
    assert result.exit_code == 2
    assert f"base.jsonl is read here and its {N} rows are counted in" in error_line(result)


def test_the_api_refuses_the_same_rows_with_ids(sid):
    jsonl, table, _ = sid
    with pytest.raises(InputError, match=r"holds the rows of sid\.jsonl"):
        calibcli.read_predictions([str(jsonl), str(table)], id_field="id")


def test_all_runs_pools_a_copy_with_ids_on_purpose(sid):
    jsonl, table, _ = sid
    result = calibrate(jsonl, table, "--id-field", "id", "--all-runs")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 2 * N


def test_shards_of_other_rows_still_read():
    # numbered alike (ids not read) and numbered apart (ids read): other rows, counted once each
    a, b = draws(seed=1), draws(seed=2)
    first = write_jsonl(Path("a.jsonl"), a, string_ids())
    second = write_jsonl(Path("b.jsonl"), b, string_ids())
    result = calibrate(first, second)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 2 * N
    apart = write_jsonl(Path("c.jsonl"), b, string_ids(start=N))
    result = calibrate(first, apart, "--id-field", "id")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 2 * N
    # their summaries merge, and read beside each other
    parts = [summarize(p, Path(f"{p.stem}.cbs")) for p in (first, apart)]
    merged = Path("m.cbs")
    result = run(["merge", *parts, "-o", merged, "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(calibrate(merged).stdout)["n"] == 2 * N
