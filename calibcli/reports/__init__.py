"""Reports: summaries (plus the command's settings) turned into JSON report bodies, one module
per command, with the figures registry and the pure gate. Loaded lazily: importing the package
imports no numpy."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Report": "calibcli.reports.report",
    "as_shown": "calibcli.reports.report",
    "put_marks": "calibcli.reports.paths",
    "SCHEMA_VERSION": "calibcli.reports.report",
    "Gate": "calibcli.reports.gate",
    "decides": "calibcli.reports.gate",
    "Bootstrap": "calibcli.reports.calibrate",
    "bootstrap_for": "calibcli.reports.calibrate",
    "calibrate_options": "calibcli.reports.calibrate",
    "GATE_EACH_WITHOUT_GATE": "calibcli.reports.calibrate",
    "calibrate_report": "calibcli.reports.calibrate",
    "reliability_report": "calibcli.reports.reliability",
    "perplexity_report": "calibcli.reports.perplexity",
    "threshold_report": "calibcli.reports.threshold",
    "ThresholdSettings": "calibcli.reports.threshold",
    "threshold_options": "calibcli.reports.threshold",
    "compare_report": "calibcli.reports.compare",
    "auroc_test_name": "calibcli.reports.compare",
    "mcnemar_name": "calibcli.reports.compare",
    "CompareSettings": "calibcli.reports.compare",
    "check_matching": "calibcli.reports.compare",
    "compare_options": "calibcli.reports.compare",
    "fit_report": "calibcli.reports.fit",
    "fitted_on": "calibcli.reports.fit",
    "Recalibration": "calibcli.reports.recalibration",
    "margins": "calibcli.reports.compare",
    # the method registries, for the option choices (numpy-free)
    "BIN_STRATEGIES": "calibcli.metrics",
    "RECALIBRATION_METHODS": "calibcli.metrics",
    "SELECTION_METHODS": "calibcli.metrics",
    # the long phases' progress hook, installed around a command (numpy-free)
    "reporting_progress": "calibcli.metrics",
    "MAX_UNMATCHED_SHARE": "calibcli.reports.compare",
    # the option values of the Python API and the engines' report(), checked as the command's
    **dict.fromkeys(
        (
            "answer_options",
            "field_name",
            "flag",
            "one_of",
            "option",
            "text",
            "usage",
            "whole",
            "written_number",
        ),
        "calibcli.reports.option_values",
    ),
    **dict.fromkeys(
        (
            "BY_COMMAND",
            "CALIBRATION",
            "PERPLEXITY",
            "RECALIBRATION",
            "RELIABILITY",
            "THRESHOLD",
            "Figure",
            "confidence",
            "floor_options",
            "floored",
            "gateable",
            "has",
            "interval_keys",
            "lookup",
            "shown",
        ),
        "calibcli.reports.figures",
    ),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calibcli.reports' has no attribute {name!r}")
