"""Copies that the multiset hash of a file's rows tells whatever the route, beyond the rows of one
file given again.

Coarse values. Rows of few distinct values (one confidence for every row, a few verbal levels)
may hold the same multiset in two shards of other questions by chance, so equal hashes say
nothing there. From 64 distinct rows on, however often each repeats, two inputs of other rows
agree only by a chance below 0.4 ** 64: a file written with two-decimal confidences and its
gzip copy, summarized apart, are copies.

A file beside its shards. The hashes add up, so a file whose rows are all the other files'
together (``all.jsonl`` beside ``s0``, ``s1``, ``s2``, as a glob over a results folder may
catch them) is refused, as the summary of the shards beside the file's summary is.

Counts are by construction: row i of a fixed random stream has a two-decimal confidence and an
outcome drawn with that probability: at most 200 distinct rows, each repeated often.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
from harness import run

N = 3000
SAME = "(the same confidences and outcomes, in any order)"


_RNG = np.random.default_rng(7)
_CONF = _RNG.integers(1, 100, 10_000) / 100
_RIGHT = _RNG.random(10_000) < _CONF


def rows(n=N, start=0):
    return [
        {"confidence": float(_CONF[i]), "correct": bool(_RIGHT[i])} for i in range(start, start + n)
    ]


def jsonl(path, items):
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return path


def summarize(tmp_path, name, *sources, extra=()):
    out = tmp_path / name
    result = run(["summarize", *sources, "-o", out, "-q", *extra])
    assert result.exit_code == 0, result.stderr
    return out


@pytest.fixture
def coarse(tmp_path):
    plain = jsonl(tmp_path / "mix.jsonl", rows())
    packed = tmp_path / "mix.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    return plain, packed


def test_coarse_values_repeat_yet_hold_enough_distinct_rows():
    values = {(r["confidence"], r["correct"]) for r in rows()}
    assert 64 <= len(values) < N / 2  # from 64, though fewer than half the rows


def test_summaries_of_a_coarse_file_and_its_gzip_copy_do_not_merge(tmp_path, coarse):
    plain, packed = coarse
    a = summarize(tmp_path, "a.cbs", plain)
    b = summarize(tmp_path, "b.cbs", packed)
    result = run(["merge", a, b, "-o", tmp_path / "m.cbs"])
    assert result.exit_code == 2
    assert f"{a} and {b} both hold the same 3,000 rows, read from {plain} and {packed} {SAME}" in (
        result.stderr
    )
    assert not (tmp_path / "m.cbs").exists()
    gated = run(["calibrate", a, packed, "--min-rows", "5000", "-q"])
    assert gated.exit_code == 2
    assert f"{packed} is read here and its 3,000 rows are counted in {a} too" in gated.stderr


def test_a_coarse_file_in_another_order_is_refused(tmp_path, coarse):
    plain, _ = coarse
    other = jsonl(tmp_path / "rev.jsonl", rows()[::-1])
    result = run(["calibrate", plain, other, "-q"])
    assert result.exit_code == 2
    assert f"Error: {other}: holds the rows of {plain} {SAME}" in result.stderr
    pooled = run(["calibrate", plain, other, "--all-runs", "--json", "-q"])
    assert pooled.exit_code == 0, pooled.stderr
    assert json.loads(pooled.stdout)["n"] == 2 * N


def test_a_few_levels_held_alike_by_other_shards_still_merge(tmp_path):
    """Five verbal levels, each right and wrong: ten distinct rows, which two shards of other
    questions may well share exactly."""
    levels = [0.1, 0.3, 0.5, 0.7, 0.9]
    shard = [{"confidence": levels[i % 5], "correct": i % 2 == 0} for i in range(200)]
    a = jsonl(tmp_path / "a.jsonl", shard)
    b = jsonl(tmp_path / "b.jsonl", shard[::-1])
    result = run(["calibrate", a, b, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 400


@pytest.fixture
def shards(tmp_path):
    everything = rows(900)
    parts = [jsonl(tmp_path / f"s{k}.jsonl", everything[k * 300 : (k + 1) * 300]) for k in range(3)]
    return jsonl(tmp_path / "all.jsonl", everything[::-1]), parts


def test_a_file_beside_its_shards_is_refused(shards):
    whole, parts = shards
    for given in ([whole, *parts], [*parts, whole]):
        result = run(["calibrate", *given, "-q"])
        assert result.exit_code == 2
        assert result.stderr.strip().splitlines()[-1] == (
            f"Error: {whole}: holds the rows of {parts[0]}, {parts[1]} and {parts[2]} together "
            f"{SAME}: its rows would count twice (pass --all-runs to pool them on purpose, or "
            "give one of them)"
        )
    pooled = run(["calibrate", whole, *parts, "--all-runs", "--json", "-q"])
    assert pooled.exit_code == 0, pooled.stderr
    assert json.loads(pooled.stdout)["n"] == 1800


def test_the_folder_that_holds_them_is_refused(tmp_path, shards):
    result = run(["calibrate", tmp_path, "-q"])
    assert result.exit_code == 2
    assert "together (the same confidences and outcomes" in result.stderr


def test_summaries_of_the_file_and_of_each_shard_do_not_merge(tmp_path, shards):
    whole, parts = shards
    labels = [summarize(tmp_path, f"p{k}.cbs", p) for k, p in enumerate(parts)]
    everything = summarize(tmp_path, "all.cbs", whole)
    result = run(["merge", everything, *labels, "-o", tmp_path / "m.cbs"])
    assert result.exit_code == 2
    assert f"{whole} (in {everything}) holds the rows of {parts[0]} (in {labels[0]})" in (
        result.stderr
    )
    # a part that pooled them on purpose keeps them
    pooled = summarize(tmp_path, "pooled.cbs", whole, *parts, extra=["--all-runs"])
    alone = run(["calibrate", pooled, "--json", "-q"])
    assert alone.exit_code == 0, alone.stderr
    assert json.loads(alone.stdout)["n"] == 1800


def test_other_shards_of_the_same_sizes_are_read(tmp_path):
    parts = [jsonl(tmp_path / f"s{k}.jsonl", rows(300, start=300 * k)) for k in range(3)]
    other = jsonl(tmp_path / "other.jsonl", rows(900, start=5000))
    result = run(["calibrate", other, *parts, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 1800


def test_a_perplexity_file_beside_its_shards_is_refused(tmp_path):
    seqs = [{"nll": 1.25 + i / 9, "tokens": 2 + i % 11} for i in range(90)]
    parts = [jsonl(tmp_path / f"p{k}.jsonl", seqs[k * 30 : (k + 1) * 30]) for k in range(3)]
    whole = jsonl(tmp_path / "whole.jsonl", seqs)
    result = run(["perplexity", *parts, whole])
    assert result.exit_code == 2
    assert f"Error: {whole}: holds the rows of {parts[0]}, {parts[1]} and {parts[2]} together" in (
        result.stderr
    )


def test_a_file_beside_its_shards_through_summaries_is_refused(tmp_path, shards):
    """The shards' rows reach the command partly as files read here and partly as a summary
    (or as summaries that each pool some of the files): still counted twice."""
    whole, parts = shards
    last = summarize(tmp_path, "p2.cbs", parts[2])
    beside = run(["calibrate", parts[0], whole, parts[1], last, "-q"])
    assert beside.exit_code == 2
    assert f"{whole} holds the rows of" in beside.stderr and "together" in beside.stderr
    pooled = summarize(tmp_path, "p01w.cbs", parts[0], whole, parts[1])
    merged = run(["merge", pooled, last, "-o", tmp_path / "m.cbs"])
    assert merged.exit_code == 2
    assert f"{whole} (in {pooled}) holds the rows of" in merged.stderr
    assert not (tmp_path / "m.cbs").exists()
