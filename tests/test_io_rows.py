"""calibcli.io.rows: one rule per check, the same on a Python number and on a numpy column, and
one message per rule whichever decoding path meets the bad row.

References are plain-Python comparisons written out in the test.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibcli.io import InputError, read_calibration, read_perplexity
from calibcli.io.rows import (
    MAX_COUNT,
    check_confidence,
    check_count,
    check_nll,
    confidence_ok,
    count_ok,
    nll_ok,
    nll_tokens_ok,
)

any_float = st.floats(allow_nan=True, allow_infinity=True)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)


@given(x=any_float)
def test_confidence_rule(x):
    expected = not math.isnan(x) and 0.0 <= x <= 1.0
    assert bool(confidence_ok(x)) is expected
    assert bool(confidence_ok(np.array([x]))[0]) is expected
    if expected:
        assert check_confidence(x, "c") == x
    else:
        with pytest.raises(ValueError, match=r"^c "):
            check_confidence(x, "c")


@given(x=any_float)
def test_nll_rule(x):
    expected = not math.isnan(x) and x >= 0.0
    assert bool(nll_ok(x)) is expected
    assert bool(nll_ok(np.array([x]))[0]) is expected
    if expected:
        assert check_nll(x, "nll") == x
    else:
        with pytest.raises(ValueError, match=r"^nll "):
            check_nll(x, "nll")


@given(x=int64)
def test_count_rule(x):
    expected = 0 <= x <= 2**62
    assert bool(count_ok(x)) is expected
    assert bool(count_ok(np.array([x], dtype=np.int64))[0]) is expected
    if expected:
        assert check_count(x, "tokens") == x
    else:
        with pytest.raises(ValueError, match=r"^tokens "):
            check_count(x, "tokens")
    assert MAX_COUNT == 2**62


@given(nll=any_float.filter(lambda v: not math.isnan(v)), tokens=st.integers(0, 3))
def test_nll_tokens_rule(nll, tokens):
    expected = not (tokens == 0 and nll > 0)
    assert bool(nll_tokens_ok(nll, tokens)) is expected
    column = nll_tokens_ok(np.array([nll]), np.array([tokens], dtype=np.int64))
    assert bool(column[0]) is expected


def _paths(tmp_path, monkeypatch, lines, read, group_field):
    """The error text of every decoding path: msgspec blocks (typed, and as dicts with --by),
    json.loads line by line, and a worker process."""
    import calibcli.io.decode

    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    seen = {}
    for small in (0, 1 << 30):
        monkeypatch.setattr(calibcli.io.decode, "SMALL_BLOCK", small)
        for by in (None, group_field):
            for workers in (1, 2):
                with pytest.raises(InputError) as info:
                    read([str(path)], by=by, workers=workers, block_size=4096)
                seen[(small, by, workers)] = str(info.value)
    return str(path), seen


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"nll": 1.5, "tokens": 0}, "nll 1.5 > 0 with 0 tokens"),
        (
            {"nll": -0.5, "tokens": 3},
            "nll -0.5 is negative (expected a negative log-likelihood >= 0)",
        ),
        ({"nll": 1.0, "tokens": -2}, "tokens -2 is not a non-negative integer"),
        ({"nll": 1.0, "tokens": 2**62 + 1}, f"tokens {2**62 + 1} is too large"),
        ({"nll": 1.0, "tokens": 2, "bytes": -1}, "bytes -1 is not a non-negative integer"),
        ({"nll": 1.0}, 'missing field "tokens"'),
    ],
)
def test_perplexity_message_is_the_same_on_every_path(tmp_path, monkeypatch, bad, message):
    good = {"nll": 1.0, "tokens": 2, "g": "a"}
    lines = [json.dumps(good)] * 400 + [json.dumps({**bad, "g": "b"})] + [json.dumps(good)] * 9
    path, seen = _paths(tmp_path, monkeypatch, lines, read_perplexity, "g")
    assert set(seen.values()) == {f"{path}:401: {message}"}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"confidence": 1.5, "correct": True}, "confidence 1.5 is outside [0, 1]"),
        ({"confidence": -1, "correct": 0}, "confidence -1 is outside [0, 1]"),
        ({"confidence": 0.5, "correct": 2}, "correct 2 is not true/false/0/1"),
        ({"confidence": "0.5", "correct": 1}, 'confidence "0.5" is not a number'),
    ],
)
def test_calibration_message_is_the_same_on_every_path(tmp_path, monkeypatch, bad, message):
    good = {"confidence": 0.25, "correct": True, "g": "a"}
    lines = [json.dumps(good)] * 400 + [json.dumps({**bad, "g": "b"})] + [json.dumps(good)] * 9
    path, seen = _paths(tmp_path, monkeypatch, lines, read_calibration, "g")
    assert set(seen.values()) == {f"{path}:401: {message}"}


# --------------------------------------------------------------------------- bulk checks

cell_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-(2**70), 2**70),
    any_float,
    st.sampled_from([0.0, -0.0, 1.0, 0.5, 5e-324, "0.5", "true", [], {}]),
)
dict_rows = st.lists(
    st.one_of(
        st.fixed_dictionaries({"confidence": cell_values, "correct": cell_values}),
        st.fixed_dictionaries({"confidence": any_float.filter(lambda x: 0 <= x <= 1)}),
        st.just([0.5, True]),
    ),
    max_size=12,
)


@given(rows=dict_rows)
def test_bulk_columns_are_the_row_by_row_values_or_none(rows):
    """Parsed rows (a table's records) are checked in bulk, and row by row only when one
    breaks a rule: the bulk columns, when given, are exactly the values check() gives each
    row, and they are given whenever check() accepts every row."""
    from calibcli.io.rows import CalibrationRow

    spec = CalibrationRow()
    bulk = spec.dict_columns(rows)
    try:
        expected = [spec.check(row) for row in rows]
    except (ValueError, TypeError):
        assert bulk is None
        return
    assert bulk is not None
    conf, corr = bulk
    assert conf.dtype == np.float64 and corr.dtype == np.bool_
    assert [(float(c), bool(y)) for c, y in zip(conf, corr, strict=True)] == expected
    assert all(
        math.copysign(1, c) == math.copysign(1, e) for c, (e, _) in zip(conf, expected, strict=True)
    )
