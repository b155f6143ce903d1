"""``read_predictions`` refuses what the commands refuse as rows counted twice: a file given
twice, a byte copy, and the same rows in other bytes (another order, without their ids), with
the commands' messages; ``all_runs=True`` pools the rows in other bytes, as --all-runs does,
and refuses a file given twice and a byte copy of rows without ids as it refuses them."""

from __future__ import annotations

import json

import pytest
from harness import run

import calibcli
from calibcli.errors import InputError

N = 40


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path):
    rows = [{"confidence": (i + 0.5) / N, "correct": i % 3 != 0} for i in range(N)]
    a = write(tmp_path / "a.jsonl", rows)
    copy = write(tmp_path / "copy.jsonl", rows)
    reordered = write(tmp_path / "r.jsonl", rows[::-1])
    other = write(tmp_path / "o.jsonl", [{**r, "confidence": r["confidence"] / 2} for r in rows])
    return a, copy, reordered, other


@pytest.mark.parametrize("second", [0, 1, 2], ids=["twice", "byte copy", "reordered"])
def test_the_api_refuses_rows_counted_twice_as_the_command_does(files, second):
    a = files[0]
    pair = [a, files[second]]
    command = run(["calibrate", *pair, "-q"])
    assert command.exit_code == 2
    with pytest.raises(InputError) as caught:
        calibcli.read_predictions(pair)
    assert command.stderr.strip() == f"Error: {caught.value}"
    if second == 2:
        assert len(calibcli.read_predictions(pair, all_runs=True).confidence) == 2 * N
        return
    pooled = run(["calibrate", *pair, "--all-runs", "-q"])
    assert pooled.exit_code == 2
    with pytest.raises(InputError) as caught:
        calibcli.read_predictions(pair, all_runs=True)
    assert pooled.stderr.strip() == f"Error: {caught.value}"


def test_other_rows_are_read(files):
    a, _, _, other = files
    assert len(calibcli.read_predictions([a, other]).confidence) == 2 * N
