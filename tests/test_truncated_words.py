"""A compressed input cut short is refused in the same words whatever reads it: JSON Lines,
standard input, a JSON document, a CSV table, for every command that reads rows and for apply.
The whole-document and table readers called it "cannot read", the line reader "cannot
decompress", for the same truncated file."""

from __future__ import annotations

import csv
import io
import json

import pytest
from harness import make_rows, pack, refused, run

ROWS = make_rows(400)


def jsonl_text():
    return "".join(json.dumps(r) + "\n" for r in ROWS).encode()


def json_text():
    return json.dumps(ROWS).encode()


def csv_text():
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["id", "confidence", "correct"])
    for r in ROWS:
        writer.writerow([r["id"], r["confidence"], str(r["correct"]).lower()])
    return out.getvalue().encode()


KINDS = {".jsonl": jsonl_text, ".json": json_text, ".csv": csv_text}


@pytest.fixture(scope="module")
def calibrator(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cal")
    rows = folder / "rows.jsonl"
    rows.write_bytes(jsonl_text())
    out = folder / "cal.json"
    done = run(["fit", rows, "--method", "platt", "-o", out, "-q"])
    assert done.exit_code == 0, done.stderr
    return out


@pytest.mark.parametrize("codec", [".gz", ".zst", ".xz", ".bz2"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_cut_stream_is_refused_alike(tmp_path, calibrator, kind, codec):
    whole = pack(codec, KINDS[kind]())
    path = tmp_path / f"rows{kind}{codec}"
    path.write_bytes(whole)
    assert run(["calibrate", path]).exit_code == 0  # whole, it reads
    path.write_bytes(whole[: len(whole) * 2 // 3])
    lines = {
        refused("calibrate", path),
        refused("reliability", path),
        refused("apply", calibrator, path),
    }
    assert len(lines) == 1, lines
    (line,) = lines
    assert line.startswith(f"Error: {path}: cannot decompress: "), line


def test_standard_input_says_it_alike(tmp_path):
    whole = pack(".gz", jsonl_text())
    line = refused("calibrate", "-", input=whole[: len(whole) // 2])
    assert line.startswith("Error: <stdin>: cannot decompress: "), line
