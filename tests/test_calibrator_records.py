"""A calibrator file's records are read as what they claim to be: the checks applying it
read fitted_on's names and by's field, so a value of another type (a hand-edited file) is one
error line, exit 2, not a check skipped without a word."""

from __future__ import annotations

import json

import pytest
from harness import run, write_jsonl


def _rows(n: int) -> list[dict]:
    return [{"id": i, "confidence": (i % 9 + 1) / 10, "correct": i % 3 != 0} for i in range(n)]


def _calibrator(path, **changes):
    body = {
        "schema_version": 1,
        "kind": "calibcli-calibrator",
        "method": "platt",
        "params": {"a": 1.0, "b": 0.0},
        "fitted_on": {"n": 40, "files": ["dev.jsonl"], "format": "jsonl"},
        "by": None,
        "groups": {},
    }
    for key, value in changes.items():
        if key.startswith("fitted_on."):
            body["fitted_on"][key.split(".", 1)[1]] = value
        else:
            body[key] = value
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("changes", "detail"),
    [
        ({"fitted_on.confidence_field": 5}, "fitted_on.confidence_field is 5, not a name"),
        ({"fitted_on.correct_field": None}, "fitted_on.correct_field is None, not a name"),
        ({"fitted_on.n": "lots"}, "fitted_on.n is 'lots', not a row count"),
        ({"fitted_on.n": -1}, "fitted_on.n is -1, not a row count"),
        ({"fitted_on.models": "m"}, "fitted_on.models is 'm', not a list of names"),
        ({"fitted_on.choices": ["A", 2]}, "fitted_on.choices is ['A', 2], not a list of names"),
        ({"fitted_on": []}, '"fitted_on" is not an object'),
        ({"by": 3}, '"by" is not a field name or null'),
        (
            {"groups": {"x": {"method": "platt", "params": {"a": 2.0, "b": 0.0}}}},
            '"groups" holds maps but "by" names no field',
        ),
    ],
)
def test_records_of_another_type_are_refused(tmp_path, changes, detail):
    cal = _calibrator(tmp_path / "cal.json", **changes)
    rows = write_jsonl(tmp_path / "rows.jsonl", _rows(40))
    for args in (
        ["apply", cal, rows, "-q"],
        ["calibrate", rows, "--calibrator", cal, "--max-ece", "1", "-q"],
    ):
        result = run(args)
        assert result.exit_code == 2, result.output
        assert result.stderr.strip().splitlines() == [
            f"Error: {cal}: not a calibcli calibrator file: {detail}"
        ]


def test_the_records_a_fit_writes_are_read(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", _rows(60))
    cal = tmp_path / "fitted.json"
    assert run(["fit", rows, "--method", "platt", "-o", cal, "-q"]).exit_code == 0
    # a scorer recorded as null (each sample's one scorer) is a record, not an error
    body = json.loads(cal.read_text())
    body["fitted_on"]["scorer"] = None
    cal.write_text(json.dumps(body))
    held = write_jsonl(tmp_path / "held.jsonl", _rows(61)[1:])  # not the rows fitted on
    result = run(["apply", cal, held, "-q"])
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 60
