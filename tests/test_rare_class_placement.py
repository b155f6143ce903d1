"""Where the rare-class floor puts the members it adds. The binned and smooth figures take the
largest value over placements (the most confident rows, and each bin's rows first); the Brier
score and the NLL keep the most confident rows, their exact maximum. In a paired comparison the
same questions are turned on both sides, so the floor of NEW − BASE is NEW's figure less BASE's
on the turned rows. References are plain loops written here and scipy's beta quantile."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from harness import run, write_jsonl
from scipy.stats import beta

from calibcli.metrics import PredictionColumns, rare_class_floor
from calibcli.reports.compare_sides import paired_floor

BINS = 10


def cp_count(k: int, n: int, level: float = 0.95) -> int:
    """m = ceil(n · p_u), p_u the one-sided (1 + level)/2 Clopper-Pearson upper bound."""
    return math.ceil(n * float(beta.ppf((1 + level) / 2, k + 1, n - k)))


def bin_of(c: float) -> int:
    return min(int(c * BINS), BINS - 1)


def binned(conf, correct) -> dict[str, float]:
    """ECE, MCE, RMSCE and one-bin ECE by a plain loop over ten equal-width bins."""
    sums = [[0, 0.0, 0.0] for _ in range(BINS)]
    for c, y in zip(conf, correct, strict=True):
        s = sums[bin_of(c)]
        s[0], s[1], s[2] = s[0] + 1, s[1] + c, s[2] + y
    n = len(conf)
    gaps = [(s[0], abs(s[1] - s[2]) / s[0]) for s in sums if s[0]]
    return {
        "ece": sum(k * g for k, g in gaps) / n,
        "mce": max(g for _, g in gaps),
        "rmsce": math.sqrt(sum(k * g * g for k, g in gaps) / n),
        "ece_1bin": abs(sum(conf) - sum(correct)) / n,
    }


def brier(conf, correct) -> float:
    return sum((c - y) ** 2 for c, y in zip(conf, correct, strict=True)) / len(conf)


def placed(conf, correct, turned, rare, first_bin):
    """The rows with ``turned`` of the other class made rare: those in ``first_bin`` first (None:
    none first), the most confident right rows (the least confident wrong, mirrored) first."""
    other = rare == "wrong"
    idx = [i for i in range(len(conf)) if correct[i] == other]
    idx.sort(key=lambda i: conf[i], reverse=other)
    if first_bin is not None:
        idx = [i for i in idx if bin_of(conf[i]) == first_bin] + [
            i for i in idx if bin_of(conf[i]) != first_bin
        ]
    chosen = set(idx[:turned])
    return [(not other) if i in chosen else y for i, y in enumerate(correct)]


def loop_floor(conf, correct, rare, turned):
    """Each binned figure's largest value over the most confident placement and each bin's."""
    best = binned(conf, placed(conf, correct, turned, rare, None))
    for b in range(BINS):
        for key, value in binned(conf, placed(conf, correct, turned, rare, b)).items():
            best[key] = max(best[key], value)
    return best


def underconfident_top(wrong_at=0.7205):
    """295 right rows at 0.90 to 0.94 (bin 9, accuracy 1 above its confidence) and 5 rows in
    bin 7, one of them wrong: turning bin 9's rows wrong moves it toward calibration."""
    conf = [round(0.9 + 0.04 * i / 294, 6) for i in range(295)]
    conf += [wrong_at, 0.7231, 0.7255, 0.7262, 0.7299]
    correct = [True] * 295 + [False, True, True, True, True]
    return conf, correct


def test_underconfident_top_bin_takes_the_bin_placement():
    conf, correct = underconfident_top()
    m = cp_count(1, 300)
    right = [c for c, y in zip(conf, correct, strict=True) if y]
    wrong = [c for c, y in zip(conf, correct, strict=True) if not y]
    keys = ("ece", "mce", "rmsce", "ece_1bin", "brier")
    got = rare_class_floor(
        PredictionColumns(np.array(right), np.array(wrong)), keys, level=0.95, least=10
    )
    assert got.rare.turned == m - 1
    expected = loop_floor(conf, correct, "wrong", m - 1)
    for key in ("ece", "mce", "rmsce", "ece_1bin"):
        assert got.values[key] == pytest.approx(expected[key], rel=1e-12)
    most = binned(conf, placed(conf, correct, m - 1, "wrong", None))["ece"]
    assert got.values["ece"] > most + 0.005  # bin 7's rows first: 4 turned there, 1 in bin 9
    assert got.placed["ece"] == 7
    hot = placed(conf, correct, m - 1, "wrong", None)
    assert got.values["brier"] == pytest.approx(brier(conf, hot), rel=1e-12)
    assert got.placed["brier"] is None


