"""Naming the format of a file from its first row."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calibcli.formats.fields import json_type
from calibcli.formats.inspect_ai import manifest_message
from calibcli.formats.registry import DETECTION, REGISTRY, has_field

#: The formats :func:`detect_format` names (the reader's original three).
FORMATS = ("jsonl", "lm-eval", "logprobs")

#: Every row format calibcli reads, with what it holds (the registry's order).
ROW_FORMATS: dict[str, str] = {f.name: f.summary for f in REGISTRY}

#: What each format gives: ``calibration`` rows (confidence, correct) and/or ``perplexity``.
FORMAT_PROVIDES: dict[str, tuple[str, ...]] = {f.name: f.provides for f in REGISTRY}


def is_results_row(row: Mapping[str, Any]) -> bool:
    """Whether a decoded object is an lm-eval results file (its ``results`` and ``configs``),
    which holds aggregate figures and no per-document rows."""
    return "results" in row and "configs" in row


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

    Raises ValueError naming the closest format and what the row lacks (or the keys seen) when
    none of these holds. :func:`detect_row_format` also names the other formats.
    """
    fields = _fields(confidence_field, correct_field, nll_field, tokens_field, logprobs_field)
    found = _first_rules(first_row, fields)
    if found is not None:
        return found
    if any(has_field(first_row, f) for f in (confidence_field, correct_field, nll_field)):
        return "jsonl"
    raise ValueError(unknown_format(first_row, fields))


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
    then ``choices`` whose entries carry ``prompt_logprobs`` (not null beside a completion's
    own ``logprobs``), or top-level ``prompt_logprobs`` -> ``"vllm"``; a Batch API line
    (``custom_id`` and ``response``) or ``choices`` of ``message``/``text``/``logprobs``
    objects -> ``"openai"``; ``scores`` with ``epoch`` and ``output`` (a sample) ->
    ``"inspect-ai"``; then any one native field -> ``"jsonl"``.
    ValueError otherwise: an lm-eval results file, a whole inspect-ai log, an inspect-ai
    eval-set manifest and HF evaluate's perplexity output are named as such; anything else
    gets one short line naming the closest format and what the row lacks
    (:func:`unknown_format`).
    """
    fields = _fields(confidence_field, correct_field, nll_field, tokens_field, logprobs_field)
    row = first_row
    found = _first_rules(row, fields)
    if found is not None:
        return found
    for fmt in DETECTION:
        if fmt.name not in FORMATS and fmt.detect(row, fields):
            return fmt.name
    if any(has_field(row, f) for f in (confidence_field, correct_field, nll_field)):
        return "jsonl"
    if is_results_row(row):
        raise ValueError(
            "an lm-eval results file (aggregate figures, no per-document rows): pass the "
            "samples_<task>_<date>.jsonl files written beside it with --log_samples"
        )
    if "eval" in row and ("samples" in row or "version" in row):
        raise ValueError("a whole inspect-ai log: read it as a document, sample by sample")
    manifest = manifest_message(row)
    if manifest is not None:
        raise ValueError(f"{manifest}: give the folder or its .eval files")
    if "perplexities" in row and "mean_perplexity" in row:
        raise ValueError(HF_PERPLEXITIES)
    spec = row.get("spec")
    if isinstance(spec, Mapping) and "run_id" in spec:
        raise ValueError(
            "an OpenAI evals record log: give it as a file (its match and sampling events are "
            "joined per sample), not on standard input"
        )
    raise ValueError(unknown_format(row, fields))


#: HF evaluate's perplexity metric returns each text's perplexity and their mean: without
#: token counts no pooled (corpus) perplexity can be had from them.
HF_PERPLEXITIES = (
    "HF evaluate perplexity output cannot give a corpus perplexity (per-text perplexities "
    "without token counts)"
)


def unknown_format(row: Mapping[str, Any], fields: Mapping[str, str]) -> str:
    """One short line for a row of no known format: the format whose keys it has most of and
    the keys it lacks, or the keys it has when it shares none with any format."""
    best: tuple[int, int, str, tuple[str, ...]] | None = None
    for fmt in DETECTION:
        for keys in fmt.keys(fields):
            present = sum(1 for k in keys if k in row)
            missing = tuple(k for k in keys if k not in row)
            if present and missing and (best is None or (present, -len(missing)) > best[:2]):
                best = (present, -len(missing), fmt.name, missing)
    if best is None:
        return (
            f"cannot detect the input format (keys: {_keys(row, 4)}): no known format's fields; "
            "see --format and the --*-field options"
        )
    if best[2] == "inspect-ai":  # a sample that ended in an error logs no scores: say why
        from calibcli.formats.inspect_ai import check_sample_error

        check_sample_error(row)
    lacking = ", ".join(repr(k) for k in best[3][:3])
    return (
        f"cannot detect the input format: closest is {best[2]}, lacking {lacking}; see --format "
        "and the --*-field options"
    )


def _keys(row: Mapping[str, Any], shown: int = 12) -> str:
    keys = ", ".join(repr(k if len(k) <= 24 else k[:21] + "...") for k in list(row)[:shown])
    return (keys or "none") + (", ..." if len(row) > shown else "")
