"""`calibcli apply` over inputs large enough to be rewritten a block at a time: every line is its
input line with the confidence's characters replaced, whatever the line's shape (nested objects
holding the same key, escapes, duplicate keys, spacing, CRLF, blank lines), and a bad row leaves
the rows written before it as the row-by-row path left them (whole batches of 8192 rows).

The reference is string work on the lines this test writes: it knows where it put each
confidence, and computes the new value from the platt parameters with math.
"""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from harness import run

from calibcli.io.splice import float_texts

A, B = 0.8, -0.3
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


# (text before the confidence, after it): each row's shape around its value
SHAPES = [
    ('{"id": %d, "confidence": ', ', "correct": true}'),
    ('{"id":%d,"confidence":', ',"correct":false}'),
    ('{"meta": {"confidence": 0.5}, "id": %d, "confidence": ', "}"),
    ('{"id": %d, "confidence": ', ', "meta": {"confidence": 0.5, "x": [1e5, 2E-3]}}'),
    ('{"id": %d, "note": "\\"confidence\\": 1 \\u00e9", "confidence": ', "}"),
    ('{"id": %d, "url": "a\\/b", "confidence": ', "}"),
    ('{"id": %d, "conf\\u0069dence": 0.1, "confidence": ', "}"),
    ('{"id": %d, "confidence": 0.1, "confidence": ', "}"),
    ('{"id": %d, "label": "confidence", "confidence": ', "}"),
    ('{"id": %d, "big": 1e400, "confidence": ', ', "e": 1e5, "n": -0.0}'),
    ('{"id": %d, "t": "тест 🙂", "confidence" : ', "}"),
    ('{"id": %d, "confidence":\t', "}"),
    ('  {"id": %d, "confidence": ', "}  "),
    ('{"id": %d, "confidence": ', "}\r"),
    ('{"x\\"confidence": 3, "id": %d, "confidence": ', "}"),
]
NUMBERS = ["0.25", "1", "0", "-0.0", "2.5e-1", "7.5E-1", "0.1000000000000000000000000000001"]


def rows(count: int, seed: int, shapes: list[tuple[str, str]]) -> list[tuple]:
    """(the line's text before the confidence, the confidence's text, the text after it, the
    confidence's value)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        before, after = rng.choice(shapes)
        text = rng.choice(NUMBERS) if rng.random() < 0.2 else repr(rng.random())
        out.append((before % i, text, after, float(text)))
    return out


def assert_swapped(prefix: str, suffix: str, out: str, value: float) -> None:
    """``out`` is ``prefix``, the new value written as json.dumps writes a float, ``suffix``."""
    assert out.startswith(prefix) and out.endswith(suffix), (prefix, suffix, out)
    now = out[len(prefix) : len(out) - len(suffix)]
    assert now == repr(float(now)), out
    assert float(now) == pytest.approx(platt(value), rel=1e-12)


@pytest.mark.parametrize("shapes", ["plain", "all"])
def test_every_line_keeps_its_bytes_but_the_value(tmp_path, calibrator, shapes):
    chosen = SHAPES[:2] if shapes == "plain" else SHAPES
    data = rows(30_000, 1, chosen)
    path = tmp_path / "rows.jsonl"
    text = "".join(
        a + t + b + ("\n\n" if i % 997 == 0 else "\n") for i, (a, t, b, _) in enumerate(data)
    )
    path.write_bytes(text.encode("utf-8"))
    result = run(["apply", calibrator, path, "-q"])
    assert result.exit_code == 0, result.stderr
    got = result.stdout_bytes.decode("utf-8").split("\n")  # .stdout turns CRLF into LF
    assert got[-1] == ""
    assert len(got) - 1 == len(data)
    for (prefix, _, suffix, value), out in zip(data, got[:-1], strict=True):
        assert_swapped(prefix, suffix, out, value)


def test_a_line_without_a_final_newline(tmp_path, calibrator):
    data = rows(20_000, 2, SHAPES[:1])
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(a + t + b for a, t, b, _ in data), encoding="utf-8")
    out = run(["apply", calibrator, path, "-q"]).stdout
    assert out.endswith("}\n") and out.count("\n") == len(data)


def test_a_bad_row_leaves_the_whole_batches_before_it(tmp_path, calibrator):
    data = rows(20_000, 3, SHAPES[:2])
    lines = [a + t + b for a, t, b, _ in data]
    lines[12_000] = '{"confidence": 1.5}'
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run(["apply", calibrator, path])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {path}:12001: confidence 1.5 is outside [0, 1]\n"
    assert result.stdout.count("\n") == 8192
    out = tmp_path / "out.jsonl"
    assert run(["apply", calibrator, path, "-o", out]).exit_code == 2
    assert not out.exists()


def test_by_maps_each_group_with_its_own_parameters(tmp_path):
    groups = {"math": (1.2, 0.1), "1": (0.5, -0.2)}
    body = {"schema_version": 1, "kind": "calibcli-calibrator", "method": "platt"}
    cal = tmp_path / "by.json"
    cal.write_text(
        json.dumps(
            {
                **body,
                "params": {"a": A, "b": B},
                "by": "subject",
                "groups": {
                    k: {"method": "platt", "params": {"a": a, "b": b}, "n": 10}
                    for k, (a, b) in groups.items()
                },
            }
        ),
        encoding="utf-8",
    )
    rng = random.Random(4)
    lines, want = [], []
    for i in range(20_000):
        subject = rng.choice(["math", 1, "other"])
        c = rng.random()
        lines.append(json.dumps({"id": i, "subject": subject, "confidence": c}))
        a, b = groups.get(json.dumps(subject) if subject == 1 else subject, (A, B))
        x = min(max(c, EPS), 1 - EPS)
        want.append(1.0 / (1.0 + math.exp(-(a * (math.log(x) - math.log1p(-x)) + b))))
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run(["apply", cal, path, "--by", "subject", "-q"])
    assert result.exit_code == 0, result.stderr
    got = [json.loads(line)["confidence"] for line in result.stdout.splitlines()]
    assert got == pytest.approx(want, rel=1e-12)


def test_float_texts_are_json_dumps_texts():
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [
            rng.random(20_000),
            rng.random(2_000) * 10.0 ** rng.integers(-320, 20, 2_000),
            [0.0, -0.0, 1.0, 1e-4, 9.99e-5, 1e16, 1e15, 5e-324, math.nan, math.inf, -math.inf],
        ]
    )
    want = [json.dumps(v).encode() for v in values.tolist()]
    assert float_texts(values) == want
