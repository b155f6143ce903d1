"""Thresholds that differ only past the fourth decimal (bf16 loglikelihoods give confidences
1e-8 apart) print with as many decimals as tell them apart, in the terminal and the HTML page."""

from __future__ import annotations

import json
import random

from harness import run

from calibcli.render.digits import distinct_decimals


def test_distinct_decimals_are_the_fewest_that_tell_values_apart():
    assert distinct_decimals([0.5, 0.25, 0.125]) == 4  # 0.1250 and 0.2500: four suffice
    assert distinct_decimals([0.79820001, 0.79820002]) == 8
    assert distinct_decimals([0.3, 0.3, 0.7]) == 4  # equal values need no telling apart
    assert distinct_decimals([0.1, 0.1 + 2**-55]) == 17  # the closest doubles: the cap
    assert distinct_decimals([None, float("inf"), 0.5]) == 4


def ties(tmp_path):
    rng = random.Random(1)
    rows = []
    for _ in range(400):
        c = rng.choice([0.79820001, 0.79820002, 0.9, 0.95, 0.6, 0.99])
        rows.append({"confidence": c, "correct": rng.random() < c})
    path = tmp_path / "ties.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_risk_coverage_table_tells_near_ties_apart(tmp_path):
    path = ties(tmp_path)
    args = ["threshold", path, "--grid", "0", "--target-accuracy", "0.7"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    table = result.stdout.split("Risk-coverage", 1)[1]
    assert "0.79820002" in table and "0.79820001" in table
    page = tmp_path / "t.html"
    assert run([*args, "--html", page, "-q"]).exit_code == 0
    html = page.read_text(encoding="utf-8")
    assert ">0.79820002<" in html and ">0.79820001<" in html
