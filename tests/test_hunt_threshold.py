"""threshold, fit and apply cases where a figure, a verdict or a warning could go wrong
without a word."""

from __future__ import annotations

import json

import pytest
from harness import run
from test_inspect_status import ERROR, log, write

FAILED = (
    "the inspect-ai run ended with status 'error' (RuntimeError: the server closed the "
    "connection): its 7 samples may be a part of those it planned (a dataset of 20 samples)"
)


@pytest.mark.parametrize("calibrated", [False, True], ids=["raw", "calibrator"])
def test_threshold_names_a_fit_log_whose_run_did_not_succeed(tmp_path, calibrated):
    """The --fit rows' own warnings reach stderr and the report, as the evaluated rows' do,
    with or without --calibrator; the figures are those of the same rows from a log whose run
    succeeded."""
    evaluated = write(tmp_path, "eval.json", log("success", held=20))
    failed = write(tmp_path, "failed.json", log("error", results=None, error=ERROR))
    ok = write(tmp_path, "ok.json", log("success"))  # the same 7 samples, a run that succeeded
    args = ["threshold", evaluated, "--scorer", "match", "--target-accuracy", "0.5", "--json"]
    if calibrated:
        cal = tmp_path / "cal.json"
        fitted = run(["fit", evaluated, "--scorer", "match", "--method", "platt", "-o", cal])
        assert fitted.exit_code == 0, fitted.stderr
        args += ["--calibrator", cal]
    said = f"{failed}: {FAILED}"
    result = run([*args, "--fit", failed])
    clean = run([*args, "--fit", ok])
    assert result.exit_code == clean.exit_code == 0, result.stderr
    body, plain = json.loads(result.stdout), json.loads(clean.stdout)
    assert [w for w in body["warnings"] if "inspect-ai" in w] == [said]
    assert result.stderr.count("inspect-ai run ended") == 1
    assert f"warning: {said}" in result.stderr.splitlines()
    if calibrated:  # the calibrator was fitted on the 20 rows that hold the 7 --fit rows
        assert any(
            w.startswith("the --fit rows: about 35% of the rows the calibrator was fitted on")
            for w in body["warnings"]
        )
    drop = ("warnings", "fit")
    assert {k: v for k, v in body.items() if k not in drop} == {
        k: v for k, v in plain.items() if k not in drop
    }
