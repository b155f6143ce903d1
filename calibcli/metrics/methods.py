"""The metrics' interchangeable methods by name: recalibration maps, threshold selection rules and
bin strategies, each with a one-line description.

Pure data, without numpy, so that a command line can build its option choices and their help at
start-up without loading the numerics. The implementations answer to the same names in
:mod:`calibcli.metrics.recalibration` (``RECALIBRATORS``), :mod:`calibcli.metrics.selective`
(``METHODS``) and :mod:`calibcli.metrics.binning` (``STRATEGIES``); their tests check that each
list agrees with its implementation.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "BIN_STRATEGIES",
    "RECALIBRATION_METHODS",
    "SELECTION_METHODS",
    "Choice",
    "RecalibrationMethod",
    "names",
]


@dataclass(frozen=True)
class Choice:
    """One method: ``name`` as given on a command line and written in reports, ``help`` one
    line that says what it does."""

    name: str
    help: str


@dataclass(frozen=True)
class RecalibrationMethod(Choice):
    """A recalibration map; ``two_class`` when fitting it needs both right and wrong answers;
    ``parameters`` the number its fit estimates (None: a map without a fixed number, fitted by
    counting)."""

    two_class: bool
    parameters: int | None = None


RECALIBRATION_METHODS: tuple[RecalibrationMethod, ...] = (
    RecalibrationMethod(
        "temperature",
        "sigmoid(logit(c) / T): one temperature, the rows' ranking kept on two-class "
        "confidences (Guo et al. 2017).",
        two_class=True,
        parameters=1,
    ),
    RecalibrationMethod(
        "platt",
        "sigmoid(a * logit(c) + b) on Platt's smoothed targets (Platt 1999).",
        two_class=True,
        parameters=2,
    ),
    RecalibrationMethod(
        "isotonic",
        "Non-decreasing piecewise-linear map by pool-adjacent-violators.",
        two_class=False,
    ),
    RecalibrationMethod(
        "histogram",
        "The accuracy of c's equal-width bin (histogram binning).",
        two_class=False,
    ),
    RecalibrationMethod(
        "beta",
        "sigmoid(a * ln c - b * ln(1 - c) + m), a, b >= 0 (Kull, Silva Filho & Flach 2017).",
        two_class=True,
        parameters=3,
    ),
)

SELECTION_METHODS: tuple[Choice, ...] = (
    Choice(
        "ltt",
        "Learn then Test: fixed-sequence testing from the highest threshold down, over a grid "
        "of thresholds fixed in advance.",
    ),
    Choice("sgr", "Selection with Guaranteed Risk: bisection, Bonferroni over its steps."),
)

BIN_STRATEGIES: tuple[Choice, ...] = (
    Choice("uniform", "Equal-width bins on [0, 1]."),
    Choice("quantile", "Equal-mass bins at the quantiles of the confidences."),
)


def names(choices: Iterable[Choice]) -> tuple[str, ...]:
    """The names of ``choices``, in order."""
    return tuple(choice.name for choice in choices)
