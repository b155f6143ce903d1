"""Nested field access and the small JSON checks every row format shares.

Pure functions over decoded JSON; errors are ``ValueError`` naming the field or position.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

#: A per-token log-probability at or below this is an API sentinel ("not in the top-k"),
#: not a real probability.
SENTINEL_LOGPROB = -9999.0


class CalibrationRow(NamedTuple):
    """One prediction: the probability given to the answer and whether it was right."""

    confidence: float
    correct: bool


class PerplexityRow(NamedTuple):
    """One scored sequence, in the column order of the perplexity reader.

    ``nll`` is the summed negative log-likelihood in nats; ``tokens`` the scored tokens;
    ``bytes`` / ``words`` the UTF-8 bytes and words of the scored text (``None`` when the
    format does not log them); ``nulls`` the unscored positions skipped; ``sentinels`` the
    values at or below :data:`SENTINEL_LOGPROB` (summed as given).
    """

    nll: float
    tokens: int | None
    bytes: int | None
    words: int | None
    nulls: int
    sentinels: int


def by_value(row: Mapping[str, Any], dotted_path: str) -> str | int | float | bool | None:
    """The value at ``dotted_path`` (``"doc.subject"``) for grouping with ``--by``.

    A key that itself contains dots is matched whole first; list elements are reached by index
    (``"choices.0"``). The value must be a JSON scalar (string, number, boolean or null): an
    object or list is not a group. Missing -> ValueError naming the path.
    """
    value = lookup(row, dotted_path)
    if isinstance(value, (dict, list)):
        raise ValueError(
            f"field {dotted_path!r} is {json_type(value)}, not a value to group by "
            "(name a field inside it)"
        )
    return value


def lookup(row: Mapping[str, Any], dotted_path: str) -> Any:
    """Follow ``dotted_path`` through nested objects (and list indices); ValueError if missing."""
    if isinstance(row, Mapping) and dotted_path in row:
        return row[dotted_path]
    current: Any = row
    walked: list[str] = []
    for part in dotted_path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and is_index(part) and int(part) < len(current):
            current = current[int(part)]
        else:
            where = f" in {'.'.join(walked)!r}" if walked else ""
            if walked and not isinstance(current, (Mapping, list)):
                where += f" ({json_type(current)})"
            raise ValueError(f"missing field {dotted_path!r}: no {part!r}{where}")
        walked.append(part)
    return current


def has_path(row: Mapping[str, Any], dotted_path: str) -> bool:
    try:
        lookup(row, dotted_path)
    except ValueError:
        return False
    return True


def is_index(part: str) -> bool:
    return part.isascii() and part.isdigit()


def json_type(value: Any) -> str:
    """How a JSON value reads in an error message: ``a string ('abc')``, ``null``, ``a list``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    described = getattr(value, "described", None)  # an integer too long to read
    return described() if callable(described) else type(value).__name__


def path_where(value: Any, found: Callable[[Any], bool]) -> str | None:
    """The dotted path (keys and list indices) of the first value inside a decoded JSON value,
    in document order, for which ``found`` is true (``""``: the value itself); None when none
    is. Walked without recursion, as deep as json nests."""
    if found(value):
        return ""
    root = _children(value)
    stack = [] if root is None else [root]
    path: list[str] = []  # path[i]: the key whose children stack[i + 1] walks
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            if path:  # the iterator left was not the root's
                path.pop()
            continue
        key, child = step
        if found(child):
            text = ".".join([*path, _key_text(key)])
            return text if len(text) <= 80 else "..." + text[-77:]
        children = _children(child)
        if children is not None:
            path.append(_key_text(key))
            stack.append(children)
    return None


def _children(node: Any) -> Any:
    """An iterator over (key or index, value) of an object or a list; None for a scalar."""
    if isinstance(node, dict):
        return iter(node.items())
    if isinstance(node, list):
        return enumerate(node)
    return None


def _key_text(key: Any) -> str:
    """A key or index as written in a dotted path; a key that is not printable text (a
    newline, say) as a JSON string, so that a message stays one line."""
    text = str(key)
    return text if text.isprintable() else json.dumps(text)


def too_long_in(value: Any, path: str) -> str | None:
    """``path.i.j is an integer of N digits, ...`` for the first integer too long to read
    inside ``value`` (:func:`path_where`), or None: a message naming it beats one that cannot
    tell what the value holds."""
    hits: list[Any] = []

    def long(v: Any) -> bool:
        if callable(getattr(v, "described", None)):
            hits.append(v)
            return True
        return False

    where = path_where(value, long)
    if where is None:
        return None
    return f"{'.'.join(p for p in (path, where) if p)} is {hits[0].described()}"


def number(value: Any, what: str) -> float:
    """A float from a JSON number or a numeric string (lm-eval logs ``"-13.78"``); not NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{what} is {json_type(value)}, expected a number")
    try:
        x = float(value)
    except ValueError:
        raise ValueError(f"{what} is {json_type(value)}, expected a number") from None
    except OverflowError:  # an integer past a double's range: infinite, as native rows read it
        x = math.inf if value > 0 else -math.inf
    if x != x:
        raise ValueError(f"{what} is NaN")
    return x


def token_logprob(value: Any, what: str) -> float:
    """A per-token natural-log probability: a number <= 0 (``-inf`` allowed), not NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} is {json_type(value)}, expected a number")
    if value != value:
        raise ValueError(f"{what} is NaN")
    if value > 0:
        raise ValueError(f"{what} = {value!r} is greater than 0, not a log-probability")
    try:
        return float(value)
    except OverflowError:  # an integer beyond the range of a double
        raise ValueError(f"{what} is a number beyond the range of a double") from None


def sum_logprobs(values: list[float], nulls: int, nbytes: int | None) -> PerplexityRow:
    """A :class:`PerplexityRow` from kept per-token log-probabilities: nll = -fsum(values)."""
    try:
        total = math.fsum(values)
    except OverflowError:  # finite terms whose sum exceeds the largest double
        total = -math.inf
    sentinels = sum(1 for v in values if SENTINEL_LOGPROB >= v > -math.inf)
    return PerplexityRow(-total if total else 0.0, len(values), nbytes, None, nulls, sentinels)
