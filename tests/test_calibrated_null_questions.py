"""The calibrated null (BASE's bias allowance in compare) on rows that repeat their questions:
one uniform draw per question, so a question's rows are right or wrong together as far as their
confidences allow. References: the documented recipe in a plain loop, and an exact convolution
over questions."""

from __future__ import annotations

import numpy as np
import pytest

from calibcli.metrics import calibrated_null


def loop_ece(conf, right, bins=10):
    """ECE over equal-width bins by a plain loop (a confidence c falls in bin floor(c * bins),
    1.0 in the last)."""
    sums = [[0.0, 0.0, 0] for _ in range(bins)]
    for c, y in zip(conf, right, strict=True):
        b = min(int(c * bins), bins - 1)
        sums[b][0] += c
        sums[b][1] += float(y)
        sums[b][2] += 1
    return sum(abs(s[1] - s[0]) for s in sums if s[2]) / len(conf)


def recipe_mean(conf, questions, draws, seed):
    """The module docstring's recipe, step by step."""
    order = sorted(range(len(conf)), key=lambda i: conf[i])  # stable
    c = [conf[i] for i in order]
    numbers: dict = {}
    number = [numbers.setdefault(questions[i], len(numbers)) for i in order]
    total = 0.0
    for r in range(draws):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r, 2)))
        u = rng.random(len(numbers))
        total += loop_ece(c, [u[q] < ci for q, ci in zip(number, c, strict=True)])
    return total / draws


def test_the_draws_follow_the_documented_recipe():
    rng = np.random.default_rng(3)
    conf = rng.random(60).round(3)
    questions = rng.permutation(np.repeat(np.arange(20), 3))
    null = calibrated_null(conf, keys=["ece"], draws=40, seed=7, questions=questions)
    assert null.mean["ece"] == pytest.approx(recipe_mean(conf, questions, 40, 7), abs=1e-12)


def test_distinct_questions_draw_as_rows_without_labels():
    conf = np.random.default_rng(5).random(200)
    labels = np.random.default_rng(6).permutation(200) * 7 + 3
    without = calibrated_null(conf, draws=30, seed=2)
    with_labels = calibrated_null(conf, draws=30, seed=2, questions=labels)
    assert with_labels == without


def exact_null_ece_by_question(conf_q, rows_q, bins=10):
    """E[ECE] when a question's rows share one confidence and are right together with that
    probability: per bin, the law of the number of right rows by convolution over questions
    (a question of m rows adds 0 or m)."""
    total_rows = int(sum(rows_q))
    total = 0.0
    which = [min(int(c * bins), bins - 1) for c in conf_q]
    for b in range(bins):
        law = np.array([1.0])
        expected = 0.0
        for c, m, w in zip(conf_q, rows_q, which, strict=True):
            if w != b:
                continue
            step = np.zeros(m + 1)
            step[0], step[m] = 1.0 - c, c
            law = np.convolve(law, step)
            expected += c * m
        total += float(np.sum(law * np.abs(np.arange(law.shape[0]) - expected)))
    return total / total_rows


def test_a_question_of_one_confidence_moves_as_one():
    rng = np.random.default_rng(17)
    conf_q = rng.random(60)
    rows_q = rng.integers(1, 6, size=60)
    conf = np.repeat(conf_q, rows_q)
    questions = np.repeat(np.arange(60), rows_q)
    null = calibrated_null(conf, keys=["ece"], seed=4, questions=questions)
    exact = exact_null_ece_by_question(conf_q, rows_q)
    assert abs(null.mean["ece"] - exact) <= 4 * null.standard_error["ece"]
    # the rows drawn apart read a smaller null: the repeats' dependence is what widens it
    apart = calibrated_null(conf, keys=["ece"], seed=4)
    assert apart.mean["ece"] < exact - 4 * apart.standard_error["ece"]


def test_labels_must_match_the_rows():
    with pytest.raises(ValueError, match="one label per confidence"):
        calibrated_null([0.2, 0.4], questions=[1])


def test_compare_draws_base_s_repeated_questions_together(tmp_path):
    """Pooled re-runs on BASE (four rows a question, one confidence each): the allowance is the
    null of questions right or wrong whole, not of independent rows."""
    import json

    from harness import run

    rng = np.random.default_rng(23)
    conf_q = rng.random(60).round(4)
    for name in ("base", "new"):
        with open(tmp_path / f"{name}.jsonl", "w") as f:
            for q, c in enumerate(conf_q):
                for _ in range(4):
                    row = {"id": q, "confidence": float(c), "correct": bool(rng.random() < c)}
                    f.write(json.dumps(row) + "\n")
    paths = [str(tmp_path / "base.jsonl"), str(tmp_path / "new.jsonl")]
    args = ["--id-field", "id", "--all-runs", "--unpaired", "--gate-on", "upper", "-q"]
    result = run(
        ["compare", *paths, *args, "--max-increase", "ece=1", "--bootstrap", "200", "--json"]
    )
    assert result.exit_code == 0, result.stderr
    (check,) = json.loads(result.stdout)["gate"]["checks"]
    together = exact_null_ece_by_question(conf_q, [4] * 60)
    apart = exact_null_ece_by_question(np.repeat(conf_q, 4), [1] * 240)
    # 200 draws of an ECE whose spread is about 0.03: a standard error near 0.002
    assert check["allowance"] == pytest.approx(together, abs=0.01)
    assert together > apart + 0.04
