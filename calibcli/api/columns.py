"""The columns of rows given as arrays, checked by the commands' row rules with their messages:
:func:`confidences` and :func:`correctness` (one value per row, the first bad one named by its
index), :func:`row_values` (each row's group or id as a Python value). Used by
:func:`~calibcli.api.predictions.given` and by :class:`~calibcli.api.Predictions` itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from calibcli.errors import InputError


def confidences(name: str, values: Any, *, copy: bool = True) -> np.ndarray:
    """Each row's confidence (float64), checked: a number in [0, 1]. ``copy=False``: a float64
    array given is returned as it is."""
    return _column(name, values, _confidence_rule).astype(np.float64, copy=copy)


def correctness(name: str, values: Any, *, copy: bool = True) -> np.ndarray:
    """Each row's correctness (bool), checked: true/false or 0/1. ``copy=False``: a boolean
    array given is returned as it is."""
    return _column(name, values, _correct_rule).astype(bool, copy=copy)


def _confidence_rule() -> tuple[Callable, Callable]:
    """(the rule on an array of numbers, the row rule that words the message)"""
    from calibcli.io import check_confidence, confidence_ok

    def whole(arr: np.ndarray) -> np.ndarray | None:
        return confidence_ok(arr) if arr.dtype.kind in "iuf" else None

    return whole, lambda v: check_confidence(v, "confidence")


def _correct_rule() -> tuple[Callable, Callable]:
    from calibcli.io import check_correct

    def whole(arr: np.ndarray) -> np.ndarray | None:
        if arr.dtype == bool:
            return np.ones(arr.shape, bool)
        return ((arr == 0) | (arr == 1)) if arr.dtype.kind in "iu" else None

    return whole, lambda v: check_correct(v, "correct")


def _column(name: str, values: Any, rule: Callable[[], tuple[Callable, Callable]]) -> np.ndarray:
    """One column checked: the rule on the whole array when it holds numbers, then the row
    rule (which words the message) on the first row it refuses, or on every row of an array
    of other values (booleans as confidences, floats as correctness: refused as in a file).
    float32 and float16 values are read as written, as a file of them reads them: an array of
    them, and each among a list's or an object array's values.

    A list or tuple is one array to numpy, which gives its values one type: ``[0.9, "0.6"]``
    becomes strings and ``[1, 0, 0.5]`` floats, so the first row the array refuses may be one
    the user gave right. Its rows as given are then checked, and the first bad one is named
    with its value as given (:func:`_first_refused`); so are those of a list mixing booleans
    with numbers, which numpy reads as 1 and 0 (a boolean confidence is refused, as in a
    file)."""
    from calibcli.io import written_floats

    given = None
    if isinstance(values, (list, tuple)):
        given = _written_scalars(list(values))
        arr = written_floats(np.asarray(given))
    else:
        arr = _written_values(values)
    if arr.ndim != 1:
        raise InputError(
            name, None, f"expected one value per row, not an array of shape {arr.shape}"
        )
    whole, check = rule()
    ok = whole(arr)
    positions = range(arr.shape[0]) if ok is None else np.flatnonzero(~ok)[:1]
    for i in positions:
        try:
            check(_as_given(arr[i]))
        except ValueError as exc:
            if given is not None:
                _first_refused(name, given, check)
            raise InputError(name, f" index {i}", str(exc)) from None
    if given is not None and arr.dtype != object:
        kinds = set(map(type, given))
        if len(kinds) > 1 and kinds & {bool, np.bool_}:
            _first_refused(name, given, check)
    return arr


def _as_given(value: Any) -> Any:
    """A row's value as the row rule reads it: numpy's scalars as Python's, but datetime64
    and timedelta64 values stay numpy's (item() would give their ticks as ints)."""
    if isinstance(value, np.generic) and value.dtype.kind not in "mM":
        return value.item()
    return value


def _first_refused(name: str, given: list, check: Callable) -> None:
    """The InputError naming the first of a list's rows, as given, that ``check`` refuses
    (none: nothing raised)."""
    for i, value in enumerate(given):
        try:
            check(_as_given(value))
        except ValueError as exc:
            raise InputError(name, f" index {i}", str(exc)) from None


_NARROW = (np.float32, np.float16)


def _written_values(values: Any) -> np.ndarray:
    """``numpy.asarray(values)`` with every float32 and float16 value read as written
    (:func:`~calibcli.io.narrow.written_floats`): an array of either dtype, and such scalars
    among a list's or an object array's values (which ``asarray`` widens, or keeps as they
    are), each as an array of its type reads it. An array of another dtype is returned as it
    is, with no cost per value."""
    from calibcli.io import written_floats

    if _missing_in_nullable(values):
        # as they are, each missing value pandas' NA (asarray would make an Int64 column of
        # them floats, each row then refused as a float, from the first)
        return np.asarray(values.to_numpy(dtype=object))
    if isinstance(values, (list, tuple)):
        return written_floats(np.asarray(_written_scalars(list(values))))
    if isinstance(values, np.ma.MaskedArray):
        return _unmasked(values)
    arr = written_floats(np.asarray(values))
    if arr.dtype != object:
        return arr
    flat = arr.reshape(-1).tolist()  # an object array's values as they are
    if not any(t in _NARROW for t in set(map(type, flat))):
        return arr
    out = np.empty(arr.size, dtype=object)
    out[:] = _written_scalars(flat)
    return out.reshape(arr.shape)


