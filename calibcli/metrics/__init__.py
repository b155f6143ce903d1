"""calibcli.metrics: pure numpy metrics, no I/O (conventions in calibcli.metrics.core)."""

from calibcli.metrics.bootstrap import BootstrapResult, bootstrap_intervals
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
from calibcli.metrics.estimators import (
    SCALAR_KEYS,
    CalibrationEstimates,
    auroc,
    calibration_estimates,
    debiased_rms_calibration_error,
    log_loss,
    max_calibration_error,
    one_bin_ece,
    quantile_edges,
    rms_calibration_error,
    wilson_interval,
)
from calibcli.metrics.smooth import SmoothECE, smooth_ece

# The decision-making modules load on first use: every run imports this package, few need them.
_LAZY = {
    **dict.fromkeys(
        (
            "DeLongResult",
            "McNemarResult",
            "PairedBootstrapResult",
            "delong_test",
            "identical_correctness",
            "mcnemar_exact",
            "paired_bootstrap",
            "unpaired_bootstrap",
        ),
        "calibcli.metrics.paired",
    ),
    **dict.fromkeys(
        ("cross_fit", "cross_fit_multiclass_temperature", "fit", "fit_multiclass_temperature"),
        "calibcli.metrics.recalibration",
    ),
    **dict.fromkeys(
        (
            "RiskCoverage",
            "ThresholdChoice",
            "accuracy_lower_bound",
            "aurc",
            "binomial_cdf",
            "display_rows",
            "e_aurc",
            "plug_in_threshold",
            "risk_upper_bound",
            "select_threshold",
            "selective_accuracy",
        ),
        "calibcli.metrics.selective",
    ),
}
_RENAMED = {"calibrator_from_dict": ("calibcli.metrics.recalibration", "from_dict")}


def __getattr__(name: str) -> object:
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _RENAMED:
        module, attribute = _RENAMED[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'calibcli.metrics' has no attribute {name!r}")


__all__ = [
    "SCALAR_KEYS",
    "BinStats",
    "BootstrapResult",
    "CalibrationEstimates",
    "CalibrationReport",
    "DeLongResult",
    "McNemarResult",
    "PairedBootstrapResult",
    "PerplexityResult",
    "PredictionColumns",
    "RiskCoverage",
    "SmoothECE",
    "StatsAccumulator",
    "ThresholdChoice",
    "accuracy_lower_bound",
    "aurc",
    "auroc",
    "bin_edges",
    "bin_index",
    "binomial_cdf",
    "bits_per_unit",
    "bootstrap_intervals",
    "brier_decomposition",
    "brier_score",
    "calibration_estimates",
    "calibrator_from_dict",
    "check_bins",
    "cross_fit",
    "cross_fit_multiclass_temperature",
    "debiased_rms_calibration_error",
    "delong_test",
    "display_rows",
    "e_aurc",
    "expected_calibration_error",
    "fit",
    "fit_multiclass_temperature",
    "identical_correctness",
    "log_loss",
    "max_calibration_error",
    "mcnemar_exact",
    "one_bin_ece",
    "paired_bootstrap",
    "perplexity",
    "plug_in_threshold",
    "quantile_edges",
    "reliability_diagram",
    "risk_upper_bound",
    "rms_calibration_error",
    "select_threshold",
    "selective_accuracy",
    "smooth_ece",
    "unpaired_bootstrap",
    "validate_predictions",
    "validate_weights",
    "wilson_interval",
]
