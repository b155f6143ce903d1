"""Native rows already parsed (a table's records, a JSON array's elements) checked in bulk.

Each function gives the columns the row kind's ``check`` gives row by row (see
:mod:`calibcli.io.rows` for the layout), or None when any row breaks a rule, is not an object,
or needs a check that only the row-by-row path makes (a dotted field name, a total or a
per-token list beside the row's own fields): the reader then reads the rows one by one, and the
first bad one is named with its message. The bulk path may only ever decline; it never words an
error, so the two cannot disagree on what is valid.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calibcli.io.rows import confidence_ok, count_ok

_ABSENT = object()
"""A key a row does not give (a null value is given, and refused)."""


def calibration_columns(spec: Any, rows: list) -> tuple | None:
    """``(confidence, correct)`` of native calibration rows, or None (see the module)."""
    cf, yf = spec.confidence_field, spec.correct_field
    try:
        conf = [row[cf] for row in rows]
        corr = [row[yf] for row in rows]
    except (KeyError, TypeError, IndexError):
        return None
    if not set(map(type, conf)) <= {float, int} or not set(map(type, corr)) <= {bool, int}:
        return None  # a bool, a string, null, ... as a confidence; a float as correct
    try:
        c = np.array(conf, np.float64)
        y = np.array(corr, np.int64)
    except OverflowError:  # an int beyond float64 or int64: check names it
        return None
    if c.shape[0] and not (confidence_ok(c.min()) and confidence_ok(c.max())):
        return None
    if not ((y == 0) | (y == 1)).all():
        return None
    return c, y.astype(np.bool_)


def _counts(values: list) -> np.ndarray | None:
    """int64 of a count column, -1 where a row lacks the key; None when a value given is not
    an int (a bool, a float, null, an integer of more digits than are read) or out of range."""
    if not set(map(type, values)) <= {int, object}:
        return None
    absent = [v is _ABSENT for v in values]
    try:
        out = np.array([0 if v is _ABSENT else v for v in values], np.int64)
    except OverflowError:
        return None
    if out.shape[0] and not (count_ok(out.min()) and count_ok(out.max())):
        return None
    out[np.array(absent, np.bool_)] = -1
    return out


def perplexity_columns(spec: Any, rows: list) -> tuple | None:
    """``(nll, tokens, bytes, words, nulls, sentinels, overflowed)`` of native perplexity rows,
    or None (see the module)."""
    if not spec.flat:
        return None
    nf = spec.nll_field
    tf, bf, wf = (spec.count_fields[k] for k in ("tokens", "bytes", "words"))
    checked = frozenset(spec.checked_keys)
    try:
        if checked and any(not checked.isdisjoint(row) for row in rows):
            return None  # a total or a per-token list beside the row's own fields
        nll = [row[nf] for row in rows]
        tokens = [row[tf] for row in rows]
        nbytes = [row.get(bf, _ABSENT) for row in rows]
        words = [row.get(wf, _ABSENT) for row in rows]
    except (KeyError, TypeError, IndexError, AttributeError):
        return None
    if not set(map(type, nll)) <= {float, int} or not set(map(type, tokens)) <= {int}:
        return None
    try:
        x = np.array(nll, np.float64)
    except OverflowError:  # an int beyond float64: check reads it as infinite
        return None
    # every row holds its tokens (row[tf] above), so only bytes and words may be absent (-1)
    cols = [_counts(tokens), _counts(nbytes), _counts(words)]
    if any(c is None for c in cols):
        return None  # a count not given as one
    zeros = np.zeros(x.shape[0], np.int64)
    out = (x, *cols, zeros, zeros.copy(), zeros.copy())
    return out if spec.columns_ok(out) else None
