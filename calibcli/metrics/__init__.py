"""calibcli.metrics: pure numpy metrics, no I/O (conventions in calibcli.metrics.core).

Every name loads its module on first use (PEP 562), so importing the package costs nothing and
never imports numpy. Beside ``__all__``, the names other stages read resolve here too: the
numpy-free registries of :mod:`calibcli.metrics.methods` (a command line's choices and help at
start-up) and the Brier decomposition's term names.
"""

from __future__ import annotations

import importlib

# each public name by the module that defines it
_MODULES: dict[str, tuple[str, ...]] = {
    "core": (
        "BinStats",
        "CalibrationReport",
        "PredictionColumns",
        "StatsAccumulator",
        "bin_edges",
        "bin_index",
        "brier_decomposition",
        "brier_score",
        "expected_calibration_error",
        "reliability_diagram",
    ),
    "corpus_perplexity": ("PerplexityResult", "bits_per_unit", "perplexity"),
    "validation": ("check_bins", "validate_predictions", "validate_weights"),
    "estimators": (
        "SCALAR_KEYS",
        "CalibrationEstimates",
        "auroc",
        "calibration_estimates",
        "debiased_rms_calibration_error",
        "log_loss",
        "max_calibration_error",
        "one_bin_ece",
        "one_per_question",
        "rms_calibration_error",
        "DECOMPOSITION_TERMS",
        "binned_scalars",
    ),
    "binning": ("quantile_edges",),
    "grouped": (
        "GroupTables",
        "grouped_binned",
        "grouped_rows",
        "grouped_rows_of",
        "sorted_columns",
        "smooth_of",
    ),
    "discordance": (
        "Discordance",
        "DiscordanceFloor",
        "discordance_floor",
        "discordance_of",
    ),
    "rare_class": (
        "RareClass",
        "RareClassFloor",
        "rare_class_floor",
        "rarer_class",
        "turned_columns",
    ),
    "binomial": ("accuracy_lower_bound", "binomial_cdf", "risk_upper_bound", "wilson_interval"),
    "bootstrap": ("BootstrapResult", "bootstrap_intervals"),
    "progress": ("ProgressHook", "current_progress", "phase", "reporting_progress"),
    "grid_groups": ("interleaved", "sparse_grid_histograms"),
    "smooth": (
        "SmoothECE",
        "grid_histograms",
        "smooth_ece",
        "smooth_ece_from_grids",
        "stored_grid_sizes",
    ),
    "clusters": ("QuestionCounts", "one_per_question", "question_counts"),
    "clustered_auroc": ("ClusteredDeLongResult", "delong_clustered"),
    "poisson": ("POISSON_THRESHOLDS", "PoissonState", "poisson_intervals", "replicate_weights"),
    "paired": (
        "DeLongResult",
        "McNemarResult",
        "PairedBootstrapResult",
        "delong_test",
        "identical_correctness",
        "mcnemar_clustered",
        "mcnemar_exact",
        "ClusteredMcNemarResult",
        "paired_bootstrap",
        "unpaired_bootstrap",
    ),
    "calibrated_draws": ("NULL_DRAWS", "NULL_KEYS", "CalibratedNull", "calibrated_null"),
    "recalibration": ("cross_fit", "cross_fit_multiclass_temperature", "fit", "fit_columns"),
    "multiclass": ("fit_multiclass_temperature",),
    "calibrators": ("T_MAX", "T_MIN"),
    "methods": ("BIN_STRATEGIES", "RECALIBRATION_METHODS", "SELECTION_METHODS"),
    "selective": (
        "GRID_SIZE",
        "RiskCoverage",
        "ThresholdChoice",
        "aurc",
        "curve_lower_bounds",
        "display_rows",
        "e_aurc",
        "highest_rejected",
        "next_lower",
        "plug_in_threshold",
        "points_at",
        "select_threshold",
        "selective_accuracy",
        "threshold_grid",
    ),
}
# public name -> (module, attribute in it)
_HOMES: dict[str, tuple[str, str]] = {
    name: (f"calibcli.metrics.{module}", name)
    for module, names in _MODULES.items()
    for name in names
}
_HOMES["calibrator_from_dict"] = ("calibcli.metrics.recalibration", "from_dict")


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module 'calibcli.metrics' has no attribute {name!r}")
    module, attribute = _HOMES[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})


__all__ = [
    "GRID_SIZE",
    "NULL_DRAWS",
    "NULL_KEYS",
    "POISSON_THRESHOLDS",
    "SCALAR_KEYS",
    "T_MAX",
    "T_MIN",
    "BinStats",
    "BootstrapResult",
    "CalibratedNull",
    "CalibrationEstimates",
    "CalibrationReport",
    "ClusteredDeLongResult",
    "ClusteredMcNemarResult",
    "DeLongResult",
    "Discordance",
    "DiscordanceFloor",
    "McNemarResult",
    "PairedBootstrapResult",
    "PerplexityResult",
    "PoissonState",
    "PredictionColumns",
    "ProgressHook",
    "QuestionCounts",
    "RareClass",
    "RareClassFloor",
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
    "calibrated_null",
    "calibration_estimates",
    "calibrator_from_dict",
    "check_bins",
    "cross_fit",
    "cross_fit_multiclass_temperature",
    "current_progress",
    "curve_lower_bounds",
    "debiased_rms_calibration_error",
    "delong_clustered",
    "delong_test",
    "discordance_floor",
    "discordance_of",
    "display_rows",
    "e_aurc",
    "expected_calibration_error",
    "fit",
    "fit_columns",
    "fit_multiclass_temperature",
    "highest_rejected",
    "identical_correctness",
    "log_loss",
    "max_calibration_error",
    "mcnemar_clustered",
    "mcnemar_exact",
    "next_lower",
    "one_bin_ece",
    "one_per_question",
    "paired_bootstrap",
    "perplexity",
    "phase",
    "plug_in_threshold",
    "points_at",
    "poisson_intervals",
    "quantile_edges",
    "question_counts",
    "rare_class_floor",
    "rarer_class",
    "reliability_diagram",
    "replicate_weights",
    "reporting_progress",
    "risk_upper_bound",
    "rms_calibration_error",
    "select_threshold",
    "selective_accuracy",
    "smooth_ece",
    "threshold_grid",
    "turned_columns",
    "unpaired_bootstrap",
    "validate_predictions",
    "validate_weights",
    "wilson_interval",
]
