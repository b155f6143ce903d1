"""The NLL of a summary kept without its table of distinct confidences (``--table never``)
is the exact sum of the rows' losses divided by the rows, rounded once (the nearest double to
the sum, then divided, would round twice: a last digit apart in about a quarter of the groups
here). The reference
is Python's Fraction arithmetic on the losses as doubles (numpy's log, as the readers compute
them). A merge of such summaries gives the same bits."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
from harness import run, write_jsonl


def exact_mean(losses: list[float]) -> float:
    return float(sum(map(Fraction, losses)) / len(losses))


def test_every_group_s_nll_is_rounded_once(tmp_path):
    rng = np.random.default_rng(11)
    rows, losses = [], {}
    for i in range(3000):
        c = float(rng.uniform(0.01, 0.99))
        right = bool(rng.random() < c)
        group = f"g{i % 60:02d}"
        rows.append({"confidence": c, "correct": right, "g": group})
        loss = -np.log(c) if right else -np.log1p(-c)
        losses.setdefault(group, []).append(float(loss))
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    summary = tmp_path / "never.cbs"
    args = ["summarize", path, "--by", "g", "--table", "never", "-o", summary, "-q"]
    assert run(args).exit_code == 0
    result = run(["calibrate", summary, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    expected = {g: exact_mean(v) for g, v in losses.items()}
    twice = {g: float(sum(map(Fraction, v))) / len(v) for g, v in losses.items()}
    assert sum(expected[g] != twice[g] for g in expected) > 0  # the test can tell them apart
    assert {g: report["groups"][g]["nll"] for g in expected} == expected
    everything = [x for v in losses.values() for x in v]
    assert report["nll"] == exact_mean(everything)
    halves = []
    for k, part in enumerate((rows[:1300], rows[1300:])):
        shard = write_jsonl(tmp_path / f"part{k}.jsonl", part)
        halves.append(tmp_path / f"part{k}.cbs")
        args = ["summarize", shard, "--by", "g", "--table", "never", "-o", halves[-1], "-q"]
        assert run(args).exit_code == 0
    merged = json.loads(run(["calibrate", *halves, "--json", "-q"]).stdout)
    assert merged["nll"] == report["nll"]
    assert {g: merged["groups"][g]["nll"] for g in expected} == expected
