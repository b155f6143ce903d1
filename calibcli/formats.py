"""Row formats calibcli reads, turned into the numbers the metrics need.

Pure functions over one decoded JSON row (a ``dict``): no file reading, no numpy. Each raises
``ValueError`` with a message that names the offending field or position but not the file or line;
the reader prefixes ``"path:line: "``.

Formats (see :func:`detect_format`):

- ``jsonl``: calibcli's native rows, ``{"confidence", "correct"}`` or ``{"nll", "tokens"}``.
- ``lm-eval``: lm-evaluation-harness v0.4 ``--log_samples`` rows (``samples_<task>_<date>.jsonl``).
  Multiple-choice rows go through :func:`lm_eval_choice_row`, loglikelihood_rolling rows through
  :func:`lm_eval_rolling_row`; :func:`lm_eval_output_type` tells them apart.
- ``logprobs``: one sequence per row with a list of per-token natural-log probabilities,
  :func:`logprobs_row`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

FORMATS = ("jsonl", "lm-eval", "logprobs")
MC_NORMS = ("none", "chars", "bytes")

#: A per-token log-probability at or below this is an API sentinel ("not in the top-k"),
#: not a real probability.
SENTINEL_LOGPROB = -9999.0

# The row metric that holds the harness's own correctness verdict for each --mc-norm.
_MC_CORRECT_FIELD = {"none": "acc", "chars": "acc_norm", "bytes": "acc_bytes"}
_ROLLING_FIELDS = ("word_perplexity", "byte_perplexity", "bits_per_byte")

# lm-eval writes samples_<task>_<date_id>.jsonl with date_id = datetime.now().isoformat()
# with ":" replaced by "-", e.g. 2024-06-01T12-30-05.123456 (no fraction when it is zero).
_SAMPLES_NAME = re.compile(
    r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)$"
)


# --------------------------------------------------------------------------- detection


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

    Raises ValueError naming the keys seen when none of these holds.
    """
    if not isinstance(first_row, Mapping):
        raise ValueError(
            f"cannot detect the input format: the first row is {_json_type(first_row)}"
        )
    if "doc_id" in first_row and "filtered_resps" in first_row:
        return "lm-eval"
    if (confidence_field in first_row and correct_field in first_row) or (
        nll_field in first_row and tokens_field in first_row
    ):
        return "jsonl"
    if _has_path(first_row, logprobs_field) and isinstance(lookup(first_row, logprobs_field), list):
        return "logprobs"
    if any(field in first_row for field in (confidence_field, correct_field, nll_field)):
        return "jsonl"
    keys = ", ".join(repr(k) for k in list(first_row)[:12]) or "none"
    if len(first_row) > 12:
        keys += ", ..."
    raise ValueError(
        f"cannot detect the input format from the first row (keys: {keys}): expected "
        f"{confidence_field!r}/{correct_field!r} or {nll_field!r}/{tokens_field!r} (jsonl), "
        f"'doc_id' and 'filtered_resps' (lm-eval --log_samples), or a list in "
        f"{logprobs_field!r} (logprobs); pass --format, or the --*-field options if your "
        f"fields have other names"
    )


def task_from_filename(path: str | PurePath) -> str:
    """Task name of an lm-eval samples file: ``samples_<task>_<date>.jsonl`` -> ``<task>``.

    The date is the one the harness writes (``2024-06-01T12-30-05.123456``), so task names with
    underscores (``mmlu_high_school_physics``) come out whole. ``.gz`` is ignored. A name that
    does not follow the pattern gives its stem, less a leading ``samples_``.

    >>> task_from_filename("out/samples_arc_easy_2024-06-01T12-30-05.123456.jsonl")
    'arc_easy'
    """
    name = PurePath(path).name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    match = _SAMPLES_NAME.match(name)
    if match:
        return match["task"]
    return name.removeprefix("samples_") or name


# --------------------------------------------------------------------------- lm-eval rows


