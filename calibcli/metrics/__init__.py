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
    check_bins,
    expected_calibration_error,
    perplexity,
    reliability_diagram,
    validate_predictions,
    validate_weights,
)
from calibcli.metrics.smooth import SmoothECE, smooth_ece

__all__ = [
    "BinStats",
    "CalibrationReport",
    "PerplexityResult",
    "PredictionColumns",
    "SmoothECE",
    "StatsAccumulator",
    "bin_edges",
    "bin_index",
    "bits_per_unit",
    "brier_decomposition",
    "brier_score",
    "check_bins",
    "expected_calibration_error",
    "perplexity",
    "reliability_diagram",
    "smooth_ece",
    "validate_predictions",
    "validate_weights",
]
