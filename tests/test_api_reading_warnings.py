"""What the reading says of the files (an inspect-ai run that did not succeed, a folder's older
re-runs left out) reaches every report: the Python functions' as the commands', and compare's
as the other commands'."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness import run
from test_inspect_status import log, write

import calibcli

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
OLDER = "2026-11-28T09-00-00.000001"
TRIVIA = FIXTURES / f"samples_toy_mc_trivia_{STAMP}.jsonl"
RERUNS = "re-runs of 1 task(s) ('toy_mc_trivia') in one folder"


def failed_log(tmp_path: Path) -> Path:
    return write(tmp_path, "run.json", log("error", error={"message": "boom", "traceback": ""}))


def rerun_folder(tmp_path: Path, name: str = "out") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for stamp in (OLDER, STAMP):
        shutil.copy(TRIVIA, folder / f"samples_toy_mc_trivia_{stamp}.jsonl")
    return folder


def test_the_functions_carry_a_failed_runs_warning_as_the_commands_do(tmp_path):
    path = failed_log(tmp_path)
    rows = calibcli.read_predictions(path, scorer="match")
    (warning,) = rows.warnings
    assert warning.startswith(f"{path}: the inspect-ai run ended with status 'error' (boom)")
    result = run(["calibrate", path, "--scorer", "match", "--json"])
    assert result.exit_code == 0, result.stderr
    assert calibcli.calibrate(rows).to_json() == result.stdout  # byte for byte, as promised
    assert warning in json.loads(result.stdout)["warnings"]
    assert warning in calibcli.threshold(rows, target_accuracy=0.5).warnings
    assert warning in calibcli.fit(rows, method="platt").report.warnings


def test_compare_names_a_folders_older_reruns_as_calibrate_does(tmp_path):
    base, new = rerun_folder(tmp_path), tmp_path / "new"
    new.mkdir()
    shutil.copy(TRIVIA, new / TRIVIA.name)
    calibrate = json.loads(run(["calibrate", base, "--json", "-q"]).stdout)
    (said,) = [w for w in calibrate["warnings"] if w.startswith(RERUNS)]
    result = run(["compare", base, new, "--json"])
    assert result.exit_code == 0, result.stderr
    assert said in json.loads(result.stdout)["warnings"]
    assert f"warning: {said}" in result.stderr.splitlines()
    # the Python functions, given the rows or the paths
    sides = calibcli.read_predictions(base), calibcli.read_predictions(new)
    assert sides[0].warnings == (said,) and sides[1].warnings == ()
    assert said in calibcli.compare(*sides).warnings
    assert said in calibcli.compare(base, new).warnings
    assert said in calibcli.calibrate(sides[0]).warnings


def test_rows_read_without_a_word_carry_none(tmp_path):
    rows = calibcli.read_predictions(TRIVIA)
    assert rows.warnings == ()
    assert calibcli.calibrate(rows).to_json() == run(["calibrate", TRIVIA, "--json"]).stdout


def test_the_functions_say_a_delimiter_was_assumed_as_the_commands_do(tmp_path):
    # a samples file alone, without its run's results file: --mc-norm chars takes the
    # harness's default delimiter off each choice, and every reader says so
    alone = tmp_path / TRIVIA.name
    shutil.copy(TRIVIA, alone)
    said = (
        f"{alone}: no results file of its run records the task's target_delimiter; --mc-norm "
        "chars takes the harness's default, a space, off each choice's text (keep the samples "
        "file beside its run's results_<timestamp>.json)"
    )
    result = run(["calibrate", alone, "--mc-norm", "chars", "--json"])
    assert result.exit_code == 0, result.stderr
    assert said in json.loads(result.stdout)["warnings"]
    rows = calibcli.read_predictions(alone, mc_norm="chars")
    assert rows.warnings == (said,)
    assert calibcli.calibrate(rows).to_json() == result.stdout
    # beside its results file, nothing is assumed
    assert calibcli.read_predictions(TRIVIA, mc_norm="chars").warnings == ()
