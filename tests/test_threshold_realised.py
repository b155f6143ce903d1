"""`threshold --fit`: the figures of the rows the threshold was chosen on and of the rows it is
evaluated on are told apart everywhere, and a threshold whose accuracy on the evaluated rows
falls below the target warns and fails a --min-coverage gate.

References: the accepted rows, errors and accuracy counted by a loop over the rows written
here; the Clopper-Pearson bound from scipy.stats.beta.
"""

from __future__ import annotations

import json
import random

import pytest
from harness import run, write_jsonl
from scipy import stats

TARGET = "0.8"


def confidences(n=1000):
    return [0.5 + 0.5 * (i + 0.5) / n for i in range(n)]


def calibrated(seed=1, **extra):
    """Right with probability equal to the confidence: the threshold chosen on these rows
    keeps its accuracy on other rows like them."""
    rng = random.Random(seed)
    return [{"confidence": c, "correct": rng.random() < c, **extra} for c in confidences()]


def mostly_wrong(**extra):
    """The same confidences, 26 of every 100 consecutive rows right: about 26% right above
    any threshold."""
    return [
        {"confidence": c, "correct": i % 100 < 26, **extra} for i, c in enumerate(confidences())
    ]


def counted(rows, threshold):
    accepted = [r for r in rows if r["confidence"] >= threshold]
    right = sum(bool(r["correct"]) for r in accepted)
    return len(accepted), len(accepted) - right, right / len(accepted)


def files(tmp_path, fit_rows, eval_rows):
    return write_jsonl(tmp_path / "fit.jsonl", fit_rows), write_jsonl(
        tmp_path / "eval.jsonl", eval_rows
    )


def gate_lines(result):
    return [line for line in result.stderr.splitlines() if line.startswith("gate failed: ")]


def test_realised_figures_are_the_evaluated_rows(tmp_path):
    fit_rows, eval_rows = calibrated(), mostly_wrong()
    fit, main = files(tmp_path, fit_rows, eval_rows)
    result = run(["threshold", main, "--fit", fit, "--target-accuracy", TARGET, "--json", "-q"])
    report = json.loads(result.stdout)
    chosen = report["guaranteed"]
    t = chosen["threshold"]
    assert t is not None
    n, e, accuracy = counted(fit_rows, t)
    assert (chosen["accepted"], chosen["errors"], chosen["accuracy"]) == (n, e, accuracy)
    assert accuracy >= 0.8  # on the fit rows the threshold holds
    seen = chosen["realised"]
    n, e, accuracy = counted(eval_rows, t)
    assert (seen["accepted"], seen["errors"]) == (n, e)
    assert seen["accuracy"] == accuracy and 0.2 < accuracy < 0.3
    assert seen["coverage"] == n / 1000 == report["coverage"]
    want = float(stats.beta.ppf(0.05, n - e, e + 1))  # at --delta, on held-out rows
    assert seen["accuracy_lower_bound"] == pytest.approx(want, rel=1e-9)
    assert report["fit_n"] == 1000 and report["n"] == 1000


def test_accuracy_below_the_target_on_the_evaluated_rows_fails_the_gate(tmp_path):
    fit, main = files(tmp_path, calibrated(), mostly_wrong())
    args = ["threshold", main, "--fit", fit, "--target-accuracy", TARGET, "--min-coverage", "0.1"]
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    seen = report["guaranteed"]["realised"]["accuracy"]
    assert report["coverage"] > 0.1  # the coverage alone would pass
    check = report["gate"]["checks"][0]
    assert check["metric"] == "coverage" and check["passed"] is False
    assert "below the target accuracy 0.8" in check["reason"]
    assert f"{seen:.4g}" in check["reason"]
    lines = gate_lines(result)
    assert len(lines) == 1 and "evaluated rows" in lines[0] and "--min-coverage 0.1" in lines[0]
    warned = [w for w in report["warnings"] if "below the target 0.8" in w]
    assert len(warned) == 1 and "fit rows" in warned[0]
    assert "warning: " + warned[0] in result.stderr


def test_without_a_gate_it_still_warns(tmp_path):
    fit, main = files(tmp_path, calibrated(), mostly_wrong())
    result = run(["threshold", main, "--fit", fit, "--target-accuracy", TARGET, "-q"])
    assert result.exit_code == 0
    assert "below the target 0.8" in result.stderr


def test_rows_like_the_fit_rows_pass(tmp_path):
    """Evaluated rows drawn like the fit rows reach the target above the threshold: no warning,
    and the gate passes."""
    fit, main = files(tmp_path, calibrated(seed=1), calibrated(seed=2))
    args = ["threshold", main, "--fit", fit, "--target-accuracy", TARGET, "--min-coverage", "0.1"]
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["guaranteed"]["realised"]["accuracy"] >= 0.8
    assert not any("below the target" in w for w in report["warnings"])


