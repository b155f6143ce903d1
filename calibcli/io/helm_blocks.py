"""A HELM ``per_instance_stats.json`` read as one entry per instance and trial, whatever
metrics wrote it, and refused when its figures cannot be read as what they claim to be.

HELM's runner evaluates a run spec's metrics one after another and writes the per-instance
statistics of each after the previous one's (``runner.py``:
``per_instance_stats.extend(metric_result.per_instance_stats)``): a run of several metrics
holds, for one instance and trial, an entry of each, block after block. A boolq run with the
generative-harms metrics holds ``BasicGenerationMetric``'s entries then ``ToxicityMetric``'s;
a GPQA chain-of-thought run, then ``GPQAChainOfThoughtMetric``'s; a run spec with both the
exact-match and the F1 metric specs, ``BasicGenerationMetric``'s twice. HELM reads an
instance's entries as one (its predictions merge their statistics: ``stats_by_trial[key]
.update``), and so does :func:`merged_blocks`: an entry of an instance and trial read before is
left out when it adds nothing read, holding none of the statistics calibcli reads
(:data:`READ_STATS`) or only ones read alike (the same count, sum and split). An entry equal to
the first in full, or giving a statistic read another value, stays: the instance is then read
twice, which is refused (or pooled with ``--all-runs``) as any row read twice is.

:func:`helm_entries` refuses two kinds of run after their last entry:

- A model that returns no log-probabilities (a chat API) gets ``logprob`` 0 for every
  completion, so ``max_prob`` exp(0) = 1 for every answer. HELM computes no calibration metric
  for such a run (``compute_calibration_metrics``: "logprobs were not available" when no
  ``logprob`` is below 0, ``_has_non_zero_valued_logprobs``); a run whose entries carry
  ``logprob`` and none below 0 is refused, for calibrate (every confidence 1) and perplexity
  (every text certain) alike. One answer of probability 1 among others is read as any.
- A generation run of a scenario without references (HELM Instruct's) writes each completion's
  ``logprob``, ``num_perplexity_tokens`` and ``num_bytes`` (``BasicGenerationMetric`` writes
  them for every request) and no answer's statistics: its ``logprob`` scores the model's own
  output, every token of which it generated (``num_output_tokens`` at least
  ``num_perplexity_tokens``), where a language-modelling request echoes its text and generates
  nothing (``num_output_tokens`` 0). A run scoring no answer whose every scored entry is so
  gives no perplexity; its ``run_spec.json`` says so too
  (:func:`calibcli.io.helm_adapter.perplexity_refusal`), and this says it of a file read
  without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from calibcli.io.helm_run import (
    ANSWER_STATS,
    LANGUAGE_MODELING_STATS,
    _fingerprint,
    helm_split,
    unperturbed,
)
from calibcli.io.strict_json import raw_decode

READ_STATS = frozenset(ANSWER_STATS + LANGUAGE_MODELING_STATS)
"""The statistics calibcli reads of an entry (calibration rows, perplexity rows)."""

_FIGURES = READ_STATS | {"num_output_tokens"}
"""The statistics looked at: those read, and the tokens generated."""


def helm_entries(
    text: str, entries: Iterator[tuple], notes: Callable[[str], None] | None
) -> Iterator[tuple]:
    """The elements of a JSON array document (``text``; ``entries``: its ``(line, value,
    start, end)`` tuples) as read: a HELM run's unperturbed entries of the split read
    (:func:`~calibcli.io.helm_run.unperturbed`), one per instance and trial
    (:func:`merged_blocks`); after the last, DocumentError when they are a run without
    log-probabilities or a generation run's scoring no answer (see the module docstring). Any
    other array's elements as they are."""
    tally = _Tally()
    yield from merged_blocks(text, unperturbed(entries, notes, helm_split(text)), tally)
    refusal = tally.refusal()
    if refusal is not None:
        from calibcli.io.documents import DocumentError

        raise DocumentError(refusal, None)


def merged_blocks(text: str, entries: Iterator[tuple], tally: _Tally) -> Iterator[tuple]:
    """``entries`` (elements of the JSON array ``text``) without those of another metric's
    block for an instance and trial already read (see the module docstring), each entry given
    counted in ``tally``. An entry holding no statistic read whose instance has no entry that
    does is given after the last, so that reading it says what it lacks."""
    # per instance and trial read: the first entry's position and its statistics read
    read: dict[Hashable, tuple[int, dict[str, tuple]]] = {}
    waiting: dict[Hashable, tuple] = {}  # entries holding nothing read, their instance unread
    for entry in entries:
        value = entry[1]
        key = _key(value)
        figures = None if key is None else _figures(value)
        if figures is None:
            yield entry
            continue
        stats = {name: _read(s) for name, s in figures.items() if name in READ_STATS}
        first = read.get(key)
        if first is None:
            if not stats:
                waiting.setdefault(key, entry)
                continue
            read[key] = (entry[2], stats)
            waiting.pop(key, None)
            tally.add(figures)
            yield entry
            continue
        start, seen = first
        if not stats:
            continue  # another metric's statistics of an instance read
        if all(n in seen and seen[n] == v for n, v in stats.items()) and not _same(
            text, start, value
        ):
            continue  # statistics read already, written again by another metric block
        tally.add(figures)
        yield entry  # the instance read twice: refused as a row read twice
    yield from waiting.values()


