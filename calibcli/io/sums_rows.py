"""A sequence's sums under other tools' names (``nll_sum``/``n_tokens``, ``sum_logprob``/
``num_tokens``): the rows of the ``sums`` format, and the agreement of those names with the
native ``nll``/``tokens`` when a row gives both.

A row that gives one sequence's NLL under two names is read once; when the two disagree,
neither is trusted and the row is refused, whichever names it was read by. The row rules and
their wording are those of :mod:`calibcli.io.rows`.
"""

from __future__ import annotations

from typing import Any

from calibcli.io.rows import (
    _is_number,
    _same_number,
    check_count,
    check_nll,
    check_nll_tokens,
    field,
    nll_tokens_ok,
    show,
)


def sums_values(obj: dict) -> tuple[float, int]:
    """``(nll, tokens)`` of a ``sums`` row: ``nll_sum``/``n_tokens``, or ``sum_logprob``/
    ``num_tokens`` (a summed log-probability, <= 0, whose negation is the NLL); a row giving
    both pairs is refused when they disagree. ValueError naming the field that is wrong."""
    from calibcli.formats import SUM_FIELDS

    found = next((names for names in SUM_FIELDS if names[0] in obj), None)
    if found is None:
        names = " or ".join(f'"{t}"' for t, _, _ in SUM_FIELDS)
        raise ValueError(f"missing field {names}")
    total, count, sign = found
    given = value = field(obj, total)
    if sign < 0:
        if _is_number(value) and value > 0:
            raise ValueError(
                f"{total} {show(value)} is positive (expected a summed log-probability <= 0)"
            )
        value = -value if _is_number(value) else value
    nll = check_nll(value, total)
    tokens = check_count(field(obj, count), count)
    if sign < 0 and not nll_tokens_ok(nll, tokens):  # named as given, not as its negation
        raise ValueError(f"{total} {show(given)} < 0 with 0 {count}")
    check_nll_tokens(nll, tokens, total, count)
    for other, other_count, other_sign in SUM_FIELDS[SUM_FIELDS.index(found) + 1 :]:
        if other in obj and not _same_number(field(obj, other), other_sign * nll):
            raise _disagree(total, given, other, obj[other], other_sign)
        if other_count in obj and not _same_number(field(obj, other_count), tokens):
            raise ValueError(
                f"{count} {show(obj[count])} and {other_count} {show(obj[other_count])} disagree"
            )
    return nll, tokens


def other_totals(tokens_field: str, taken: tuple[str, ...]) -> tuple:
    """The sums pairs a native row may also give, as ``(total, count, sign)``: those whose
    total is not one of the names the row is read by (``taken``); a count that is the row's
    own tokens field is not compared with itself (``None``)."""
    from calibcli.formats import SUM_FIELDS

    return tuple(
        (total, None if count == tokens_field else count, sign)
        for total, count, sign in SUM_FIELDS
        if total not in taken
    )


def check_native_sums(obj: dict, nll: float, tokens: int, names: tuple, pairs: tuple) -> None:
    """ValueError when a native row (read by ``names``: its NLL and tokens fields) also gives
    one of ``pairs`` (:func:`other_totals`) and disagrees with it. A pair counts only when its
    total is given: a lone ``num_tokens`` beside a native row may count something else."""
    nll_field, tokens_field = names
    for total, count, sign in pairs:
        if total not in obj:
            continue
        if not _same_number(obj[total], sign * nll):
            raise _disagree(nll_field, field(obj, nll_field), total, obj[total], sign)
        if count is not None and count in obj and not _same_number(obj[count], tokens):
            raise ValueError(
                f"{tokens_field} {show(tokens)} and {count} {show(obj[count])} disagree"
            )


def _disagree(name: str, value: Any, other: str, other_value: Any, sign: float) -> ValueError:
    """The two names of a sequence's NLL give other values: neither is trusted."""
    return ValueError(
        f"{name} {show(value)} and {other} {show(other_value)} disagree "
        f"(expected {other} = {'-' if sign < 0 else ''}{name})"
    )
