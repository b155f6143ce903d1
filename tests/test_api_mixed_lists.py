"""A Python list (or tuple) of mixed types is one array to numpy, which gives its values one type
(``[0.9, "0.6"]`` all strings, ``[1, 0, 0.5]`` all floats): a bad row among them is named by
its index and its value as given, with the message a file's row of that value gets from the
command line (each computed here by running ``calibcli calibrate`` on such a file), not the
first row numpy changed. The metric functions name it too."""

from __future__ import annotations

import numpy as np
import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError
from calibcli.metrics import expected_calibration_error

GOOD_CONFIDENCES = [0.9, 0.8, 0.7, 0.6]
GOOD_RIGHT = [True, False, True, True]

# (confidences, correctness): the bad value is the last row's (index 3)
MIXED = [
    ([0.9, 0.8, 0.7, "0.6"], GOOD_RIGHT, {"confidence": "0.6", "correct": True}),
    (GOOD_CONFIDENCES, [True, False, True, "yes"], {"confidence": 0.6, "correct": "yes"}),
    (GOOD_CONFIDENCES, [1, 0, 1, 0.5], {"confidence": 0.6, "correct": 0.5}),
    (GOOD_CONFIDENCES, [True, False, True, 1.0], {"confidence": 0.6, "correct": 1.0}),
    ([0.9, 0.8, 0.7, True], [1, 0, 1, 1], {"confidence": True, "correct": 1}),
    ([0.9, 0.8, 0.7, 1.5], GOOD_RIGHT, {"confidence": 1.5, "correct": True}),
    ([0, 1, 0.5, "x"], GOOD_RIGHT, {"confidence": "x", "correct": True}),
]


def file_message(tmp_path, row) -> str:
    """What the command says of ``row`` as a file's only row (``PATH:1: ...``)."""
    path = write_jsonl(tmp_path / "row.jsonl", [row])
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2
    return result.stderr.strip().removeprefix(f"Error: {path}:1: ")


@pytest.mark.parametrize("sequence", [list, tuple])
@pytest.mark.parametrize(("confidences", "right", "row"), MIXED)
def test_the_bad_row_is_named_with_its_value_as_given(tmp_path, sequence, confidences, right, row):
    want = file_message(tmp_path, row)
    with pytest.raises(InputError) as caught:
        calibcli.calibrate(sequence(confidences), sequence(right))
    assert caught.value.line == " index 3"
    assert caught.value.detail == want


def test_an_array_is_read_as_its_dtype():
    # an array of floats is the user's own: its first row, 1.0, is a float correctness
    with pytest.raises(InputError) as caught:
        calibcli.calibrate(np.array(GOOD_CONFIDENCES), np.array([1, 0, 1, 0.5]))
    assert (caught.value.line, caught.value.detail) == (
        " index 0",
        "correct 1.0 is not true/false/0/1",
    )


def test_lists_that_numpy_reads_alike_are_taken():
    # ints and floats, booleans and 0/1: every value is one the command takes
    mixed = calibcli.calibrate([0, 1, 0.5, 0.25], [True, 0, 1, False], bins=2)
    plain = calibcli.calibrate([0.0, 1.0, 0.5, 0.25], [True, False, True, False], bins=2)
    assert mixed.body == plain.body


@pytest.mark.parametrize(
    ("confidences", "right", "message"),
    [
        ([0.9, 0.8, 0.7, "0.6"], GOOD_RIGHT, "confidences[3] = '0.6' is not a number"),
        ([0.9, 0.8, 0.7, None], GOOD_RIGHT, "confidences[3] = None is not a number"),
        (
            GOOD_CONFIDENCES,
            [True, False, True, "yes"],
            "correct[3] = 'yes' is not true/false or 0/1",
        ),
        (GOOD_CONFIDENCES, [1, 0, 1, 0.5], "correct[3] = 0.5 is not true/false or 0/1"),
    ],
)
def test_the_metric_functions_name_the_row(confidences, right, message):
    with pytest.raises(ValueError) as caught:
        expected_calibration_error(confidences, right)
    assert str(caught.value) == message
