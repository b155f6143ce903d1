"""A gate on the upper end of a bootstrap interval fails closed, with its reason, when the
sample cannot support an interval: fewer than 30 rows (matched rows in compare), or for accuracy
and AUROC fewer than 10 right or 10 wrong answers on a side. A large sample of one class still
passes: the rule is the sample's size, never "the replicates are all equal".
"""

from __future__ import annotations

import json
import random

import pytest
from harness import run, write_jsonl

FEW = ("--bootstrap", "200")  # resamples enough for these checks, and quick


def gate_lines(result):
    return [line for line in result.stderr.splitlines() if line.startswith("gate failed: ")]


def same_rows(n, confidence=0.99, correct=True, **extra):
    return [{"confidence": confidence, "correct": correct, **extra} for _ in range(n)]


def calibrate(path, *args):
    result = run(["calibrate", path, *args, "--json", "-q"])
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout), result


@pytest.mark.parametrize("n", [1, 5, 29])
def test_too_few_rows_fail_an_upper_gate_closed(tmp_path, n):
    """n identical right answers at 0.99: the Brier score is 1e-4 and every resample gives the
    same, a zero-width interval that would pass --max-brier 0.01."""
    path = write_jsonl(tmp_path / "rows.jsonl", same_rows(n))
    report, result = calibrate(path, "--max-brier", "0.01", "--gate-on", "upper", *FEW)
    assert result.exit_code == 1
    check = report["gate"]["checks"][0]
    assert check["metric"] == "brier" and check["passed"] is False
    assert check["upper"] == pytest.approx(1e-4)  # the interval was there, and degenerate
    assert f"only {n:,} row" in check["reason"] and "at least 30" in check["reason"]
    lines = gate_lines(result)
    assert len(lines) == 1 and "at least 30" in lines[0] and "--max-brier 0.01" in lines[0]


def test_the_estimate_gate_has_no_minimum(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", same_rows(5))
    report, result = calibrate(path, "--max-brier", "0.01")
    assert result.exit_code == 0 and report["gate"]["passed"] is True


def test_enough_rows_of_one_class_pass(tmp_path):
    """A large sample of one class is read, even when every answer is right at one confidence
    (its replicates are all equal): its rare-class floor, 4 of 1,000 answers wrong (the
    one-sided 0.975 Clopper-Pearson count for 0 of 1,000, 1 - 0.025^(1/1000) = 0.00368), is
    a Brier score and an ECE of 0.004."""
    path = write_jsonl(tmp_path / "rows.jsonl", same_rows(1000, confidence=1.0))
    args = ["--max-brier", "0.01", "--max-ece", "0.01", "--min-populated-bins", "1"]
    report, result = calibrate(path, *args, "--gate-on", "upper", *FEW)
    assert result.exit_code == 0, result.stderr
    for check in report["gate"]["checks"]:
        assert check["passed"] and "reason" not in check
        assert (check["floor_flips"], check["value"]) == (4, pytest.approx(0.004, abs=1e-15))


def test_thirty_rows_of_one_class_do_not_bound_the_error_rate(tmp_path):
    """30 rows all right at confidence 1: no resample holds a wrong answer, but 0 of 30 allows
    an error rate up to 1 - 0.025^(1/30) = 0.116, 4 rows of 30; the floor is 4/30."""
    path = write_jsonl(tmp_path / "rows.jsonl", same_rows(30, confidence=1.0))
    args = ["--max-brier", "0.01", "--max-ece", "0.01", "--min-populated-bins", "1"]
    report, result = calibrate(path, *args, "--gate-on", "upper", *FEW)
    assert result.exit_code == 1
    for check in report["gate"]["checks"]:
        assert check["upper"] == 0.0 and check["floor_flips"] == 4
        assert check["value"] == pytest.approx(4 / 30, abs=1e-15) and not check["passed"]


def test_each_group_needs_its_own_rows(tmp_path):
    rng = random.Random(3)
    rows = [{"confidence": 0.9, "correct": rng.random() < 0.9, "grp": "big"} for _ in range(300)]
    rows += same_rows(12, confidence=0.9, grp="small")
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    args = ["--by", "grp", "--max-brier", "0.5", "--gate-on", "upper", "--gate-each"]
    report, result = calibrate(path, *args, *FEW)
    assert result.exit_code == 1
    assert report["gate"]["failed_groups"] == ["small"]
    lines = gate_lines(result)
    assert len(lines) == 1 and "group 'small'" in lines[0] and "only 12 rows" in lines[0]


# --------------------------------------------------------------------------- compare


def pair_files(tmp_path, base_rows, new_rows):
    base = write_jsonl(tmp_path / "base.jsonl", [{"id": i, **r} for i, r in enumerate(base_rows)])
    new = write_jsonl(tmp_path / "new.jsonl", [{"id": i, **r} for i, r in enumerate(new_rows)])
    return base, new


def compare(base, new, *args):
    result = run(["compare", base, new, *args, "--bootstrap", "200", "--json", "-q"])
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout), result


