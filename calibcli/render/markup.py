"""Report values as HTML text: every string escaped, every number formatted one way.

Shared by the HTML page (:mod:`calibcli.render.html`) and its inline charts
(:mod:`calibcli.render.svg`). Standard library only: a report body is plain JSON data.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

from calibcli.render.digits import fixed

NA = "n/a"
MINUS = "\u2212"  # a true minus sign: the page is read, not parsed (the JSON is for programs)
# C0 and C1 control characters other than tab, line feed and carriage return: HTML cannot show
# them, so they are written as visible escapes, as lone surrogates are
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def text(value: Any) -> str:
    """``value`` as text safe in HTML content and in a quoted attribute.

    Lone surrogates (which a JSON string may hold but UTF-8 cannot encode) become ``\\udXXX``
    and control characters ``\\xXX``, so the page is valid UTF-8 and shows that they are there.
    """
    s = str(value).encode("utf-8", "backslashreplace").decode("utf-8")
    s = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s)
    return html.escape(s, quote=True)


def _signless_zero(shown: str) -> str:
    """``-0.0000`` (a tiny negative rounded away) reads as 0."""
    return shown[1:] if shown.startswith("-") and not shown.strip("-0.,") else shown


def number(value: Any, digits: int = 4) -> str:
    """A report value as shown in a table cell (escaped): floats to ``digits`` decimals, counts
    with thousands separators, ``n/a`` for null, ``inf``/``−inf``/``NaN`` for non-finite."""
    if value is None:
        return NA
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        shown = f"{value:,}"
    elif isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else f"{MINUS}inf"
        shown = _signless_zero(fixed(value, digits))
    else:  # a hand-edited report may hold anything: show it, escaped
        return text(value)
    return shown.replace("-", MINUS)


def signed(value: Any, digits: int = 4) -> str:
    """A difference: ``+0.2422``, ``−0.0058``, ``0.0000``."""
    shown = number(value, digits)
    finite = isinstance(value, (int, float)) and not isinstance(value, bool)
    if finite and math.isfinite(value) and value > 0 and shown.strip("0.,"):
        return "+" + shown
    return shown


def interval(pair: Any, digits: int = 4) -> str:
    """``[lo, hi]`` of a bootstrap or Wilson interval; empty when there is none."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return ""
    return f"[{number(pair[0], digits)}, {number(pair[1], digits)}]"


def machine(value: Any) -> str | None:
    """The full-precision value of a finite number, for a ``<data value>`` attribute."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return repr(value)


def cell(value: Any, digits: int = 4, shown: str | None = None) -> str:
    """A number for a table cell: shown rounded (or as ``shown``), with its full precision as
    ``<data value>``."""
    full = machine(value)
    shown = number(value, digits) if shown is None else shown
    return shown if full is None else f'<data value="{full}">{shown}</data>'


def is_number(value: Any) -> bool:
    """True for a finite int or float (not a bool): something a chart can place."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
