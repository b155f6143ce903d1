"""An lm-eval results file saved on one line (re-saved with ``json.dump``) is what one
pretty-printed is: a run folder's file of aggregate figures, skipped with a warning, and the
folder's samples files are read; named alone, it leaves no rows to read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness import run

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
RESULTS = f"results_{STAMP}.json"
SKIPPED = (
    "lm-eval results file: aggregate figures, no per-document rows (the samples_* files beside "
    "it hold them); skipped"
)


def folder(tmp_path, name, one_line):
    where = tmp_path / name
    where.mkdir()
    shutil.copy(LM_EVAL / f"samples_toy_mc_science_{STAMP}.jsonl", where)
    results = json.loads((LM_EVAL / RESULTS).read_text())
    (where / RESULTS).write_text(json.dumps(results) if one_line else json.dumps(results, indent=2))
    return where


def test_a_one_line_results_file_is_skipped_as_a_pretty_one_is(tmp_path):
    reports = {}
    for one_line in (True, False):
        where = folder(tmp_path, f"run{int(one_line)}", one_line)
        result = run(["calibrate", where, "--json", "-q"])
        assert result.exit_code == 0, result.stderr
        reports[one_line] = json.loads(result.stdout)
        assert f"{where / RESULTS}: {SKIPPED}" in reports[one_line]["warnings"]
    assert reports[True]["n"] == 48  # the science task's 48 questions, one row each
    drop = ("warnings", "files", "per_file")
    assert {k: v for k, v in reports[True].items() if k not in drop} == {
        k: v for k, v in reports[False].items() if k not in drop
    }


def test_a_one_line_results_file_alone_has_no_rows(tmp_path):
    where = folder(tmp_path, "run", one_line=True)
    result = run(["calibrate", where / RESULTS, "-q"])
    assert result.exit_code == 2
    said = SKIPPED.removesuffix("; skipped")
    assert result.stderr == f"Error: {where / RESULTS}: {said}: no calibration rows left to read\n"
