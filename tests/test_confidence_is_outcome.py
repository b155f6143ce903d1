"""A confidence read from the outcome's own field is refused before any row is read, on every
command, format and file size: each row's confidence would be its outcome (0 or 1), perfectly
calibrated whatever the model answered (ECE 0, Brier 0, AUROC 1), and a gate would pass on
rows that say nothing of the model."""

from __future__ import annotations

import json

import pytest
from harness import refused

import calibcli
from calibcli.errors import InputError

WHY = "a confidence read from the outcome it predicts is perfectly calibrated"


def _inputs(tmp_path, n):
    rows = [
        {"id": f"q{i}", "confidence": 0.25 + (i % 50) / 100, "correct": int(i % 3 != 0)}
        for i in range(n)
    ]
    lines = "".join(json.dumps(r) + "\n" for r in rows)
    (tmp_path / f"r{n}.jsonl").write_text(lines, encoding="utf-8")
    table = "id,confidence,correct\n" + "".join(
        f"{r['id']},{r['confidence']},{r['correct']}\n" for r in rows
    )
    (tmp_path / f"r{n}.csv").write_text(table, encoding="utf-8")
    return [tmp_path / f"r{n}.jsonl", tmp_path / f"r{n}.csv"]


COMMANDS = [
    ["calibrate"],
    ["reliability"],
    ["threshold", "--target-accuracy", "0.8"],
    ["fit", "--method", "platt"],
    ["summarize", "-o", "OUT"],
]


@pytest.mark.parametrize("n", [20, 4000])  # line by line, and by msgspec blocks
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_every_command_refuses_a_confidence_that_is_the_outcome(tmp_path, command, n):
    options = [tmp_path / "out.cbs" if a == "OUT" else a for a in command[1:]]
    for path in _inputs(tmp_path, n):
        line = refused(command[0], path, *options, "--confidence-field", "correct")
        assert line.startswith("Error: Invalid value for '--confidence-field': 'correct' is ")
        assert WHY in line
    assert not (tmp_path / "out.cbs").exists()


@pytest.mark.parametrize("n", [20, 4000])
def test_compare_refuses_it_too(tmp_path, n):
    path, table = _inputs(tmp_path, n)
    for base, new in ((path, path), (table, table)):
        line = refused("compare", base, new, "--confidence-field", "correct")
        assert WHY in line


def test_the_outcome_field_named_as_the_default_confidence_is_refused(tmp_path):
    path, _ = _inputs(tmp_path, 20)
    line = refused("calibrate", path, "--correct-field", "confidence")
    assert "'confidence' is the --correct-field" in line


def test_the_python_api_refuses_it(tmp_path):
    path, _ = _inputs(tmp_path, 20)
    with pytest.raises(InputError, match=WHY):
        calibcli.read_predictions(str(path), confidence_field="correct")
    with pytest.raises(InputError, match=WHY):
        calibcli.read_predictions(str(path), confidence_field="p", correct_field="p")
    assert len(calibcli.read_predictions(str(path))) == 20