def _missing_in_nullable(values: Any) -> bool:
    """Whether ``values`` are a pandas column (or array) of a nullable type (Int64, boolean,
    Float64, ...) holding a missing value."""
    dtype = getattr(values, "dtype", None)
    if dtype is None or isinstance(dtype, np.dtype) or not hasattr(values, "to_numpy"):
        return False
    isna = getattr(values, "isna", None)
    return isna is not None and bool(np.asarray(isna()).any())


def _unmasked(values: np.ma.MaskedArray) -> np.ndarray:
    """A masked array's values read as written, each masked one missing (None, in an object
    array): a masked confidence or correctness is then refused naming its row, as a null is in
    a file, a masked group is the group ``null`` and a masked id is refused as a null id is.
    (``asarray`` would keep the value under the mask, as if it were given.)"""
    data = _written_values(np.ma.getdata(values))
    mask = np.ma.getmaskarray(values)
    if not mask.any():
        return data
    out = np.empty(data.shape, dtype=object)
    out.reshape(-1)[:] = list(data.reshape(-1))  # numpy's scalars kept: datetimes stay dates
    out[mask] = None
    return out


def _written_scalars(values: list) -> list:
    """``values`` (a list, changed in place) with their float32 and float16 scalars replaced by
    their values as written (Python floats), each type's read as one array of it."""
    from calibcli.io import written_floats

    if not any(t in _NARROW for t in set(map(type, values))):
        return values
    for kind in _NARROW:
        at = [i for i, v in enumerate(values) if type(v) is kind]
        if at:
            read = written_floats(np.array([values[i] for i in at], kind)).tolist()
            for i, value in zip(at, read, strict=True):
                values[i] = value
    return values


def row_values(name: str, column: Any, what: str) -> list[Any]:
    """One value per row (``what``: ``group`` or ``ids``), in the rows' order, as Python
    values: numpy scalars as theirs (float32 and float16 as written). A group that is missing
    (None, NaN, pandas' NA or NaT) is None, named ``null`` as the commands name a null or an
    empty cell; any other group that is no string, number or boolean is an InputError naming
    its row and type (ids are checked by compare's id rules). A set or a mapping, which holds
    no row order, is refused."""
    from collections.abc import Mapping, Set, ValuesView

    if isinstance(column, (str, bytes)):  # list() would make each character a row's value
        raise InputError(
            name,
            None,
            f"{what}: {column!r} is one value, not one per row: give a list or an array of "
            "the rows' values",
        )
    if isinstance(column, (Set, Mapping, ValuesView)):
        raise InputError(
            name,
            None,
            f"{what}: a {type(column).__name__} holds no row order: give one value per row, "
            "in the rows' order (a list or an array)",
        )
    dtype = getattr(column, "dtype", None)
    if isinstance(column, np.ndarray) or (isinstance(dtype, np.dtype) and dtype.kind in "fmM"):
        arr = _written_values(column)
        if arr.ndim != 1:
            shape = f"not an array of shape {arr.shape}"
            raise InputError(name, None, f"{what}: expected one value per row, {shape}")
        if arr.dtype.kind in "mM":  # tolist() would give them as integers
            # NaT is a missing group (null); any other date or duration is no group name
            dated = np.flatnonzero(~np.isnat(arr)) if what == "group" else np.arange(arr.size)
            if dated.size:
                raise InputError(name, f" index {dated[0]}", _not_a_value(what, str(arr.dtype)))
        values = arr.tolist()  # Python values; an object array's as they are
    else:  # a list, or pandas' values (its missing values as themselves)
        values = column.tolist() if hasattr(column, "tolist") else list(column)
    values = _written_scalars(values)
    missing = _missing()
    for i, value in enumerate(values):
        if isinstance(value, np.generic) and value.dtype.kind in "biufU":
            value = values[i] = value.item()
        if what != "group" or value is None or isinstance(value, str):
            continue
        if (
            any(value is m for m in missing)
            or (isinstance(value, float) and value != value)
            or (isinstance(value, (np.datetime64, np.timedelta64)) and np.isnat(value))
        ):
            values[i] = None
        elif not isinstance(value, (int, float)):
            raise InputError(name, f" index {i}", _not_a_value(what, type(value).__name__))
    return values


def _not_a_value(what: str, kind: str) -> str:
    if what == "group":
        return f"group is of type {kind}, not a string, number or boolean"
    return f"id is of type {kind}, not a string or number"


def _missing() -> tuple[Any, ...]:
    """pandas' missing values (NA, NaT), when pandas is loaded (no value of it can be given
    before)."""
    import sys

    pandas = sys.modules.get("pandas")
    return () if pandas is None else (pandas.NA, pandas.NaT)


def same_length(name: str, n: int, other: int, what: str) -> None:
    if other != n:
        raise InputError(name, None, f"confidence and {what} differ in length: {n} != {other}")
