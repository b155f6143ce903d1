"""A paired comparison's upper-end gate reads the discordance floor where it is larger: when
fewer than 10 questions hold a pair with NEW wrong and BASE right, their count is raised to its
one-sided Clopper-Pearson upper count by making NEW wrong on whole questions both sides got
right (BASE left as it is), and the figure's NEW − BASE on those rows is the floor. Every
reference is computed here: the count by scipy's beta quantile, the figures by plain loops."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run, write_jsonl
from scipy.stats import beta

from calibcli.metrics import discordance_floor, discordance_of


def cp_count(k: int, n: int, level: float = 0.95) -> int:
    """m = ceil(n · p_u), p_u the one-sided (1 + level)/2 Clopper-Pearson upper bound."""
    return math.ceil(n * float(beta.ppf((1 + level) / 2, k + 1, n - k)))


def brier(conf, right) -> float:
    return sum((c - y) ** 2 for c, y in zip(conf, right, strict=True)) / len(conf)


def nll(conf, right) -> float:
    return -sum(math.log(c if y else 1 - c) for c, y in zip(conf, right, strict=True)) / len(conf)


def accuracy(right) -> float:
    return sum(right) / len(right)


def by_hand(base, new, labels, level=0.95):
    """The discordant questions k, their upper count m, and for the Brier score and the NLL the
    questions turned and NEW's outcomes with them made wrong."""
    (_, yb), (cn, yn) = base, new
    questions = sorted(set(labels))
    held = {q: [i for i, x in enumerate(labels) if x == q] for q in questions}
    k = sum(any(yb[i] and not yn[i] for i in rows) for rows in held.values())
    m = cp_count(k, len(questions), level)
    free = [q for q in questions if all(yb[i] and yn[i] for i in held[q])]
    outcomes, chosen = {}, {}
    for name, cost in (
        ("brier", lambda c: 2 * c - 1),
        ("nll", lambda c: math.log(c / (1 - c))),
    ):
        ranked = sorted(free, key=lambda q: -sum(cost(cn[i]) for i in held[q]))
        chosen[name] = set(ranked[: max(0, m - k)])
        outcomes[name] = [y and labels[i] not in chosen[name] for i, y in enumerate(yn)]
    return k, m, chosen, outcomes


@pytest.mark.parametrize(
    ("k", "n", "level"),
    [(0, 60, 0.95), (3, 60, 0.95), (9, 200, 0.9), (0, 10_000, 0.99), (5, 37, 0.8)],
)
def test_the_count_is_the_clopper_pearson_upper_count(k, n, level):
    base = np.ones(n, bool)
    new = np.ones(n, bool)
    new[:k] = False
    found = discordance_of(base, new, level=level, least=10)
    assert (found.count, found.total, found.bound) == (k, n, cp_count(k, n, level))


def test_ten_discordant_questions_give_no_floor():
    base, new = np.ones(60, bool), np.ones(60, bool)
    new[:10] = False
    assert discordance_of(base, new, level=0.95, least=10) is None
    # questions NEW gets right where BASE is wrong are not NEW's own errors
    assert discordance_of(new, base, level=0.95, least=10).count == 0


def test_the_floor_is_new_turned_less_base_as_a_loop_computes_it():
    rng = np.random.default_rng(3)
    n = 80
    cb, cn = rng.uniform(0.55, 0.99, n), rng.uniform(0.55, 0.99, n)
    yb, yn = rng.random(n) < 0.8, rng.random(n) < 0.8
    yn[yb & ~yn & (np.arange(n) > 20)] = True  # a few discordant questions remain
    labels = list(range(n))
    k, m, _, turned = by_hand((cb, yb), (cn, yn), labels)
    assert 0 < k < 10 and m > k
    found = discordance_floor(
        (cb, yb), (cn, yn), ("brier", "nll", "accuracy"), level=0.95, least=10
    )
    assert (found.discordance.count, found.discordance.bound) == (k, m)
    assert found.discordance.questions == m - k == found.discordance.turned
    assert found.values["brier"] == pytest.approx(
        brier(cn, turned["brier"]) - brier(cb, yb), rel=1e-12
    )
    assert found.values["nll"] == pytest.approx(nll(cn, turned["nll"]) - nll(cb, yb), rel=1e-12)
    # accuracy takes the Brier score's questions, and its floor is BASE less NEW
    assert found.values["accuracy"] == pytest.approx(
        accuracy(yb) - accuracy(turned["brier"]), abs=1e-15
    )


