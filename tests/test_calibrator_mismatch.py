"""A calibrator file applied to rows it was not fitted on: a summary file's rows of another
confidence field than the calibrator's are exit 2 for every command taking --calibrator (a
summary cannot read its rows again from the calibrator's field), the Python API's
``Calibrator.apply`` makes the checks the commands make, and a hand-edited calibrator file
holding what no fit writes is exit 2 naming the key."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
INSPECT = FIXTURES / "inspect_ai"
LM_EVAL = FIXTURES / "lm_eval" / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"

# four rows, two fields: the identity map (platt a = 1, b = 0) leaves each as it is, so the
# Brier score after it is that of the field mapped, by hand:
#   score:      (0.1² + 0.3² + 0.3² + 0.1²) / 4 = 0.05
#   confidence: (0.2² + 0.4² + 0.4² + 0.2²) / 4 = 0.10
ROWS = [
    {"confidence": 0.2, "score": 0.1, "correct": False},
    {"confidence": 0.4, "score": 0.3, "correct": False},
    {"confidence": 0.6, "score": 0.7, "correct": True},
    {"confidence": 0.8, "score": 0.9, "correct": True},
]
FITTED_ON = {"n": 4, "files": ["dev.jsonl"], "format": "jsonl", "correct_field": "correct"}


def calibrator(path, method="platt", params=None, **fitted_on):
    body = {
        "schema_version": 1,
        "kind": "calibcli-calibrator",
        "method": method,
        "params": {"a": 1.0, "b": 0.0} if params is None else params,
        "fitted_on": {**FITTED_ON, "confidence_field": "score", **fitted_on},
        "by": None,
        "groups": {},
    }
    path.write_text(json.dumps(body))
    return path


@pytest.fixture
def inputs(tmp_path):
    rows = write_jsonl(tmp_path / "t.jsonl", ROWS)
    summary = tmp_path / "t.cbs"
    assert run(["summarize", rows, "-o", summary, "-q"]).exit_code == 0
    return rows, summary, calibrator(tmp_path / "cal.json")


COMMANDS = {
    "calibrate": ["calibrate"],
    "reliability": ["reliability"],
    "threshold": ["threshold", "--target-accuracy", "0.5"],
}


def test_rows_read_from_the_calibrators_field_map_it(inputs):
    rows, _, cal = inputs
    result = run(["calibrate", rows, "--calibrator", cal, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["brier"] == pytest.approx(0.05, abs=1e-12)
    assert "fitted on the field" not in result.stderr


@pytest.mark.parametrize("command", COMMANDS)
def test_a_summarys_rows_of_another_field_are_refused(inputs, command):
    _, summary, cal = inputs
    result = run([*COMMANDS[command], summary, "--calibrator", cal, "-q"])
    assert result.exit_code == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: {cal}: the calibrator was fitted on the field 'score'")
    assert "read from the field 'confidence'" in line
    assert "summarize the files with --confidence-field score" in line
    assert "as --confidence-field asked" not in result.stderr


def test_the_threshold_fit_rows_of_a_summary_are_refused_too(inputs):
    rows, summary, cal = inputs
    args = ["threshold", rows, "--fit", summary, "--target-accuracy", "0.5"]
    result = run([*args, "--calibrator", cal, "-q"])
    assert result.exit_code == 2
    assert "summarize the files with --confidence-field score" in result.stderr


def test_a_field_asked_for_by_name_is_mapped_with_a_true_warning(inputs):
    _, summary, cal = inputs
    args = ["calibrate", summary, "--calibrator", cal, "--confidence-field", "confidence"]
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["brier"] == pytest.approx(0.10, abs=1e-12)
    assert (
        "the calibrator was fitted on the field 'score'; it maps 'confidence' here, as "
        "--confidence-field asked" in result.stderr
    )


def test_a_summary_of_the_calibrators_field_maps_it(inputs, tmp_path):
    rows, _, cal = inputs
    summary = tmp_path / "score.cbs"
    args = ["summarize", rows, "--confidence-field", "score", "-o", summary, "-q"]
    assert run(args).exit_code == 0
    result = run(["calibrate", summary, "--calibrator", cal, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["brier"] == pytest.approx(0.05, abs=1e-12)


# --------------------------------------------------------------------------- the Python API


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    return out, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_api_another_by_field_is_refused(tmp_path):
    # groups named alike, of other rows: each row would take the other group's map
    groups = zip(ROWS * 2, "abababab", "babababa", strict=True)
    rows = [dict(r, s=g, h=h) for r, g, h in groups]
    path = write_jsonl(tmp_path / "g.jsonl", rows)
    cal = calibcli.fit(calibcli.read_predictions(path, by="s"), method="platt")
    with pytest.raises(InputError, match=r"fitted per by=s group, not per by=h: give by='s'"):
        cal.apply(calibcli.read_predictions(path, by="h"))
    assert (
        run(["calibrate", path, "--by", "h", "--calibrator", _saved(cal, tmp_path)]).exit_code == 2
    )


def _saved(cal, tmp_path):
    cal.save(tmp_path / "fitted.json")
    return tmp_path / "fitted.json"


def test_api_another_inspect_mode_is_refused():
    fitted = calibcli.read_predictions(
        INSPECT / "toy_arithmetic.eval", scorer="match", inspect_confidence="sequence"
    )
    cal = calibcli.fit(fitted, method="isotonic")
    other = INSPECT / "toy_arithmetic_limit8.eval"
    with pytest.raises(InputError, match="inspect_confidence=sequence confidences; these rows"):
        cal.apply(
            calibcli.read_predictions(other, scorer="match", inspect_confidence="first-token")
        )
    same = calibcli.read_predictions(other, scorer="match", inspect_confidence="sequence")
    # the limited run's samples are some of those fitted on: only that is said
    _, said = _caught(lambda: cal.apply(same, allow_in_sample=True))
    assert len(said) == 1 and "are among the 8 rows given here" in said[0]


def test_api_another_confidence_field_warns_and_maps_that_field(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", ROWS)
    cal = calibcli.fit(calibcli.read_predictions(path, confidence_field="score"), method="platt")
    rows = calibcli.read_predictions(path)  # read from 'confidence'
    mapped, said = _caught(lambda: cal.apply(rows))
    assert said == [
        "the calibrator was fitted on the field 'score'; it maps 'confidence' here, the field "
        "these rows were read with (confidence_field='confidence')"
    ]
    assert np.array_equal(mapped, cal.apply(np.array([0.2, 0.4, 0.6, 0.8])))
    fitted = calibcli.read_predictions(path, confidence_field="score")
    _, said = _caught(lambda: cal.apply(fitted, allow_in_sample=True))
    assert said == [  # the rows it was fitted on: only that is said
        "the 4 rows given here are the rows the calibrator was fitted on: figures computed on "
        "the output are in-sample for them and flatter the map"
    ]


def test_api_an_lm_eval_map_on_json_lines_rows_warns(tmp_path):
    cal = calibcli.fit(calibcli.read_predictions(LM_EVAL), method="platt")
    rows = calibcli.read_predictions(write_jsonl(tmp_path / "t.jsonl", ROWS))
    mapped, said = _caught(lambda: cal.apply(rows))
    assert said == [
        "the calibrator was fitted on lm-eval rows; it maps jsonl rows here, whose confidences "
        "may be taken another way"
    ]
    assert np.array_equal(mapped, cal.apply(rows.confidence))


# --------------------------------------------------------------------------- hand-edited files


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        ({"fitted_on": {"mc_norm": "words"}}, "fitted_on.mc_norm is 'words', not one of"),
        ({"fitted_on": {"inspect_confidence": "x"}}, "fitted_on.inspect_confidence is 'x'"),
        ({"fitted_on": {"choices": ["A"]}}, "fitted_on.choices is ['A'], not two or more"),
        ({"schema_version": True}, "schema_version True, expected 1"),
        ({"method": "temperature", "params": {"temperature": 1e-300}}, "params.temperature"),
        ({"method": "temperature", "params": {"temperature": 2e4}}, "params.temperature"),
        ({"params": {"a": 1e308, "b": 0.0}}, "params.a is 1e+308: the map overflows"),
        ({"method": "beta", "params": {"a": 1.0, "b": 1e308, "intercept": 0.0}}, "params.b"),
    ],
)
def test_what_no_fit_writes_is_refused_naming_the_key(tmp_path, edit, said):
    path = calibrator(tmp_path / "cal.json")
    body = json.loads(path.read_text())
    body["fitted_on"].update(edit.pop("fitted_on", {}))
    body.update(edit)
    path.write_text(json.dumps(body))
    rows = write_jsonl(tmp_path / "t.jsonl", ROWS)
    result = run(["calibrate", rows, "--calibrator", path, "-q"])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()  # no RuntimeWarning from numpy beside it
    assert line.startswith(f"Error: {path}: not a calibcli calibrator file: ")
    assert said in line


@pytest.mark.parametrize("t", [1e-4, 1e4])
def test_the_fits_bounds_of_temperature_are_taken(tmp_path, t):
    path = calibrator(tmp_path / "cal.json", "temperature", {"temperature": t})
    rows = write_jsonl(tmp_path / "t.jsonl", ROWS)
    assert run(["calibrate", rows, "--calibrator", path, "-q"]).exit_code == 0


def test_a_choices_calibrator_on_other_rows_names_its_file(tmp_path):
    path = calibrator(
        tmp_path / "lm.json", "multiclass_temperature", {"temperature": 1.0}, format="lm-eval"
    )
    rows = write_jsonl(tmp_path / "t.jsonl", ROWS)
    result = run(["calibrate", rows, "--calibrator", path, "-q"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}: this calibrator scales lm-eval choices'")
