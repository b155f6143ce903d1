"""`calibcli threshold` at the edges of what --target-accuracy and --delta accept.

Every value the options accept runs (exit 0, no traceback) and gives the figures the exact
binomial says; a --delta below the documented floor is a usage error (exit 2). References:
scipy.stats.binom for the p-values and scipy.stats.beta for the Clopper-Pearson bounds, and
counts of the rows by a loop.
"""

from __future__ import annotations

import json
import random

import pytest
from harness import run, write_jsonl
from scipy import stats

from calibcli.metrics import accuracy_lower_bound, risk_upper_bound


def rows(top=200, seed=5):
    """Rows with distinct confidences: ``top`` right answers in [0.95, 0.999), then 100 in
    [0.3, 0.6) of which every other one is right."""
    rng = random.Random(seed)
    out = [{"confidence": 0.95 + 0.049 * rng.random(), "correct": True} for _ in range(top)]
    out += [{"confidence": 0.3 + 0.3 * rng.random(), "correct": i % 2 == 0} for i in range(100)]
    return out


def threshold(path, *args):
    result = run(["threshold", path, *args, "--json", "-q"])
    assert "Traceback" not in result.stderr
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def check_against_binomial(report, data, target):
    """The guaranteed block against counts by a loop, scipy's binomial tail and beta quantile."""
    got = report["guaranteed"]
    t = got["threshold"]
    assert t is not None
    accepted = [r for r in data if r["confidence"] >= t]
    errors = sum(not r["correct"] for r in accepted)
    n = len(accepted)
    assert (got["accepted"], got["errors"]) == (n, errors)
    alpha = 1.0 - target  # the float the tool tests with
    assert got["p_value"] == pytest.approx(float(stats.binom.cdf(errors, n, alpha)), rel=1e-9)
    assert got["p_value"] <= got["test_level"]
    want = float(stats.beta.ppf(got["test_level"], n - errors, errors + 1))
    assert got["accuracy_lower_bound"] == pytest.approx(want, rel=1e-9)
    assert got["accuracy_lower_bound"] >= target


@pytest.mark.parametrize("target", ["1e-17", "5e-324"])
@pytest.mark.parametrize("method", ["ltt", "sgr"])
def test_a_tiny_target_accuracy_accepts_every_row(tmp_path, target, method):
    """A below 1.1e-16 makes the tested error rate 1 - A round to 1: any row right rejects
    H0, every threshold passes and the lowest one accepts every row."""
    data = rows()
    path = write_jsonl(tmp_path / "rows.jsonl", data)
    report = threshold(path, "--target-accuracy", target, "--method", method)
    got = report["guaranteed"]
    assert got["coverage"] == 1.0
    assert got["errors"] == sum(not r["correct"] for r in data) == 50
    assert got["p_value"] == 0.0  # P[Binom(300, 1) <= 50], exactly 0


def test_a_target_accuracy_just_below_one_finds_no_threshold(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", rows())
    report = threshold(path, "--target-accuracy", "0.9999999999999999")
    assert report["guaranteed"]["threshold"] is None
    # the target as given: 0.9999999999999999 is not 1
    assert any("no threshold reaches accuracy 0.9999999999999999 " in w for w in report["warnings"])


@pytest.mark.parametrize("delta", ["1e-17", "1e-100"])
@pytest.mark.parametrize("method", ["ltt", "sgr"])
def test_a_tiny_delta_is_tested_exactly(tmp_path, delta, method):
    """1,000 right answers at the top: at A = 0.6 even delta = 1e-100 passes them
    (0.4^252 < 1e-100)."""
    data = rows(top=1000)
    path = write_jsonl(tmp_path / "rows.jsonl", data)
    report = threshold(path, "--target-accuracy", "0.6", "--delta", delta, "--method", method)
    check_against_binomial(report, data, 0.6)


def test_a_tiny_delta_is_named_in_the_warning_not_rounded_away(tmp_path):
    """1 - 1e-17 is 1 in floating point: the warning says 1 - 1e-17, never 'confidence 1'."""
    path = write_jsonl(tmp_path / "rows.jsonl", rows())
    report = threshold(path, "--target-accuracy", "0.99", "--delta", "1e-17")
    assert report["guaranteed"]["threshold"] is None
    assert any("with confidence 1 - 1e-17" in w for w in report["warnings"])


@pytest.mark.parametrize("delta", ["1e-101", "1e-300", "5e-324"])
def test_a_delta_below_the_floor_is_a_usage_error(tmp_path, delta):
    path = write_jsonl(tmp_path / "rows.jsonl", rows())
    result = run(["threshold", path, "--target-accuracy", "0.6", "--delta", delta])
    assert result.exit_code == 2
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "--delta" in errors[0] and "1e-100" in errors[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("delta", [1e-17, 1e-60, 1e-100])
@pytest.mark.parametrize(("k", "n"), [(1, 2), (5, 10), (999, 1000), (3, 40_000)])
def test_lower_bound_at_a_tiny_delta_is_the_root_of_its_tail(delta, k, n):
    """Below 1.1e-16, 1 - delta is 1 in floating point: the bound solves for the small tail.
    Checked by its definition, P[Binom(n, L) >= k] = delta (scipy's binomial, whose tails keep
    their relative precision this far out)."""
    low = accuracy_lower_bound(k, n, delta=delta)
    assert float(stats.binom.sf(k - 1, n, low)) == pytest.approx(delta, rel=1e-7)


@pytest.mark.parametrize("delta", [1e-17, 1e-60, 1e-100])
@pytest.mark.parametrize(("e", "n"), [(1, 2), (5, 10), (1, 1000), (3, 40_000)])
def test_upper_bound_at_a_tiny_delta_is_the_root_of_its_tail(delta, e, n):
    """The error rate's bound U solves P[Binom(n, U) <= e] = delta, not 1 - delta as an upper
    tail (which is 1 here)."""
    up = risk_upper_bound(e, n, delta=delta)
    assert float(stats.binom.cdf(e, n, up)) == pytest.approx(delta, rel=1e-7)