def test_repeated_questions_are_counted_and_turned_whole():
    rng = np.random.default_rng(5)
    labels = [f"q{i // 3}" for i in range(120)]  # 40 questions of 3 rows each
    cb, cn = rng.uniform(0.6, 0.95, 120), rng.uniform(0.6, 0.95, 120)
    yb, yn = np.ones(120, bool), np.ones(120, bool)
    yn[[0, 1, 7]] = False  # NEW wrong where BASE is right: in questions q0 and q2
    yb[[30, 31]] = False  # BASE wrong alone: q10 is not free
    k, m, _, turned = by_hand((cb, yb), (cn, yn), labels)
    assert k == 2 and m == cp_count(2, 40)
    found = discordance_floor(
        (cb, yb), (cn, yn), ("brier", "ece"), level=0.95, least=10, labels=np.array(labels)
    )
    assert (found.discordance.count, found.discordance.total) == (2, 40)
    assert found.discordance.turned == 3 * (m - k)  # every NEW row of each chosen question
    assert found.values["brier"] == pytest.approx(
        brier(cn, turned["brier"]) - brier(cb, yb), rel=1e-12
    )


def _compare(tmp_path, base_rows, new_rows, *args):
    base = write_jsonl(tmp_path / "base.jsonl", base_rows)
    new = write_jsonl(tmp_path / "new.jsonl", new_rows)
    result = run(["compare", base, new, "--id-field", "id", "--gate-on", "upper", *args, "--json"])
    return result, json.loads(result.stdout)["gate"]


def test_sixty_questions_all_right_on_both_sides_fail_a_brier_margin(tmp_path):
    rows = [{"id": i, "confidence": 0.95, "correct": True} for i in range(60)]
    result, gate = _compare(tmp_path, rows, rows, "--max-increase", "brier=0.02")
    assert result.exit_code == 1
    (check,) = gate["checks"]
    m = cp_count(0, 60)
    assert m == 4
    assert check["upper"] == 0
    assert check["floor"] == pytest.approx(m * (0.95**2 - 0.05**2) / 60, rel=1e-12)
    assert (check["floor_kind"], check["floor_flips"]) == ("discordant", m)
    assert (
        "NEW wrong where BASE is right on 0 of 60 questions: up to 4 cannot be ruled out "
        "at 0.975" in result.stderr
    )


def test_a_new_model_better_on_every_question_still_has_its_own_floor(tmp_path):
    base = [{"id": i, "confidence": 0.9, "correct": True} for i in range(60)]
    new = [{"id": i, "confidence": 0.95, "correct": True} for i in range(60)]
    result, gate = _compare(tmp_path, base, new, "--max-increase", "brier=0.02")
    (check,) = gate["checks"]
    expected = brier([0.95] * 60, [True] * 56 + [False] * 4) - brier([0.9] * 60, [True] * 60)
    assert check["floor"] == pytest.approx(expected, rel=1e-12)
    assert result.exit_code == 1 and check["passed"] is False


def test_ten_thousand_questions_compared_with_themselves_pass(tmp_path):
    rows = [{"id": i, "confidence": 0.99, "correct": True} for i in range(10_000)]
    args = ("--max-increase", "brier=0.01", "--bootstrap", "200")
    result, gate = _compare(tmp_path, rows, rows, *args)
    assert result.exit_code == 0, result.stderr
    (check,) = gate["checks"]
    m = cp_count(0, 10_000)
    assert m == 4
    assert check["floor"] == pytest.approx(m * (0.99**2 - 0.01**2) / 10_000, rel=1e-9)
    assert check["floor_kind"] == "discordant"


