"""fit warns when the rows a map was fitted on hold few answers of one class: fewer than 10
of the rarer class per parameter the map fits (temperature 1, platt 2, beta 3; 10 for the
maps fitted by counting, isotonic and histogram), the usual least for a logistic fit whose
coefficients hold beyond its rows (Peduzzi et al. 1996). The counts below are set by hand."""

from __future__ import annotations

import json

import pytest
from harness import run

LEAST = {"temperature": 10, "platt": 20, "beta": 30, "isotonic": 10, "histogram": 10}


def _rows(path, right, wrong, group=None):
    """``right`` right and ``wrong`` wrong answers, their confidences spread over (0.05,
    0.95), the right ones higher on average so that every map fits increasing."""
    rows = []
    for i in range(right):
        rows.append({"confidence": 0.35 + 0.6 * (i + 0.5) / right, "correct": True})
    for i in range(wrong):
        rows.append({"confidence": 0.05 + 0.6 * (i + 0.5) / wrong, "correct": False})
    if group is not None:
        rows = [{**r, "g": group} for r in rows]
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("method", sorted(LEAST))
def test_fewer_than_the_least_of_the_rarer_class_is_said(tmp_path, method):
    least = LEAST[method]
    few = _rows(tmp_path / "few.jsonl", 200, least - 1)
    enough = _rows(tmp_path / "enough.jsonl", 200, least)
    cal = tmp_path / "cal.json"
    result = run(["fit", few, "--method", method, "-o", cal])
    assert result.exit_code == 0, result.output
    why = " (10 per parameter the map fits)" if method in ("temperature", "platt", "beta") else ""
    said = (
        f"only {least - 1} of the {200 + least - 1} answers are wrong, fewer than {least}{why}: "
        f"the {method} map rests on them and may not hold on other rows"
    )
    assert f"warning: {said}\n" in result.stderr
    result = run(["fit", enough, "--method", method, "-o", cal])
    assert result.exit_code == 0, result.output
    assert "rests on them" not in result.stderr + result.stdout


def test_the_rarer_class_may_be_the_right_answers(tmp_path):
    few = _rows(tmp_path / "few.jsonl", 12, 300)
    result = run(["fit", few, "--method", "platt", "-o", tmp_path / "cal.json", "-q"])
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(
        "warning: only 12 of the 312 answers are right, fewer than 20 (10 per parameter the "
        "map fits): the platt map rests on them"
    )


def test_each_by_group_is_judged_on_its_own_rows(tmp_path):
    rows = tmp_path / "rows.jsonl"
    _rows(rows, 100, 4, group="a")
    _rows(rows, 100, 40, group="b")
    result = run(["fit", rows, "--by", "g", "--method", "platt", "-o", tmp_path / "cal.json"])
    assert result.exit_code == 0, result.output
    # the pooled rows hold 44 wrong answers, enough; group b's 40 are enough; group a's 4 not
    assert "of the pooled rows" not in result.stderr
    assert "group 'b'" not in result.stderr
    assert (
        "warning: group 'a': only 4 of the 104 answers are wrong, fewer than 20 (10 per "
        "parameter the map fits): the platt map rests on them and may not hold on other rows\n"
    ) in result.stderr


def test_one_class_is_said_once_as_one_class(tmp_path):
    # isotonic fits rows of one class with its own warning; "few" is not said besides
    rows = _rows(tmp_path / "rows.jsonl", 50, 0)
    result = run(["fit", rows, "--method", "isotonic", "-o", tmp_path / "cal.json", "-q"])
    assert result.exit_code == 0, result.output
    assert "learnt the class" in result.stderr and "rests on them" not in result.stderr
