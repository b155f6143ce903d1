"""The paths of a report's ``non_finite`` map: where in the JSON body each infinity written as
null sits, made by one function (:func:`path_to`) and read by one (:func:`split_path`).

A path joins keys with ``.`` and writes a list item as ``[i]``: ``groups.law.ci.nll[1]``. A key
holding ``.``, ``[``, ``]`` or ``\\`` (a --by group's name comes from the data) has each of them
escaped by a backslash, so the group ``a.b`` is ``groups.a\\.b.ece``, never the key ``b`` of a
group ``a``; keys without them are written as they are."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

# the marks a report writes ("inf", "-inf"), and JSON's own spellings of them
MARKS = {
    "inf": math.inf,
    "-inf": -math.inf,
    "nan": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
    "NaN": math.nan,
}
_ESCAPED = {ord(c): "\\" + c for c in "\\.[]"}
_INDEX = re.compile(r"\[(\d+)\]")


def path_to(path: str, key: Any) -> str:
    """The path of ``key`` in the object at ``path`` (``""``: the body itself)."""
    key = str(key)
    if "." in key or "[" in key or "]" in key or "\\" in key:  # most keys hold none
        key = key.translate(_ESCAPED)
    return f"{path}.{key}" if path else key


def split_path(path: str) -> list[str | int]:
    """The keys (str) and list indices (int) a path names, in order:
    ``groups.a\\.b.ci.nll[1]`` -> ``["groups", "a.b", "ci", "nll", 1]``."""
    if "\\" not in path and "[" not in path:
        return path.split(".")
    parts: list[str | int] = []
    name, named, i = "", True, 0  # named: a key is being read (after a dot, or its first char)
    while i < len(path):
        index = _INDEX.match(path, i) if path[i] == "[" else None
        if path[i] == "." or index:
            if named:
                parts.append(name)
            name, named = "", index is None
            if index:
                parts.append(int(index[1]))
                i = index.end() - 1
        else:
            i += path[i] == "\\" and i + 1 < len(path)  # an escaped character: taken as it is
            name, named = name + path[i], True
        i += 1
    if named:
        parts.append(name)
    return parts


def put_marks(
    body: dict[str, Any], marks: dict[str, Any], key: Callable[[str], str] = str
) -> dict[str, Any]:
    """A copy of ``body`` with each null that ``marks`` (its ``non_finite`` map: path -> mark,
    see :data:`MARKS`) names set to that float, so a renderer shows inf rather than n/a;
    ``key`` maps a path's keys to the body's. An unknown mark, or a path that leads to no null,
    changes nothing. Only the dicts and lists on a changed path are copied."""
    out = dict(body)
    copied = {id(out)}
    for path, mark in marks.items():
        if not isinstance(path, str) or not isinstance(mark, str) or mark not in MARKS:
            continue
        *steps, last = [key(p) if type(p) is str else p for p in split_path(path)]
        node: Any = out
        for step in steps:
            slot = _slot(node, step)
            if slot is None or not isinstance(node[slot], (dict, list)):
                break
            if id(node[slot]) not in copied:
                node[slot] = type(node[slot])(node[slot])
                copied.add(id(node[slot]))
            node = node[slot]
        else:
            slot = _slot(node, last)
            if slot is not None and node[slot] is None:
                node[slot] = MARKS[mark]
    return out


def _slot(node: Any, step: str | int) -> str | int | None:
    """The key or index of ``node`` that a path's ``step`` names (a list item also as a digit
    string, ``key.i``), or None when it has none."""
    if isinstance(node, dict):
        return step if type(step) is str and step in node else None
    if isinstance(node, list):
        step = int(step) if type(step) is str and step.isdigit() else step
        return step if type(step) is int and 0 <= step < len(node) else None
    return None