def test_underconfident_top_bin_fails_its_ece_gate(tmp_path):
    conf, correct = underconfident_top()
    rows = [{"confidence": c, "correct": y} for c, y in zip(conf, correct, strict=True)]
    path = write_jsonl(tmp_path / "a.jsonl", rows)
    args = ["--gate-on", "upper", "--min-populated-bins", "1", "--json"]
    result = run(["calibrate", path, "--max-ece", "0.086", *args])
    assert result.exit_code == 1, result.stdout
    (check,) = json.loads(result.stdout)["gate"]["checks"]
    expected = loop_floor(conf, correct, "wrong", cp_count(1, 300) - 1)["ece"]
    assert check["upper"] < 0.086 < check["floor"]
    assert check["floor"] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("rare", ["wrong", "right"])
def test_placement_max_matches_a_loop_over_every_bin(seed, rare):
    rng = random.Random(seed)
    n = rng.randrange(40, 160)
    conf = [round(rng.uniform(0.02, 0.999), 4) for _ in range(n)]
    k = rng.randrange(0, 4)
    odd = set(rng.sample(range(n), k))  # the rare class's rows
    correct = [(i in odd) != (rare == "wrong") for i in range(n)]
    right = np.array([c for c, y in zip(conf, correct, strict=True) if y])
    wrong = np.array([c for c, y in zip(conf, correct, strict=True) if not y])
    keys = ("ece", "mce", "rmsce", "ece_1bin")
    got = rare_class_floor(PredictionColumns(right, wrong), keys, level=0.95, least=10)
    assert got.rare.rare == rare
    turned = min(n - k, cp_count(k, n) - k)
    assert got.rare.turned == turned
    expected = loop_floor(conf, correct, rare, turned)
    for key in keys:
        assert got.values[key] == pytest.approx(expected[key], rel=1e-12, abs=1e-15)


# ---------------------------------------------------------------- paired compare


def pairs_file(tmp_path, name, rows):
    return write_jsonl(tmp_path / name, [{"id": f"q{i}", **r} for i, r in enumerate(rows)])


def compare_check(tmp_path, base_rows, new_rows, margin):
    base = pairs_file(tmp_path, "base.jsonl", base_rows)
    new = pairs_file(tmp_path, "new.jsonl", new_rows)
    args = ["--id-field", "id", "--max-increase", margin, "--min-populated-bins", "1", "--json"]
    result = run(["compare", base, new, *args])
    (check,) = json.loads(result.stdout)["gate"]["checks"]
    return result, check


def few_wrong(n=120, seed=3):
    rng = random.Random(seed)
    rows = [{"confidence": round(rng.uniform(0.7, 0.99), 4), "correct": True} for _ in range(n)]
    for i in rng.sample(range(n), 2):
        rows[i]["correct"] = False
    return rows


def discordance_brier(base, new) -> float:
    """The discordance floor of the Brier score by a loop: the questions NEW gets wrong where
    BASE is right raised to their upper count by making NEW wrong on the most confident of
    NEW's questions both got right, BASE as it is."""
    n = len(base)
    k = sum(b["correct"] and not r["correct"] for b, r in zip(base, new, strict=True))
    free = [i for i in range(n) if base[i]["correct"] and new[i]["correct"]]
    ranked = sorted(free, key=lambda i: -new[i]["confidence"])
    chosen = set(ranked[: cp_count(k, n) - k])
    conf = [r["confidence"] for r in new]
    turned = [r["correct"] and i not in chosen for i, r in enumerate(new)]
    base_conf, base_y = [r["confidence"] for r in base], [r["correct"] for r in base]
    return brier(conf, turned) - brier(base_conf, base_y)


def test_a_file_against_itself_has_rare_class_floor_zero_and_reads_its_discordance_floor(
    tmp_path,
):
    rows = few_wrong()
    pairs = [np.array([r[k] for r in rows]) for k in ("confidence", "correct")]
    settings = type("S", (), {"level": 0.95, "bins": BINS, "paired": True})()
    rare = paired_floor(tuple(pairs), tuple(pairs), ("brier",), settings, None)
    assert rare.values["brier"] == 0.0 and rare.rare.turned == cp_count(2, 120) - 2
    # no question NEW gets wrong alone: up to cp_count(0, 120) = 4 cannot be ruled out, and
    # four NEW-only errors at NEW's highest confidences exceed a margin of 0.02 on 120
    result, check = compare_check(tmp_path, rows, rows, "brier=0.02")
    assert check["floor"] == pytest.approx(discordance_brier(rows, rows), rel=1e-9)
    assert check["floor"] > 0.02 and check["floor_kind"] == "discordant"
    assert check["floor_flips"] == cp_count(0, 120)
    assert result.exit_code == 1 and check["passed"] is False


