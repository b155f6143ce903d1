"""An upper-end gate on a figure that does not need both classes reads the larger of the
bootstrap's upper end and the rare-class floor when the rarer of right and wrong answers has
fewer than 10 members: the figure with that class raised to its one-sided Clopper-Pearson
upper count, the added members placed where they cost most. Every reference here is computed
in the test: the count from scipy's beta quantile (or its closed form at k = 0), the figures by
plain loops."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from harness import run, write_jsonl
from scipy.stats import beta

from calibcli.metrics import PredictionColumns, rare_class_floor

PLAIN_KEYS = {"metric", "threshold", "estimate", "upper", "value", "passed"}


def cp_count(k: int, n: int, level: float = 0.95) -> int:
    """m = ceil(n · p_u), p_u the one-sided (1 + level)/2 Clopper-Pearson upper bound."""
    side = (1 + level) / 2
    return math.ceil(n * float(beta.ppf(side, k + 1, n - k)))


def brier(conf, correct) -> float:
    return sum((c - y) ** 2 for c, y in zip(conf, correct, strict=True)) / len(conf)


def nll(conf, correct) -> float:
    total = 0.0
    for c, y in zip(conf, correct, strict=True):
        total -= math.log(c) if y else math.log(1 - c)
    return total / len(conf)


def ece(conf, correct, bins=10) -> float:
    sums = [[0, 0.0, 0.0] for _ in range(bins)]
    for c, y in zip(conf, correct, strict=True):
        b = min(int(c * bins), bins - 1)
        sums[b][0] += 1
        sums[b][1] += c
        sums[b][2] += y
    return sum(abs(s[1] - s[2]) for s in sums if s[0]) / len(conf)


def flipped(conf, correct, turned, rare="wrong"):
    """The rows with ``turned`` of the other class made rare: the most confident right rows
    made wrong, or the least confident wrong rows made right."""
    rows = sorted(zip(conf, correct, strict=True))
    if rare == "wrong":
        order = [i for i in range(len(rows) - 1, -1, -1) if rows[i][1]]
    else:
        order = [i for i in range(len(rows)) if not rows[i][1]]
    chosen = set(order[:turned])
    out = [(c, (not y) if i in chosen else y) for i, (c, y) in enumerate(rows)]
    return [c for c, _ in out], [y for _, y in out]


def gate_of(result):
    return json.loads(result.stdout)["gate"]


def test_thirty_right_rows_at_095_fail_on_their_floor(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"confidence": 0.95, "correct": True}] * 30)
    m = math.ceil(30 * (1 - 0.025 ** (1 / 30)))  # k = 0: p_u = 1 - (alpha/2)^(1/n)
    assert m == cp_count(0, 30) == 4
    floor = (26 * Fraction(1, 20) ** 2 + 4 * Fraction(19, 20) ** 2) / 30  # 0.1225
    result = run(["calibrate", path, "--gate-on", "upper", "--max-brier", "0.01", "--json"])
    assert result.exit_code == 1
    (check,) = gate_of(result)["checks"]
    assert check["upper"] == pytest.approx(0.0025)
    assert check["floor"] == pytest.approx(float(floor), rel=1e-12)
    assert check["floor_flips"] == 4
    assert check["value"] == check["floor"] and check["passed"] is False
    assert "rare-class floor" in result.stderr and "0 of 30 rows wrong" in result.stderr
    assert "raised to 4" in result.stderr


def spread_rows(n=200, wrong=(3, 50, 120), seed=3):
    rng = random.Random(seed)
    conf = [0.55 + 0.44 * rng.random() for _ in range(n)]
    correct = [i not in wrong for i in range(n)]
    return conf, correct


def test_three_wrong_of_200_brier_and_ece_floors(tmp_path):
    conf, correct = spread_rows()
    rows = [{"confidence": c, "correct": y} for c, y in zip(conf, correct, strict=True)]
    path = write_jsonl(tmp_path / "k3.jsonl", rows)
    m = cp_count(3, 200)
    hot_c, hot_y = flipped(conf, correct, m - 3)
    args = ["--gate-on", "upper", "--max-brier", "0.001", "--max-ece", "0.001", "--json"]
    result = run(["calibrate", path, *args])
    checks = {c["metric"]: c for c in gate_of(result)["checks"]}
    assert checks["brier"]["floor"] == pytest.approx(brier(hot_c, hot_y), rel=1e-9)
    assert checks["ece"]["floor"] == pytest.approx(ece(hot_c, hot_y), rel=1e-9)
    for check in checks.values():
        assert check["floor_flips"] == m - 3
        assert check["value"] == max(check["upper"], check["floor"])


def test_three_wrong_of_200_nll_floor():
    conf, correct = spread_rows()
    m = cp_count(3, 200)
    columns = PredictionColumns.from_arrays(np.array(conf), np.array(correct))
    found = rare_class_floor(columns, ("nll", "brier"), level=0.95, least=10)
    hot_c, hot_y = flipped(conf, correct, m - 3)
    assert found.rare.bound == m and found.rare.turned == m - 3
    assert found.values["nll"] == pytest.approx(nll(hot_c, hot_y), rel=1e-12)
    assert found.values["brier"] == pytest.approx(brier(hot_c, hot_y), rel=1e-12)


def test_right_answers_rare_turn_the_least_confident_wrong_rows():
    rng = random.Random(5)
    conf = [0.02 + 0.3 * rng.random() for _ in range(60)]
    correct = [i in (7, 40) for i in range(60)]
    m = cp_count(2, 60)
    columns = PredictionColumns.from_arrays(np.array(conf), np.array(correct))
    found = rare_class_floor(columns, ("brier", "nll"), level=0.95, least=10)
    assert found.rare.rare == "right" and found.rare.turned == m - 2
    hot_c, hot_y = flipped(conf, correct, m - 2, rare="right")
    assert sum(hot_y) == m
    assert found.values["brier"] == pytest.approx(brier(hot_c, hot_y), rel=1e-12)
    assert found.values["nll"] == pytest.approx(nll(hot_c, hot_y), rel=1e-12)


def test_ten_of_each_class_keep_the_plain_check(tmp_path):
    rng = random.Random(11)
    rows = [{"confidence": rng.random(), "correct": i % 3 == 0} for i in range(60)]
    path = write_jsonl(tmp_path / "both.jsonl", rows)
    result = run(["calibrate", path, "--gate-on", "upper", "--max-brier", "0.5", "--json"])
    (check,) = gate_of(result)["checks"]
    assert set(check) == PLAIN_KEYS
    assert check["value"] == check["upper"]


def test_a_large_sample_all_right_at_near_one_still_passes(tmp_path):
    rows = [{"confidence": 1 - 1e-6, "correct": True}] * 100_000
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    args = ["--gate-on", "upper", "--max-brier", "0.001", "--bootstrap", "200", "--json"]
    result = run(["calibrate", path, *args])
    assert result.exit_code == 0, result.stderr
    (check,) = gate_of(result)["checks"]
    m = cp_count(0, 100_000)
    assert check["floor_flips"] == m == 4
    expected = ((100_000 - m) * 1e-12 + m * (1 - 1e-6) ** 2) / 100_000
    assert check["floor"] == pytest.approx(expected, rel=1e-9)


def test_gate_each_gives_each_group_its_own_floor(tmp_path):
    rows = [{"confidence": 0.9, "correct": True, "g": "a"} for _ in range(40)]
    rng = random.Random(2)
    rows += [{"confidence": rng.random(), "correct": i % 2 == 0, "g": "b"} for i in range(40)]
    path = write_jsonl(tmp_path / "groups.jsonl", rows)
    args = ["--by", "g", "--gate-each", "--gate-on", "upper", "--max-brier", "0.05", "--json"]
    result = run(["calibrate", path, *args])
    checks = {c.get("group"): c for c in gate_of(result)["checks"]}
    m = cp_count(0, 40)
    expected = ((40 - m) * 0.1**2 + m * 0.9**2) / 40
    assert checks["a"]["floor"] == pytest.approx(expected, rel=1e-12)
    assert checks["a"]["floor_flips"] == m and checks["a"]["passed"] is False
    assert set(checks["b"]) == PLAIN_KEYS | {"group"}
    assert "a" in gate_of(result)["failed_groups"]


def test_summary_files_and_merge_give_the_same_verdict(tmp_path):
    conf, correct = spread_rows(n=120, wrong=(4, 77))
    rows = [{"confidence": c, "correct": y} for c, y in zip(conf, correct, strict=True)]
    whole = write_jsonl(tmp_path / "whole.jsonl", rows)
    first = write_jsonl(tmp_path / "first.jsonl", rows[:60])
    second = write_jsonl(tmp_path / "second.jsonl", rows[60:])
    for source, out in ((whole, "whole.cbs"), (first, "first.cbs"), (second, "second.cbs")):
        assert run(["summarize", source, "-o", tmp_path / out, "-q"]).exit_code == 0
    merged = tmp_path / "merged.cbs"
    assert (
        run(["merge", tmp_path / "first.cbs", tmp_path / "second.cbs", "-o", merged]).exit_code == 0
    )
    args = ["--gate-on", "upper", "--max-brier", "0.02", "--max-smece", "0.05", "--json"]
    direct = run(["calibrate", whole, *args])
    m = cp_count(2, 120)
    hot_c, hot_y = flipped(conf, correct, m - 2)
    checks = gate_of(direct)["checks"]
    assert checks[0]["floor"] == pytest.approx(brier(hot_c, hot_y), rel=1e-9)
    for source in (tmp_path / "whole.cbs", merged):
        result = run(["calibrate", source, *args])
        assert result.exit_code == direct.exit_code
        got = gate_of(result)["checks"]
        for a, b in zip(got, checks, strict=True):
            assert a["floor"] == pytest.approx(b["floor"], rel=1e-12, abs=1e-15)
            assert a["floor_flips"] == b["floor_flips"] and a["passed"] == b["passed"]


def test_compare_reads_the_floor_of_the_same_pairs_turned_on_both_sides(tmp_path):
    rng = random.Random(9)
    base_rows, new_rows = [], []
    for i in range(100):
        c = 0.6 + 0.35 * rng.random()
        base_rows.append({"id": i, "confidence": c, "correct": rng.random() < c})
        new_rows.append({"id": i, "confidence": 0.97, "correct": True})
    base = write_jsonl(tmp_path / "base.jsonl", base_rows)
    new = write_jsonl(tmp_path / "new.jsonl", new_rows)
    result = run(
        ["compare", base, new, "--id-field", "id", "--max-increase", "brier=0.01", "--json"]
    )
    (check,) = gate_of(result)["checks"]
    m = cp_count(0, 100)
    # the m pairs right on both sides where turning both costs NEW less BASE the most,
    # 2(0.97 - c_base): BASE's least confident right answers
    both = sorted((r["confidence"], r["id"]) for r in base_rows if r["correct"])
    chosen = {i for _, i in both[:m]}
    new_brier = ((100 - m) * 0.03**2 + m * 0.97**2) / 100
    base_conf = [r["confidence"] for r in base_rows]
    base_y = [r["correct"] and r["id"] not in chosen for r in base_rows]
    rare = new_brier - brier(base_conf, base_y)
    # the discordance floor: the same m questions made wrong on NEW alone, BASE as it is
    discordant = new_brier - brier(base_conf, [r["correct"] for r in base_rows])
    assert discordant > rare
    assert check["floor_flips"] == m and check["floor_kind"] == "discordant"
    assert check["floor"] == pytest.approx(max(rare, discordant), rel=1e-9)
    assert check["value"] == max(check["upper"], check["floor"])
    assert check["passed"] is (check["value"] <= 0.01)
