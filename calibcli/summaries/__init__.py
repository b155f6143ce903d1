"""Summaries: the typed, mergeable state between reading and reporting.

:class:`CalibrationSummary` and :class:`PerplexitySummary` hold exact tables (see
:mod:`calibcli.summaries.exact`), the kept rows when a command needs them, the sources and
warnings; ``merge`` combines summaries of disjoint parts into the summary of the whole, and
:mod:`calibcli.summaries.encoding` turns one into versioned bytes and back. Loaded lazily:
``import calibcli.summaries`` imports no numpy.
"""

from __future__ import annotations

import importlib
from typing import Any

MAGIC = b"CALIBCLI SUMMARY"
"""The first bytes of a summary file (a part): what tells it from rows."""

_LAZY = {
    "CalibrationBuilder": "calibcli.summaries.calibration",
    "CalibrationSettings": "calibcli.summaries.calibration",
    "CalibrationSummary": "calibcli.summaries.calibration",
    "RowsView": "calibcli.summaries.calibration",
    "Source": "calibcli.summaries.calibration",
    "SummaryMismatch": "calibcli.summaries.ids",
    "pooled_keys": "calibcli.summaries.ids",
    "check_copies": "calibcli.summaries.copies",
    "check_read_copies": "calibcli.summaries.copies",
    "same_sources": "calibcli.summaries.copies",
    "check_source_copies": "calibcli.summaries.copies",
    "contained_sources": "calibcli.summaries.copies",
    "held_text": "calibcli.summaries.copies",
    "SAME_ROWS": "calibcli.summaries.copies",
    "same_rows_text": "calibcli.summaries.copies",
    "union_of_others": "calibcli.summaries.copies",
    "listed": "calibcli.summaries.copies",
    "joined_mode": "calibcli.summaries.sources",
    "most_epochs": "calibcli.summaries.sources",
    "partial_inputs": "calibcli.summaries.sources",
    "filtered_said": "calibcli.summaries.sources",
    "partial_reason": "calibcli.summaries.sources",
    "one_model_groups": "calibcli.summaries.sources",
    "GroupSources": "calibcli.summaries.group_known",
    "group_sources": "calibcli.summaries.group_known",
    "agree": "calibcli.summaries.settings",
    "repeated_questions": "calibcli.summaries.sources",
    "same_rule": "calibcli.summaries.sources",
    "COUNTS": "calibcli.summaries.perplexity",
    "PerplexityBuilder": "calibcli.summaries.perplexity",
    "PerplexitySettings": "calibcli.summaries.perplexity",
    "PerplexitySummary": "calibcli.summaries.perplexity",
    "PerplexityView": "calibcli.summaries.perplexity",
    "SummaryError": "calibcli.summaries.encoding",
    **dict.fromkeys(
        (
            "MULTICLASS",
            "CalibratorFile",
            "apply_to_data",
            "choices_data",
            "fit_choices",
            "fit_data",
            "load",
            "pooled_map_note",
            "recalibrated",
        ),
        "calibcli.summaries.recalibrate",
    ),
    "in_sample_note": "calibcli.summaries.in_sample",
    "scored_in_sample": "calibcli.summaries.in_sample",
    "rows_in_sample_note": "calibcli.summaries.in_sample",
    "RowFingerprint": "calibcli.summaries.fingerprint",
    "SourcePrint": "calibcli.summaries.fingerprint",
    "calibration_hashes": "calibcli.summaries.fingerprint",
    "chance_share": "calibcli.summaries.in_sample",
    "encode": "calibcli.summaries.encoding",
    "read_header": "calibcli.summaries.encoding",
    "header_escaped": "calibcli.summaries.header_text",
    "array_specs": "calibcli.summaries.encoding",
    "assemble": "calibcli.summaries.encoding",
    "ROW_ARRAYS": "calibcli.summaries.encoding",
    "CalibrationData": "calibcli.summaries.views",
    "PerplexityData": "calibcli.summaries.views",
    "KeyedRows": "calibcli.summaries.paired",
    "PairedRows": "calibcli.summaries.paired",
    "match": "calibcli.summaries.paired",
    "side_stats": "calibcli.summaries.paired",
    "in_one_order": "calibcli.summaries.paired",
    "from_columns": "calibcli.summaries.calibration",
    "merge_calibration": "calibcli.summaries.calibration",
    "merge_perplexity": "calibcli.summaries.perplexity",
    "from_bytes": "calibcli.summaries.encoding",
    "to_bytes": "calibcli.summaries.encoding",
    "pieces": "calibcli.summaries.encoding",
    "line_keys": "calibcli.summaries.ids",
    "locator_numbers": "calibcli.summaries.ids",
    "mix64_in_place": "calibcli.summaries.ids",
    "BinTable": "calibcli.summaries.tables",
    "GroupCodes": "calibcli.summaries.rows",
    "DistinctTable": "calibcli.summaries.distinct",
    "MAX_DISTINCT": "calibcli.summaries.distinct",
    "RowMoments": "calibcli.summaries.moments",
    **dict.fromkeys(
        (
            "TABLE_MODES",
            "bootstrap_state",
            "bootstrap_difference",
            "dropped_bootstrap",
            "merged_bootstrap",
            "check_disjoint",
            "load_parts",
            "merge_parts",
            "rows_of",
            "to_part",
        ),
        "calibcli.summaries.parts",
    ),
}

__all__ = sorted([*_LAZY, "MAGIC"])


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calibcli.summaries' has no attribute {name!r}")
