"""How many train trials a HELM run scored each instance with, read from its
``per_instance_stats.json`` before its rows are.

HELM runs each instance once per train trial (``--num-train-trials``: an independent draw of
in-context examples each time) and writes one ``PerInstanceStats`` per (instance, trial), with
``train_trial_index`` counting from 0. The trials of an instance are answers to one question,
as an inspect-ai run's epochs are. A ``.json`` file (HELM's name, compressed or not) is
searched only when its first 64 KiB hold the key ``"train_trial_index"`` (no other format
writes it); its trials are then the highest index found in the whole text, plus one.

A language-modelling run scores a document longer than the model's context in windows and
writes one entry per window, one after another, all of the instance and of trial 0: they are
read as one entry, the document's (:func:`unperturbed`), not as re-runs of a question.

What a run asked is its scenario, from the name of its run folder (:func:`helm_scenario`), the
model and the way it was prompted left out: ``compare`` tells two runs of different scenarios
apart by it.
"""

from __future__ import annotations

import functools
import math
import os
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from calibcli.io.compression import open_path, read_errors, without_suffix
from calibcli.io.content import file_version

HEAD_BYTES = 1 << 16
_KEY = b'"train_trial_index"'
_TRIAL = re.compile(rb'"train_trial_index"\s*:\s*(\d+)')
_BLOCK = 1 << 22  # bytes searched at a time
_OVERLAP = 64  # kept from the end of a block, so an index cut by the block's end is found


def helm_trials(path: str) -> int | None:
    """The train trials of a HELM ``per_instance_stats.json`` (its highest
    ``train_trial_index`` + 1); None for one trial, for any other file, and when the file
    cannot be read (the reader says why)."""
    if path == "-" or not without_suffix(path.lower()).endswith(".json"):
        return None
    found = file_version(path)
    return None if found is None else _trials(*found)


@functools.lru_cache(maxsize=64)
def _trials(path: str, _mtime: int, _size: int) -> int | None:
    try:
        with open_path(path) as stream:
            head = stream.read(HEAD_BYTES)
            if _KEY not in head:
                return None
            most, tail = -1, b""
            block = head
            while block:
                text = tail + block
                for match in _TRIAL.finditer(text):
                    # an index too long to be a trial count is the reader's to refuse
                    if len(match[1]) <= 18:
                        most = max(most, int(match[1]))
                tail = text[-_OVERLAP:]
                block = stream.read(_BLOCK)
    except read_errors():
        return None
    return most + 1 if most >= 1 else None


MODEL_ARGUMENTS = ("model", "model_deployment")
"""The arguments of a HELM run spec name that name the model run, not what it was asked."""

PROMPT_ARGUMENTS = (
    "method",
    "max_train_instances",
    "num_train_trials",
    "max_eval_instances",
    "instructions",
    "prompt",
    "newline",
    "stop",
    "global_prefix",
    "chatml",
    "num_outputs",
    "num_output_tokens",
    "max_tokens",
    "temperature",
    "data_augmentation",
    "use_chain_of_thought",
    "use_few_shot",
    "num_trials",
)
"""The arguments of a HELM run spec name that set how its instances are put to the model, not
which instances: HELM's run expanders that change only the adapter (how many in-context
examples, ``max_train_instances``, drawn in how many trials; the instructions, prompt prefixes,
newline and stop sequences; how many outputs, of how many tokens, at which temperature), its
adaptation ``method`` (one multiple-choice prompt or one per choice), ``max_eval_instances``
(how many of the scenario's instances are run: an instance keeps its id among them, and the
rows no other side holds are counted as unmatched), ``data_augmentation`` (perturbed copies of
the instances, which the reader leaves out), ``num_trials`` (each request sent that many
times, for new generations), and the run spec functions' chain-of-thought and few-shot
switches. Every other argument but :data:`LABEL_ARGUMENTS` and :data:`READ_SPLIT` is kept: a
scenario's own (``subject``, ``eval_split``, ``dataset``, a language pair, a tokenizer or
prompt length that a synthetic scenario builds its instances from) chooses the questions."""

