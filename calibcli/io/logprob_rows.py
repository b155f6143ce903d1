"""A sequence given both as per-token log-probabilities and as a total: a row that carries the
list the ``logprobs`` format reads (``--logprobs-field``) beside an NLL or a token count
(native ``nll``/``tokens``, or a sums pair ``nll_sum``/``n_tokens``, ``sum_logprob``/
``num_tokens``) is read once, by whichever format detection picked, and refused when the two
disagree: each format reads one of them, so the figure would depend on which was picked.

A list is compared when it holds only numbers and nulls (a list of objects or strings is no
per-token list, and is left unread as before); its numbers are read with the ``logprobs``
format's rules (:func:`~calibcli.formats.logprobs_row`). Each total and count the row gives
as a JSON number is compared with it (a string or an object under one of those names is
something else, left unread). The token count must be the list's count of numbers, exactly;
the NLL must be the negated sum of the numbers, up to the rounding of half-precision scores
(:func:`nll_agrees`). A row that agrees is read by the same fields as before, so its figures do
not change. The row rules and their wording are those of :mod:`calibcli.io.rows`.
"""

from __future__ import annotations

import math
from typing import Any

from calibcli.formats import SUM_FIELDS, has_path, logprobs_row, lookup
from calibcli.io.rows import _is_number, show

TOLERANCE = 2.0**-6
"""The relative difference accepted between a total and its list (1/64, about 0.016)."""


def nll_agrees(total: float, listed: float) -> bool:
    """Whether an NLL given as a total and the NLL of its listed log-probabilities (``-fsum``)
    are one number up to the rounding of half-precision scores: within 2^-6 of the larger (with
    1 as the least scale, for sums near 0).

    A script often takes the total from a float32 loss and the list from a log-softmax in the
    model's dtype (bfloat16 or float16): bfloat16 rounds each term by at most 2^-8 of it, so a
    sum of terms of one sign is off by at most 2^-8 relative, twice that with the rounding of
    the total itself, a quarter of the tolerance (float16 and float32 round far finer). An NLL
    taken for a mean per token misses its list's sum by a factor of n >= 2 (relative 0.5 or
    more), and logs taken in base 2 or 10 by a factor of 1.44 or 2.30 (relative 0.31 and 0.57):
    about twenty times the tolerance or more, for totals past 1. With one token the mean is the
    sum, and the two agree. Infinite values (a zero-probability token) agree only with each
    other.
    """
    if math.isinf(total) or math.isinf(listed):
        return total == listed
    return abs(total - listed) <= TOLERANCE * max(1.0, abs(total), abs(listed))


def logprobs_values(spec: Any, obj: dict) -> tuple:
    """Values of a row of per-token log-probabilities (the ``logprobs`` format), for ``spec``
    (a :class:`~calibcli.io.rows.PerplexityRow`): the list at its ``logprobs_field``, checked
    against the totals and counts the row also gives (:class:`ListBeside`); bytes and words
    as in a native row. The last value says whether the NLL is +inf only because the finite
    terms sum past the largest double."""
    nll, tokens, nulls, sentinels = logprobs_row(obj, field=spec.logprobs_field)
    nll, tokens = float(nll), int(tokens)
    spec.beside.check(obj, (nll, tokens, nulls))
    overflowed = math.isinf(nll) and not _has_infinity(lookup(obj, spec.logprobs_field))
    counts = spec.scored_counts(obj, tokens)
    return nll, tokens, *counts, int(nulls), int(sentinels), overflowed


_PER_TOKEN = frozenset((int, float, type(None)))
"""The types of a per-token list's items (JSON numbers and nulls; not booleans)."""


class ListBeside:
    """The check of a row's per-token list (``logprobs_field``) against the totals and counts
    the row gives: its NLL (``nll_field``, ``nll_sum``, or ``-sum_logprob``) and its tokens
    (``tokens_field``, ``n_tokens``, ``num_tokens``), each compared when given."""

    def __init__(self, logprobs_field: str, nll_field: str, tokens_field: str) -> None:
        self.field = logprobs_field
        self.totals = tuple(dict.fromkeys(((nll_field, 1.0), *((t, s) for t, _, s in SUM_FIELDS))))
        self.counts = tuple(dict.fromkeys((tokens_field, *(c for _, c, _ in SUM_FIELDS))))
        names = (*self.counts, *(name for name, _ in self.totals))
        # the top-level keys a row gives a total or a count under (None: a dotted name may
        # reach into nested objects, so every row is looked into)
        self.names = None if any("." in name for name in names) else frozenset(names)
        # the top-level keys under which a row may hold the list: the name written whole, and
        # the first key of a dotted path into nested objects
        self.keys = tuple(dict.fromkeys((logprobs_field, logprobs_field.split(".")[0])))

    def listed(self, obj: dict) -> list | None:
        """The row's per-token list, or None when it holds none (see the module docstring)."""
        if self.field in obj:
            values = obj[self.field]
        elif "." in self.field and self.keys[-1] in obj:
            if not has_path(obj, self.field):
                return None
            values = lookup(obj, self.field)
        else:
            return None
        if type(values) is not list:
            return None
        return values if set(map(type, values)) <= _PER_TOKEN else None

    def check(self, obj: dict, read: tuple | None = None) -> None:
        """ValueError when the row's list disagrees with a total or a count the row gives.
        ``read``: ``(nll, tokens, nulls)`` of the list when the caller has read it already."""
        if self.names is not None and self.names.isdisjoint(obj):
            return  # no total and no count beside the list
        if read is None:
            if self.listed(obj) is None:
                return
            read = logprobs_row(obj, field=self.field)[:3]
        nll, tokens, nulls = read
        for name in self.counts:
            given = _given(obj, name)
            if given is not None and given != tokens:
                skipped = f"; {nulls} null{'s' if nulls != 1 else ''} not counted" if nulls else ""
                raise ValueError(
                    f"{name} {show(given)} and the {tokens} {self.field} disagree "
                    f"(expected {name} = the number of {self.field}{skipped})"
                )
        for name, sign in self.totals:
            given = _given(obj, name)
            if given is not None and not nll_agrees(sign * _as_float(given), nll):
                total = -nll if nll else 0.0
                raise ValueError(
                    f"{name} {show(given)} and the {tokens} {self.field} (sum {show(total)}) "
                    f"disagree (expected {name} = {'-' if sign > 0 else ''}sum({self.field}))"
                )


def _given(obj: dict, name: str) -> Any:
    """The number a row gives under ``name`` (a dotted path into nested objects when the key
    is not written whole), or None when it gives none."""
    if name in obj:
        value = obj[name]
    elif "." in name:
        if not has_path(obj, name):
            return None
        value = lookup(obj, name)
    else:
        return None
    return value if _is_number(value) else None


def _as_float(value: int | float) -> float:
    """A JSON number as a double; an integer past a double's range is infinite."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _has_infinity(values: Any) -> bool:
    """Whether a list of per-token logprobs holds an infinite one (a zero-probability token)."""
    return isinstance(values, list) and any(isinstance(v, float) and math.isinf(v) for v in values)