def test_new_better_on_every_row_passes(tmp_path):
    base = few_wrong()
    new = [dict(r) for r in base]
    for r in new:  # BASE's wrong answers made right at the same confidence
        r["correct"] = True
    assert sum(not r["correct"] for r in base) == 2 and all(r["correct"] for r in new)
    # NEW's own errors raised to cp_count(0, 120) = 4 on its most confident questions cost
    # more than BASE's two errors save: a margin of 0.005 fails on 120 questions, 0.02 passes
    result, check = compare_check(tmp_path, base, new, "brier=0.005")
    assert check["floor"] == pytest.approx(discordance_brier(base, new), rel=1e-9)
    assert 0.005 < check["floor"] < 0.02 and check["floor_kind"] == "discordant"
    assert result.exit_code == 1
    result, check = compare_check(tmp_path, base, new, "brier=0.02")
    assert result.exit_code == 0 and check["passed"] is True


def test_new_more_confident_on_shared_right_answers_gets_a_positive_floor(tmp_path):
    rng = random.Random(11)
    n = 100
    base = [{"confidence": round(rng.uniform(0.6, 0.9), 4), "correct": True} for _ in range(n)]
    new = [dict(r) for r in base]
    for r in base[:10]:  # NEW far more confident on ten questions both got right
        r["confidence"] = 0.6
    for r in new[:10]:
        r["confidence"] = 0.99
    m = cp_count(0, n)
    # the m pairs where turning both raises NEW's Brier less BASE's the most: 2(c_new - c_base)
    order = sorted(range(n), key=lambda i: new[i]["confidence"] - base[i]["confidence"])
    chosen = set(order[-m:])
    sides = []
    for rows in (new, base):
        conf = [r["confidence"] for r in rows]
        sides.append(brier(conf, [i not in chosen for i in range(n)]))
    _, check = compare_check(tmp_path, base, new, "brier=0.01")
    # the larger of the paired rare-class floor and the discordance floor (NEW's four most
    # confident questions made wrong, BASE as it is), which is larger here
    discordant = discordance_brier(base, new)
    assert discordant > sides[0] - sides[1] > 0
    assert check["floor_flips"] == m and check["floor_kind"] == "discordant"
    assert check["floor"] == pytest.approx(discordant, rel=1e-9)


def test_paired_floor_turns_whole_questions_on_both_sides():
    # 30 questions of 3 epochs; NEW has one wrong row; BASE one wrong row in another question
    rng = random.Random(5)
    labels = np.repeat(np.arange(30), 3)
    c_base = np.array([round(rng.uniform(0.5, 0.95), 4) for _ in labels])
    c_new = np.array([round(rng.uniform(0.5, 0.95), 4) for _ in labels])
    y_new = np.ones(90, bool)
    y_base = np.ones(90, bool)
    y_new[4], y_base[10] = False, False  # questions 1 and 3
    settings = type("S", (), {"level": 0.95, "bins": BINS, "paired": True})()
    got = paired_floor((c_base, y_base), (c_new, y_new), ("brier", "ece"), settings, labels)
    m = cp_count(1, 30)
    cost = {
        q: sum(2 * (c_new[i] - c_base[i]) for i in range(90) if labels[i] == q)
        for q in range(30)
        if q not in (1, 3)
    }
    chosen = set(sorted(cost, key=cost.get, reverse=True)[: m - 1])
    turned = [labels[i] in chosen for i in range(90)]
    new_y = [bool(y) and not t for y, t in zip(y_new, turned, strict=True)]
    base_y = [bool(y) and not t for y, t in zip(y_base, turned, strict=True)]
    assert got.rare.turned == 3 * (m - 1)
    expected = brier(list(c_new), new_y) - brier(list(c_base), base_y)
    assert got.values["brier"] == pytest.approx(expected, rel=1e-9)
    ece = binned(list(c_new), new_y)["ece"] - binned(list(c_base), base_y)["ece"]
    assert got.values["ece"] == pytest.approx(ece, rel=1e-9, abs=1e-15)
