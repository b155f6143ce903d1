"""Row formats calibcli reads, turned into the numbers the metrics need.

Pure functions over one decoded JSON row (a ``dict``): no file reading, no numpy. Each raises
``ValueError`` with a message that names the offending field or position but not the file or line;
the reader prefixes ``"path:line: "`` (or ``"path:<locator>: "`` for rows of a whole document,
see :mod:`calibcli.io.documents`).

Formats (:data:`ROW_FORMATS`; :func:`detect_row_format` names them from a file's first row):

- ``jsonl``: calibcli's native rows, ``{"confidence", "correct"}`` or ``{"nll", "tokens"}``.
- ``lm-eval``: lm-evaluation-harness ``--log_samples`` rows, every version (submodule
  :mod:`~calibcli.formats.lm_eval`): :func:`lm_eval_row_kind` tells multiple-choice, rolling,
  loglikelihood and generative rows apart; :func:`lm_eval_choice_row` and
  :func:`lm_eval_rolling_row` read the first two.
- ``logprobs``: a list of per-token natural-log probabilities in one field, :func:`logprobs_row`.
- ``openai``: chat / legacy completions responses with logprobs and Batch API output lines,
  :func:`openai_rows` (one perplexity row per choice; with ``echo``, the prompt's tokens
  alone, each prompt once; a choice the content filter stopped left out, counted by
  :func:`content_filtered`).
- ``vllm``: vLLM outputs with ``prompt_token_ids`` and ``prompt_logprobs``, :func:`vllm_rows`.
- ``inspect-ai``: samples of inspect-ai eval logs, :func:`inspect_sample_row`.

:func:`calibration_rows` and :func:`perplexity_rows` dispatch on the format name for the
non-native formats, so a reader needs one call per decoded JSON value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calibcli.formats.choices import LETTERS, gold_option, option_confidence
from calibcli.formats.detect import (
    FORMAT_PROVIDES,
    FORMATS,
    ROW_FORMATS,
    detect_format,
    detect_row_format,
    is_results_row,
)
from calibcli.formats.fields import (
    SENTINEL_LOGPROB,
    CalibrationRow,
    PerplexityRow,
    by_value,
    has_path,
    json_type,
    lookup,
    path_where,
)
from calibcli.formats.inspect_ai import (
    CONFIDENCES,
    MANIFEST_NAMES,
    inspect_prompt_row,
    inspect_sample_row,
    inspect_sample_taken,
    inspect_scorers,
    is_outcome,
    manifest_message,
    taken_mode,
)
from calibcli.formats.json_text import elements as json_elements
from calibcli.formats.json_text import value_span
from calibcli.formats.lm_eval import (
    GENERATIVE_WARNING,
    MC_NORMS,
    ROW_KINDS,
    FileGold,
    GoldReadingError,
    gold_readings,
    lm_eval_choice_row,
    lm_eval_choice_scores,
    lm_eval_gold,
    lm_eval_output_type,
    lm_eval_rolling_row,
    lm_eval_row_kind,
    model_args_from_filename,
    model_from_filename,
    task_from_filename,
)
from calibcli.formats.logprobs import (
    content_filtered,
    logprobs_row,
    openai_body,
    openai_rows,
    vllm_rows,
)
from calibcli.formats.registry import (
    BY_NAME,
    NAMES,
    REGISTRY,
    SUM_FIELDS,
    Format,
    providing,
    unused_options,
)

__all__ = [
    "BY_NAME",
    "CONFIDENCES",
    "FORMATS",
    "FORMAT_PROVIDES",
    "GENERATIVE_WARNING",
    "LETTERS",
    "MANIFEST_NAMES",
    "MC_NORMS",
    "NAMES",
    "REGISTRY",
    "ROW_FORMATS",
    "ROW_KINDS",
    "SENTINEL_LOGPROB",
    "SUM_FIELDS",
    "CalibrationRow",
    "FileGold",
    "Format",
    "GoldReadingError",
    "PerplexityRow",
    "by_value",
    "calibration_rows",
    "content_filtered",
    "detect_format",
    "detect_row_format",
    "gold_option",
    "gold_readings",
    "has_path",
    "inspect_prompt_row",
    "inspect_sample_row",
    "inspect_sample_taken",
    "inspect_scorers",
    "is_outcome",
    "is_results_row",
    "json_elements",
    "json_type",
    "lm_eval_choice_row",
    "lm_eval_choice_scores",
    "lm_eval_gold",
    "lm_eval_output_type",
    "lm_eval_rolling_row",
    "lm_eval_row_kind",
    "logprobs_row",
    "lookup",
    "manifest_message",
    "model_args_from_filename",
    "model_from_filename",
    "openai_body",
    "openai_rows",
    "option_confidence",
    "path_where",
    "perplexity_rows",
    "providing",
    "taken_mode",
    "task_from_filename",
    "unused_options",
    "value_span",
    "vllm_rows",
]


def calibration_rows(
    fmt: str,
    row: Mapping[str, Any],
    *,
    mc_norm: str = "none",
    scorer: str | None = None,
    confidence: str = "auto",
    gold_field: str | None = None,
    options: tuple[str, ...] | None = None,
    target_delimiter: str = " ",
) -> list[CalibrationRow]:
    """The (confidence, correct) rows of one decoded value of a non-native format that
    carries them (``lm-eval``, ``inspect-ai``, ``openai`` with ``gold_field``, ``openai-evals``,
    ``helm``). ``options`` are the answer options recognised in token logprobs (default the
    letters A to E); ``target_delimiter`` is the lm-eval task's (see
    :func:`lm_eval_choice_scores`). ValueError for a format without them."""
    entry = BY_NAME.get(fmt)
    if entry is None or entry.calibration is None:
        raise ValueError(_no_rows(fmt, "calibration"))
    return entry.calibration(
        row,
        mc_norm=mc_norm,
        scorer=scorer,
        confidence=confidence,
        gold_field=gold_field,
        options=options,
        target_delimiter=target_delimiter,
    )


def perplexity_rows(
    fmt: str,
    row: Mapping[str, Any],
    *,
    logprobs_field: str = "logprobs",
) -> list[PerplexityRow]:
    """The perplexity rows of one decoded value of a non-native format that carries them
    (``lm-eval`` rolling, ``logprobs``, ``openai``: one per choice, ``vllm``). ValueError for
    a format without them."""
    entry = BY_NAME.get(fmt)
    if entry is None or entry.perplexity is None:
        raise ValueError(_no_rows(fmt, "perplexity"))
    return entry.perplexity(row, logprobs_field=logprobs_field)


def _no_rows(fmt: str, kind: str) -> str:
    if fmt not in ROW_FORMATS:
        return f"unknown format {fmt!r}; expected one of {', '.join(ROW_FORMATS)}"
    other = "perplexity" if kind == "calibration" else "calibrate"
    if fmt == "jsonl":
        return "native jsonl rows are read by the native reader, not by calibcli.formats"
    return f"the {fmt} format carries no {kind} rows; read it with `{other}`"
