"""lm-evaluation-harness ``--log_samples`` rows: multiple-choice, rolling, and the kinds calibcli
skips.

Versions read: v0.4.3+ JSONL (``samples_<task>_<date>.jsonl``, loglikelihoods as strings such as
``["-1.23", "False"]``); mid-2024 JSONL named ``.json``; v0.4.0-v0.4.2 indented JSON arrays
(``samples_<task>.json``, opened by :mod:`calibcli.io.documents`; rows as in later versions, numbers
as numbers); and the 2023 pre-release rows (numeric loglikelihoods, ``arguments`` holding only the
first request's ``[context, continuation]`` pair).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from calibcli.formats.fields import is_index, json_type, number, too_long_in

MC_NORMS = ("none", "chars", "bytes")

#: What :func:`lm_eval_row_kind` returns, after the harness's ``output_type`` names.
ROW_KINDS = ("multiple_choice", "loglikelihood_rolling", "loglikelihood", "generate_until")

#: The warning for a skipped file of generated text.
GENERATIVE_WARNING = "generative task: no probabilities"

# The row metric that holds the harness's own correctness verdict for each --mc-norm.
_MC_CORRECT_FIELD = {"none": "acc", "chars": "acc_norm", "bytes": "acc_bytes"}
_ROLLING_FIELDS = ("word_perplexity", "byte_perplexity", "bits_per_byte")

# lm-eval writes samples_<task>_<date_id>.jsonl with date_id = datetime.now().isoformat()
# with ":" replaced by "-", e.g. 2024-06-01T12-30-05.123456 (no fraction when it is zero).
_SAMPLES_NAME = re.compile(
    r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)$"
)


# Before v0.4.3 the harness named a samples file after its model arguments and task:
# f"{model_args}_{task}.jsonl", with "/" written as "__" (2023 development releases,
# "pretrained=EleutherAI__pythia-2.8b_winogrande") and "=" too (v0.4.0-v0.4.2,
# "pretrained__EleutherAI__pythia-160m,dtype__float16_arc_easy"). The model arguments are
# comma-separated key=value pairs in the order the user gave them, one of them naming the model
# (so that a custom name holding "__" is not taken apart); a value is a path or hub name whose
# parts are joined by "__", and the task follows the last value after one "_". A run without
# model arguments wrote "_<task>.jsonl".
_MODEL_KEYS = "pretrained|model|model_name|engine|path|base_url"
_ARG = r"[A-Za-z][A-Za-z0-9_]*?(?:=|__)"
_ARGS_NAME = re.compile(
    rf"^(?P<args>(?:{_ARG}[^,]*,)*?(?:{_MODEL_KEYS})(?:=|__)(?:[^,]*,{_ARG})*(?:[^_,]*__)*[^_,]*)"
    r"_(?P<task>[^,]+)$"
)
_PRETRAINED = re.compile(r"^(?:pretrained|model|path|engine)(?:=|__)(?P<name>.+)$")
# the weights an adapter or a delta adds to the pretrained model: runs of one base model with two
# adapters are two models' runs
_ADAPTER = re.compile(r"^(?P<kind>peft|delta)(?:=|__)(?P<name>.+)$")


def _stem(path: str | PurePath) -> str:
    name = PurePath(path).name
    for suffixes in ((".gz", ".zst", ".xz", ".bz2"), (".jsonl", ".json")):  # compressed or not
        for suffix in suffixes:
            if name.endswith(suffix):
                name = name.removesuffix(suffix)
                break
    return name


def task_from_filename(path: str | PurePath) -> str:
    """Task name of an lm-eval samples file, from every layout the harness has written:

    - ``samples_<task>_<date>.jsonl`` (v0.4.3+; the date as the harness writes it,
      ``2024-06-01T12-30-05.123456``, so task names with underscores come out whole);
    - ``<model_args>_<task>.jsonl`` (v0.4.0-v0.4.2 and 2023 development releases, e.g.
      ``pretrained=EleutherAI__pythia-2.8b_winogrande.jsonl``; see :func:`model_from_filename`);
    - ``_<task>.jsonl`` (the same, run without model arguments).

    A compression suffix (``.gz``, ``.zst``, ``.xz``, ``.bz2``) is ignored. Any other name gives
    its stem, less a leading ``samples_``. A model name holding a single ``_``
    (``org__flan_t5``) cannot be told from the task in the older layouts: the task then starts
    at that ``_``.

    >>> task_from_filename("out/samples_arc_easy_2024-06-01T12-30-05.123456.jsonl")
    'arc_easy'
    >>> task_from_filename("pretrained=EleutherAI__pythia-2.8b_winogrande.jsonl")
    'winogrande'
    >>> task_from_filename("dtype=float16,pretrained=org__Llama-3.1-8B_mmlu_anatomy.jsonl")
    'mmlu_anatomy'
    """
    name = _stem(path)
    match = _SAMPLES_NAME.match(name)
    if match:
        return match["task"]
    match = _ARGS_NAME.match(name)
    if match:
        return match["task"]
    if name.startswith("_") and len(name) > 1:
        return name[1:]
    return name.removeprefix("samples_") or name


def model_from_filename(path: str | PurePath) -> str | None:
    """The model of an lm-eval samples file, where the path names one: the ``pretrained``
    argument of an older file name (``pretrained=EleutherAI__pythia-2.8b_winogrande.jsonl`` ->
    ``EleutherAI/pythia-2.8b``), else the folder v0.4.3+ writes each hub model's files into
    (``out/EleutherAI__pythia-160m/samples_arc_easy_<date>.jsonl`` -> ``EleutherAI/pythia-160m``;
    a folder name without ``__`` is not taken for a model). None when neither says.

    >>> model_from_filename("pretrained__EleutherAI__pythia-160m,dtype__float16_arc_easy.jsonl")
    'EleutherAI/pythia-160m'
    >>> model_from_filename("dtype__float16,pretrained__EleutherAI__pythia-160m_arc_easy.jsonl")
    'EleutherAI/pythia-160m'
    """
    pure = PurePath(path)
    name = _stem(pure)
    match = _ARGS_NAME.match(name)
    if match:
        args = match["args"].split(",")
        adapters = [m for m in map(_ADAPTER.match, args) if m]
        for arg in args:
            found = _PRETRAINED.match(arg)
            if found:
                added = "".join(f" + {m['kind']} {m['name'].replace('__', '/')}" for m in adapters)
                return found["name"].replace("__", "/") + added
        return match["args"]
    if _SAMPLES_NAME.match(name) and "__" in pure.parent.name:
        return pure.parent.name.replace("__", "/")
    return None


def model_args_from_filename(path: str | PurePath) -> str | None:
    """The model arguments an lm-eval samples file named the pre-v0.4.3 way was run with, as
    its name writes them (``pretrained=EleutherAI__pythia-2.8b`` of
    ``pretrained=EleutherAI__pythia-2.8b_winogrande.jsonl``; ``""`` for ``_<task>.jsonl``, a
    run without them); None for any other name. Files of one task with other arguments are runs
    of other models (or of one model loaded another way).

    >>> model_args_from_filename("_winogrande.jsonl")
    ''
    """
    name = _stem(path)
    if _SAMPLES_NAME.match(name):
        return None
    match = _ARGS_NAME.match(name)
    if match:
        return match["args"]
    return "" if name.startswith("_") and len(name) > 1 else None


# --------------------------------------------------------------------------- lm-eval rows


def lm_eval_row_kind(row: Mapping[str, Any]) -> str:
    """The kind of one samples row, one of :data:`ROW_KINDS` (the harness's ``output_type``).

    - ``"loglikelihood_rolling"``: the row has ``word_perplexity`` / ``byte_perplexity`` /
      ``bits_per_byte`` pairs;
    - ``"generate_until"``: the request carries generation settings (``arguments`` ...
      ``arg_1`` is an object such as ``{"until": [...]}``) or every filtered response is text;
    - ``"multiple_choice"``: two or more ``[loglikelihood, is_greedy]`` responses;
    - ``"loglikelihood"``: exactly one (a single-continuation task such as lambada).

    A generative file carries no probabilities: a reader skips it with
    :data:`GENERATIVE_WARNING`. lm-eval writes one task per samples file, so a row whose kind
    differs from the file's first row means the file mixes tasks. ValueError when the row is
    none of these.
    """
    if any(field in row for field in _ROLLING_FIELDS):
        return "loglikelihood_rolling"
    resps = row.get("filtered_resps")
    if not isinstance(resps, list):
        raise ValueError(f"'filtered_resps' is {json_type(resps)}, expected a list")
    if _has_generation_settings(row.get("arguments")) or (
        resps and all(_is_text(r) for r in resps)
    ):
        return "generate_until"
    if resps and all(_is_loglikelihood_pair(r) for r in resps):
        return "multiple_choice" if len(resps) >= 2 else "loglikelihood"
    too_long = too_long_in(resps, "filtered_resps")
    if too_long is not None:
        raise ValueError(too_long)
    shown = json_type(resps[0]) if resps else "nothing"
    raise ValueError(
        f"cannot tell the kind of this lm-eval row: 'filtered_resps' holds {len(resps)} "
        f"response(s), the first {shown}; expected [loglikelihood, is_greedy] pairs "
        "(multiple_choice), generated text (generate_until) or word/byte perplexity pairs "
        "(loglikelihood_rolling)"
    )


def lm_eval_output_type(row: Mapping[str, Any]) -> str:
    """``"multiple_choice"`` or ``"loglikelihood_rolling"``: the row kinds calibcli reads.

    ValueError naming the kind for any other row (see :func:`lm_eval_row_kind`).
    """
    kind = lm_eval_row_kind(row)
    if kind in ("multiple_choice", "loglikelihood_rolling"):
        return kind
    raise ValueError(
        f"{_KIND_PHRASE[kind]}; calibcli reads lm-eval tasks with output_type multiple_choice "
        "or loglikelihood_rolling"
    )


def lm_eval_choice_row(
    row: Mapping[str, Any], *, mc_norm: str = "none", target_delimiter: str = " "
) -> tuple[float, bool]:
    """Confidence and correctness of one lm-eval multiple-choice row (see
    :func:`lm_eval_choice_scores`): the largest softmax probability over the scores."""
    scores, correct = lm_eval_choice_scores(row, mc_norm=mc_norm, target_delimiter=target_delimiter)
    return _max_softmax(scores), correct


def lm_eval_choice_scores(
    row: Mapping[str, Any], *, mc_norm: str = "none", target_delimiter: str = " "
) -> tuple[list[float], bool]:
    """The choices' scores and the correctness of one lm-eval multiple-choice row.

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
        raise ValueError(f"'filtered_resps' is {json_type(resps)}, expected a list")
    if resps and (_has_generation_settings(row.get("arguments")) or all(map(_is_text, resps))):
        raise ValueError(f"{_KIND_PHRASE['generate_until']}, not a multiple-choice row")
    n = len(resps)
    if "acc_mutual_info" in row:
        if n % 2:
            raise ValueError(
                f"'filtered_resps' has {n} responses; a row with acc_mutual_info has an even "
                "number (each choice with and without context)"
            )
        n //= 2
    if n < 2:
        kind = " (a loglikelihood task such as lambada)" if n == 1 else ""
        raise ValueError(
            f"'filtered_resps' has {n} scored continuation(s): not a multiple-choice row{kind} "
            "(calibrate needs at least 2 choices)"
        )
    scores = [_choice_loglikelihood(resps[i], i) for i in range(n)]
    if mc_norm != "none":
        lengths = _choice_lengths(row, n, mc_norm, target_delimiter)
        scores = [s / length for s, length in zip(scores, lengths, strict=True)]
    if max(scores) == -math.inf:
        raise ValueError("every choice has loglikelihood -inf")
    return scores, _row_flag(row, _MC_CORRECT_FIELD[mc_norm], mc_norm)


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


# --------------------------------------------------------------------------- helpers


_KIND_PHRASE = {
    "loglikelihood": "a loglikelihood row (one scored continuation, no choices)",
    "generate_until": f"a generate_until row ({GENERATIVE_WARNING})",
}


def _is_text(resp: Any) -> bool:
    # Generated text, possibly nested by a filter that keeps several samples per document.
    return isinstance(resp, str) or (
        isinstance(resp, list)
        and bool(resp)
        and all(isinstance(r, str) for r in resp)
        and not _is_loglikelihood_pair(resp)
    )


def _is_loglikelihood_pair(resp: Any) -> bool:
    if not (isinstance(resp, list) and len(resp) == 2):
        return False
    ll, greedy = resp
    if isinstance(ll, str):
        try:
            float(ll)
        except ValueError:
            return False
    elif isinstance(ll, bool) or not isinstance(ll, (int, float)):
        return False
    return isinstance(greedy, bool) or greedy in ("True", "False")


def _has_generation_settings(args: Any) -> bool:
    """Whether a request's second argument is an object (generation kwargs such as
    ``until``): ``{"gen_args_0": {"arg_1": {...}}}``, ``[[ctx, {...}]]`` or 2023's
    ``[ctx, {...}]``."""
    if isinstance(args, Mapping):
        first = args.get("gen_args_0")
        return isinstance(first, Mapping) and isinstance(first.get("arg_1"), Mapping)
    if isinstance(args, list) and args:
        if len(args) == 2 and isinstance(args[0], str):
            return isinstance(args[1], Mapping)
        first = args[0]
        return isinstance(first, list) and len(first) >= 2 and isinstance(first[1], Mapping)
    return False


# The text of a loglikelihood logged as a string: what Python's str(float) writes ("-13.78",
# "-1e-05", "-inf"; "inf" and "nan" are refused below with their own messages). float() also
# takes "-1_000", " -1.0 " and "Infinity", which no harness writes.
_LOGGED_FLOAT = re.compile(r"(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|-?inf|nan)\Z")


def _loglikelihood(value: Any, what: str) -> float:
    """A logged loglikelihood: a JSON number or a number string as lm-eval writes it; <= 0."""
    if isinstance(value, str) and not _LOGGED_FLOAT.match(value):
        raise ValueError(f"{what} is {json_type(value)}, not a number as lm-eval writes one")
    x = number(value, what)
    if x == math.inf:
        raise ValueError(f"{what} is +inf")
    if x > 0:
        raise ValueError(f"{what} {x!r} is greater than 0, not a log-probability")
    return x


def _choice_loglikelihood(resp: Any, i: int) -> float:
    # Multiple-choice responses are [loglikelihood, is_greedy]; accept a bare loglikelihood too.
    ll = resp[0] if isinstance(resp, list) and resp else resp
    return _loglikelihood(ll, f"filtered_resps[{i}] loglikelihood")


def _continuations(row: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    """(context, continuation) per request, from the samples file's ``{"gen_args_0": {"arg_0":
    ..., "arg_1": ...}}`` or an in-memory list of argument tuples."""
    args = row.get("arguments")
    if isinstance(args, Mapping):
        keyed = []
        for key, value in args.items():
            index = key.removeprefix("gen_args_")
            if not (key.startswith("gen_args_") and is_index(index) and isinstance(value, Mapping)):
                raise ValueError(f"'arguments' has an unexpected entry {key!r}")
            keyed.append((int(index), (value.get("arg_0"), value.get("arg_1"))))
        return [pair for _, pair in sorted(keyed)]
    if isinstance(args, list) and len(args) == 2 and all(isinstance(a, str) for a in args):
        raise ValueError(
            "'arguments' holds one [context, continuation] pair, not one per choice (lm-eval "
            "before v0.4.0 logged only the first request), so the choice lengths that "
            "length normalisation needs are not in the file; use --mc-norm none"
        )
    if isinstance(args, list):
        out = []
        for i, value in enumerate(args):
            if not isinstance(value, list) or len(value) < 2:
                raise ValueError(f"arguments[{i}] is not a [context, continuation] pair")
            out.append((value[0], value[1]))
        return out
    raise ValueError(f"'arguments' is {json_type(args)}; length normalisation needs the choices")


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
            raise ValueError(f"continuation {i} in 'arguments' is {json_type(cont)}")
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
    raise ValueError(f"{field!r} is {json_type(value)}, expected 0 or 1")


def _rolling_pair(pair: Any, field: str) -> tuple[float, int]:
    if not isinstance(pair, list) or len(pair) != 2:
        raise ValueError(f"{field!r} is {json_type(pair)}, expected a [loglikelihood, count] pair")
    ll = _loglikelihood(pair[0], f"{field} loglikelihood")
    count = pair[1]
    if isinstance(count, str) and is_index(count):
        count = int(count)
    if isinstance(count, float) and count.is_integer():
        count = int(count)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"{field} count is {json_type(count)}, expected a non-negative integer")
    return ll, count


class GoldReadingError(ValueError):
    """A row's gold choice that its logged target names two ways (see :func:`lm_eval_gold`)."""


def gold_readings(row: Mapping[str, Any], n: int) -> dict[str, int]:
    """The choices a multiple-choice row's logged ``target`` names, by reading: ``"index"``
    (a JSON integer, or a digit string as the harness logs an index, within the ``n``
    choices) and ``"text"`` (the one choice whose continuation, spaces aside, is the target).
    A digit string may be both when the choices are digits too ("2" of ``["1", "2", "3"]``:
    choice 2 by index, choice 1 by text)."""
    target = row.get("target")
    out = {}
    index = target.strip() if isinstance(target, str) else target
    if isinstance(index, str) and is_index(index):
        index = int(index)
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index < n:
        out["index"] = index
    # a target read as an index is looked for among the choices' texts only when one of them
    # could be it: most tasks' choices are not digits, and the look-up costs a row's arguments
    if isinstance(target, str) and ("index" not in out or _may_name(row, target.strip())):
        try:
            conts = [str(c) for _, c in _continuations(row)[:n]]
        except ValueError:
            conts = []
        matches = [i for i, c in enumerate(conts) if c.strip() == target.strip()]
        if len(matches) == 1:
            out["text"] = matches[0]
    return out


def _may_name(row: Mapping[str, Any], text: str) -> bool:
    """Whether a continuation of the row may be ``text``, spaces aside (True where the logged
    arguments are not the samples file's mapping, which :func:`_continuations` reads)."""
    args = row.get("arguments")
    if not isinstance(args, Mapping):
        return True
    return any(
        not isinstance(v, Mapping) or str(v.get("arg_1")).strip() == text for v in args.values()
    )


def _agreeing(readings: dict[str, int], scores: list[float], correct: bool) -> list[str]:
    """The readings whose gold choice agrees with the row's verdict: the harness scores a row
    right when its top choice (the first on ties) is the gold one."""
    top = scores.index(max(scores))
    return [name for name, gold in readings.items() if (gold == top) == correct]


def lm_eval_gold(
    row: Mapping[str, Any],
    scores: list[float],
    correct: bool,
    *,
    reading: str | None = None,
    readings: dict[str, int] | None = None,
) -> int:
    """Index of the gold choice of a multiple-choice row: the choice its logged ``target``
    names (see :func:`gold_readings`); else, for a row scored right, the highest-scoring
    choice (the first on ties, as the harness's argmax). ValueError when none of these tells.

    When the target names one choice by index and another by text, the row's verdict
    (``correct``) picks the reading it agrees with; when it agrees with both (a row scored
    wrong whose top choice is neither), ``reading`` (``"index"`` or ``"text"``, the one the
    other rows of its file tell: :class:`FileGold`) does. GoldReadingError when the verdict
    agrees with neither, or with both and ``reading`` is not given. ``readings``: the row's
    :func:`gold_readings`, when the caller has them."""
    if readings is None:
        readings = gold_readings(row, len(scores))
    choices = set(readings.values())
    if len(choices) == 1:
        return choices.pop()
    if len(choices) == 2:
        agree = _agreeing(readings, scores, correct)
        if len(agree) == 2 and reading in readings:
            agree = [reading]
        if len(agree) == 1:
            return readings[agree[0]]
        verdict = "right" if correct else "wrong"
        raise GoldReadingError(
            f"'target' {row.get('target')!r} is choice {readings['index']} by index and choice "
            f"{readings['text']} by text, and the row, scored {verdict}, agrees with "
            f"{'both' if agree else 'neither'}"
        )
    if correct:
        return scores.index(max(scores))
    raise ValueError(
        f"the gold choice is not logged ('target' is {json_type(row.get('target'))}, not a "
        "choice index) and the row is scored wrong, so it cannot be inferred"
    )


class FileGold:
    """The gold choices of one samples file's multiple-choice rows, added in file order.

    A row whose target names two choices (by index and by text) that its verdict does not tell
    apart waits: the harness logs one task's targets one way, so :meth:`settle` gives it the
    reading the file's rows tell (a row tells the one of its readings, naming different
    choices, that alone agrees with its verdict)."""

    def __init__(self) -> None:
        self.told: dict[str, int] = {}
        self.waiting: list[tuple[int, dict[str, int]]] = []

    def add(self, row: Mapping[str, Any], scores: list[float], correct: bool, at: int) -> int:
        """The gold choice of the row at position ``at`` (see :func:`lm_eval_gold`), or -1
        while it waits for :meth:`settle`."""
        readings = gold_readings(row, len(scores))
        if len(set(readings.values())) == len(readings):  # not two readings of one choice
            agree = _agreeing(readings, scores, correct)
            if len(agree) == 1:
                self.told[agree[0]] = self.told.get(agree[0], 0) + 1
            elif len(agree) == 2:
                self.waiting.append((at, readings))
                return -1
        return lm_eval_gold(row, scores, correct, readings=readings)

    def settle(self) -> tuple[dict[int, int], str | None]:
        """The waiting rows' gold choices by position, in the reading the file's rows tell;
        when they tell none, or both, no gold choice and why."""
        if not self.waiting:
            return {}, None
        if len(self.told) == 1:
            (reading,) = self.told
            return {at: readings[reading] for at, readings in self.waiting}, None
        if self.told:
            told = ", ".join(f"{n} {name}" for name, n in sorted(self.told.items()))
            told = f"its other rows tell both readings ({told})"
        else:
            told = "no row of it tells which the task logs"
        return {}, (
            "its digit 'target' is one choice by index and another by text, and the row is "
            f"scored wrong under both, as {len(self.waiting)} rows of the file are; {told}"
        )
