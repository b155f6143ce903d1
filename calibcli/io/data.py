"""What the reader returns (frozen dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from calibcli.metrics.core import BinStats, PredictionColumns


@dataclass(frozen=True)
class CalibrationData:
    """Calibration rows read from one or more sources.

    ``fmt`` is the input format when every file is in the same one, else ``"mixed"``;
    ``formats`` names each file's format (files with rows only, in input order); ``warnings``
    are one line each about the input (a file skipped, and why).
    """

    stats: BinStats
    columns: PredictionColumns | None = None
    per_source: dict[str, CalibrationData] | None = None
    groups: dict[str, CalibrationData] | None = None
    rows: int = 0
    fmt: str = "jsonl"
    formats: dict[str, str] | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class PerplexityData:
    """Pooled perplexity totals read from one or more sources.

    ``total_tokens`` is None when the format carries no token counts (lm-eval rolling rows);
    ``total_bytes`` / ``total_words`` are None unless every row carries them. Totals are exact
    Python ints. ``nll_overflow`` is True when ``total_nll`` is +inf although no row's NLL is
    infinite as given: finite NLLs whose sum exceeds the largest double. ``fmt``, ``formats``
    and ``warnings`` as for :class:`CalibrationData`.
    """

    sequences: int
    total_nll: float
    total_tokens: int | None
    total_bytes: int | None = None
    total_words: int | None = None
    null_logprobs: int = 0
    sentinel_logprobs: int = 0
    groups: dict[str, PerplexityData] | None = None
    fmt: str = "jsonl"
    formats: dict[str, str] | None = None
    warnings: tuple[str, ...] = ()
    nll_overflow: bool = False
