"""Native rows already parsed (a Parquet table's records, a JSON array's elements) are checked in
bulk: the bulk path either gives exactly the columns the row-by-row check gives, or declines and
leaves the rows to it, so a file reads the same and is refused with the same message either way."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.io.bulk_rows import calibration_columns, perplexity_columns
from calibcli.io.rows import CalibrationRow, PerplexityRow

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

_NUMBERS = [
    0,
    1,
    2,
    7,
    -1,
    -0.0,
    0.0,
    0.5,
    3.25,
    1e308,
    math.inf,
    -math.inf,
    math.nan,
    2**62,
    2**62 + 1,
    2**63,
    2**70,
    True,
    False,
    None,
    "3",
    1.5,
]


def _row_values(spec, rows):
    """The columns of the row-by-row check, or the first row's ValueError message."""
    values = []
    for row in rows:
        try:
            values.append(spec.check(row))
        except (ValueError, TypeError, AttributeError) as e:
            return str(e)
    return spec.columns(values)


def _same(bulk, rowwise):
    assert len(bulk) == len(rowwise)
    for a, b in zip(bulk, rowwise, strict=True):
        assert a.dtype == b.dtype
        assert a.tobytes() == b.tobytes()  # -0.0 and inf kept bit for bit


_value = st.sampled_from(_NUMBERS) | st.floats(0, 1e6) | st.integers(0, 10**6)


@st.composite
def _perplexity_row(draw):
    row = {"nll": draw(_value), "tokens": draw(_value)}
    for key in ("bytes", "words", "nll_sum", "logprobs", "extra"):
        if draw(st.integers(0, 4)) == 0:
            row[key] = draw(_value) if key != "logprobs" else [-0.5, -1.0]
    if draw(st.integers(0, 30)) == 0:
        del row[draw(st.sampled_from(["nll", "tokens"]))]
    return row


@settings(max_examples=400, deadline=None)
@given(st.lists(_perplexity_row(), max_size=6))
def test_perplexity_bulk_gives_the_row_check_or_declines(rows):
    spec = PerplexityRow()
    bulk = perplexity_columns(spec, rows)
    rowwise = _row_values(spec, rows)
    if bulk is None:
        return
    assert not isinstance(rowwise, str), f"bulk read rows the check refuses: {rowwise}"
    _same(bulk, rowwise)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.fixed_dictionaries({"confidence": _value, "correct": _value}), max_size=6))
def test_calibration_bulk_gives_the_row_check_or_declines(rows):
    spec = CalibrationRow()
    bulk = calibration_columns(spec, rows)
    rowwise = _row_values(spec, rows)
    if bulk is None:
        return
    assert not isinstance(rowwise, str), f"bulk read rows the check refuses: {rowwise}"
    _same(bulk, rowwise)


def test_plain_rows_take_the_bulk_path():
    rows = [{"nll": 2.5, "tokens": 3, "bytes": 10}, {"nll": 0, "tokens": 0, "bytes": 0}]
    nll, tokens, nbytes, words, *rest = perplexity_columns(PerplexityRow(), rows)
    assert nll.tolist() == [2.5, 0.0] and tokens.tolist() == [3, 0]
    assert nbytes.tolist() == [10, 0] and words.tolist() == [-1, -1]
    assert all(c.tolist() == [0, 0] for c in rest)


@pytest.mark.parametrize(
    "rows",
    [
        [{"nll": 1.0, "tokens": 2, "bytes": -1}],  # -1 must not read as "absent"
        [{"nll": 1.0, "tokens": 2, "bytes": None}],  # a null count is given, and refused
        [{"nll": 1.0, "tokens": True}],
        [{"nll": 1.0, "tokens": 2, "nll_sum": 1.0}],  # compared beside the row's own NLL
        [{"nll": 1.0, "tokens": 2, "logprobs": [-1.0]}],
        [{"nll": 1.0, "tokens": 0}],
        [{"nll": 0.0, "tokens": 0, "words": 1}],
        [{"nll": math.nan, "tokens": 1}],
        [{"nll": 1.0, "tokens": 2**63}],
    ],
)
def test_rows_needing_the_row_check_are_declined(rows):
    assert perplexity_columns(PerplexityRow(), rows) is None


def test_dotted_names_are_declined():
    spec = PerplexityRow(nll_field="out.nll")
    assert perplexity_columns(spec, [{"out": {"nll": 1.0}, "tokens": 1}]) is None


def _hand(nll, tokens):
    total = math.fsum(nll)
    return total, sum(tokens), math.exp(total / sum(tokens))


def test_parquet_perplexity_matches_a_hand_sum_and_its_jsonl(tmp_path):
    rng = np.random.default_rng(7)
    n = 3000
    nll = rng.gamma(2.0, 20.0, n)
    tokens = rng.integers(0, 200, n)
    nll[tokens == 0] = 0.0
    words = np.where(tokens == 0, 0, tokens // 3 + 1)
    pq.write_table(pa.table({"nll": nll, "tokens": tokens, "words": words}), tmp_path / "a.parquet")
    with open(tmp_path / "a.jsonl", "w") as f:
        for a, b, c in zip(nll.tolist(), tokens.tolist(), words.tolist(), strict=True):
            f.write(json.dumps({"nll": a, "tokens": b, "words": c}) + "\n")
    reports = []
    for name in ("a.parquet", "a.jsonl"):
        result = run(["perplexity", tmp_path / name, "--json"])
        assert result.exit_code == 0, result.output
        reports.append(json.loads(result.stdout))
    total, count, ppl = _hand(nll.tolist(), tokens.tolist())
    report = reports[0]
    assert report["total_tokens"] == count
    assert report["total_nll"] == total
    assert report["perplexity"] == pytest.approx(ppl, rel=1e-15)
    assert reports[0] == reports[1]


@pytest.mark.parametrize(
    ("column", "values", "message"),
    [
        ("words", pa.array([3, None, 4], pa.int64()), "a.parquet: row 2: words null"),
        ("words", pa.array([3, -1, 4], pa.int64()), "a.parquet: row 2: words -1"),
        ("nll", pa.array([1.0, 2.0, math.nan]), "a.parquet: row 3: nll"),
    ],
)
def test_a_bad_parquet_row_is_named(tmp_path, column, values, message):
    table = {"nll": pa.array([1.0, 2.0, 3.0]), "tokens": pa.array([1, 2, 3]), column: values}
    pq.write_table(pa.table(table), tmp_path / "a.parquet")
    result = run(["perplexity", tmp_path / "a.parquet"])
    assert result.exit_code == 2
    assert message in result.stderr
