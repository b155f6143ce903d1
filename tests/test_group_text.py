"""The group table's numbers are written as Python's own repr() (what json.dumps writes), group
names are quoted exactly where float() or a JSON literal would read them, and a reader's new
names are coded in order of first appearance; each against Python itself."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.io.rows import _LITERALS, _looks_typed
from calibcli.reports.group_table import _floats, _numbers, _rows, _texts


def _as_json(v: float) -> str:
    return repr(v) if math.isfinite(v) else "null"


bit_patterns = st.integers(0, (1 << 64) - 1).map(
    lambda b: struct.unpack("<d", b.to_bytes(8, "little"))[0]
)
magnitudes = st.builds(
    lambda m, e, s: s * m * 10.0**e,
    st.floats(1.0, 10.0, exclude_max=True),
    st.integers(-330, 308),
    st.sampled_from([1.0, -1.0]),
)
edges = st.sampled_from(
    [
        0.0,
        -0.0,
        1e-4,
        -1e-4,
        9.999999999999999e-05,
        1e16,
        9999999999999998.0,
        1e-5,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        math.inf,
        -math.inf,
        math.nan,
        0.1,
        1.0,
    ]
)
any_float = bit_patterns | magnitudes | edges | st.floats()


@settings(max_examples=300, deadline=None)
@given(st.lists(any_float, max_size=40))
def test_floats_are_written_as_repr_and_non_finite_as_null(values):
    assert _floats(np.array(values, dtype=np.float64)) == [_as_json(v) for v in values]
    assert _texts(values) == [_as_json(v) for v in values]


@settings(max_examples=200, deadline=None)
@given(st.lists(any_float.filter(math.isfinite) | st.integers(-(10**20), 10**20), max_size=40))
def test_numbers_are_written_as_json_dumps_writes_them(values):
    assert _numbers(values) == [json.dumps(v) for v in values]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda bins: st.lists(
            st.lists(
                st.floats(1e-4, 1e15) | st.sampled_from([0.0, math.nan]),
                min_size=bins,
                max_size=bins,
            ),
            min_size=1,
            max_size=8,
        )
    )
)
def test_rows_are_the_inside_of_json_lists(table):
    expected = [json.dumps([None if math.isnan(v) else v for v in row])[1:-1] for row in table]
    assert _rows(np.array(table, dtype=np.float64)) == expected
    counts = np.array([[int(abs(v)) if math.isfinite(v) else 7 for v in row] for row in table])
    assert _rows(counts) == [json.dumps(row)[1:-1] for row in counts.tolist()]


def _reads_as_another_value(text: str) -> bool:
    """The rule written out: empty, opening with a quote, a JSON literal, or read by float()."""
    if not text or text.startswith('"') or text in _LITERALS:
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


NAMES = ["1", " 1 ", "1_0", "inf", "nan", "Infinity", "-0", "+1", ".5", "1e5", "true", "null"]
NAMES += ['"x"', "", "t1", "-Infinity", "INF", "nAn", "iphone", "٣", "\u00a01", "_1", "\x1c1", "x1"]


@settings(max_examples=500, deadline=None)
@given(
    st.sampled_from(NAMES)
    | st.text(max_size=8)
    | st.text(alphabet="0123456789+-._eEinfatyINFAT \t\u00a0\u2003٣", max_size=8)
    | st.from_regex(r"\s*[+-]?(\d[\d_]*)?\.?\d*([eE][+-]?\d+)?\s*", fullmatch=True)
)
def test_names_are_quoted_exactly_where_another_value_would_read_them(text):
    assert _looks_typed(text) == _reads_as_another_value(text)


def test_the_listed_names_quoted_or_not():
    quoted = {n for n in NAMES if _looks_typed(n)}
    assert quoted == {n for n in NAMES if n not in ("t1", "iphone", "_1", "x1", "\x1c1")}


def test_a_reader_codes_new_names_in_order_of_first_appearance():
    from calibcli.io.decode import BlockDecoder
    from calibcli.io.rows import CalibrationRow

    reader = BlockDecoder(CalibrationRow(), key=lambda row: row["task"], group_field="task")
    first = reader._group_keys(["b", "a", "b", "1"])
    assert first.codes.tolist() == [0, 1, 0, 2]
    assert reader._code_names == ["b", "a", '"1"']
    second = reader._group_keys(["c", "a", "d", "c"])
    assert second.codes.tolist() == [3, 1, 4, 3]
    assert list(second) == ["c", "a", "d", "c"]
    # a value of another type: named one by one, and the codes stay as they were
    assert reader._group_keys(["e", 1, "a"]) == ["e", "1", "a"]
    assert reader._code_names == ["b", "a", '"1"', "c", "d"]
    assert reader._group_keys([["x"], "a"]) is None
    assert reader._group_keys(["e"]).codes.tolist() == [5]
