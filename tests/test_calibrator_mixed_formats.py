"""A calibrator's refusals hold when the rows it maps mix formats: lm-eval rows read with
another --mc-norm than the fit's, and a summary file's JSON Lines rows of another confidence
field, are refused (exit 2; InputError from the API) whether or not other formats' rows are
read beside them. Those rows are read as they would be alone, so the map would score other
numbers than it was fitted on either way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
SCIENCE = f"samples_toy_mc_science_{STAMP}.jsonl"
TRIVIA = f"samples_toy_mc_trivia_{STAMP}.jsonl"

# two native rows beside the lm-eval run, and rows of two confidence fields
NATIVE = [{"confidence": 0.9, "correct": True}, {"confidence": 0.6, "correct": False}]
FIELDS = [
    {"p_a": 0.1 + 0.8 * i / 39, "p_b": 0.9 - 0.8 * i / 39, "correct": i % 3 != 0} for i in range(40)
]


@pytest.fixture
def run_folder(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for name in (SCIENCE, TRIVIA, f"results_{STAMP}.json"):
        shutil.copy(LM_EVAL / name, folder / name)
    return folder


def test_another_normalisation_is_refused_beside_native_rows(run_folder, tmp_path):
    cal = tmp_path / "chars.json"
    fitted = run(
        ["fit", run_folder / SCIENCE, "--method", "platt", "--mc-norm", "chars", "-o", cal, "-q"]
    )
    assert fitted.exit_code == 0, fitted.stderr
    native = write_jsonl(tmp_path / "two.jsonl", NATIVE)
    refused = "fitted on --mc-norm chars scores; these rows are read with --mc-norm none"
    for inputs in ([run_folder / TRIVIA], [run_folder / TRIVIA, native]):
        result = run(["calibrate", *inputs, "--calibrator", cal, "--max-brier", "0.75", "-q"])
        assert result.exit_code == 2, (inputs, result.stdout)
        assert refused in result.stderr
    # the Python API refuses alike
    fitted_api = calibcli.fit(
        calibcli.read_predictions(run_folder / SCIENCE, mc_norm="chars"), method="platt"
    )
    rows = calibcli.read_predictions([run_folder / TRIVIA, native])
    assert {fmt for *_, fmt in rows.parts} == {"lm-eval", "jsonl"}
    with pytest.raises(InputError, match="fitted on mc_norm=chars scores"):
        fitted_api.apply(rows)


def test_a_summary_of_another_field_is_refused_beside_other_formats(run_folder, tmp_path):
    rows = write_jsonl(tmp_path / "test.jsonl", FIELDS)
    cal = tmp_path / "pa.json"
    assert (
        run(
            ["fit", rows, "--method", "platt", "--confidence-field", "p_a", "-o", cal, "-q"]
        ).exit_code
        == 0
    )
    refused = "the calibrator was fitted on the field 'p_a'; the summary file's rows were read"
    for extra in ([], [run_folder / TRIVIA]):
        summary = tmp_path / f"b{len(extra)}.cbs"
        made = run(["summarize", rows, *extra, "--confidence-field", "p_b", "-o", summary, "-q"])
        assert made.exit_code == 0, made.stderr
        result = run(["calibrate", summary, "--calibrator", cal, "--max-ece", "0.5", "-q"])
        assert result.exit_code == 2, (extra, result.stdout)
        assert refused in result.stderr
    # read from the files themselves, the field asked for by name is mapped with a warning
    both = [rows, run_folder / TRIVIA, "--confidence-field", "p_b", "--calibrator", cal]
    result = run(["calibrate", *both, "-q", "--json"])
    assert "fitted on the field 'p_a'; it maps 'p_b' here" in result.stderr
    assert json.loads(result.stdout)["format"] == "mixed"


def test_the_api_names_rows_of_several_formats_mixed_as_the_command_does(run_folder, tmp_path):
    native = write_jsonl(tmp_path / "two.jsonl", NATIVE)
    for files in ([run_folder / TRIVIA, native], [native, run_folder / TRIVIA]):
        rows = calibcli.read_predictions(files)
        assert rows.format == "mixed"
        command = run(["calibrate", *files, "--json", "-q"])
        assert json.loads(command.stdout)["format"] == "mixed"
        assert calibcli.calibrate(rows).to_dict()["format"] == "mixed"
    assert calibcli.read_predictions(run_folder / TRIVIA).format == "lm-eval"
