"""Report inputs given directly: per-bin statistics and columns (:class:`CalibrationData`) or
totals (:class:`PerplexityData`) that a caller already holds, read by the reports exactly as
they read a summary (``pooled()``, ``by_group()``, ``fmt``, ``formats``, ``warnings``).
``isinstance(summary, CalibrationData)`` holds for every calibration summary too."""

from __future__ import annotations

from abc import ABC
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CalibrationData(ABC):
    """Calibration rows given as statistics: ``stats`` (BinStats), ``columns`` (every
    confidence, or None), one CalibrationData per group and per source when there are."""

    stats: Any
    columns: Any = None
    per_source: dict[str, CalibrationData] | None = None
    groups: dict[str, CalibrationData] | None = None
    rows: int = 0
    fmt: str = "jsonl"
    formats: dict[str, str] | None = None
    warnings: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self.stats.n)

    @property
    def group_names(self) -> tuple[str, ...] | None:
        return None if self.groups is None else tuple(self.groups)

    def pooled(self) -> Any:
        from calibcli.summaries.calibration import RowsView

        return RowsView(self.stats, self.columns, self.fmt)

    def by_group(self) -> dict[str, Any] | None:
        if self.groups is None:
            return None
        return {str(name): part.pooled() for name, part in self.groups.items()}

    def by_source(self) -> dict[str, Any]:
        return {
            "<stdin>" if name == "-" else name: part.stats
            for name, part in (self.per_source or {}).items()
        }


@dataclass(frozen=True)
class PerplexityData(ABC):
    """Perplexity totals given directly (see :class:`~calibcli.summaries.PerplexityView`)."""

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

    @property
    def n(self) -> int:
        return self.sequences

    @property
    def group_names(self) -> tuple[str, ...] | None:
        return None if self.groups is None else tuple(self.groups)

    def pooled(self) -> PerplexityData:
        return self

    def by_group(self) -> dict[str, PerplexityData] | None:
        return None if self.groups is None else {str(k): v for k, v in self.groups.items()}


def _register() -> None:
    from calibcli.summaries.calibration import CalibrationSummary
    from calibcli.summaries.perplexity import PerplexitySummary

    CalibrationData.register(CalibrationSummary)
    PerplexityData.register(PerplexitySummary)


_register()