def test_the_table_summary_and_page_name_the_rows(tmp_path):
    fit_rows, eval_rows = calibrated(), mostly_wrong()
    fit, main = files(tmp_path, fit_rows, eval_rows)
    summary, page = tmp_path / "summary.md", tmp_path / "page.html"
    args = ["threshold", main, "--fit", fit, "--target-accuracy", TARGET, "-q"]
    result = run([*args, "--summary", summary, "--html", page])
    assert result.exit_code == 0
    report = json.loads(run([*args, "--json"]).stdout)
    chosen = report["guaranteed"]
    fit_accuracy, seen = chosen["accuracy"], chosen["realised"]["accuracy"]
    table = result.stdout
    lines = {
        line.rsplit(None, 1)[0].strip(): line.split()[-1]
        for line in table.splitlines()
        if len(line.split()) > 1
    }
    assert lines["accuracy above it (evaluated rows)"] == f"{seen:.4f}"
    assert lines["accuracy above it (fit rows)"] == f"{fit_accuracy:.4f}"
    assert lines["coverage (evaluated rows)"] == f"{report['coverage']:.4f}"
    assert "accuracy above it" not in lines  # no figure without its rows
    low = chosen["realised"]["accuracy_lower_bound"]
    assert lines["accuracy lower bound (evaluated rows)"] == f"{low:.4f}"
    text = summary.read_text(encoding="utf-8")
    assert f"| accuracy above it (evaluated rows) | {seen:.4f} |" in text
    assert f"| accuracy above it (fit rows) | {fit_accuracy:.4f} |" in text
    assert "| accuracy above it |" not in text
    html = page.read_text(encoding="utf-8")
    assert "accuracy above it (evaluated rows)" in html and f"{seen:.4f}" in html
    assert "accuracy (evaluated rows)" in html  # the chosen-thresholds table


def test_without_fit_the_labels_name_no_rows(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", calibrated())
    result = run(["threshold", path, "--target-accuracy", TARGET, "-q"])
    assert result.exit_code == 0
    assert "accuracy above it " in result.stdout
    assert "rows)" not in result.stdout


def test_each_group_is_judged_on_its_evaluated_rows(tmp_path):
    """Group a's evaluated rows are like its fit rows, group b's mostly wrong: with --gate-each
    b fails for its accuracy, a passes, and the group table shows each one's evaluated
    accuracy."""
    fit_rows = calibrated(seed=1, grp="a") + calibrated(seed=3, grp="b")
    eval_rows = calibrated(seed=2, grp="a") + mostly_wrong(grp="b")
    fit, main = files(tmp_path, fit_rows, eval_rows)
    base = ["threshold", main, "--fit", fit, "--target-accuracy", TARGET, "--by", "grp"]
    result = run([*base, "--min-coverage", "0.05", "--gate-each", "--json", "-q"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["gate"]["failed_groups"] == ["b"]
    b = report["groups"]["b"]["guaranteed"]
    _, _, accuracy = counted([r for r in eval_rows if r["grp"] == "b"], b["threshold"])
    assert b["realised"]["accuracy"] == accuracy < 0.8
    assert any("group 'b'" in line and "evaluated rows" in line for line in gate_lines(result))
    table = run([*base, "-q"]).stdout
    row = next(line for line in table.splitlines() if line.startswith("b "))
    assert f"{accuracy:.4f}" in row.split()


def test_an_accuracy_just_below_the_target_reads_below_it(tmp_path):
    # the evaluated rows above any threshold the fit rows choose: 19,999 right of 25,000 at
    # 0.99, accuracy 0.79996 exactly (by construction), which rounds to the target at 4 digits
    fit = [
        {"confidence": 0.99 if i < 1000 else 0.3, "correct": i < 990 or 1000 <= i < 1300}
        for i in range(2000)
    ]
    main = [{"confidence": 0.99, "correct": i < 19_999} for i in range(25_000)]
    main += [{"confidence": 0.3, "correct": i < 7000} for i in range(25_000)]
    fit_path, main_path = files(tmp_path, fit, main)
    args = ["threshold", main_path, "--fit", fit_path, "--target-accuracy", TARGET]
    result = run([*args, "--min-coverage", "0.2", "--json", "-q"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    realised = report["guaranteed"]["realised"]
    assert (realised["accepted"], realised["accepted"] - realised["errors"]) == (25_000, 19_999)
    check = report["gate"]["checks"][0]
    assert "evaluated rows, 0.79996, is below the target accuracy 0.8" in check["reason"]
    assert any("with accuracy 0.79996 (19,999 right)" in w for w in report["warnings"])
