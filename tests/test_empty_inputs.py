"""A file of no rows given beside others (a shard whose job wrote nothing, a file of blank
lines) is said by name: its rows were silently none, and the figures the other files' alone.
A file of no rows on its own already says that no rows were read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from harness import pack, run

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
SAID = "holds no rows: the figures are the other files'"


@pytest.mark.parametrize("content", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
@pytest.mark.parametrize(
    ("command", "rows"),
    [(["calibrate"], "overconfident.jsonl"), (["perplexity"], "perplexity.jsonl")],
    ids=["calibrate", "perplexity"],
)
def test_a_file_of_no_rows_beside_others_is_named(tmp_path, content, command, rows):
    empty = tmp_path / "shard-2.jsonl"
    empty.write_text(content)
    result = run([*command, SAMPLE / rows, empty, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert f"{empty}: {SAID}" in json.loads(result.stdout)["warnings"]
    alone = run([*command, SAMPLE / rows, "--json", "-q"])
    assert not any(SAID in w for w in json.loads(alone.stdout)["warnings"])


def test_a_file_of_rows_is_not_named(tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_text('{"confidence": 0.5, "correct": true}\n')
    result = run(["calibrate", SAMPLE / "overconfident.jsonl", other, "--json", "-q"])
    assert not any(SAID in w for w in json.loads(result.stdout)["warnings"])


def test_two_files_of_no_rows_are_not_copies(tmp_path):
    # two shards whose jobs wrote nothing hold the same (no) bytes: no rows count twice, so
    # they are named, not refused as copies; so are two compressions of nothing
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes((SAMPLE / "overconfident.jsonl").read_bytes())
    for name in ("b.jsonl", "c.jsonl"):
        (folder / name).write_text("")
    for name in ("d.jsonl", "e.jsonl"):
        (folder / name).write_text("\n")
    (folder / "f.jsonl.gz").write_bytes(gzip.compress(b""))
    (folder / "f.jsonl.zst").write_bytes(pack(".zst", b""))
    result = run(["calibrate", folder, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == 2000
    named = sorted(w.split(": ")[0] for w in report["warnings"] if SAID in w)
    assert named == [
        str(folder / n)
        for n in ("b.jsonl", "c.jsonl", "d.jsonl", "e.jsonl", "f.jsonl.gz", "f.jsonl.zst")
    ]
