"""`calibcli apply` keeps the text of every value it does not change: each output line is its
input line with the confidence's characters replaced, and nothing else.

The reference here is plain string work on the lines this test writes: the expected output line
is the input line with the old number's text swapped for the new value's repr, the new value
computed from the platt parameters with math.
"""

from __future__ import annotations

import gzip
import json
import math

import pytest
from harness import run

A, B = 0.8, -0.3  # platt: sigma(a * logit(c) + b)
EPS = 1e-12


def platt(c: float) -> float:
    c = min(max(c, EPS), 1 - EPS)
    return 1.0 / (1.0 + math.exp(-(A * (math.log(c) - math.log1p(-c)) + B)))


@pytest.fixture
def calibrator(tmp_path):
    path = tmp_path / "platt.json"
    body = {"schema_version": 1, "kind": "calibcli-calibrator", "method": "platt"}
    path.write_text(json.dumps({**body, "params": {"a": A, "b": B}}), encoding="utf-8")
    return path


def applied(calibrator, path, *extra):
    result = run(["apply", calibrator, path, "-q", *extra])
    assert result.exit_code == 0, result.stderr
    return result.stdout


# (input line, the confidence's text in it, its value, the field)
LINES = [
    # numbers json.loads turns into other text: 1e400 -> inf (Infinity), 1e5 -> 100000.0
    (
        '{"id": 1, "confidence": 0.25, "big": 1e400, "e": 1e5, "n": -0.0, "correct": true}',
        "0.25",
        0.25,
        "confidence",
    ),
    # a lone surrogate (escaped): re-encoding the decoded string as UTF-8 fails
    (
        '{"confidence": 0.5, "correct": false, "s": "\\ud800", "t": "Ü\\u00dc"}',
        "0.5",
        0.5,
        "confidence",
    ),
    # no spaces, key order kept, an integer confidence
    ('{"correct":1,"confidence":1,"x":[1.0,2E+3,{"confidence":7}]}', "1", 1.0, "confidence"),
    # the key written with an escape, and its text inside a string value
    (
        '{"conf\\u0069dence": 0.75, "note": "\\"confidence\\": 1", "correct": 0}',
        "0.75",
        0.75,
        "confidence",
    ),
    # a key written twice: json.loads keeps the last
    ('{"confidence": 0.1, "correct": true, "confidence": 0.9}', "0.9", 0.9, "confidence"),
    # surrounding whitespace
    ('  {"confidence" :  0.3 , "correct": true}  ', "0.3", 0.3, "confidence"),
]
LINES = [pytest.param(*case, id=f"line{i}") for i, case in enumerate(LINES)]


NUMBER_CHARS = set("-+.0123456789eE")


def swapped(before: str, after: str) -> tuple[str, str, str, str]:
    """(prefix, the number in ``before``, the number in ``after``, suffix): the two lines are
    the prefix, one number each, and the suffix."""
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    while start and before[start - 1] in NUMBER_CHARS:
        start -= 1
    while end and before[len(before) - end] in NUMBER_CHARS:
        end -= 1
    return (
        before[:start],
        before[start : len(before) - end],
        after[start : len(after) - end],
        (before[len(before) - end :]),
    )


def assert_swapped(before: str, after: str, old: str, value: float) -> None:
    prefix, was, now, suffix = swapped(before, after)
    assert was == old, (before, after)
    assert after == prefix + now + suffix
    assert float(now) == pytest.approx(platt(value), rel=1e-12)
    assert now == repr(float(now))  # written as json.dumps writes a float


@pytest.mark.parametrize(("line", "old", "value", "field"), LINES)
def test_only_the_confidence_text_changes(tmp_path, calibrator, line, old, value, field):
    path = tmp_path / "rows.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    out = applied(calibrator, path, "--confidence-field", field)
    assert out.endswith("\n") and out.count("\n") == 1
    assert_swapped(line, out[:-1], old, value)


def test_a_nested_field_and_a_list_index(tmp_path, calibrator):
    path = tmp_path / "nested.jsonl"
    line = '{"pred": {"conf": 0.4, "raw": 1e5}, "conf": 2, "correct": true}'
    path.write_text(line + "\n", encoding="utf-8")
    assert_swapped(
        line, applied(calibrator, path, "--confidence-field", "pred.conf")[:-1], "0.4", 0.4
    )
    line = '{"preds": [{"p": 0.2}, {"p": 0.6}], "correct": false}'
    path.write_text(line + "\n", encoding="utf-8")
    assert_swapped(
        line, applied(calibrator, path, "--confidence-field", "preds.1.p")[:-1], "0.6", 0.6
    )


def test_a_pretty_printed_array_becomes_one_line_per_row(tmp_path, calibrator):
    text = (
        '[\n  {\n    "confidence": 0.5,\n    "t": "a\\nb",\n    "v": 1e5\n  },\n'
        '  {"confidence": 0.1}\n]\n'
    )
    path = tmp_path / "rows.json"
    path.write_text(text, encoding="utf-8")
    lines = applied(calibrator, path).splitlines()
    assert len(lines) == 2
    assert_swapped('{"confidence": 0.5, "t": "a\\nb", "v": 1e5}', lines[0], "0.5", 0.5)
    assert_swapped('{"confidence": 0.1}', lines[1], "0.1", 0.1)


def test_output_ending_in_gz_is_gzip(tmp_path, calibrator):
    rows = "".join(
        json.dumps({"id": i, "confidence": (i % 10) / 10, "correct": i % 2 == 0}) + "\n"
        for i in range(20_000)
    )
    path = tmp_path / "rows.jsonl"
    path.write_text(rows, encoding="utf-8")
    plain = applied(calibrator, path)
    out = tmp_path / "applied.jsonl.gz"
    result = run(["apply", calibrator, path, "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    assert gzip.decompress(out.read_bytes()).decode("utf-8") == plain


def test_an_array_element_that_is_not_an_object(tmp_path, calibrator):
    path = tmp_path / "numbers.json"
    path.write_text("[\n  1,\n  2\n]\n", encoding="utf-8")
    result = run(["apply", calibrator, path])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}:2: the row is a number (1), not a JSON object\n"