def lm_eval_output_type(row: Mapping[str, Any]) -> str:
    """``"loglikelihood_rolling"`` when the row carries word/byte perplexity pairs, else
    ``"multiple_choice"`` when it has several scored continuations; ValueError otherwise."""
    if any(field in row for field in _ROLLING_FIELDS):
        return "loglikelihood_rolling"
    resps = row.get("filtered_resps")
    if not isinstance(resps, list):
        raise ValueError(f"'filtered_resps' is {_json_type(resps)}, expected a list")
    if len(resps) >= 2 and all(isinstance(r, list) and len(r) == 2 for r in resps):
        return "multiple_choice"
    raise ValueError(
        "not a multiple-choice or loglikelihood_rolling row (filtered_resps holds "
        f"{len(resps)} response(s) that are not [loglikelihood, is_greedy] pairs); calibcli reads "
        "lm-eval tasks with output_type multiple_choice or loglikelihood_rolling"
    )


def lm_eval_choice_row(
    row: Mapping[str, Any], *, mc_norm: str = "none", target_delimiter: str = " "
) -> tuple[float, bool]:
    """Confidence and correctness of one lm-eval multiple-choice row.

    The choices' loglikelihoods are the first elements of ``filtered_resps`` (``[ll, is_greedy]``
    pairs, logged as strings such as ``["-13.78", "False"]``). With ``mc_norm="chars"`` or
    ``"bytes"`` each is divided by its choice's length in characters or UTF-8 bytes, as the
    harness does for ``acc_norm`` / ``acc_bytes``: the choice text is the logged continuation
    (``arguments``) less the task's ``target_delimiter`` (default ``" "``) when every continuation
    starts with it. Rows of tasks with ``acc_mutual_info`` carry twice as many responses (the
    second half scored without context); only the first half counts.

    confidence = the largest softmax probability over those scores (log-sum-exp, stable);
    correct = the row's own ``acc`` / ``acc_norm`` / ``acc_bytes``, so accuracy matches the
    harness's (it breaks argmax ties by first index). The logged ``brier_score`` (a printed
    array) is never read.
    """
    if mc_norm not in _MC_CORRECT_FIELD:
        raise ValueError(f"mc_norm must be one of {', '.join(MC_NORMS)}, not {mc_norm!r}")
    if any(field in row for field in _ROLLING_FIELDS):
        raise ValueError(
            "a loglikelihood_rolling row (it has word/byte perplexity pairs), not a "
            "multiple-choice row: read it with `perplexity`"
        )
    resps = row.get("filtered_resps")
    if not isinstance(resps, list):
        raise ValueError(f"'filtered_resps' is {_json_type(resps)}, expected a list")
    n = len(resps)
    if "acc_mutual_info" in row:
        if n % 2:
            raise ValueError(
                f"'filtered_resps' has {n} responses; a row with acc_mutual_info has an even "
                "number (each choice with and without context)"
            )
        n //= 2
    if n < 2:
        raise ValueError(
            f"'filtered_resps' has {n} scored continuation(s): not a multiple-choice row "
            "(calibrate needs at least 2 choices)"
        )
    scores = [_choice_loglikelihood(resps[i], i) for i in range(n)]
    if mc_norm != "none":
        lengths = _choice_lengths(row, n, mc_norm, target_delimiter)
        scores = [s / length for s, length in zip(scores, lengths, strict=True)]
    return _max_softmax(scores), _row_flag(row, _MC_CORRECT_FIELD[mc_norm], mc_norm)


def lm_eval_rolling_row(row: Mapping[str, Any]) -> tuple[float, int | None, int | None]:
    """``(nll, words, bytes)`` of one lm-eval loglikelihood_rolling row.

    The row carries ``[loglikelihood, count]`` pairs under ``word_perplexity`` (count = words),
    ``byte_perplexity`` and ``bits_per_byte`` (count = UTF-8 bytes). nll = -loglikelihood (nats,
    ``inf`` for a ``-inf`` loglikelihood). A count is ``None`` when the task did not log the
    metric that carries it; the pairs present must agree on the loglikelihood.
    """
    lls: dict[str, float] = {}
    counts: dict[str, int] = {}
    for field in _ROLLING_FIELDS:
        if field in row:
            lls[field], counts[field] = _rolling_pair(row[field], field)
    if not lls:
        kind = " (a multiple-choice row: read it with `calibrate`)" if "acc" in row else ""
        raise ValueError(
            "not a loglikelihood_rolling row: none of word_perplexity, byte_perplexity, "
            f"bits_per_byte is present{kind}"
        )
    (first, ll), *others = lls.items()
    for field, other in others:
        if other != ll:
            raise ValueError(f"{field} loglikelihood {other!r} differs from {first}'s {ll!r}")
    byte_counts = {counts[f] for f in ("byte_perplexity", "bits_per_byte") if f in counts}
    if len(byte_counts) > 1:
        raise ValueError(
            f"byte_perplexity counts {counts['byte_perplexity']} bytes but bits_per_byte "
            f"counts {counts['bits_per_byte']}"
        )
    words = counts.get("word_perplexity")
    nbytes = counts.get("byte_perplexity", counts.get("bits_per_byte"))
    return (-ll if ll else 0.0), words, nbytes