def test_compare_needs_30_matched_rows_for_its_default_upper_gate(tmp_path):
    """Twenty questions both models got right at 0.99: the difference of every figure is 0
    in every resample, an interval of zero width that passes any margin."""
    base, new = pair_files(tmp_path, same_rows(20), same_rows(20))
    report, result = compare(base, new, "--max-increase", "brier=0.01")
    assert result.exit_code == 1
    check = report["gate"]["checks"][0]
    assert check["metric"] == "brier_increase" and check["passed"] is False
    assert "only 20 rows" in check["reason"]
    assert len(gate_lines(result)) == 1
    # reading the difference itself is the user's explicit choice: no minimum
    report, result = compare(base, new, "--max-increase", "brier=0.01", "--gate-on", "estimate")
    assert result.exit_code == 0


def test_compare_auroc_and_accuracy_need_both_classes_on_each_side(tmp_path):
    """300 matched questions; BASE is wrong on 5 only. Its AUROC and accuracy barely vary in
    the resamples, so their gates fail closed naming BASE; the Brier gate is read."""
    rng = random.Random(7)
    conf = [rng.random() for _ in range(300)]
    base_rows = [{"confidence": c, "correct": i >= 5} for i, c in enumerate(conf)]
    new_rows = [{"confidence": c, "correct": rng.random() < c} for c in conf]
    base, new = pair_files(tmp_path, base_rows, new_rows)
    args = ["--max-decrease", "auroc=1", "--max-decrease", "accuracy=1"]
    report, result = compare(base, new, *args, "--max-increase", "brier=1")
    checks = {c["metric"]: c for c in report["gate"]["checks"]}
    for name in ("auroc_decrease", "accuracy_decrease"):
        assert checks[name]["passed"] is False
        assert "BASE has only 295 right and 5 wrong answers" in checks[name]["reason"]
        assert "at least 10 of each" in checks[name]["reason"]
    assert checks["brier_increase"]["passed"] is True
    assert result.exit_code == 1 and len(gate_lines(result)) == 2


def test_compare_with_enough_of_each_class_is_read(tmp_path):
    rng = random.Random(8)
    conf = [rng.random() for _ in range(300)]
    rows = [{"confidence": c, "correct": rng.random() < c} for c in conf]
    base, new = pair_files(tmp_path, rows, rows)
    # a file against itself: no question NEW gets wrong alone, so up to cp_count(0, 300) = 4
    # cannot be ruled out, and the discordance floor of AUROC (about 0.026 here) is read
    report, result = compare(base, new, "--max-decrease", "auroc=0.05")
    assert result.exit_code == 0, result.stderr
    assert report["gate"]["checks"][0]["passed"] is True


@pytest.mark.parametrize("n", [8, 29])
def test_a_summary_s_poisson_sums_need_the_rows_too(tmp_path, n):
    """A summary file without its table gives the intervals from its Poisson replicate sums;
    those resample n rows as much as rows do, and the rule holds for them as well."""
    rng = random.Random(n)
    rows = [{"confidence": round(rng.random(), 3), "correct": rng.random() < 0.5} for _ in range(n)]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    summary = tmp_path / "rows.cbs"
    made = run(["summarize", path, "--table", "never", "--bootstrap-samples", "200", "-o", summary])
    assert made.exit_code == 0, made.stderr
    upper = ("--gate-on", "upper", "--bootstrap-scheme", "poisson")
    report, result = calibrate(summary, "--max-brier", "0.9", *upper)
    assert result.exit_code == 1
    check = report["gate"]["checks"][0]
    assert check["upper"] is not None  # the sums gave an interval, which cannot be read
    assert check["reason"] == (
        f"only {n} rows: the upper end of a bootstrap interval needs at least 30 to show how "
        "brier varies"
    )
