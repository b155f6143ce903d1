"""Naming the format of a file from its first row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calibcli.formats.fields import json_type
from calibcli.formats.registry import DETECTION, REGISTRY

#: The formats :func:`detect_format` names (the reader's original three).
FORMATS = ("jsonl", "lm-eval", "logprobs")

#: Every row format calibcli reads, with what it holds (the registry's order).
ROW_FORMATS: dict[str, str] = {f.name: f.summary for f in REGISTRY}

#: What each format gives: ``calibration`` rows (confidence, correct) and/or ``perplexity``.
FORMAT_PROVIDES: dict[str, tuple[str, ...]] = {f.name: f.provides for f in REGISTRY}


def _fields(
    confidence_field: str,
    correct_field: str,
    nll_field: str,
    tokens_field: str,
    logprobs_field: str,
) -> dict[str, str]:
    return {
        "confidence_field": confidence_field,
        "correct_field": correct_field,
        "nll_field": nll_field,
        "tokens_field": tokens_field,
        "logprobs_field": logprobs_field,
    }


def _first_rules(row: Any, fields: dict[str, str]) -> str | None:
    """The rules every detection starts with: not an object is an error; then the formats
    :func:`detect_format` knows (lm-eval's samples rows, a complete native row, a list of
    logprobs), in priority order. None when they do not decide."""
    if not isinstance(row, Mapping):
        raise ValueError(f"cannot detect the input format: the first row is {json_type(row)}")
    for fmt in DETECTION:
        if fmt.name in FORMATS and fmt.detect(row, fields):
            return fmt.name
    return None


def detect_format(
    first_row: Any,
    *,
    confidence_field: str = "confidence",
    correct_field: str = "correct",
    nll_field: str = "nll",
    tokens_field: str = "tokens",
    logprobs_field: str = "logprobs",
) -> str:
    """Name the format of a file from its first row: ``"jsonl"``, ``"lm-eval"`` or ``"logprobs"``.

    Decided on the field names in use (pass the configured ones), in this order:

    1. ``doc_id`` and ``filtered_resps`` -> ``"lm-eval"`` (every harness samples row has both);
    2. a complete native row (``confidence`` and ``correct``, or ``nll`` and ``tokens``)
       -> ``"jsonl"``;
    3. a list under ``logprobs_field`` -> ``"logprobs"``;
    4. any one native field (``confidence``, ``correct`` or ``nll``) -> ``"jsonl"``, so the native
       reader reports the missing field precisely.

    Raises ValueError naming the keys seen when none of these holds. :func:`detect_row_format`
    also names the other formats.
    """
    fields = _fields(confidence_field, correct_field, nll_field, tokens_field, logprobs_field)
    found = _first_rules(first_row, fields)
    if found is not None:
        return found
    if any(field in first_row for field in (confidence_field, correct_field, nll_field)):
        return "jsonl"
    raise ValueError(
        f"cannot detect the input format from the first row (keys: {_keys(first_row)}): "
        f"expected {confidence_field!r}/{correct_field!r} or {nll_field!r}/{tokens_field!r} "
        f"(jsonl), 'doc_id' and 'filtered_resps' (lm-eval --log_samples), or a list in "
        f"{logprobs_field!r} (logprobs); pass --format, or the --*-field options if your "
        f"fields have other names"
    )


def detect_row_format(
    first_row: Any,
    *,
    confidence_field: str = "confidence",
    correct_field: str = "correct",
    nll_field: str = "nll",
    tokens_field: str = "tokens",
    logprobs_field: str = "logprobs",
) -> str:
    """Name the format of a file from its first row: one of :data:`ROW_FORMATS`.

    The rules of :func:`detect_format` first (lm-eval, a complete native row, a logprobs list);
    then ``choices`` whose entries carry ``prompt_logprobs``, or top-level ``prompt_logprobs``
    -> ``"vllm"``; a Batch API line (``custom_id`` and ``response``) or ``choices`` of
    ``message``/``text``/``logprobs`` objects -> ``"openai"``; ``scores`` with ``epoch`` and
    ``output`` (a sample) -> ``"inspect-ai"``; then any one native field -> ``"jsonl"``.
    ValueError otherwise: an lm-eval results file and a whole inspect-ai log are named as such,
    anything else gets the list of formats calibcli reads.
    """
    fields = _fields(confidence_field, correct_field, nll_field, tokens_field, logprobs_field)
    row = first_row
    found = _first_rules(row, fields)
    if found is not None:
        return found
    for fmt in DETECTION:
        if fmt.name not in FORMATS and fmt.detect(row, fields):
            return fmt.name
    if any(field in row for field in (confidence_field, correct_field, nll_field)):
        return "jsonl"
    if "results" in row and "configs" in row:
        raise ValueError(
            "an lm-eval results file (aggregate figures, no per-document rows): pass the "
            "samples_<task>_<date>.jsonl files written beside it with --log_samples"
        )
    if "eval" in row and ("samples" in row or "version" in row):
        raise ValueError("a whole inspect-ai log: read it as a document, sample by sample")
    known = "; ".join(f"{name} ({what})" for name, what in ROW_FORMATS.items())
    raise ValueError(
        f"cannot detect the input format from the first row (keys: {_keys(row)}); calibcli "
        f"reads: {known}. For jsonl, the fields in use are {fields['confidence_field']!r}/"
        f"{fields['correct_field']!r} or {fields['nll_field']!r}/{fields['tokens_field']!r}: "
        "pass --format, or the --*-field options if your fields have other names"
    )


def _keys(row: Mapping[str, Any]) -> str:
    keys = ", ".join(repr(k) for k in list(row)[:12]) or "none"
    return keys + (", ..." if len(row) > 12 else "")