# --------------------------------------------------------------------------- logprobs rows


def logprobs_row(row: Mapping[str, Any], *, field: str = "logprobs") -> tuple[float, int, int, int]:
    """``(nll, tokens, nulls, sentinels)`` of a row of per-token natural-log probabilities.

    ``row[field]`` (``field`` may be a dotted path, e.g. ``logprobs.token_logprobs``) is a list of
    numbers or nulls. nll = -sum of the numbers (``math.fsum``); tokens = how many numbers.
    ``null`` entries (the unscored first token of OpenAI echo or vLLM prompt_logprobs) are skipped
    and counted in ``nulls``. ``-inf`` is a zero-probability token (nll becomes ``inf``). Finite
    values <= -9999 are API sentinels for "not in the top-k": they are counted in ``sentinels``
    and still summed as given, so the caller can warn that the NLL is inflated by them.
    A value > 0, NaN, or anything but a number or null raises ValueError naming its index.
    """
    values = lookup(row, field)
    if not isinstance(values, list):
        raise ValueError(f"{field!r} is {_json_type(values)}, expected a list of numbers or nulls")
    kept = []
    nulls = sentinels = 0
    for i, v in enumerate(values):
        if v is None:
            nulls += 1
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{field}[{i}] is {_json_type(v)}, expected a number or null")
        if v != v:
            raise ValueError(f"{field}[{i}] is NaN")
        if v > 0:
            raise ValueError(f"{field}[{i}] = {v!r} is greater than 0, not a log-probability")
        if SENTINEL_LOGPROB >= v > -math.inf:
            sentinels += 1
        kept.append(v)
    total = math.fsum(kept)
    return (-total if total else 0.0), len(kept), nulls, sentinels


# --------------------------------------------------------------------------- nested fields


def by_value(row: Mapping[str, Any], dotted_path: str) -> str | int | float | bool | None:
    """The value at ``dotted_path`` (``"doc.subject"``) for grouping with ``--by``.

    A key that itself contains dots is matched whole first; list elements are reached by index
    (``"choices.0"``). The value must be a JSON scalar (string, number, boolean or null): an
    object or list is not a group. Missing -> ValueError naming the path.
    """
    value = lookup(row, dotted_path)
    if isinstance(value, (dict, list)):
        raise ValueError(
            f"field {dotted_path!r} is {_json_type(value)}, not a value to group by "
            "(name a field inside it)"
        )
    return value


def lookup(row: Mapping[str, Any], dotted_path: str) -> Any:
    """Follow ``dotted_path`` through nested objects (and list indices); ValueError if missing."""
    if isinstance(row, Mapping) and dotted_path in row:
        return row[dotted_path]
    current: Any = row
    walked: list[str] = []
    for part in dotted_path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and _is_index(part) and int(part) < len(current):
            current = current[int(part)]
        else:
            where = f" in {'.'.join(walked)!r}" if walked else ""
            if walked and not isinstance(current, (Mapping, list)):
                where += f" ({_json_type(current)})"
            raise ValueError(f"missing field {dotted_path!r}: no {part!r}{where}")
        walked.append(part)
    return current


# --------------------------------------------------------------------------- helpers


def _has_path(row: Mapping[str, Any], dotted_path: str) -> bool:
    try:
        lookup(row, dotted_path)
    except ValueError:
        return False
    return True


