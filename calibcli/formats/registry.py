"""The registry of input formats: one entry per format, from which detection, reading, the
``--format`` choices, compare's default ids and the README's formats table all derive.

An entry says what the format holds (``provides``: calibration and/or perplexity rows), how a
file's first row is recognised (``detect``, tried in ``priority`` order), how one decoded JSON
value becomes rows (``calibration`` / ``perplexity``; the native format is read by the typed
fast path instead), and how its rows are identified across files (``default_id``). A new
format is one entry here plus its row functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from calibcli.formats.choices import LETTERS, evals_match_row, openai_choice_row
from calibcli.formats.fields import CalibrationRow, PerplexityRow, has_path, lookup
from calibcli.formats.helm import helm_calibration_row, helm_perplexity_row
from calibcli.formats.inspect_ai import CONFIDENCES, inspect_prompt_row, inspect_sample_row
from calibcli.formats.lm_eval import MC_NORMS, lm_eval_choice_row, lm_eval_rolling_row
from calibcli.formats.logprobs import logprobs_row, openai_rows, vllm_rows

Fields = Mapping[str, str]  # the field names in use: confidence_field, nll_field, ...


@dataclass(frozen=True)
class Format:
    """One input format (see the module docstring)."""

    name: str
    summary: str
    provides: tuple[str, ...]
    priority: int
    detect: Callable[[Mapping[str, Any], Fields], bool]
    calibration: Callable[..., list[CalibrationRow]] | None = None
    perplexity: Callable[..., list[PerplexityRow]] | None = None
    default_id: str | None = None  # how compare matches rows, as the report names it
    # the top-level keys that make a row of this format (alternatives), for naming the closest
    # format when none is detected
    keys: Callable[[Fields], tuple[tuple[str, ...], ...]] = lambda f: ()


def has_field(row: Mapping[str, Any], name: str) -> bool:
    """Whether a row holds a field: a key written whole, or a dotted path into nested objects
    (``pred.p``, a struct column of a table)."""
    return name in row or ("." in name and has_path(row, name))


def _native(row: Mapping[str, Any], f: Fields) -> bool:
    """A complete native row: confidence and correct, or nll and tokens."""
    return (has_field(row, f["confidence_field"]) and has_field(row, f["correct_field"])) or (
        has_field(row, f["nll_field"]) and has_field(row, f["tokens_field"])
    )


def _first_choice(row: Mapping[str, Any]) -> Any:
    choices = row.get("choices")
    return choices[0] if isinstance(choices, list) and choices else None


def _vllm(row: Mapping[str, Any], f: Fields) -> bool:
    first = _first_choice(row)
    return "prompt_logprobs" in row or (isinstance(first, Mapping) and "prompt_logprobs" in first)


def _openai(row: Mapping[str, Any], f: Fields) -> bool:
    first = _first_choice(row)
    return ("custom_id" in row and "response" in row) or (
        isinstance(first, Mapping) and any(k in first for k in ("message", "text", "logprobs"))
    )


#: Per-sequence sums under the names other tools give them: (NLL or summed log-probability
#: field, token count field, the sign that makes the first an NLL).
SUM_FIELDS = (("nll_sum", "n_tokens", 1.0), ("sum_logprob", "num_tokens", -1.0))


def _sums(row: Mapping[str, Any], f: Fields) -> bool:
    return any(total in row and count in row for total, count, _ in SUM_FIELDS)


def _lm_eval_choices(
    row: Mapping[str, Any], *, mc_norm: str = "none", target_delimiter: str = " ", **_: Any
):
    return [
        CalibrationRow(*lm_eval_choice_row(row, mc_norm=mc_norm, target_delimiter=target_delimiter))
    ]


def _lm_eval_rolling(row: Mapping[str, Any], **_: Any):
    nll, words, nbytes = lm_eval_rolling_row(row)
    return [PerplexityRow(nll, None, nbytes, words, 0, 0)]


def _logprobs(row: Mapping[str, Any], *, logprobs_field: str = "logprobs", **_: Any):
    nll, tokens, nulls, sentinels = logprobs_row(row, field=logprobs_field)
    return [PerplexityRow(nll, tokens, None, None, nulls, sentinels)]


def _openai_choices(
    row: Mapping[str, Any], *, gold_field: str | None = None, options: Any = None, **_: Any
):
    return [openai_choice_row(row, gold_field=gold_field, options=options or LETTERS)]


def _evals(row: Mapping[str, Any], *, options: Any = None, **_: Any):
    return [evals_match_row(row, options=options or LETTERS)]


def _inspect(
    row: Mapping[str, Any], *, scorer: str | None = None, confidence: str = "auto", **_: Any
):
    return [inspect_sample_row(row, scorer=scorer, confidence=confidence)]


REGISTRY: tuple[Format, ...] = (
    Format(
        "jsonl",
        "calibcli's rows: confidence/correct, or nll/tokens",
        ("calibration", "perplexity"),
        1,
        _native,
        default_id="id",
        keys=lambda f: (
            (f["confidence_field"], f["correct_field"]),
            (f["nll_field"], f["tokens_field"]),
        ),
    ),
    Format(
        "lm-eval",
        "lm-evaluation-harness --log_samples rows (doc_id, filtered_resps)",
        ("calibration", "perplexity"),
        0,
        lambda row, f: "doc_id" in row and "filtered_resps" in row,
        _lm_eval_choices,
        _lm_eval_rolling,
        default_id="task + doc_id",
        keys=lambda f: (("doc_id", "filtered_resps"),),
    ),
    Format(
        "logprobs",
        "a list of per-token logprobs in one field per row",
        ("perplexity",),
        2,
        lambda row, f: (
            has_path(row, f["logprobs_field"])
            and isinstance(lookup(row, f["logprobs_field"]), list)
        ),
        perplexity=_logprobs,
        keys=lambda f: ((f["logprobs_field"],),),
    ),
    Format(
        "openai",
        "OpenAI chat or completions responses with logprobs, or Batch API output lines",
        ("perplexity", "calibration"),
        4,
        _openai,
        _openai_choices,
        lambda row, **_: openai_rows(row),
        keys=lambda f: (("id", "object", "choices"), ("custom_id", "response")),
    ),
    Format(
        "vllm",
        "vLLM outputs with prompt_token_ids and prompt_logprobs",
        ("perplexity",),
        3,
        _vllm,
        perplexity=lambda row, **_: vllm_rows(row),
        keys=lambda f: (("prompt_token_ids", "prompt_logprobs"),),
    ),
    Format(
        "inspect-ai",
        "inspect-ai eval log samples (.eval or .json logs)",
        ("calibration", "perplexity"),
        5,
        lambda row, f: "scores" in row and "epoch" in row and "output" in row,
        _inspect,
        lambda row, **_: [inspect_prompt_row(row)],
        default_id="id + epoch",
        keys=lambda f: (("id", "epoch", "scores", "output"),),
    ),
    Format(
        "openai-evals",
        "OpenAI evals record logs: match events joined to their sampling events",
        ("calibration",),
        7,
        lambda row, f: "run_id" in row and "event_id" in row and "type" in row,
        _evals,
        default_id="sample_id",
        keys=lambda f: (("run_id", "event_id", "sample_id", "type", "data"),),
    ),
    Format(
        "helm",
        "HELM per_instance_stats.json entries (max_prob/exact_match, or logprob and counts)",
        ("calibration", "perplexity"),
        6,
        lambda row, f: "instance_id" in row and "stats" in row,
        lambda row, **_: [helm_calibration_row(row)],
        lambda row, **_: [helm_perplexity_row(row)],
        default_id="instance_id + train_trial_index",
        keys=lambda f: (("instance_id", "train_trial_index", "stats"),),
    ),
    Format(
        "sums",
        "per-sequence sums under common names: nll_sum/n_tokens or sum_logprob/num_tokens",
        ("perplexity",),
        8,
        _sums,
        keys=lambda f: tuple((total, count) for total, count, _ in SUM_FIELDS),
    ),
)

BY_NAME: dict[str, Format] = {f.name: f for f in REGISTRY}
NAMES: tuple[str, ...] = tuple(BY_NAME)
DETECTION: tuple[Format, ...] = tuple(sorted(REGISTRY, key=lambda f: f.priority))


def providing(kind: str) -> tuple[str, ...]:
    """The names of the formats that carry ``kind`` rows (``calibration``, ``perplexity``)."""
    return tuple(f.name for f in REGISTRY if kind in f.provides)


__all__ = [
    "BY_NAME",
    "CONFIDENCES",
    "DETECTION",
    "MC_NORMS",
    "NAMES",
    "REGISTRY",
    "SUM_FIELDS",
    "Format",
    "has_field",
    "providing",
]
