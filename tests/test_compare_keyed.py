"""compare's keyed reading in columns: ids hashed as a column match exactly as Python's ``==``
matches the JSON values (checked against a dict built here with ``json.loads``), a repeated id
and a bad row are reported in reading order whichever block they are in, and the bootstrap's
intervals do not depend on the worker count."""

from __future__ import annotations

import json

import pytest
from harness import run

B = "200"

# id texts as written in JSON, with the equal ones Python folds together: 1 == 1.0 == 1e0,
# 0 == -0 == 0.0, "é" == "\u00e9"; True, 1 and "1" stay apart (a null id is refused)
ID_TEXTS = [
    '"q1"', '"q2"', "1", "1.0", "2", "2e0", "0", "-0", "-0.0", '"1"', "true", "false",
    '"\\u00e9"', '"é"', "3.5", "35e-1", "12345678901234567890", "1.2345678901234567e19",
    '"' + "x" * 80 + '"', '"' + "x" * 79 + 'y"', "-7", "1e300", '"a\\"b"', '"a\\\\b"',
]  # fmt: skip


def _line(id_text: str, confidence: float, correct: bool) -> str:
    return f'{{"id": {id_text}, "confidence": {confidence}, "correct": {str(correct).lower()}}}\n'


def _distinct(texts: list[str]) -> list[str]:
    """The texts whose values no earlier text equals (a side's ids must be distinct)."""
    kept, seen = [], []
    for t in texts:
        value = json.loads(t)
        if not any(_same(value, s) for s in seen):
            kept.append(t)
            seen.append(value)
    return kept


def _kind(value) -> str:
    if isinstance(value, bool) or value is None:
        return "literal"
    return "string" if isinstance(value, str) else "number"


def _same(a, b) -> bool:
    """Whether two ids are one: JSON types kept apart, then Python's ==."""
    return _kind(a) == _kind(b) and a == b


def test_ids_match_as_python_equality_in_the_block_path(tmp_path):
    base_ids = _distinct(ID_TEXTS)
    new_ids = _distinct(list(reversed(ID_TEXTS)))
    padding = 3000  # rows before and after, so the ids sit inside blocks decoded in one call
    base = tmp_path / "base.jsonl"
    new = tmp_path / "new.jsonl"
    with base.open("w") as b, new.open("w") as n:
        for i in range(padding):
            b.write(_line(f'"p{i}"', 0.5, i % 2 == 0))
            n.write(_line(f'"p{padding - 1 - i}"', 0.25, i % 3 == 0))
        for k, t in enumerate(base_ids):
            b.write(_line(t, round(0.01 * (k + 1), 2), k % 2 == 0))
        for k, t in enumerate(new_ids):
            n.write(_line(t, round(0.02 * (k + 1), 2), k % 3 == 0))
    expected = padding + sum(
        any(_same(json.loads(t), json.loads(u)) for u in new_ids) for t in base_ids
    )
    result = run(
        ["compare", str(base), str(new), "--json", "--allow-unmatched", "-q", "--bootstrap", B]
    )
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["matched"] == expected
    assert body["unmatched_base"] == len(base_ids) + padding - expected


def _big(path, rows: int, extra: dict[int, str]) -> None:
    with path.open("w") as f:
        for i in range(rows):
            f.write(extra.get(i, _line(f'"r{i}"', 0.3, i % 2 == 0)))


def test_a_repeated_id_far_apart_names_both_lines(tmp_path):
    dirty = tmp_path / "dirty.jsonl"
    _big(dirty, 30_000, {25_000: _line('"r7"', 0.4, True)})  # > 1 MB: several blocks
    clean = tmp_path / "clean.jsonl"
    _big(clean, 30_000, {})
    result = run(["compare", str(dirty), str(clean), "-q", "--bootstrap", B])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {dirty}:25001: duplicate id 'r7' (first at {dirty}:8)"
    )


@pytest.mark.parametrize("bad_line, wins", [(20_000, "duplicate"), (5_000, "confidence")])
def test_the_first_problem_in_reading_order_is_reported(tmp_path, bad_line, wins):
    path = tmp_path / "rows.jsonl"
    _big(path, 30_000, {10_000: _line('"r3"', 0.4, True), bad_line: _line('"z"', 1.5, True)})
    result = run(["compare", str(path), str(path), "-q", "--bootstrap", B])
    assert result.exit_code == 2
    if wins == "duplicate":
        assert f"{path}:10001: duplicate id 'r3' (first at {path}:4)" in result.stderr
    else:
        assert f"{path}:5001: confidence 1.5 is outside [0, 1]" in result.stderr


def test_a_repeated_id_on_stdin_names_both_lines(tmp_path):
    clean = tmp_path / "clean.jsonl"
    _big(clean, 50, {})
    text = "".join(_line(f'"r{i % 40}"', 0.3, True) for i in range(50))
    result = run(["compare", str(clean), "-", "-q", "--bootstrap", B], input=text)
    assert result.exit_code == 2
    assert "<stdin>:41: duplicate id 'r0' (first at <stdin>:1)" in result.stderr


def test_intervals_do_not_depend_on_the_worker_count(tmp_path):
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with base.open("w") as b, new.open("w") as n:
        for i in range(3000):
            c = ((i * 7919) % 1000) / 1000
            b.write(_line(f'"q{i}"', c, (i * 31) % 100 < 100 * c))
            n.write(_line(f'"q{2999 - i}"', 1 - c, (i * 17) % 100 < 60))
    outputs = []
    for workers in ("1", "2", "3"):
        result = run(
            [
                "compare",
                str(base),
                str(new),
                "--json",
                "--bootstrap",
                B,
                "--seed",
                "3",
                "--workers",
                workers,
            ]
        )
        assert result.exit_code == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] == outputs[2]


def test_the_confidence_as_the_id(tmp_path):
    path = tmp_path / "rows.jsonl"
    with path.open("w") as f:
        for i in range(200):
            f.write(_line(f'"r{i}"', round(0.001 * (i + 1), 3), i % 2 == 0))
    result = run(["compare", str(path), str(path), "--id-field", "confidence", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["matched"] == 200
