"""How many decimals a column of numbers needs so that values that differ print differently.

Thresholds a risk–coverage table lists are distinct confidences; from bf16 loglikelihoods two
of them can be 1e-8 apart, and at the usual four decimals both print as ``0.7982`` while they
accept different rows. A column is therefore printed with the fewest decimals (at least the
usual ones) at which every pair of distinct finite values prints differently; 17 decimals tell
any two doubles in [0, 1] apart, so the search always ends."""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_FLOOR, Decimal
from itertools import pairwise, zip_longest
from typing import Any

MOST = 17


def distinct_decimals(values: Iterable[Any], least: int = 4) -> int:
    """The fewest decimals, at least ``least`` and at most 17, at which the distinct finite
    floats among ``values`` all print differently (``f"{x:.{d}f}"``)."""
    finite = sorted({v for v in values if isinstance(v, float) and math.isfinite(v)})
    for digits in range(least, MOST + 1):
        shown = [f"{v:.{digits}f}" for v in finite]
        if all(a != b for a, b in pairwise(shown)):
            return digits
    return MOST


def threshold_decimals(values: Iterable[Any], least: int = 4) -> int:
    """The decimals for a column of thresholds: as :func:`distinct_decimals`, and as many as
    keep each apart from 0 and 1. A threshold of 0.99998 rounded to ``1.0000`` reads as "accept
    only rows at confidence 1", and one of 0.00004 as ``0.0000`` as "accept every row"."""
    return distinct_decimals([0.0, 1.0, *values], least)


def cut(threshold: float, digits: int) -> str:
    """A threshold cut (not rounded) to ``digits`` decimals of its shortest exact text: never
    above it, so the printed number accepts every row the threshold accepts (``0.96097``, not
    ``0.9610``, at five decimals; ``0.9609`` at four)."""
    return f"{Decimal(repr(threshold)).quantize(Decimal(1).scaleb(-digits), ROUND_FLOOR):f}"


def table_decimals(thresholds: Sequence[Any], rejected: Any = None, least: int = 4) -> int:
    """The decimals at which a risk–coverage table's thresholds t_j, :func:`cut`, accept
    exactly the rows each accepts: every printed p_j <= t_j is above ``rejected[j]``, the next
    distinct confidence down h_j, which a thinned table does not list (a row without one is
    kept apart from 0 instead: ``0.0000`` reads as "accept every row"). Rounded, a row at
    0.96097 would print at four decimals as ``0.9610``, above its own rows; cut, one at 0.96104
    with a neighbour at 0.96101 prints as ``0.96104``, not ``0.9610``, which would accept the
    neighbour's rows too. Distinct rows print differently, as h_j >= t_{j+1} >= p_{j+1}."""
    below = rejected if isinstance(rejected, Sequence) else _listed_below(thresholds)
    rows = [
        (t, h if isinstance(h, float) else 0.0 if t > 0 else None)
        for t, h in zip_longest(thresholds, below)
        if isinstance(t, float) and math.isfinite(t)
    ]
    for digits in range(least, MOST + 1):
        if all(h is None or float(cut(t, digits)) > h for t, h in rows):
            return digits
    return MOST


def _listed_below(thresholds: Sequence[Any]) -> list[float | None]:
    """For a report that does not carry each row's next confidence down (one written before
    it did), each threshold's next one down among those the table lists: the rows then at
    least print apart, as they did."""
    listed = sorted({t for t in thresholds if isinstance(t, float) and math.isfinite(t)})
    out: list[float | None] = []
    for t in thresholds:
        k = bisect_left(listed, t) if isinstance(t, float) else 0
        out.append(listed[k - 1] if k > 0 else None)
    return out


def chosen_decimals(block: Any, least: int = 4) -> int:
    """The decimals, at least ``least``, for a chosen threshold t (a report's ``guaranteed`` or
    ``plug_in`` block) at which the printed number p accepts exactly the rows t accepts: p is
    printed apart from 0, 1 and each ``highest_rejected`` confidence h that the block and its
    ``realised`` block carry (the largest confidence below t among the rows each is read on),
    and p is at most each ``lowest_accepted`` confidence a (the smallest at or above t; t
    itself for a block without one).

    Rounding to d decimals is monotone (x <= y gives p(x) <= p(y)) and leaves a printed number
    as it is. If p(t) <= h < t, then p(h) >= p(p(t)) = p(t) >= p(h): h and t print alike; so
    when they print differently, p(t) > h and every row at or below h stays rejected, while
    p(t) <= a keeps every row at or above t accepted. A grid threshold of 0.98004737685 with
    0.98 the highest rejected confidence prints as ``0.98005``, where ``0.9800`` would accept
    the rows at 0.98 as well; a plug-in threshold of 0.87656, a confidence, as ``0.87656``,
    where ``0.8766`` would reject its own rows."""
    t = block.get("threshold") if isinstance(block, Mapping) else None
    if not isinstance(t, float) or not math.isfinite(t):
        return least
    blocks = [b for b in (block, block.get("realised")) if isinstance(b, Mapping)]
    said = [b.get("highest_rejected") for b in blocks]
    apart = {0.0, 1.0, *(h for h in said if isinstance(h, float) and math.isfinite(h))} - {t}
    tops = [b.get("lowest_accepted", t) for b in blocks]
    top = min((a for a in tops if isinstance(a, float)), default=t)
    for digits in range(least, MOST + 1):
        shown = f"{t:.{digits}f}"
        if float(shown) <= top and all(f"{v:.{digits}f}" != shown for v in apart):
            return digits
    return MOST


