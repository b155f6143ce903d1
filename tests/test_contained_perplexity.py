"""Perplexity inputs that hold part of another's rows (a file beside some of its shards) are
refused as calibration inputs are: each source keeps a sketch of its rows' distinct (NLL,
token count) hashes, and an input a fifth or more of whose distinct rows another holds counts
them twice.

The rows are drawn here: 200 rows of NLLs drawn as doubles (no two alike) and token counts, a
file of them and its first 100 lines; the counts are known by construction."""

from __future__ import annotations

import json
import random

from harness import run

COPY = "they would count twice (pass --all-runs to pool them on purpose, or give one of them)"


def _rows(tmp_path, name, seed, n=200):
    rng = random.Random(seed)
    path = tmp_path / name
    path.write_text(
        "".join(
            json.dumps({"nll": rng.random() * 500, "tokens": rng.randint(50, 300)}) + "\n"
            for _ in range(n)
        )
    )
    return path


def _half(tmp_path, path):
    half = tmp_path / "half.jsonl"
    half.write_text("".join(path.read_text().splitlines(keepends=True)[:100]))
    return half


def test_a_file_beside_its_first_half_is_refused(tmp_path):
    whole = _rows(tmp_path, "whole.jsonl", 1)
    half = _half(tmp_path, whole)
    result = run(["perplexity", whole, half, "--min-rows", "250", "-q"])
    assert result.exit_code == 2, result.stdout
    assert result.stderr == (
        f"Error: {half}: its rows are held by {whole} too (about 100% of them): {COPY}\n"
    )
    pooled = run(["perplexity", whole, half, "--all-runs", "--json", "-q"])
    assert pooled.exit_code == 0, pooled.stderr
    assert json.loads(pooled.stdout)["sequences"] == 300


def test_summaries_of_a_file_and_its_half_are_refused(tmp_path):
    whole = _rows(tmp_path, "whole.jsonl", 1)
    half = _half(tmp_path, whole)
    for path, out in ((whole, "w.cbs"), (half, "h.cbs")):
        made = run(["summarize", path, "-o", tmp_path / out, "-q"])
        assert made.exit_code == 0, made.stderr
    result = run(["perplexity", tmp_path / "w.cbs", tmp_path / "h.cbs", "-q"])
    assert result.exit_code == 2
    assert "half.jsonl (in " in result.stderr and "its rows are held by" in result.stderr


def test_files_of_other_rows_read_together(tmp_path):
    one, two = _rows(tmp_path, "one.jsonl", 1), _rows(tmp_path, "two.jsonl", 2)
    result = run(["perplexity", one, two, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sequences"] == 400
