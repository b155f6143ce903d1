"""Options given once: click keeps the last value of a single-valued option without a word,
so an option whose value decides a figure or a gate (a gate itself, a setting it reads, the
field a confidence is read from) is collected as a list and refused when it holds two values."""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from calibcli.cli.app import usage_error_type


def _checked(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """An option callback of a shared value check (:mod:`calibcli.reports.options`): its
    ValueError becomes typer's "Invalid value for '--option'"; an option not given passes."""

    def callback(value: Any) -> Any:
        if value is None:
            return value
        try:
            return check(value)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None

    return callback


def gate_once(
    check: Callable[[Any], Any] | None = None, then: str = "give each gate once"
) -> Callable[..., Any]:
    """The callback of a gate option, or of a setting that decides what a gate reads, which
    click collects as a list: each value checked as :func:`_checked` does, and the list of the
    one value given returned (None when not given; :func:`one` takes it out). Two values are
    refused: click would keep the last without a word, so a looser gate appended after a CI's
    own would loosen it (``then`` says what to do). The same value twice is accepted, and so is
    one file named two ways (``cal.json`` and ``dir/../cal.json``)."""
    checked = _checked(check or (lambda value: value))

    def callback(ctx: typer.Context, param: typer.CallbackParam, values: Any) -> Any:
        if not values:
            return None
        # a choice as its text: typer maps it back to the member after the callback
        given = [v.value if isinstance(v, Enum) else v for v in map(checked, values)]
        first: dict[Any, Any] = {}  # each value as first given, by what it is
        for value in given:
            first.setdefault(_same(value), value)
        distinct = list(first.values())
        if len(distinct) > 1:
            raise usage_error_type()(
                f"{param.opts[0]} is given twice ({distinct[0]}, then {distinct[1]}): {then}", ctx
            )
        return distinct

    return callback


def _same(value: Any) -> Any:
    """What two values of one option are compared by: a path by the file it names."""
    return os.path.realpath(value) if isinstance(value, Path) else value


def one(values: list | None) -> Any:
    """The value of an option checked by :func:`gate_once` (None when not given)."""
    return values[0] if values else None
