"""The registry of input formats: one entry per format, from which detection, reading, the
``--format`` choices, compare's default ids and the README's formats table all derive.

An entry says what the format holds (``provides``: calibration and/or perplexity rows), how a
file's first row is recognised (``detect``, tried in ``priority`` order), how one decoded JSON
value becomes rows (``calibration`` / ``perplexity``; the native format is read by the typed
fast path instead), how its rows are identified across files (``default_id``), and which
reading options its rows read (``reads``), with what they take instead of those they do not
(``takes``, by :data:`OPTION_TOPICS`), so that an option no file read uses is said. A new
format is one entry here plus its row functions.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
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
    # the reading options (parameter names) its rows read, and for each topic of
    # :data:`OPTION_TOPICS` whose options they do not all read, what its rows take instead
    reads: tuple[str, ...] = ()
    takes: Mapping[str, str] = field(default_factory=dict)
    # whether its perplexity rows take the bytes and words counts named by --bytes-field and
    # --words-field from the row (the other formats carry their own counts, or none)
    counts: bool = False


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
    if "prompt_logprobs" in row:
        return True
    first = _first_choice(row)
    if not isinstance(first, Mapping) or "prompt_logprobs" not in first:
        return False
    # vLLM's server writes "prompt_logprobs": null into every choice of a completion that did
    # not ask for them: one holding its own logprobs (an echoed prompt's, or its generated
    # tokens') is a completion as OpenAI's are; one without any is told to ask for them
    return first["prompt_logprobs"] is not None or not isinstance(first.get("logprobs"), Mapping)


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
        reads=(
            "confidence_field",
            "correct_field",
            "nll_field",
            "tokens_field",
            "logprobs_field",  # a list beside the totals is checked against them
        ),
        takes={
            "confidence": "take their confidence from --confidence-field",
            "correct": "take their correctness from --correct-field",
            "nll": "take their NLL and tokens from --nll-field and --tokens-field",
        },
        counts=True,
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
        reads=("mc_norm",),
        takes={
            "confidence": "take their confidence from the choices' loglikelihoods",
            "correct": "take their correctness from the document's gold choice",
            "nll": "take their NLL from the harness's rolling loglikelihood",
        },
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
        reads=("logprobs_field",),
        takes={"nll": "take their NLL and tokens from --logprobs-field"},
        counts=True,
    ),
    Format(
        "openai",
        "OpenAI chat or completions responses with logprobs, or Batch API output lines",
        ("perplexity", "calibration"),
        4,
        _openai,
        _openai_choices,
        lambda row, **_: openai_rows(row),
        # a Batch line's request (a response's own id, new each run, matches no other run's)
        default_id="custom_id",
        keys=lambda f: (("id", "object", "choices"), ("custom_id", "response")),
        reads=("gold_field", "choices"),
        takes={
            "confidence": "take their confidence from the answer token's logprobs over --choices",
            "correct": "take their correctness from --gold-field",
            "nll": "take their NLL from the response's token logprobs",
        },
        counts=True,
    ),
    Format(
        "vllm",
        "vLLM outputs with prompt_token_ids and prompt_logprobs",
        ("perplexity",),
        3,
        _vllm,
        perplexity=lambda row, **_: vllm_rows(row),
        keys=lambda f: (("prompt_token_ids", "prompt_logprobs"),),
        takes={"nll": "take their NLL from the prompt's logprobs"},
        counts=True,
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
        reads=("scorer", "inspect_confidence"),
        takes={
            "confidence": "take their confidence from the output's token logprobs "
            "(--inspect-confidence)",
            "correct": "take their correctness from a scorer's verdict (--scorer)",
            "nll": "take their NLL from the prompt's logprobs",
        },
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
        reads=("choices",),
        takes={
            "confidence": "take their confidence from the sampling event's logprobs over --choices",
            "correct": "take their correctness from the match event's verdict",
        },
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
        takes={
            "confidence": "take their confidence from the max_prob statistic",
            "correct": "take their correctness from the exact_match statistic",
            "nll": "take their NLL and tokens from the logprob and num_perplexity_tokens "
            "statistics",
        },
    ),
    Format(
        "sums",
        "per-sequence sums under common names: nll_sum/n_tokens or sum_logprob/num_tokens",
        ("perplexity",),
        8,
        _sums,
        keys=lambda f: tuple((total, count) for total, count, _ in SUM_FIELDS),
        takes={"nll": "take their NLL and tokens from nll_sum/n_tokens or sum_logprob/num_tokens"},
        counts=True,
    ),
)

BY_NAME: dict[str, Format] = {f.name: f for f in REGISTRY}
NAMES: tuple[str, ...] = tuple(BY_NAME)
DETECTION: tuple[Format, ...] = tuple(sorted(REGISTRY, key=lambda f: f.priority))


#: The reading options a format may read or not, by what they decide of a row: its
#: confidence, its correctness, its NLL and tokens. (--bytes-field and --words-field follow
#: ``counts``, and ``perplexity`` says those a file's own counts leave unread.)
OPTION_TOPICS: dict[str, str] = {
    "confidence_field": "confidence",
    "mc_norm": "confidence",
    "inspect_confidence": "confidence",
    "choices": "confidence",
    "correct_field": "correct",
    "scorer": "correct",
    "gold_field": "correct",
    "nll_field": "nll",
    "tokens_field": "nll",
    "logprobs_field": "nll",
}


def reads(option: str, formats: Collection[str]) -> bool:
    """Whether rows of any of ``formats`` read ``option`` (a parameter name of
    :data:`OPTION_TOPICS`; another option, or a format not in the registry, counts as read)."""
    return option not in OPTION_TOPICS or any(
        f not in BY_NAME or option in BY_NAME[f].reads for f in formats
    )


def unused_options(given: Mapping[str, Any], formats: Collection[str]) -> list[str]:
    """One warning per option of ``given`` (parameter name -> value as given, in order) that
    the rows of no format of ``formats`` (those of the files read) read, naming what each takes
    instead: ``--mc-norm bytes: inspect-ai rows take their confidence from ...; the option is
    not used``. Nothing when no file was read."""
    read = list(dict.fromkeys(formats))
    said = []
    for option, value in given.items():
        if not read or reads(option, read):
            continue
        topic = OPTION_TOPICS[option]
        ways = "; ".join(f"{f} rows {BY_NAME[f].takes.get(topic, 'do not read it')}" for f in read)
        shown = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else value
        said.append(f"--{option.replace('_', '-')} {shown}: {ways}; the option is not used")
    return said


def providing(kind: str) -> tuple[str, ...]:
    """The names of the formats that carry ``kind`` rows (``calibration``, ``perplexity``)."""
    return tuple(f.name for f in REGISTRY if kind in f.provides)


__all__ = [
    "BY_NAME",
    "CONFIDENCES",
    "DETECTION",
    "MC_NORMS",
    "NAMES",
    "OPTION_TOPICS",
    "REGISTRY",
    "SUM_FIELDS",
    "Format",
    "has_field",
    "providing",
    "reads",
    "unused_options",
]
