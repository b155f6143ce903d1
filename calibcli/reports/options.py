"""The values the commands' options take, checked once for the command line and the Python API.

Each check returns the value or raises ValueError saying what is wrong with it (``1.5 is not a
level strictly between 0 and 1, e.g. 0.95``); the command line shows the message as typer's
"Invalid value for '--ci'", the Python API after the keyword that gave the value. Standard
library only: ``calibcli --help`` builds its options from this module.
"""

from __future__ import annotations

import math

MAX_BINS = 10_000  # more bins than this hold a handful of rows each even in 100M-row files
MIN_BOOTSTRAP = 200  # fewer resamples cannot place the tails of a 95% interval
# The Monte Carlo error of an interval's ends falls as 1/sqrt(resamples): 1,000,000 gives 30
# times the default 1,000's precision, more than any report's digits show. Every resample's
# figures are kept until the intervals are read (about 300 bytes each, per group: 0.3 GB at
# the bound, and some 20 minutes on 500 rows), so far larger counts only fail allocating them.
MAX_BOOTSTRAP = 1_000_000
# Each fold refits the calibrator; past ~100 folds the held-out estimate no longer changes, and
# leave-one-out on a large input would take days.
MAX_FOLDS = 100
# The exact binomial tails and bounds keep their precision down to about 1e-300 (where they
# approach the smallest double); SGR tests at --delta divided by up to 64 steps.
MIN_DELTA = 1e-100
MAX_GRID = 1_000_000  # a finer grid than this tells apart no confidence a model states


MIN_LEVEL = 0.5
"""The lowest interval level taken: a level below it is an alpha typed for the level (0.05 for
0.95), whose narrow interval's upper end, near the bootstrap median, would pass an upper-end
gate that the 95% interval fails."""


def ci_level(value: float) -> float:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{value:g} is not a level strictly between 0 and 1, e.g. 0.95")
    if value < MIN_LEVEL:
        raise ValueError(
            f"{value:g} would give a {value * 100:g}% interval: give the interval's level, "
            f"e.g. {1 - value:g} for a {(1 - value) * 100:g}% interval, not its alpha (a "
            f"level below {MIN_LEVEL:g} is refused)"
        )
    return value


def finite_threshold(value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{value:g} is not a finite number >= 0")
    return value


def fraction(value: float) -> float:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{value:g} is not strictly between 0 and 1")
    return value


def delta(value: float) -> float:
    fraction(value)
    if value < MIN_DELTA:
        raise ValueError(f"{value:g} is below {MIN_DELTA:g}, the smallest level tested")
    return value


def coverage(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{value:g} is not a share in [0, 1]")
    return value


def grid(value: int) -> int:
    if not (value == 0 or 2 <= value <= MAX_GRID):
        raise ValueError(f"{value} is not 0 (every distinct confidence) or 2 to {MAX_GRID:,}")
    return value
