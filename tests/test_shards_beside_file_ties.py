"""A file beside many of its own shards, and two files sharing part of their rows, are refused
when a few of their values tie (doubles, as a model writes them, among which some rows are
exactly 0 or 1 or a score rounded to two decimals): the shards each repeat the same few tied
values, which the union of the shards holds once, so they do not make the shared rows look
shared by chance. Files of the same kind drawn apart, whose tied values other files share by
chance, are still read, with the figures of their rows; so are two small files sharing a few
rounded scores by chance, where one repeats some of its values and the other none.

The rows are drawn as bench/make_shards.py draws them (numpy's generator, fixed seeds):
confidences Beta(5, 2) at full precision, 3% rounded to two decimals, 1% exactly 0 or 1, an
answer right with chance confidence ** 1.15. The shards are consecutive line ranges of the file,
so how many of its rows they hold is known by construction, and counted again below.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from harness import run

FILES_REMEDY = (
    "they would count twice (pass --all-runs to pool them on purpose, or give one of them)"
)


def draw(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    conf = rng.beta(5.0, 2.0, n)
    kind = rng.random(n)
    conf[kind < 0.03] = np.round(conf[kind < 0.03], 2)
    extreme = (kind >= 0.03) & (kind < 0.04)
    conf[extreme] = (rng.random(int(extreme.sum())) < 0.5).astype(np.float64)
    right = rng.random(n) < conf**1.15
    return [
        {"confidence": c, "correct": r} for c, r in zip(conf.tolist(), right.tolist(), strict=True)
    ]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def distinct(rows) -> set:
    return {(r["confidence"], r["correct"]) for r in rows}


def held_share(inner, *holders) -> float:
    """The share of ``inner``'s distinct rows that ``holders`` hold, counted row by row."""
    theirs = set().union(*(distinct(h) for h in holders))
    mine = distinct(inner)
    return len(mine & theirs) / len(mine)


def shards(rows, size: int, count: int) -> list:
    return [rows[k * size : (k + 1) * size] for k in range(count)]


def one_error(args) -> str:
    result = run(args)
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    return line


def percent(line: str) -> int:
    return int(re.search(r"\(about (\d+)% of them\)", line).group(1))


# 24,000 rows, and 36 of its 60 shards of 400 rows: 60% of the file's rows
ROWS, SIZE, HELD = 24_000, 400, 36


@pytest.mark.parametrize("seed", [0, 1])
def test_a_file_beside_most_of_its_shards_is_refused_on_every_route(tmp_path, seed):
    rows = draw(ROWS, seed)
    parts = shards(rows, SIZE, HELD)
    assert 0.58 <= held_share(rows, *parts) <= 0.62
    # the tied values: some hundred distinct values that more than one row holds
    counts: dict = {}
    for r in rows:
        counts[r["confidence"], r["correct"]] = counts.get((r["confidence"], r["correct"]), 0) + 1
    assert 50 <= sum(1 for v in counts.values() if v > 1) <= 400
    big = write(tmp_path / "big.jsonl", rows)
    paths = [write(tmp_path / f"s{k:02d}.jsonl", part) for k, part in enumerate(parts)]

    line = one_error(["calibrate", big, *paths, "--min-rows", "36000", "--max-ece", "0.5", "-q"])
    assert re.fullmatch(
        rf"Error: {re.escape(str(big))}: its rows are held by .+ and \d+ more together "
        rf"\(about \d+% of them\): {re.escape(FILES_REMEDY)}",
        line,
    ), line
    assert 45 <= percent(line) <= 75

    summaries = []
    for path in [big, *paths]:
        out = path.with_suffix(".cbs")
        assert run(["summarize", path, "-q", "-o", out]).exit_code == 0
        summaries.append(out)
    merged = tmp_path / "all.cbs"
    line = one_error(["merge", *summaries, "-o", merged])
    assert line.startswith(f"Error: {big} (in {summaries[0]}): its rows are held by ")
    assert line.endswith("they would count twice; merge each part once")
    assert 45 <= percent(line) <= 75
    assert not merged.exists()
    line = one_error(["calibrate", *summaries, "--min-rows", "36000", "-q"])
    assert line.startswith(f"Error: {big} (in {summaries[0]}): its rows are held by ")


