"""The values of the Python API's options (and of the Spark and Dask summaries' ``report()``),
each checked as the command line checks its option of the same name, the message following the
keyword that gave the value
(:class:`~calibcli.errors.InputError`; a switch that is not True or False is a TypeError)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from calibcli.errors import InputError


def option(where: str, name: str, check: Callable[[Any], Any], value: Any) -> Any:
    """``value`` once ``check`` (a value check of :mod:`calibcli.reports.options`) passed; its
    message follows the keyword that gave the value. A float32 or float16 is read as written,
    as the command reads its digits typed (float32 0.1 is 0.1, not 0.10000000149011612, which
    would loosen a gate of 0.1), as the rows' values are."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(where, None, f"{name}: {value!r} is not a number")
    value = written_number(value)
    try:
        float(value)
    except OverflowError:  # an int no float holds: infinite, as the command reads 1e400
        value = math.inf if value > 0 else -math.inf
    try:
        return check(value)
    except ValueError as exc:
        raise InputError(where, None, f"{name}: {exc}") from None


def written_number(value: Any) -> Any:
    """A float32 or float16 scalar as the float64 of its shortest spelling (numpy's ``str``
    of it), as the rows' values are read (:func:`~calibcli.io.narrow.written_floats` gives the
    same double for every finite float16 and float32); another value as it is."""
    if type(value) not in (np.float32, np.float16):
        return value
    return float(str(value))


def whole(where: str, name: str, value: Any, low: int, high: int | None = None) -> int:
    """A whole number in [low, high], as the command line's option of a range takes it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(where, None, f"{name}: {value!r} is not a whole number")
    if value < low or (high is not None and value > high):
        shown = f"{low}<=x<={high}" if high is not None else f"x>={low}"
        raise InputError(where, None, f"{name}: {value} is not in the range {shown}")
    return int(value)


def one_of(where: str, name: str, value: Any, choices: Any) -> str:
    """One of a registry's names."""
    choices = tuple(choices)
    if value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise InputError(where, None, f"{name}: {value!r} is not one of {listed}")
    return value


def text(where: str, name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise InputError(where, None, f"{name}: {value!r} is not a string")
    return value


def field_name(where: str, name: str, value: Any) -> str:
    """A field's name (a dotted path), refused empty as the command's field options refuse
    it: an empty name would read no field, or the default one."""
    if text(where, name, value) == "":
        raise InputError(where, None, f"{name}: a field name cannot be empty")
    return value


def answer_options(where: str, value: Any) -> list[str]:
    """``choices``: a comma-separated string (as ``--choices`` takes it) or a list of
    strings, two or more distinct options (spaces around each ignored)."""
    if isinstance(value, str):
        options = value.split(",")
    elif isinstance(value, (list, tuple)):
        options = list(value)
    else:
        raise InputError(where, None, f"choices: {value!r} is not a string or a list of them")
    for option in options:
        if not isinstance(option, str):
            raise InputError(where, None, f"choices: {option!r} is not a string")
    stripped = [option.strip() for option in options]
    if len(stripped) < 2 or "" in stripped or len(set(stripped)) != len(stripped):
        raise InputError(
            where, None, f"choices: {value!r} is not two or more distinct options, e.g. A,B,C"
        )
    return options


def usage(where: str, check: Callable[..., Any], **options: Any) -> Any:
    """A check of options together (:mod:`calibcli.reports`), its ValueError as InputError."""
    try:
        return check(**options)
    except ValueError as exc:
        raise InputError(where, None, str(exc)) from None


def flag(where: str, name: str, value: Any) -> bool:
    """A switch: True or False (numpy's bool_ too). Anything else is refused rather than taken
    by its truth, which would read ``"false"`` or ``"no"`` as True."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{where}(): {name} must be True or False, not {value!r}")
    return bool(value)