LABEL_ARGUMENTS = ("groups",)
"""The arguments of a HELM run spec name that only label the run: ``groups``, the leaderboard
groups HELM shows it in (its published runs are named ``mmlu:subject=anatomy,method=
multiple_choice_joint,model=...,eval_split=test,groups=mmlu_anatomy``); a run made from the
same entry without them asks the same questions."""

READ_SPLIT = "eval_split=test"
"""The ``eval_split`` argument that names the questions read of a run without it: HELM draws a
run's instances from its scenario's validation and test splits unless ``eval_split`` names one,
and of a run holding both the test split's entries are read (:func:`helm_split`), as HELM's
leaderboards read them."""


def helm_scenario(path: str) -> str | None:
    """What a HELM run whose ``per_instance_stats.json`` is at ``path`` asked: the name of its
    run folder (HELM writes a run to ``runs/<suite>/<run spec name>/``, the name its scenario
    and arguments, ``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2``)
    without the arguments naming the model (:data:`MODEL_ARGUMENTS`), so the runs of two
    models on one scenario name it alike (:func:`helm_questions` leaves out how they were
    prompted too). HELM numbers each scenario's instances from ``id0``, so only this tells two
    scenarios' files apart. None for standard input and for a folder not named as HELM names a
    run (a name, ``:``, then ``key=value`` arguments)."""
    if path == "-":
        return None
    return scenario_named(os.path.basename(os.path.dirname(os.path.abspath(path))))


def scenario_named(folder: str) -> str | None:
    """:func:`helm_scenario` of a run spec name ``folder``: None for one not named as HELM
    names a run."""
    name, colon, arguments = folder.partition(":")
    pairs = [a.partition("=") for a in arguments.split(",")]
    if not (name and colon and all(key and sep for key, sep, _ in pairs)):
        return None
    kept = [f"{key}={value}" for key, _, value in pairs if key not in MODEL_ARGUMENTS]
    return f"{name}:{','.join(kept)}" if kept else name


def helm_questions(scenario: str) -> str:
    """The questions a HELM scenario (:func:`helm_scenario`) asks: its name and the arguments
    that choose its instances, those that set how they are put to the model
    (:data:`PROMPT_ARGUMENTS`), that label the run (:data:`LABEL_ARGUMENTS`) and an
    ``eval_split=test`` (:data:`READ_SPLIT`) left out, the rest in the order given. Runs of one
    scenario 0-shot and 5-shot (``max_train_instances=0`` and ``=5``), or one run locally and
    as HELM published it (``eval_split=test,groups=mmlu_anatomy``), ask the same questions;
    runs of two subjects, or of the validation and the test split, do not."""
    name, colon, arguments = scenario.partition(":")
    if not colon:
        return scenario
    left = (*PROMPT_ARGUMENTS, *LABEL_ARGUMENTS)
    kept = [a for a in arguments.split(",") if a.partition("=")[0] not in left and a != READ_SPLIT]
    return f"{name}:{','.join(kept)}" if kept else name


def forget_trials() -> None:
    """Forget what was read of the files, as after they changed."""
    _trials.cache_clear()


def helm_split(text: str) -> str | None:
    """The evaluation split whose entries a HELM ``per_instance_stats.json`` (its whole
    ``text``) is read for: None when its statistics name one split or none (every entry is
    read), ``"test"`` when they name several, as HELM reports each split apart and its
    leaderboards the test split's. DocumentError when they name several and none is ``test``."""
    if _KEY.decode() not in text[:HEAD_BYTES]:
        return None
    splits = set(_SPLIT.findall(text))
    if len(splits) < 2:
        return None
    if "test" not in splits:
        from calibcli.io.documents import DocumentError

        named = ", ".join(repr(s) for s in sorted(splits))
        raise DocumentError(
            f"the HELM entries are of the splits {named}, which HELM reports apart, and none is "
            "'test'; keep one split's entries in a file of its own",
            None,
        )
    return "test"


_SPLIT = re.compile(r'"split"\s*:\s*"([^"\\]*)"')


