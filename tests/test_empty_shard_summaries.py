"""A shard whose job wrote nothing is named through its summary as it is named among files:
``merge`` says it (and keeps it in the merged file), and a command reading summaries says it
on stderr and in the report's ``warnings``, with the figures of the other shards. The
reference is the command reading the shards' files themselves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
SAID = "holds no rows: the figures are the other files'"
KINDS = [("calibrate", "overconfident.jsonl"), ("perplexity", "perplexity.jsonl")]


def report(*args) -> tuple[dict, str]:
    result = run([*map(str, args), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def summarize(source: Path, output: Path, kind: str) -> Path:
    result = run(["summarize", str(source), "--kind", kind, "-q", "-o", str(output)])
    assert result.exit_code == 0, result.stderr
    return output


def shards(tmp_path: Path, rows: str, command: str) -> tuple[Path, Path, Path, Path]:
    """(s0.jsonl, s1.jsonl, s0.cbs, s1.cbs): a shard of rows and one of none, summarized."""
    kind = "calibration" if command == "calibrate" else "perplexity"
    full = tmp_path / "s0.jsonl"
    full.write_bytes((SAMPLE / rows).read_bytes())
    empty = tmp_path / "s1.jsonl"
    empty.write_text("")
    return (
        full,
        empty,
        summarize(full, tmp_path / "s0.cbs", kind),
        summarize(empty, tmp_path / "s1.cbs", kind),
    )


def figures(body: dict) -> dict:
    return {k: v for k, v in body.items() if k != "warnings"}


@pytest.mark.parametrize(("command", "rows"), KINDS, ids=["calibrate", "perplexity"])
def test_merge_names_the_empty_shard_and_keeps_saying_it(tmp_path, command, rows):
    full, empty, full_cbs, empty_cbs = shards(tmp_path, rows, command)
    direct, _ = report(command, full, empty)
    assert f"{empty}: {SAID}" in direct["warnings"]
    merged = tmp_path / "m.cbs"
    result = run(["merge", str(full_cbs), str(empty_cbs), "-o", str(merged)])
    assert result.exit_code == 0, result.stderr
    assert f"warning: {empty}: {SAID}" in result.stderr.splitlines()
    body, stderr = report(command, merged)
    assert f"{empty}: {SAID}" in body["warnings"]
    assert f"{empty}: {SAID}" in stderr
    assert figures(body) == figures(direct)


@pytest.mark.parametrize(("command", "rows"), KINDS, ids=["calibrate", "perplexity"])
def test_summaries_given_together_name_the_empty_shard(tmp_path, command, rows):
    full, empty, full_cbs, empty_cbs = shards(tmp_path, rows, command)
    direct, _ = report(command, full, empty)
    for inputs in ([full_cbs, empty_cbs], [empty_cbs, full], [full_cbs, empty]):
        body, stderr = report(command, *inputs)
        assert f"{empty}: {SAID}" in body["warnings"], inputs
        assert f"{empty}: {SAID}" in stderr, inputs
        assert figures(body) == figures(direct), inputs


def test_a_summary_of_rows_alone_says_nothing(tmp_path):
    _, _, full_cbs, _ = shards(tmp_path, "overconfident.jsonl", "calibrate")
    body, _ = report("calibrate", full_cbs)
    assert not [w for w in body["warnings"] if SAID in w]
    merged = tmp_path / "m.cbs"
    result = run(["merge", str(full_cbs), "-q", "-o", str(merged)])
    assert result.exit_code == 0 and SAID not in result.stderr
