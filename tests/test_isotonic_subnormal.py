"""An isotonic map between points closer than 1/DBL_MAX (subnormal confidences).

np.interp's slope (y1 - y0) / (x1 - x0) overflows there. The references are exact: subnormals
are integer multiples of 2**-1074, so t = (c - x0) / (x1 - x0) is a ratio of integers, and the
mapped value y0 + t (y1 - y0) is computed with fractions.Fraction and rounded once.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from harness import run, write_jsonl
from hypothesis import given
from hypothesis import strategies as st

from calibcli.metrics.recalibration import IsotonicCalibrator

TINY = 5e-324  # 2**-1074, the smallest subnormal


def ulps(c: float) -> int:
    return int(Fraction(c) / Fraction(TINY))


def reference(c: float, x: list[float], y: list[float]) -> float:
    """The piecewise-linear map, computed exactly."""
    if c <= x[0]:
        return y[0]
    if c >= x[-1]:
        return y[-1]
    j = max(k for k in range(len(x) - 1) if x[k] <= c)
    t = Fraction(ulps(c) - ulps(x[j]), ulps(x[j + 1]) - ulps(x[j]))
    return float(Fraction(y[j]) + t * (Fraction(y[j + 1]) - Fraction(y[j])))


def test_between_two_subnormal_points():
    cal = IsotonicCalibrator(x=np.array([TINY, 4 * TINY]), y=np.array([0.0, 1.0]))
    got = cal.apply(np.array([TINY, 2 * TINY, 3 * TINY, 4 * TINY]))
    assert got.tolist() == [0.0, 1 / 3, 2 / 3, 1.0]


@given(
    st.lists(st.integers(1, 2000), min_size=2, max_size=6, unique=True),
    st.lists(st.integers(0, 1000), min_size=6, max_size=6),
    st.lists(st.integers(0, 2100), min_size=1, max_size=20),
)
def test_subnormal_points_match_the_exact_map(xs, ys, cs):
    x = [k * TINY for k in sorted(xs)]
    y = sorted(v / 1000 for v in ys)[: len(x)]
    c = [k * TINY for k in cs]
    got = IsotonicCalibrator(x=np.array(x), y=np.array(y)).apply(np.array(c)).tolist()
    want = [reference(v, x, y) for v in c]
    # one rounding of t and two of y0 + t (y1 - y0): within a few ulps of the exact value
    assert np.allclose(got, want, rtol=4e-16, atol=0.0)
    assert all(0.0 <= v <= 1.0 for v in got)


def test_normal_points_keep_np_interp():
    x, y = np.array([0.1, 0.4, 0.9]), np.array([0.2, 0.5, 0.8])
    c = np.linspace(0.0, 1.0, 101)
    got = IsotonicCalibrator(x=x, y=y).apply(c)
    assert got.tobytes() == np.interp(c, x, y).tobytes()


@pytest.fixture
def calibrator(tmp_path):
    path = tmp_path / "iso.json"
    rows = write_jsonl(
        tmp_path / "fit.jsonl",
        [{"confidence": k * TINY, "correct": k % 2 == 0} for k in range(1, 9)],
    )
    result = run(["fit", rows, "--method", "isotonic", "-q", "-o", path])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(path.read_text())
    doc["params"] = {"x": [TINY, 4 * TINY], "y": [0.0, 1.0]}
    path.write_text(json.dumps(doc))
    return path


def test_apply_writes_the_mapped_confidence_not_infinity(tmp_path, calibrator):
    rows = write_jsonl(
        tmp_path / "score.jsonl",
        [{"confidence": 2 * TINY, "correct": False}, {"confidence": 3 * TINY, "correct": True}],
    )
    result = run(["apply", calibrator, rows])
    assert result.exit_code == 0, result.stderr
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["confidence"] for r in out] == [1 / 3, 2 / 3]


def test_calibrate_with_the_calibrator_scores_the_mapped_rows(tmp_path, calibrator):
    rows = write_jsonl(
        tmp_path / "score.jsonl",
        [{"confidence": 2 * TINY, "correct": False}, {"confidence": 3 * TINY, "correct": True}],
    )
    result = run(["calibrate", rows, "--calibrator", calibrator, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    # rows (1/3, wrong) and (2/3, right): Brier = ((1/3)^2 + (1/3)^2) / 2
    assert report["mean_confidence"] == pytest.approx(0.5, abs=1e-15)
    assert report["brier"] == pytest.approx(1 / 9, abs=1e-15)


def test_cross_fitted_groups_of_subnormal_confidences(tmp_path):
    tiny = [(5, False), (3, False), (1, False), (2, True), (4, True)]
    rows = [{"confidence": k * TINY, "correct": y, "task": "tiny"} for k, y in tiny]
    rows += [{"confidence": (k + 0.5) / 10, "correct": k % 3 != 0, "task": "p"} for k in range(10)]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    options = ["--by", "task", "--recalibrate", "isotonic", "--folds", "3", "--json", "-q"]
    result = run(["calibrate", path, *options])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    tiny = report["groups"]["tiny"]
    assert tiny["n"] == 5
    assert 0.0 <= tiny["mean_confidence"] <= 1.0
