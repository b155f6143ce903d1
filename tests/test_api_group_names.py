"""Groups given to the functions as arrays: a string is a group's name as it is (so that the
names of ``Predictions.group``, given back, name the same groups), and a value of another type
is named as ``--by`` names it. A string beside a value named as that string (the string "1"
and the number 1, "null" and a missing value) would pool two groups a file keeps apart (the
command names the string ``"1"``, in quotes): it is refused, naming both."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import calibcli
from calibcli.cli import app
from calibcli.errors import InputError

ROWS = [(0.9, True, "1"), (0.2, False, 1), (0.6, True, None), (0.7, False, "null")]


def _counts(report: dict) -> dict[str, int]:
    return {name: group["n"] for name, group in report["groups"].items()}


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        (["1", 1, "a", "b"], "index 0: group: the string '1' and the value 1 (index 1)"),
        (["a", None, "b", "null"], "index 3: group: the string 'null' and the value None"),
        (["x", True, "true", "y"], "index 2: group: the string 'true' and the value True"),
        (["x", 2.0, "2", "y"], "index 2: group: the string '2' and the value 2.0"),
    ],
)
def test_a_string_named_as_another_value_is_refused(groups, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        calibcli.calibrate([0.9, 0.2, 0.6, 0.7], [1, 0, 1, 0], group=groups)


def test_strings_and_values_that_differ_are_groups_of_their_own():
    got = calibcli.calibrate([0.9, 0.2, 0.6, 0.7], [1, 0, 1, 0], group=["a", 1, None, "b"])
    assert _counts(json.loads(got.to_json())) == {"1": 1, "a": 1, "b": 1, "null": 1}


def test_the_names_read_from_a_file_given_back_name_its_groups(tmp_path):
    # the file's string "1" and number 1 are two groups, "1" (quoted) and 1: read, their names
    # given back as group= keep them two, as the command does
    path = tmp_path / "rows.jsonl"
    lines = [json.dumps({"confidence": c, "correct": y, "g": g}) for c, y, g in ROWS]
    path.write_text("\n".join(lines) + "\n")
    done = CliRunner().invoke(app, ["calibrate", str(path), "--by", "g", "--json", "-q"])
    assert done.exit_code in (0, 1), done.output
    command = _counts(json.loads(done.stdout))
    assert command == {'"1"': 1, "1": 1, "null": 1, '"null"': 1}
    rows = calibcli.read_predictions(path, by="g")
    given = calibcli.calibrate(rows.confidence, rows.correct, group=rows.group, by="g")
    assert _counts(json.loads(given.to_json())) == command
