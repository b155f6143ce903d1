"""A file read in blocks is trusted block by block only when each line is one object: a line
holding two objects beside an object split across lines (whose continuation opens with "{")
keeps the block's count of lines opening an object equal to the objects decoded, so the lines
are also checked to close one. The file is refused at the line that is not one object, as its
first hundred lines alone are, and on every route."""

from __future__ import annotations

import json
import random

import pytest
from harness import run

TWO = b'{"confidence": 0.99, "correct": false}{"confidence": 0.98, "correct": false}\n'
SPLIT = b'{"confidence": 0.97, "correct": false, "x":\n{"y": 1}}\n'
WHY = "line is not a JSON object (Extra data at column 39)"


def rows(n: int, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = rng.random()
        out.append(json.dumps({"confidence": c, "correct": rng.random() < c}).encode() + b"\n")
    return out


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("extra", [[], ["--workers", "2"]], ids=["one", "workers"])
def test_two_objects_on_a_line_beside_a_split_object_are_refused(tmp_path, ending, extra):
    lines = rows(30_000)  # well past the first block read line by line
    lines[100:100] = [TWO, SPLIT]
    path = tmp_path / "split.jsonl"
    path.write_bytes(b"".join(lines).replace(b"\n", ending))
    result = run(["calibrate", path, "--max-ece", "0.05", "-q", *extra])
    assert result.exit_code == 2, result.stdout
    assert result.stderr == f"Error: {path}:101: {WHY}\n"


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_rows_ending_as_written_read_alike(tmp_path, ending):
    # CRLF endings, and a last line without one, read as the same rows
    lines = rows(30_000, seed=2)
    plain, other = tmp_path / "plain.jsonl", tmp_path / "other.jsonl"
    plain.write_bytes(b"".join(lines))
    other.write_bytes(b"".join(lines).replace(b"\n", ending).rstrip(b"\r\n"))
    first = run(["calibrate", plain, "--json", "-q"])
    second = run(["calibrate", other, "--json", "-q"])
    assert first.exit_code == second.exit_code == 0
    assert json.loads(first.stdout)["n"] == 30_000
    assert json.loads(first.stdout)["ece"] == json.loads(second.stdout)["ece"]


@pytest.mark.parametrize("tail", [b"{", b"}", b"{}", b"}\r"])
def test_a_last_line_of_a_byte_or_two_is_refused_not_raised(tmp_path, tail):
    # the last block of the file is the line alone, shorter than the patterns looked for
    path = tmp_path / "short.jsonl"
    path.write_bytes(b'{"confidence": 0.5, "correct": 1}\n' + tail)
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"Error: {path}:2: ")
    assert "Traceback" not in result.stderr