@pytest.mark.parametrize("seed", [0, 3])
def test_two_files_sharing_a_third_of_the_smaller_are_refused(tmp_path, seed):
    """Lines 1-1,000 and 701-3,000 of one file share 300 rows: 30% of the first."""
    rows = draw(3000, seed)
    first, second = rows[:1000], rows[700:]
    assert 0.29 <= held_share(first, second) <= 0.32
    a = write(tmp_path / "first.jsonl", first)
    b = write(tmp_path / "second.jsonl", second)
    line = one_error(["calibrate", a, b, "--min-rows", "3000", "-q"])
    assert line.startswith(f"Error: {a}: its rows are held by {b} too (about ")
    assert line.endswith(FILES_REMEDY)
    assert 15 <= percent(line) <= 45  # 30%, estimated on about a hundred hashes
    for path in (a, b):
        assert run(["summarize", path, "-q", "-o", path.with_suffix(".cbs")]).exit_code == 0
    sa, sb = a.with_suffix(".cbs"), b.with_suffix(".cbs")
    line = one_error(["merge", sa, sb, "-o", tmp_path / "both.cbs"])
    assert line.startswith(f"Error: {a} (in {sa}): its rows are held by {b} (in {sb}) too")
    assert not (tmp_path / "both.cbs").exists()
    line = one_error(["calibrate", sa, sb, "-q"])
    assert line.startswith(f"Error: {a} (in {sa}): its rows are held by {b} (in {sb}) too")


def _figures(args) -> dict:
    result = run(["calibrate", *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    return {key: body[key] for key in ("n", "ece", "brier", "accuracy")}


def drawn_apart(tmp_path, seed: int) -> tuple:
    """A file beside 36 shards of another draw, and two files drawn apart, written; with the
    rows of each layout written as one file."""
    rows = draw(ROWS, 1000 + seed)
    parts = shards(draw(ROWS, seed), SIZE, HELD)
    assert 0 < held_share(rows, *parts) < 0.01  # only tied values, counted row by row
    big = write(tmp_path / "big.jsonl", rows)
    paths = [write(tmp_path / f"s{k:02d}.jsonl", part) for k, part in enumerate(parts)]
    whole = write(tmp_path / "whole.jsonl", rows + [r for part in parts for r in part])
    first, second = draw(3000, seed)[:1000], draw(2300, 2000 + seed)
    assert 0 < held_share(first, second) < 0.05
    pair = [write(tmp_path / "first.jsonl", first), write(tmp_path / "second.jsonl", second)]
    both = write(tmp_path / "both.jsonl", first + second)
    return [big, *paths], whole, pair, both


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_files_of_the_same_ties_drawn_apart_are_read(tmp_path, seed):
    """A file beside 36 shards of another draw, and two files drawn apart, share tied values
    (0, 1 and rounded scores) by chance and no row else: they are read, with the figures of
    all their rows read as one file."""
    files, whole, pair, both = drawn_apart(tmp_path, seed)
    figures = _figures(files)
    assert figures == _figures([whole])
    assert figures["n"] == ROWS + SIZE * HELD
    assert _figures(pair) == _figures([both])


def test_summaries_of_files_drawn_apart_merge(tmp_path):
    files, whole, pair, both = drawn_apart(tmp_path, 5)
    for path in (*files, *pair):
        assert run(["summarize", path, "-q", "-o", path.with_suffix(".cbs")]).exit_code == 0
    merged = tmp_path / "all.cbs"
    assert (
        run(["merge", *[p.with_suffix(".cbs") for p in files], "-o", merged, "-q"]).exit_code == 0
    )
    assert _figures([merged]) == _figures([whole])
    assert _figures([p.with_suffix(".cbs") for p in pair]) == _figures([both])


def test_small_files_sharing_rounded_scores_by_chance_are_read(tmp_path):
    """Two small files of doubles and scores rounded to two decimals, drawn apart: 8 of the
    first's 58 distinct rows (14%) are rounded scores the second holds too. The first repeats
    two of its rounded scores, so its values are not ones that never repeat, though none of
    the second's 100 rows repeats: that share is chance's, and they are read."""
    rng = np.random.default_rng(11)
    rounded = rng.choice(np.arange(30, 100), 36, replace=False) / 100
    first = [{"confidence": float(c), "correct": True} for c in rng.random(40)]
    first += [{"confidence": float(c), "correct": True} for c in rounded[:16]]
    first += [{"confidence": float(c), "correct": True} for c in (rounded[0], rounded[1])]
    first += [{"confidence": float(c), "correct": False} for c in rounded[16:18]]
    second = [{"confidence": float(c), "correct": True} for c in rng.random(80)]
    second += [{"confidence": float(c), "correct": True} for c in rounded[8:16]]
    second += [{"confidence": float(c), "correct": True} for c in rounded[18:30]]
    assert len(distinct(first)) == 58 and len(distinct(second)) == len(second) == 100
    assert len(distinct(first) & distinct(second)) == 8
    a, b = write(tmp_path / "first.jsonl", first), write(tmp_path / "second.jsonl", second)
    both = write(tmp_path / "both.jsonl", first + second)
    assert _figures([a, b]) == _figures([both])
    assert _figures([a, b])["n"] == 160
