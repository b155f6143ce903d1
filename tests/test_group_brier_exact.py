"""Each --by group's Brier score to the last digit: the double nearest (1/N)·Σ (c − y)² of the
group's rows, each row's squared error a double and the sum taken exactly (fractions, in the
test), as the pooled Brier is and as calibrate of the group's rows alone gives it. Every route
gives it: uniform or quantile bins, with or without --ci, from the file, from its summary, from
shards' summaries merged, and from the Python API; a --gate-each gate at that value passes and
one the next double below fails."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import numpy as np
import pytest
from harness import run

import calibcli

GROUPS = ("a", "b", "c", "d")


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    rng = random.Random(20261205)
    out = []
    for i in range(3000):
        group = GROUPS[i % 4] if i % 7 else "a"  # groups of unequal size
        c = rng.random() ** (1 + i % 3)  # many digits, skewed toward 0
        out.append({"confidence": c, "correct": rng.random() < c, "g": group})
    return out


def exact(rows: list[dict], group: str | None = None) -> float:
    mine = [r for r in rows if group is None or r["g"] == group]
    total = sum(Fraction((r["confidence"] - r["correct"]) ** 2) for r in mine)
    return float(total / len(mine))


@pytest.fixture(scope="module")
def files(rows, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("brier")
    whole = folder / "rows.jsonl"
    whole.write_text("".join(json.dumps(r) + "\n" for r in rows))
    shards = []
    for k in range(3):
        shard = folder / f"shard{k}.jsonl"
        shard.write_text("".join(json.dumps(r) + "\n" for r in rows[k::3]))
        summary = folder / f"shard{k}.cbs"
        made = run(["summarize", shard, "--by", "g", "-o", summary, "-q"])
        assert made.exit_code == 0, made.stderr
        shards.append(summary)
    summary = folder / "rows.cbs"
    assert run(["summarize", whole, "--by", "g", "-o", summary, "-q"]).exit_code == 0
    merged = folder / "merged.cbs"
    assert run(["merge", *shards, "-o", merged, "-q"]).exit_code == 0
    return {"file": whole, "summary": summary, "merged": merged, "folder": folder}


def groups(args: list) -> dict:
    result = run(["calibrate", *args, "--by", "g", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    return {name: section["brier"] for name, section in body["groups"].items()}


@pytest.mark.parametrize("route", ["file", "summary", "merged"])
@pytest.mark.parametrize(
    "options",
    [[], ["--strategy", "quantile"], ["--bins", "7"], ["--ci", "0.9", "--bootstrap", "200"]],
    ids=["uniform", "quantile", "seven-bins", "ci"],
)
def test_each_group_s_brier_is_the_exact_mean(rows, files, route, options):
    assert groups([files[route], *options]) == {g: exact(rows, g) for g in GROUPS}


def test_a_group_s_brier_is_that_of_its_rows_read_alone(rows, files):
    for group in GROUPS:
        alone = files["folder"] / f"only_{group}.jsonl"
        alone.write_text("".join(json.dumps(r) + "\n" for r in rows if r["g"] == group))
        result = run(["calibrate", alone, "--json", "-q"])
        assert json.loads(result.stdout)["brier"] == exact(rows, group)


def test_the_api_s_groups_give_the_exact_mean(rows):
    conf = [r["confidence"] for r in rows]
    correct = [r["correct"] for r in rows]
    body = calibcli.calibrate(conf, correct, group=[r["g"] for r in rows], by="g").to_json()
    briers = {name: section["brier"] for name, section in json.loads(body)["groups"].items()}
    assert briers == {g: exact(rows, g) for g in GROUPS}


def test_gate_each_at_a_group_s_exact_brier(rows, files):
    worst = max(exact(rows, g) for g in GROUPS)
    below = float(np.nextafter(worst, 0.0))
    args = ["calibrate", files["file"], "--by", "g", "--gate-each", "-q"]
    assert run([*args, "--max-brier", repr(worst)]).exit_code == 0
    assert run([*args, "--max-brier", repr(below)]).exit_code == 1