def test_an_accuracy_margin_fails_on_identical_right_and_wrong_answers(tmp_path):
    # 40 wrong answers on each side, on the same questions: no question is discordant
    rows = [
        {"id": i, "confidence": 0.5 + 0.45 * ((i * 37) % 200) / 200, "correct": i % 5 != 0}
        for i in range(200)
    ]
    result, gate = _compare(tmp_path, rows, rows, "--max-decrease", "accuracy=0.01")
    (check,) = gate["checks"]
    m = cp_count(0, 200)
    assert m == 4 and round(1 - 0.025 ** (1 / 200), 4) == 0.0183
    assert check["floor"] == pytest.approx(m / 200, abs=1e-15)
    assert check["floor_kind"] == "discordant" and check["passed"] is False
    assert result.exit_code == 1
    assert "accuracy_decrease = 0.02 (discordance floor" in result.stderr


def test_gate_each_gives_each_group_its_own_discordance_floor(tmp_path):
    base, new = [], []
    for i in range(40):  # group a: all right on both sides
        base.append({"id": i, "confidence": 0.9, "correct": True, "g": "a"})
        new.append({"id": i, "confidence": 0.9, "correct": True, "g": "a"})
    for i in range(40, 100):  # group b: NEW wrong alone on 15 questions, 20 wrong on both
        y = (i % 3) != 0
        base.append({"id": i, "confidence": 0.7, "correct": y or i < 55, "g": "b"})
        new.append({"id": i, "confidence": 0.7, "correct": y, "g": "b"})
    args = ("--by", "g", "--gate-each", "--max-increase", "brier=0.5")
    result, gate = _compare(tmp_path, base, new, *args)
    checks = {c.get("group"): c for c in gate["checks"]}
    m = cp_count(0, 40)
    assert checks["a"]["floor"] == pytest.approx(m * (0.9**2 - 0.1**2) / 40, rel=1e-12)
    assert checks["a"]["floor_kind"] == "discordant"
    # b: 5 discordant questions of 60
    assert checks["b"]["floor_kind"] == "discordant"
    assert checks["b"]["floor"] == pytest.approx(
        cp_count(5, 60) * (0.7**2 - 0.3**2) / 60, rel=1e-12
    )
    # pooled: 5 discordant of 100, the turned questions group a's (the most confident)
    cols = [[r[k] for r in side] for side in (base, new) for k in ("confidence", "correct")]
    k, m, _, turned = by_hand(cols[:2], cols[2:], [r["id"] for r in base])
    assert (k, m) == (5, cp_count(5, 100))
    expected = brier(cols[2], turned["brier"]) - brier(*cols[:2])
    assert checks[None]["floor"] == pytest.approx(expected, rel=1e-9)
    assert result.exit_code == 0, result.stderr  # every floor is under 0.5


def test_the_pass_rate_of_a_five_percent_new_only_error_rate_is_at_most_2_5_percent():
    """NEW wrong alone on each of 60 questions with probability 0.05 (both sides at 0.95,
    BASE always right): the true Brier increase 0.05·(0.95² − 0.05²) = 0.045 exceeds 0.02,
    so a gate on 0.02 may pass at most 2.5% of the time (the upper end's level)."""
    rng = np.random.default_rng(11)
    n, draws, resamples = 60, 2000, 200
    conf = np.full(n, 0.95)
    base = np.ones(n, bool)
    cost = 0.95**2 - 0.05**2  # a NEW-only error's Brier increase
    passed_old = passed_new = 0
    for _ in range(draws):
        new = rng.random(n) >= 0.05
        wrong = (~new).astype(float) * cost
        picks = rng.integers(0, n, (resamples, n))
        upper = float(np.percentile(wrong[picks].mean(axis=1), 97.5))
        floor = discordance_floor((conf, base), (conf, new), ("brier",), level=0.95, least=10)
        value = upper if floor is None else max(upper, floor.values["brier"])
        passed_old += upper <= 0.02
        passed_new += value <= 0.02
    assert passed_old / draws > 0.025  # the bootstrap alone passes too often
    assert passed_new / draws <= 0.025