def _is_index(part: str) -> bool:
    return part.isascii() and part.isdigit()


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _number(value: Any, what: str) -> float:
    """A float from a JSON number or the string the harness logs (``"-13.78"``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{what} is {_json_type(value)}, expected a number")
    try:
        x = float(value)
    except ValueError:
        raise ValueError(f"{what} is {_json_type(value)}, expected a number") from None
    if x != x:
        raise ValueError(f"{what} is NaN")
    return x


def _choice_loglikelihood(resp: Any, i: int) -> float:
    # Multiple-choice responses are [loglikelihood, is_greedy]; accept a bare loglikelihood too.
    ll = resp[0] if isinstance(resp, list) and resp else resp
    x = _number(ll, f"filtered_resps[{i}] loglikelihood")
    if x == math.inf:
        raise ValueError(f"filtered_resps[{i}] loglikelihood is +inf")
    return x


def _continuations(row: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """(context, continuation) per request, from the samples file's ``{"gen_args_0": {"arg_0":
    ..., "arg_1": ...}}`` or an in-memory list of argument tuples."""
    args = row.get("arguments")
    if isinstance(args, Mapping):
        keyed = []
        for key, value in args.items():
            index = key.removeprefix("gen_args_")
            if not (
                key.startswith("gen_args_") and _is_index(index) and isinstance(value, Mapping)
            ):
                raise ValueError(f"'arguments' has an unexpected entry {key!r}")
            keyed.append((int(index), (value.get("arg_0"), value.get("arg_1"))))
        return [pair for _, pair in sorted(keyed)]
    if isinstance(args, list):
        out = []
        for i, value in enumerate(args):
            if not isinstance(value, list) or len(value) < 2:
                raise ValueError(f"arguments[{i}] is not a [context, continuation] pair")
            out.append((value[0], value[1]))
        return out
    raise ValueError(f"'arguments' is {_json_type(args)}; length normalisation needs the choices")


def _choice_lengths(
    row: Mapping[str, Any], n: int, mc_norm: str, target_delimiter: str
) -> list[int]:
    pairs = _continuations(row)
    if len(pairs) < n:
        raise ValueError(f"'arguments' has {len(pairs)} requests for {n} choices")
    pairs = pairs[:n]
    conts = []
    for i, (_, cont) in enumerate(pairs):
        if not isinstance(cont, str):
            raise ValueError(f"continuation {i} in 'arguments' is {_json_type(cont)}")
        conts.append(cont)
    if len(set(conts)) == 1 and len({ctx for ctx, _ in pairs}) > 1:
        raise ValueError(
            "the choices of this row are in the contexts (a multiple-input task such as "
            f"winogrande), so their lengths are not logged; use --mc-norm none, not {mc_norm}"
        )
    if target_delimiter and all(c.startswith(target_delimiter) for c in conts):
        conts = [c[len(target_delimiter) :] for c in conts]
    if mc_norm == "chars":
        lengths = [len(c) for c in conts]
    else:
        lengths = [len(c.encode("utf-8")) for c in conts]
    for i, length in enumerate(lengths):
        if length == 0:
            raise ValueError(f"choice {i} is empty: cannot normalise its loglikelihood by length")
    return lengths


def _max_softmax(scores: list[float]) -> float:
    """max_i exp(s_i) / sum_j exp(s_j) = 1 / sum_j exp(s_j - max s), stable for any scale."""
    top = max(scores)
    if top == -math.inf:
        raise ValueError("every choice has loglikelihood -inf")
    return 1.0 / math.fsum(math.exp(s - top) for s in scores)


def _row_flag(row: Mapping[str, Any], field: str, mc_norm: str) -> bool:
    if field not in row:
        raise ValueError(
            f"the row has no {field!r} (the task did not compute it); --mc-norm {mc_norm} "
            f"needs a task with the {field} metric"
        )
    value = row[field]
    if value in (0, 1) and not isinstance(value, str):
        return bool(value)
    raise ValueError(f"{field!r} is {_json_type(value)}, expected 0 or 1")


def _rolling_pair(pair: Any, field: str) -> tuple[float, int]:
    if not isinstance(pair, list) or len(pair) != 2:
        raise ValueError(f"{field!r} is {_json_type(pair)}, expected a [loglikelihood, count] pair")
    ll = _number(pair[0], f"{field} loglikelihood")
    if ll > 0:
        raise ValueError(f"{field} loglikelihood {ll!r} is greater than 0")
    count = pair[1]
    if isinstance(count, str) and _is_index(count):
        count = int(count)
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"{field} count is {_json_type(count)}, expected a non-negative integer")
    return ll, count
