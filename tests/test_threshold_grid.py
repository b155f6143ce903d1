"""Learn then Test walks a grid of thresholds fixed before the data (`threshold --grid N`).

The reference here is a plain-Python fixed-sequence test: the documented grid, the rows accepted
and wrong at each point counted by a loop, exact binomial tails from scipy.stats.binom, the
walk from the highest threshold down that skips the points where even zero errors could not
reject ((1 - alpha)^n > delta) and stops at the first failure.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from harness import run, write_jsonl
from scipy import stats

import calibcli.metrics as metrics


def documented_grid(size=121):
    """t = 1 - 10 ** -(6 * j / (size - 1)) for j = size - 1 down to 0, as README and --help
    describe the grid."""
    return [1.0 - 10.0 ** -(6 * j / (size - 1)) for j in range(size - 1, -1, -1)]


def fixed_sequence(rows, candidates, target, delta):
    """The last candidate passing before the first failure (None if none passes), with the
    number of tests run and the accepted rows and errors at the answer."""
    alpha = 1.0 - target
    best, tests, started = None, 0, False
    for t in candidates:
        n = sum(1 for c, _ in rows if c >= t)
        e = sum(1 for c, y in rows if c >= t and not y)
        if not started and (1 - alpha) ** n > delta:
            continue
        started = True
        p = float(stats.binom.cdf(e, n, alpha))
        assert abs(p - delta) > 1e-9 * delta  # far enough from the level to be decided
        tests += 1
        if p > delta:
            break
        best = (t, n, e)
    return {"threshold": None if best is None else best[0], "tests_run": tests, "answer": best}


def llm_like_rows():
    """2,000 rows with confidences near 1 as language models give them (1 - c = 10^-u, u
    uniform in [0.3, 3]), right with probability c^6 (over-confident), one of the three most
    confident answers wrong."""
    rng = random.Random(11)
    rows = []
    for _ in range(2000):
        c = 1 - 10 ** -(0.3 + 2.7 * rng.random())
        rows.append((c, rng.random() < c**6))
    rows.sort(key=lambda r: -r[0])
    rows[2] = (rows[2][0], False)
    return rows


def threshold_json(path, *args):
    result = run(["threshold", path, *args, "--json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def dump(tmp_path, rows):
    return write_jsonl(tmp_path / "rows.jsonl", [{"confidence": c, "correct": y} for c, y in rows])


def test_the_grid_is_as_documented():
    grid = metrics.threshold_grid()
    assert metrics.GRID_SIZE == 121
    assert grid.tolist() == documented_grid()
    assert grid[0] == 1 - 1e-6 and grid[-1] == 0.0
    assert bool(np.all(np.diff(grid) < 0))
    values = grid.tolist()
    assert 0.9 in values and 0.99 in values and 0.999 in values
    assert sum(0.99 < t < 0.995 for t in values) >= 1 and sum(0.995 < t < 0.999 for t in values)
    assert metrics.threshold_grid(7).tolist() == documented_grid(7)
    for bad in (0, 1, -3, 2.5, True):
        with pytest.raises(ValueError, match="grid"):
            metrics.threshold_grid(bad)


def test_one_early_error_no_longer_ends_the_walk(tmp_path):
    """Every distinct confidence tested from the top: the third row is wrong, so the first test
    (14 rows, 1 error at A = 0.8: p = 0.198) fails and nothing passes. Over the default grid the
    first test already holds dozens of rows, and the walk goes on to a threshold accepting
    most of them, as the reference finds."""
    rows = llm_like_rows()
    path = dump(tmp_path, rows)
    report = threshold_json(path, "--target-accuracy", "0.8")
    ref = fixed_sequence(rows, documented_grid(), 0.8, 0.05)
    got = report["guaranteed"]
    assert ref["threshold"] is not None
    assert got["threshold"] == ref["threshold"]
    assert report["grid"] == 121
    _, n, e = ref["answer"]
    assert (got["accepted"], got["errors"]) == (n, e)
    assert got["tests_run"] == ref["tests_run"]
    assert got["coverage"] == n / 2000 > 0.8
    assert got["p_value"] == pytest.approx(float(stats.binom.cdf(e, n, 1.0 - 0.8)), rel=1e-10)
    assert got["accuracy_lower_bound"] == pytest.approx(
        float(stats.beta.ppf(0.05, n - e, e + 1)), rel=1e-9
    )
    assert got["accuracy_lower_bound"] >= 0.8

    # the walk over every distinct confidence stops at its first test
    distinct = sorted({c for c, _ in rows}, reverse=True)
    every = fixed_sequence(rows, distinct, 0.8, 0.05)
    assert every["threshold"] is None and every["tests_run"] == 1
    report = threshold_json(path, "--target-accuracy", "0.8", "--grid", "0")
    assert report["grid"] == 0
    assert report["guaranteed"]["threshold"] is None
    assert report["guaranteed"]["tests_run"] == 1
    # SGR's bisection does find one, as the grid does
    report = threshold_json(path, "--target-accuracy", "0.8", "--method", "sgr")
    assert report["guaranteed"]["threshold"] is not None and report["grid"] is None


@pytest.mark.parametrize("size", [2, 13, 121, 500])
@pytest.mark.parametrize(("target", "delta"), [(0.8, 0.05), (0.9, 0.1), (0.6, 0.01)])
def test_grid_walk_matches_the_reference(size, target, delta):
    rng = random.Random(size)
    rows = []
    for _ in range(400):
        c = 1 - 10 ** -(2.5 * rng.random())
        rows.append((c, rng.random() < c**3))
    curve = metrics.RiskCoverage.from_arrays([c for c, _ in rows], [y for _, y in rows])
    grid = metrics.threshold_grid(size)
    got = metrics.select_threshold(curve, target_accuracy=target, delta=delta, grid=grid)
    ref = fixed_sequence(rows, documented_grid(size), target, delta)
    assert got.threshold == ref["threshold"]
    assert got.tests_run == ref["tests_run"]
    if ref["answer"] is not None:
        _, n, e = ref["answer"]
        assert (got.accepted, got.errors) == (n, e)
        # the curve point holding the accepted rows is the lowest confidence >= the threshold
        assert curve.thresholds[got.index] == min(c for c, _ in rows if c >= got.threshold)


def test_a_chosen_size_is_used_and_reported(tmp_path):
    rows = llm_like_rows()
    path = dump(tmp_path, rows)
    report = threshold_json(path, "--target-accuracy", "0.8", "--grid", "41")
    assert report["grid"] == 41
    ref = fixed_sequence(rows, documented_grid(41), 0.8, 0.05)
    assert report["guaranteed"]["threshold"] == ref["threshold"]
    assert ref["threshold"] in documented_grid(41)


def test_the_table_names_the_grid(tmp_path):
    path = dump(tmp_path, llm_like_rows())
    result = run(["threshold", path, "--target-accuracy", "0.8", "-q"])
    assert result.exit_code == 0
    assert "over 121 thresholds fixed in advance" in " ".join(result.stdout.split())
    result = run(["threshold", path, "--target-accuracy", "0.8", "-q", "--grid", "0"])
    assert "over every distinct confidence" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    "extra",
    [
        ["--grid", "1"],
        ["--grid", "-1"],
        ["--grid", "1000001"],
        ["--grid", "x"],
        ["--grid", "5", "--method", "sgr"],
    ],
)
def test_grid_option_errors_exit_2(tmp_path, extra):
    path = dump(tmp_path, llm_like_rows()[:50])
    result = run(["threshold", path, "--target-accuracy", "0.8", *extra])
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "--grid" in errors[0]
    assert "Traceback" not in result.stderr


def test_a_grid_is_for_ltt_only():
    curve = metrics.RiskCoverage.from_arrays([0.9, 0.8], [True, False])
    grid = metrics.threshold_grid()
    with pytest.raises(ValueError, match="ltt"):
        metrics.select_threshold(curve, target_accuracy=0.5, method="sgr", grid=grid)
    with pytest.raises(ValueError, match="grid"):
        metrics.select_threshold(curve, target_accuracy=0.5, grid=[1.5])


def test_the_guarantee_holds_on_the_grid_in_simulation():
    """1,000 seeded draws of 500 rows, c ~ U(0, 1), correct ~ Bernoulli(c): the true accuracy
    above t is (1 + t)/2, so a threshold misses A = 0.8 exactly when t < 0.6. Over the grid the
    miss rate stays within delta (README: 0.3% of the draws)."""
    draws, n_rows, target, delta = 1000, 500, 0.8, 0.05
    rng = np.random.default_rng(20240601)
    conf = rng.random((draws, n_rows))
    correct = rng.random((draws, n_rows)) < conf
    grid = metrics.threshold_grid()
    misses = found = 0
    for i in range(draws):
        curve = metrics.RiskCoverage.from_arrays(conf[i], correct[i])
        choice = metrics.select_threshold(curve, target_accuracy=target, delta=delta, grid=grid)
        if choice.threshold is not None:
            found += 1
            misses += (1 + choice.threshold) / 2 < target
    assert found > draws / 2  # the grid does find thresholds here
    assert misses / draws <= delta + 3 * (delta * (1 - delta) / draws) ** 0.5
    assert misses == 3
