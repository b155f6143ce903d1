"""calibcli.metrics: pure numpy metrics, no I/O (conventions in calibcli.metrics.core)."""

from calibcli.metrics.core import (
    BinStats,
    CalibrationReport,
    PerplexityResult,
    PredictionColumns,
    StatsAccumulator,
    bin_edges,
    bin_index,
    bits_per_unit,
    brier_decomposition,
    brier_score,
    expected_calibration_error,
    perplexity,
    reliability_diagram,
    validate_predictions,
)

__all__ = [
    "BinStats",
    "CalibrationReport",
    "PerplexityResult",
    "PredictionColumns",
    "StatsAccumulator",
    "bin_edges",
    "bin_index",
    "bits_per_unit",
    "brier_decomposition",
    "brier_score",
    "expected_calibration_error",
    "perplexity",
    "reliability_diagram",
    "validate_predictions",
]
