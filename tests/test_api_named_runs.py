"""Runs of one task named as files are chosen by ``read_predictions`` as ``calibrate`` chooses
them: the newest run is read and the older left out with calibrate's warning, in whatever order
they are given; ``all_runs=True`` pools them. The figures are computed here from the files'
JSON (:func:`test_compare_side_runs.expected`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from harness import run
from test_compare_side_runs import (
    BIAS,
    STAMPS,
    expected,
    needs_bias,
    rerun_warning,
    write_run,
)

import calibcli


@pytest.fixture
def two_runs(tmp_path):
    folder = tmp_path / "out"
    return write_run(folder, STAMPS[0], seed=1), write_run(folder, STAMPS[1], seed=2)


@pytest.mark.parametrize("order", [1, -1])
def test_named_re_runs_read_the_newest_with_calibrate_s_warning(two_runs, order):
    older, newer = two_runs
    rows = calibcli.read_predictions([str(p) for p in two_runs[::order]])
    alone = calibcli.read_predictions(str(newer))
    n, accuracy, confidence = expected(newer)
    assert len(rows.confidence) == n == 48
    assert np.array_equal(rows.confidence, alone.confidence)
    assert np.array_equal(rows.correct, alone.correct)
    assert rows.id.tolist() == alone.id.tolist()
    assert rows.correct.mean() == pytest.approx(accuracy, abs=1e-12)
    assert rows.confidence.mean() == pytest.approx(confidence, rel=1e-12)
    assert rerun_warning(older) in rows.warnings
    # the command reads the same files and says the same
    report = json.loads(run(["calibrate", *two_runs[::order], "--json", "-q"]).stdout)
    assert report["n"] == n and report["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert rerun_warning(older) in report["warnings"]


def test_all_runs_pools_named_re_runs(two_runs):
    older, newer = two_runs
    rows = calibcli.read_predictions([str(older), str(newer)], all_runs=True)
    n, accuracy, confidence = expected(older, newer)
    assert len(rows.confidence) == n == 96
    assert rows.correct.mean() == pytest.approx(accuracy, abs=1e-12)
    assert rows.confidence.mean() == pytest.approx(confidence, rel=1e-12)
    assert not any(w.startswith("re-runs of") for w in rows.warnings)


@needs_bias
def test_realworld_named_runs_read_as_calibrate_reads_them():
    older, newer = (
        BIAS / f"samples_bias_classification_2024-06-17T{stamp}.json"
        for stamp in ("12-20-26.826621", "15-44-37.867068")
    )
    rows = calibcli.read_predictions([str(older), str(newer)])
    report = json.loads(run(["calibrate", older, newer, "--json", "-q"]).stdout)
    assert len(rows.confidence) == report["n"] == 609
    assert rows.correct.mean() == pytest.approx(report["accuracy"], abs=1e-12)
    lines = newer.read_text(encoding="utf-8").splitlines()
    harness = [json.loads(line)["acc"] for line in lines if line.strip()]  # 15-44-37's own
    assert report["accuracy"] == pytest.approx(sum(harness) / len(harness), abs=1e-12)
    warning = rerun_warning(older, task="bias_classification")
    assert warning in rows.warnings and warning in report["warnings"]
    assert len(calibcli.read_predictions([str(older), str(newer)], all_runs=True).id) == 1218
