"""threshold --fit with a temperature calibrator of lm-eval choices: the --fit rows, scaled over
their choices, keep the settings they were read with (their --by grouping, their --mc-norm),
so they are held against the evaluated rows as read. They lost them, and every such run was
refused: "the --fit rows are not grouped", or "chosen on --mc-norm none scores" under
--mc-norm chars.

The reference: with --fit rows that are a copy of the evaluated files, each group's chosen
threshold is the one chosen on the evaluated rows themselves (no --fit)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import run

LM_EVAL = Path(__file__).parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"


def run_folder(folder: Path) -> Path:
    folder.mkdir()
    for task in ("toy_mc_science", "toy_mc_trivia"):
        name = f"samples_{task}_{STAMP}.jsonl"
        shutil.copy(LM_EVAL / name, folder / name)
    shutil.copy(LM_EVAL / f"results_{STAMP}.json", folder / f"results_{STAMP}.json")
    return folder


def chosen(report: dict) -> dict:
    """Each section's chosen thresholds (pooled: None)."""
    sections = {None: report, **(report.get("groups") or {})}
    return {name: (body["plug_in"] or {}).get("threshold") for name, body in sections.items()}


@pytest.mark.parametrize("mc_norm", ["none", "chars"])
@pytest.mark.parametrize("by", [[], ["--by", "task"]])
def test_fit_rows_scaled_over_their_choices_keep_their_reading(tmp_path, mc_norm, by):
    evaluated, fit = run_folder(tmp_path / "e"), run_folder(tmp_path / "f")
    calibrator = tmp_path / "t.json"
    norm = ["--mc-norm", mc_norm]
    made = run(["fit", evaluated, "--method", "temperature", *norm, "-o", calibrator, "-q"])
    assert made.exit_code == 0, made.stderr
    args = ["threshold", evaluated, *by, *norm, "--calibrator", calibrator]
    args += ["--target-accuracy", "0.5", "--json", "-q"]
    with_fit = run([*args, "--fit", fit])
    assert with_fit.exit_code == 0, with_fit.stderr
    alone = run(args)
    assert alone.exit_code == 0, alone.stderr
    got, expected = chosen(json.loads(with_fit.stdout)), chosen(json.loads(alone.stdout))
    assert set(got) == ({None, "toy_mc_science", "toy_mc_trivia"} if by else {None})
    assert got == expected
