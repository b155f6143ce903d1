"""HELM ``per_instance_stats.json``: one entry per (instance, trial), each a list of named
statistics.

The file is a JSON array of ``PerInstanceStats`` (``instance_id``, ``train_trial_index``,
``perturbation``, ``stats``); each ``Stat`` carries ``name`` (a ``MetricName``: ``name``,
``split``, ``sub_split``, ``perturbation``), ``count``, ``sum``, ``sum_squared``, ``min``, ``max``
and ``mean``. A statistic is read as ``sum / count`` (its mean over the instance's requests),
from the entries whose name carries no perturbation.

- Multiple choice: ``max_prob`` (the probability of the predicted answer) is the confidence and
  ``exact_match`` (1 when the prediction is a correct reference) the outcome.
- Language modelling: ``logprob`` (summed over the scored text), ``num_perplexity_tokens`` and
  ``num_bytes``, the sums HELM pools into its own perplexity and bits per byte. HELM scores a
  document longer than the model's context in windows, one entry each; the reader gives them
  here as one entry holding the windows' sums (:func:`calibcli.io.helm_run.unperturbed`).
  HELM writes the same three for every generation request too, where they score the model's
  answer: an entry beside ``max_prob`` or ``exact_match`` is no language-modelling entry.

The reader gives one entry per instance and trial whatever metrics wrote the run
(:mod:`calibcli.io.helm_blocks`), and reads the run's adapter method beside it
(:mod:`calibcli.io.helm_adapter`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from calibcli.formats.fields import CalibrationRow, PerplexityRow, json_type, number


def helm_stats(row: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """``{name: (sum, count)}`` of an entry's statistics without a perturbation. A sum written
    as a JSON integer stays an int (exact: a count past 2**53 keeps its digits). ValueError
    for a sum or count that is not a JSON number (HELM writes numbers), and for a statistic
    given twice with different fields: which one HELM meant cannot be told (one given twice
    alike is read once)."""
    stats = row.get("stats")
    if not isinstance(stats, list):
        raise ValueError(f"'stats' is {json_type(stats)}, expected a list of statistics")
    out: dict[str, tuple[float, float]] = {}
    first: dict[str, int] = {}
    for i, stat in enumerate(stats):
        name = stat.get("name") if isinstance(stat, Mapping) else None
        if not isinstance(name, Mapping) or not isinstance(name.get("name"), str):
            raise ValueError(f"stats[{i}] has no name")
        if name.get("perturbation"):
            continue
        key = name["name"]
        if key in first:
            if stat == stats[first[key]]:
                continue
            raise ValueError(
                f"{_instance(row)}: {key} given twice, with different fields (stats"
                f"[{first[key]}] and stats[{i}]): which one HELM meant cannot be told"
            )
        first[key] = i
        total = stat.get("sum")
        if not _whole(total):
            total = number(_json_number(total, f"{key}.sum"), f"stats[{i}] ({key}) sum")
        count = number(_json_number(stat.get("count"), f"{key}.count"), f"stats[{i}] ({key}) count")
        out[key] = (total, count)
    return out


def _json_number(value: Any, what: str) -> Any:
    """``value`` as given; ValueError for a string, even one spelling a number: HELM writes
    its statistics as JSON numbers (:func:`~calibcli.formats.fields.number` refuses the rest
    that are not numbers)."""
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise ValueError(f"{what} {json.dumps(shown)} is a string, not a number")
    return value


def _instance(row: Mapping[str, Any]) -> str:
    """How an entry's instance is named: its ``instance_id``, with its train trial past the
    first."""
    ident, trial = row.get("instance_id"), row.get("train_trial_index")
    shown = ident if isinstance(ident, str) else json.dumps(ident)
    return f"{shown} (train trial {trial})" if _whole(trial) and trial else shown


def _whole(value: Any) -> bool:
    """Whether a JSON value is an integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _mean(stats: dict[str, tuple[float, float]], name: str, other: str) -> float:
    if name not in stats:
        raise ValueError(f"no {name!r} statistic (a HELM run of another kind: {other})")
    total, count = stats[name]
    if count <= 0:
        raise ValueError(f"the {name!r} statistic has count {count!r}")
    return number(total, name) / count


def helm_calibration_row(row: Mapping[str, Any]) -> CalibrationRow:
    """Confidence ``max_prob`` and outcome ``exact_match`` of one multiple-choice entry.
    ValueError for an entry without them, or an ``exact_match`` other than 0 or 1 (a tie
    between references scores a fraction)."""
    stats = helm_stats(row)
    other = "read it with `perplexity`" if "logprob" in stats else "not multiple choice"
    confidence = _mean(stats, "max_prob", other)
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(f"max_prob {confidence!r} is outside [0, 1]")
    correct = _mean(stats, "exact_match", other)
    if correct not in (0.0, 1.0):
        raise ValueError(
            f"exact_match {correct!r} is not 0 or 1 (a tie between references scores a fraction)"
        )
    return CalibrationRow(confidence, correct == 1.0)


def helm_perplexity_row(row: Mapping[str, Any]) -> PerplexityRow:
    """NLL (``-logprob``), tokens (``num_perplexity_tokens``) and bytes (``num_bytes``) of one
    language-modelling entry. ValueError for an entry scoring an answer (``max_prob`` or
    ``exact_match``): HELM's ``BasicGenerationMetric`` writes the language-modelling statistics
    of every generation request, where they score the model's answer (a multiple-choice letter,
    a completion), not a text given to it."""
    stats = helm_stats(row)
    answers = [name for name in ("max_prob", "exact_match") if name in stats]
    if answers and "logprob" in stats:
        raise ValueError(
            f"{' and '.join(repr(n) for n in answers)} beside 'logprob': the entry of a "
            "multiple-choice or generation run, whose 'logprob' scores the model's answer, not "
            "a text (a HELM run of another kind: read it with `calibrate`)"
        )
    other = "read it with `calibrate`" if "max_prob" in stats else "no log-probabilities"
    if "logprob" not in stats:
        raise ValueError(f"no 'logprob' statistic (a HELM run of another kind: {other})")
    logprob = number(stats["logprob"][0], "logprob")
    if logprob > 0:
        raise ValueError(f"logprob {logprob!r} is greater than 0, not a log-probability")
    counts = []
    for name in ("num_perplexity_tokens", "num_bytes"):
        if name not in stats:
            counts.append(None)
            continue
        value = stats[name][0]
        whole = _whole(value) or (math.isfinite(value) and value.is_integer())
        if not (whole and value >= 0):
            raise ValueError(f"{name} {value!r} is not a non-negative whole number")
        counts.append(int(value))
    tokens, nbytes = counts
    if tokens is None:
        raise ValueError("no 'num_perplexity_tokens' statistic: token perplexity needs it")
    return PerplexityRow(-logprob if logprob else 0.0, tokens, nbytes, None, 0, 0)