def _split_of(value: Mapping) -> str | None:
    """The split an entry's statistics name (the first that names one)."""
    for stat in value.get("stats") or ():
        name = stat.get("name") if isinstance(stat, Mapping) else None
        if isinstance(name, Mapping) and isinstance(name.get("split"), str):
            return name["split"]
    return None


def unperturbed(
    entries: Iterator[tuple], notes: Callable[[str], None] | None, split: str | None = None
) -> Iterator[tuple]:
    """The elements of a JSON array (``(line, value, start, end)`` tuples) without HELM's
    perturbed entries, a language-modelling document's windows read as one entry each.

    A ``PerInstanceStats`` with an entry-level ``perturbation`` is an instance rewritten for
    HELM's robustness or fairness figures (typos, dialect, ...), whose statistics HELM names
    with that perturbation and reports apart. With ``split`` (:func:`helm_split`), the entries
    of other splits are left out too. ``notes`` is told once, after the last element, how many
    were left out of each perturbation and each split.

    The windows of one document (:func:`_window`) are given as one entry, at the first
    window's line, holding their language-modelling statistics pooled (:func:`_pooled`)."""
    left: dict[str, int] = {}
    other: dict[str, int] = {}
    document: _Document | None = None  # the windows read one after another of one document
    for entry in entries:
        value = entry[1]
        kept = _kept(value, split, left, other)
        row = _window(value) if kept else None
        mark = _fingerprint(value) if row is not None else None
        if row is not None and document is not None and document.followed_by(value, mark):
            document.add(entry, row, mark)
            continue
        if document is not None:
            yield document.pooled()
        document = None
        if row is not None:
            document = _Document()
            document.add(entry, row, mark)
        elif kept:
            yield entry
    if document is not None:
        yield document.pooled()
    if other and notes is not None:
        total = sum(other.values())
        named = ", ".join(f"{name!r} {count:,}" for name, count in sorted(other.items()))
        notes(
            f"{total:,} HELM entr{'y' if total == 1 else 'ies'} of other splits left out "
            f"({named}): HELM reports each split apart; the figures are the {split!r} split's"
        )
    if left and notes is not None:
        total = sum(left.values())
        named = ", ".join(f"{name} {count:,}" for name, count in left.items())
        notes(
            f"{total:,} perturbed HELM entr{'y' if total == 1 else 'ies'} left out ({named}): "
            "HELM reports perturbed instances apart (robustness, fairness); the figures are "
            "the unperturbed instances'"
        )


def _kept(value: object, split: str | None, left: dict, other: dict) -> bool:
    """Whether an element is read: not a perturbed HELM entry, nor one of another split than
    ``split``; one left out is counted in ``left`` (by perturbation) or ``other`` (by split)."""
    moved = value.get("perturbation") if isinstance(value, Mapping) else None
    if moved and "instance_id" in value and "stats" in value:
        name = moved.get("name") if isinstance(moved, Mapping) else None
        key = name if isinstance(name, str) and name else "unnamed"
        left[key] = left.get(key, 0) + 1
        return False
    if split is not None and isinstance(value, Mapping) and "instance_id" in value:
        found = _split_of(value)
        if found is not None and found != split:
            other[found] = other.get(found, 0) + 1
            return False
    return True


LANGUAGE_MODELING_STATS = ("logprob", "num_perplexity_tokens", "num_bytes")
"""The statistics HELM's ``compute_language_modeling_metrics`` writes for every request of a
language-modelling run (each window of a document), which it sums into its perplexity and bits
per byte."""

ANSWER_STATS = ("max_prob", "exact_match")
"""Statistics that score an answer: an entry holding one is never a window of a document."""


def _instance(value: object) -> str | None:
    """The ``instance_id`` of an element that may be a window of a HELM language-modelling
    document (a ``PerInstanceStats`` of a string id, trial 0); None for any other element."""
    if not isinstance(value, Mapping) or "stats" not in value:
        return None
    ident, trial = value.get("instance_id"), value.get("train_trial_index")
    return ident if isinstance(ident, str) and type(trial) is int and trial == 0 else None


