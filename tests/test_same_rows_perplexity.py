"""Perplexity inputs that hold the same rows in other bytes (reordered, written with other
spacing, piped in, compressed, or summarized apart) are copies, as they are for calibration
rows: refused (exit 2, both named) unless --all-runs pools them on purpose. Each file's rows
make their own multiset hash of (NLL, token count) as they are read, whatever the route and
the number of worker processes.

The rows: ``n`` rows, row i with NLL 1.5 + i / 7 and 3 + i tokens (all distinct); the "other"
rows add 1 / 64 to each NLL, so they share no row. Figures by hand: perplexity is
exp(total NLL / total tokens).
"""

from __future__ import annotations

import gzip
import json
import math

import pytest
from harness import run

from calibcli.errors import InputError
from calibcli.io import read_perplexity

N = 40
SAME = "(the same NLLs and token counts, in any order)"


def rows(n=N, shift=0.0, reverse=False):
    out = [{"nll": 1.5 + i / 7 + shift, "tokens": 3 + i} for i in range(n)]
    return out[::-1] if reverse else out


def jsonl(path, items, **dumps):
    path.write_text("".join(json.dumps(r, **dumps) + "\n" for r in items), encoding="utf-8")
    return path


def by_hand(*sets):
    nll = math.fsum(r["nll"] for items in sets for r in items)
    tokens = sum(r["tokens"] for items in sets for r in items)
    return sum(len(s) for s in sets), nll, math.exp(nll / tokens)


@pytest.fixture
def pair(tmp_path):
    a = jsonl(tmp_path / "a.jsonl", rows())
    b = jsonl(tmp_path / "b.jsonl", rows(reverse=True), separators=(",", ":"))
    return a, b


def test_the_rows_of_a_file_in_another_order_are_refused(pair):
    a, b = pair
    result = run(["perplexity", a, b])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: {b}: holds the rows of {a} {SAME[:-1]}): its rows would count twice (pass "
        "--all-runs to pool them on purpose, or give one of them)"
    )
    assert result.stdout == ""


def test_all_runs_pools_them_on_purpose(pair):
    a, b = pair
    result = run(["perplexity", a, b, "--all-runs", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    sequences, nll, ppl = by_hand(rows(), rows())
    assert got["sequences"] == sequences == 2 * N
    assert got["total_nll"] == pytest.approx(nll, rel=1e-15)
    assert got["perplexity"] == pytest.approx(ppl, rel=1e-14)


@pytest.mark.parametrize("route", ["stdin", "gzip"])
def test_a_copy_by_another_route_is_refused(tmp_path, pair, route):
    a, b = pair
    if route == "stdin":
        result = run(["perplexity", "-", b], input=a.read_text(encoding="utf-8"))
        first = "<stdin>"
    else:
        packed = tmp_path / "c.jsonl.gz"
        packed.write_bytes(gzip.compress(b.read_bytes()))
        result = run(["perplexity", a, packed])
        first, b = a, packed
    assert result.exit_code == 2
    assert f"Error: {b}: holds the rows of {first} {SAME}" in result.stderr


def test_summaries_of_the_same_rows_do_not_merge(tmp_path, pair):
    a, b = pair
    for src, out in ((a, "a.cbs"), (b, "b.cbs")):
        made = run(["summarize", src, "-o", tmp_path / out, "-q"])
        assert made.exit_code == 0, made.stderr
    merged = run(["merge", tmp_path / "a.cbs", tmp_path / "b.cbs", "-o", tmp_path / "m.cbs"])
    assert merged.exit_code == 2
    assert f"{b} (in {tmp_path / 'b.cbs'}) holds the rows of {a} (in {tmp_path / 'a.cbs'})" in (
        merged.stderr
    )
    assert not (tmp_path / "m.cbs").exists()
    beside = run(["perplexity", tmp_path / "a.cbs", b])
    assert beside.exit_code == 2
    assert f"{b} holds the rows of {a} (in {tmp_path / 'a.cbs'}) {SAME}" in beside.stderr


def test_other_rows_of_equal_count_are_read(tmp_path):
    a = jsonl(tmp_path / "a.jsonl", rows())
    b = jsonl(tmp_path / "b.jsonl", rows(shift=1 / 64, reverse=True))
    result = run(["perplexity", a, b, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    got = json.loads(result.stdout)
    sequences, nll, ppl = by_hand(rows(), rows(shift=1 / 64))
    assert got["sequences"] == sequences
    assert got["total_nll"] == pytest.approx(nll, rel=1e-15)
    assert got["perplexity"] == pytest.approx(ppl, rel=1e-14)


@pytest.mark.parametrize("n", [5, 29])
def test_equal_rows_below_30_are_pooled(tmp_path, n):
    """Shards of a few rows may hold the same rows by chance."""
    a = jsonl(tmp_path / "a.jsonl", rows(n))
    b = jsonl(tmp_path / "b.jsonl", rows(n, reverse=True))
    result = run(["perplexity", a, b, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sequences"] == 2 * n


def test_rows_that_repeat_one_value_are_pooled(tmp_path):
    """Rows that share their values (every row 1.0 nats over 2 tokens) tell no copy apart from
    another shard of the same text lengths."""
    same = [{"nll": 1.0, "tokens": 2}] * 50
    a, b = jsonl(tmp_path / "a.jsonl", same), jsonl(tmp_path / "b.jsonl", same, indent=None)
    b.write_text(b.read_text(encoding="utf-8").replace(": ", ":"), encoding="utf-8")
    result = run(["perplexity", a, b, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["sequences"] == 100


def test_the_hash_is_the_same_whatever_the_workers(tmp_path):
    """A file read by two processes in byte ranges keeps one hash of its rows, so its copy is
    known on that route too."""
    many = [{"nll": 0.25 + i / 1024, "tokens": 1 + i % 97} for i in range(20_000)]
    a = jsonl(tmp_path / "a.jsonl", many)
    b = jsonl(tmp_path / "b.jsonl", many[::-1], separators=(",", ":"))
    hashes = set()
    for workers in (1, 2):
        summary = read_perplexity([str(a)], workers=workers, block_size=8192)
        (source,) = {s.rows_hash for s in summary.sources}  # one hash over every range
        assert sum(s.rows for s in summary.sources) == 20_000
        hashes.add(source)
        with pytest.raises(InputError, match=r"holds the rows of .*a\.jsonl \(the same NLLs"):
            read_perplexity([str(a), str(b)], workers=workers, block_size=8192)
    assert len(hashes) == 1