def _same(text: str, start: int, value: Any) -> bool:
    """Whether the element of ``text`` at ``start`` is equal to ``value`` (an entry written
    twice, not another metric's)."""
    try:
        return raw_decode(text, start)[0] == value
    except (ValueError, RecursionError):
        return False


class _Tally:
    """What :func:`helm_entries` counts of the entries read, to refuse a run after its last."""

    def __init__(self) -> None:
        self.logprobs = 0  # entries carrying a logprob
        self.negative = False  # one of them below 0
        self.answers = False  # an entry scoring an answer (max_prob, exact_match)
        self.scored = 0  # entries scoring tokens (num_perplexity_tokens above 0)
        self.generated = 0  # of those, the ones scoring tokens the model generated

    def add(self, figures: dict[str, dict]) -> None:
        """Count an entry's statistics (:func:`_figures`)."""
        self.answers = self.answers or any(name in figures for name in ANSWER_STATS)
        logprob = _sum(figures.get("logprob"))
        if logprob is not None:
            self.logprobs += 1
            self.negative = self.negative or logprob < 0
        tokens = _sum(figures.get("num_perplexity_tokens"))
        if tokens is not None and tokens > 0:
            self.scored += 1
            generated = _sum(figures.get("num_output_tokens"))
            self.generated += generated is not None and generated >= tokens

    def refusal(self) -> str | None:
        """Why the entries counted cannot be read, or None."""
        if self.logprobs and not self.negative:
            none = (
                "the entry's 'logprob' is not"
                if self.logprobs == 1
                else f"none of the {self.logprobs:,} entries' 'logprob' is"
            )
            said = (
                f"no log-probabilities: {none} below 0, as HELM writes them for a model that "
                "returned none"
            )
            if self.answers:
                return (
                    f"{said} (every answer's 'max_prob' is then exp(0) = 1); HELM computes no "
                    'calibration metric for such a run ("logprobs were not available")'
                )
            return f"{said}; a perplexity of 1 read from them would be no model's"
        if not self.answers and self.scored and self.generated == self.scored:
            return (
                "every entry's 'logprob' scores tokens the model generated (num_output_tokens "
                "at least num_perplexity_tokens): a HELM generation run scoring its own "
                "output, not a language-modelling run's text, gives no perplexity (a HELM run "
                "of another kind)"
            )
        return None


def _key(value: Any) -> Hashable | None:
    """The instance and trial of a HELM ``PerInstanceStats`` (an object with an
    ``instance_id`` and a list of ``stats``); None for any other element."""
    if not isinstance(value, dict) or "instance_id" not in value:
        return None
    if not isinstance(value.get("stats"), list):
        return None
    key = (value["instance_id"], value.get("train_trial_index"))
    try:
        hash(key)
    except TypeError:  # an id HELM does not write (an object, a list): read as written
        return _fingerprint(key)
    return key


def _figures(value: dict) -> dict[str, dict] | None:
    """The unperturbed statistics of :data:`_FIGURES` an entry holds, by name (the first of a
    name); None when a statistic has no name (reading the entry says so). Decoded JSON objects
    are dicts, tested as such: this runs over every statistic of every entry."""
    out: dict[str, dict] = {}
    for stat in value["stats"]:
        name = stat.get("name") if type(stat) is dict else None
        if type(name) is not dict:
            return None
        if name.get("name") in _FIGURES and not name.get("perturbation"):
            out.setdefault(name["name"], stat)
    return out


def _read(stat: dict) -> tuple:
    """What is read of a statistic: its ``count`` and ``sum`` (a mean is read as their
    ratio), and the split it names."""
    return stat.get("count"), stat.get("sum"), stat["name"].get("split")


def _sum(stat: dict | None) -> float | None:
    """A statistic's ``sum`` when it is a finite JSON number, else None (reading the entry
    says what is wrong with it)."""
    total = None if stat is None else stat.get("sum")
    if isinstance(total, bool) or not isinstance(total, int | float):
        return None
    return total if isinstance(total, int) or math.isfinite(total) else None