def chosen_at(section: Any, key: str) -> int:
    """:func:`chosen_decimals` of the chosen threshold at the dotted ``key`` of a report section
    (``guaranteed.threshold``: the ``guaranteed`` block's)."""
    block = section
    for part in key.split(".")[:-1]:
        block = block.get(part) if isinstance(block, Mapping) else None
    return chosen_decimals(block)


LARGE = 1e15
"""Past this magnitude a float is shown in scientific notation: its fixed-point digits would
fill a table's column (a perplexity of exp(700) has 305) with no more meaning than its
first ones."""


def fixed(x: float, digits: int = 4) -> str:
    """A float to ``digits`` decimals, or, at a magnitude of :data:`LARGE` or more, to
    ``digits`` decimals of its scientific notation (``1.1188e+150``)."""
    return f"{x:.{digits}e}" if abs(x) >= LARGE and math.isfinite(x) else f"{x:.{digits}f}"


def as_given(value: float) -> str:
    """A limit as the user gave it: a float as short as it reads back exactly (``0.05``,
    ``0.04139``, ``0.999999999``, never rounded to ``0.0500`` or ``1``), a count whole with
    thousands separators, as the counts it is compared with are shown."""
    if isinstance(value, int):
        return f"{value:,}"
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def gate_decimals(values: Iterable[Any], limit: Any, least: int = 4) -> int:
    """The decimals, at least ``least``, for a gate check's values beside its limit shown
    :func:`as_given`: as many as make each value, as shown, compare with the limit as the
    value does: above it, below it, or equal. An ECE of 0.05004 against ``--max-ece 0.05``
    reads ``0.05004`` (at 4 decimals, ``0.0500`` would seem to pass), and one of exactly
    0.04139 against ``0.04139`` reads ``0.04139``, not ``0.0414``."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        return least
    return max((_reads_as(v, float(limit), least) for v in values), default=least)


def _reads_as(value: Any, limit: float, least: int) -> int:
    """The fewest decimals from ``least`` at which ``value`` shown by :func:`fixed` compares
    with ``limit`` as ``value`` itself does (17 at most)."""
    if not isinstance(value, float) or not (math.isfinite(value) and math.isfinite(limit)):
        return least
    side = (value > limit) - (value < limit)
    for digits in range(least, MOST + 1):
        shown = float(fixed(value, digits))
        if (shown > limit) - (shown < limit) == side:
            return digits
    return MOST


#: The labels the tables give their own rows beside the groups' rows.
OWN_ROWS = frozenset({"(pooled)", "all (pooled)", "macro (by sequences)"})


def group_cell(name: Any, encoding: str | None = None) -> str:
    """A name from the data (a group's, a field's) as every table shows it: as it is, or as
    its Python literal (``repr``, as the gate's messages on stderr name it) when it spells a
    label the table gives its own rows (a group named ``(pooled)`` is not the pooled row),
    has a space at either end, holds a character that is not printable (a line break, an
    escape sequence, a lone surrogate, a no-break or zero-width space), or starts with a
    quote (so that no name shown as it is reads as another's literal). Two different names
    never show alike: one shown as it is never starts with a quote, and a literal reads back
    as the one name it was made from.

    A name that would be drawn like another is shown as its ``ascii`` literal, which spells
    every character that is not ASCII as its escape: one not in Unicode's composed form NFC
    (``e`` and a combining acute, ``'e\\u0301'``, is drawn as the composed ``é``), one
    starting with a combining mark (it would join the character the table puts before it),
    and one holding a character drawn as nothing (a variation selector, the combining grapheme
    joiner: ``'e\\u034f'`` is drawn as ``e``). Every text shown is then in NFC: two names
    shown differently are never canonically equivalent, the spellings Unicode draws alike.
    Names in NFC, accented ones among them, show as before.

    With ``encoding``, the encoding of the output, a name it cannot write is shown as its
    ``ascii`` literal (``'\\u65e5'``), which every encoding writes, rather than raising."""
    text = str(name)
    shown = text if _as_it_is(text) else repr(text)
    drawn_apart = _drawn_as_spelled(text) and _drawn_as_spelled(shown)
    if not drawn_apart or (encoding is not None and not _writes(shown, encoding)):
        shown = ascii(text)
    return shown


_DRAWN_AS_NOTHING = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef]"
)
"""The printable characters Unicode draws as nothing (default ignorable): the combining
grapheme joiner, variation selectors, Mongolian free variation selectors, Khmer inherent
vowels, Hangul fillers. The other default-ignorable characters are not printable, so a name
holding one is shown by its literal already."""


def _drawn_as_spelled(text: str) -> bool:
    """Whether ``text`` is drawn unlike any other text: it is in NFC (a canonically equivalent
    spelling, such as NFD's, is drawn alike), does not start with a combining mark, and holds
    no character drawn as nothing."""
    if text.isascii():
        return True
    return (
        unicodedata.is_normalized("NFC", text)
        and not unicodedata.category(text[0]).startswith("M")
        and _DRAWN_AS_NOTHING.search(text) is None
    )


def _as_it_is(text: str) -> bool:
    """Whether a name reads plainly: not a table's own label, printable, without a space at
    either end, not starting with a quote."""
    return (
        text.isprintable()
        and text not in OWN_ROWS
        and text == text.strip()
        and not text.startswith(("'", '"'))
    )


def _writes(text: str, encoding: str) -> bool:
    """Whether ``encoding`` can write ``text`` (an unknown encoding is taken to)."""
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    except LookupError:
        return True
    return True