def _window(value: object) -> Any:
    """The perplexity row of an entry that can be one window of a HELM language-modelling
    document, None for any other entry.

    HELM's ``LanguageModelingAdapter`` splits a document longer than the model's context into
    windows, one request each, and ``LanguageModelingMetric`` writes one ``PerInstanceStats``
    per request, in request order, each with the instance's id and ``train_trial_index`` 0
    (one trial). Such an entry: a string ``instance_id``, ``train_trial_index`` 0, no
    perturbation, the unperturbed statistics ``logprob``, ``num_perplexity_tokens`` and
    ``num_bytes`` (:data:`LANGUAGE_MODELING_STATS`), none of :data:`ANSWER_STATS`, and
    figures the ``helm`` perplexity reader accepts."""
    if _instance(value) is None or value.get("perturbation"):
        return None
    stats = value.get("stats")
    names = set()
    for stat in stats if isinstance(stats, list) else ():
        name = stat.get("name") if isinstance(stat, Mapping) else None
        if isinstance(name, Mapping) and not name.get("perturbation"):
            names.add(name.get("name"))
    if not names.issuperset(LANGUAGE_MODELING_STATS) or names.intersection(ANSWER_STATS):
        return None
    from calibcli import formats

    try:
        (row,) = formats.perplexity_rows("helm", value)
    except ValueError:
        return None  # read alone, so that the reader names its line
    return row


class _Document:
    """The windows read so far of one document: its entries, their perplexity rows, and each
    window's value filed by :func:`_fingerprint`, so that a window is compared with the
    earlier ones it may be a copy of, not with all of them."""

    def __init__(self) -> None:
        self.entries: list[tuple] = []
        self.rows: list = []
        self._seen: dict[int | None, list] = {}

    def add(self, entry: tuple, row: Any, mark: int | None) -> None:
        """Add the window ``entry``, of perplexity row ``row``, its value's fingerprint
        ``mark``."""
        self.entries.append(entry)
        self.rows.append(row)
        self._seen.setdefault(mark, []).append(entry[1])

    def followed_by(self, value: Mapping, mark: int | None) -> bool:
        """Whether the window ``value`` (of fingerprint ``mark``), read right after these
        windows, is the next of the same document: of the same instance, and not a copy of one
        of them (windows score different spans of the document: an entry written twice is a
        duplicate)."""
        if value["instance_id"] != self.entries[0][1]["instance_id"]:
            return False
        return all(value != seen for seen in self._seen.get(mark, ()))

    def pooled(self) -> tuple:
        return _pooled(self.entries, self.rows)


def _fingerprint(value: object) -> int | None:
    """A hash of a decoded JSON value, equal for values that compare equal; None, shared by
    every such value, when it cannot be hashed."""
    try:
        return hash(_frozen(value))
    except (TypeError, RecursionError):
        return None


def _frozen(value: object) -> object:
    """``value`` with its objects made frozensets of their items and its arrays tuples, so
    that values that compare equal give equal frozen values."""
    if isinstance(value, Mapping):
        return frozenset((key, _frozen(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


def _pooled(document: list[tuple], rows: list) -> tuple:
    """One element for the entries of ``document``: the entry itself when it is alone, else
    the first window's, its statistics those HELM pools: ``logprob``,
    ``num_perplexity_tokens`` and ``num_bytes`` each summed over the windows (``count`` the
    windows), at the first window's line, its text spanning every window's."""
    if len(document) == 1:
        return document[0]
    line, first, start, *_ = document[0]
    split = _split_of(first)
    sums = (  # the NLLs summed exactly, as every row's are pooled (then rounded once)
        -math.fsum(row.nll for row in rows),
        sum(row.tokens for row in rows),
        sum(row.bytes for row in rows),
    )
    stats = []
    for name, total in zip(LANGUAGE_MODELING_STATS, sums, strict=True):
        named = {"name": name} if split is None else {"name": name, "split": split}
        stats.append({"name": named, "count": len(rows), "sum": total})
    return (line, {**first, "stats": stats}, start, document[-1][-1])
