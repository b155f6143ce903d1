"""Rows for comparing two models on the same questions: each side's rows with their ids, and
the rows both sides hold, aligned."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class KeyedRows:
    """Calibration rows with an id each, in file order: ``keys[i]`` identifies row i."""

    keys: list[Any]
    confidence: np.ndarray
    correct: np.ndarray
    groups: list[str] | None
    fmt: str
    where: list[str]  # "path:line" of each row, for messages about a row
    # the --inspect-confidence mode of the inspect-ai rows, auto resolved (None: none)
    inspect_confidence: str | None = None
    warnings: tuple[str, ...] = ()  # about the files read ("name: what"), one line each
    # row -> what it asks (lm-eval, inspect-ai; see calibcli.io.matching.document), if kept
    docs: dict[int, tuple[str, str]] | None = None
    mixed: str | None = None  # why the rows are several models': every gate fails closed
    repeats: str | None = None  # why they repeat questions: an upper-end gate fails closed
    # each row's question (uint64 hashes) when a question has several rows (None: one each)
    questions: Any = None
    read_as: tuple[tuple[str, str], ...] = ()  # each file read, with its format
    # each file read (not skipped), in row order: (path, its rows, its format; None: no rows)
    parts: tuple[tuple[str, int, str | None], ...] = ()
    # each file's (the epochs its run recorded, the most rows a question holds), in the order
    # of ``parts``, where re-runs pooled with --all-runs repeat their ids beyond their runs'
    # epochs (calibcli.io.pooled_ids.pooled_files), as a summary's sources record them; None
    # otherwise
    pooled: tuple[tuple[int | None, int | None], ...] | None = None

    @property
    def n(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class PairedRows:
    """The rows both sides hold, aligned (row i is the same question), and what did not match."""

    base: tuple[Any, Any]  # (confidence, correct) arrays
    new: tuple[Any, Any]
    groups: list[str] | None
    unmatched_base: int
    unmatched_new: int
    base_rows: int
    new_rows: int
    warnings: tuple[str, ...] = ()  # about the files read ("name: what"), one line each
    # BASE's --by groups none of whose rows has a partner (no matched row holds them)
    unmatched_groups: tuple[str, ...] = ()
    # NEW's --by groups that BASE does not hold (none of their rows has a partner)
    new_only_groups: tuple[str, ...] = ()
    mixed: str | None = None  # why a side's rows are several models': every gate fails closed
    # why they repeat questions that the bootstrap cannot draw whole: an upper-end gate fails
    # closed
    repeats: str | None = None
    # each pair's question (uint64 hashes) when a question has several pairs: the paired
    # bootstrap draws them together (None: one pair per question)
    questions: Any = None
    # each pair's place in the order of its id's hash: the paired bootstrap draws the pairs in
    # that order, so its intervals depend neither on the files' line order nor on which side is
    # BASE (None: drawn in BASE's order)
    order: Any = None
    # unpaired, when a side's rows repeat their questions: each side's (rows, questions), so
    # that --min-rows counts questions (None: each row its own question)
    asked: Any = None
    # unpaired, when a side's rows repeat their questions: (BASE's, NEW's) question of each row
    # (uint64 hashes; None for a side whose rows are each their own question), so that the
    # unpaired bootstrap draws each side's questions whole
    side_questions: Any = None


def match(base: KeyedRows, new: KeyedRows) -> PairedRows:
    """Align two :class:`KeyedRows` by id, in BASE's order."""

    position = {key: i for i, key in enumerate(new.keys)}
    pairs = [(i, position[key]) for i, key in enumerate(base.keys) if key in position]
    b_idx = np.fromiter((i for i, _ in pairs), dtype=np.intp, count=len(pairs))
    n_idx = np.fromiter((j for _, j in pairs), dtype=np.intp, count=len(pairs))
    groups = None if base.groups is None else [base.groups[i] for i in b_idx]
    return PairedRows(
        (base.confidence[b_idx], base.correct[b_idx]),
        (new.confidence[n_idx], new.correct[n_idx]),
        groups,
        base.n - len(pairs),
        new.n - len(pairs),
        base.n,
        new.n,
    )


def side_stats(rows: tuple[np.ndarray, np.ndarray], bins: int) -> Any:
    """Exact per-bin statistics of one side's (confidence, correct) rows."""
    from calibcli.summaries.tables import BinTable

    table = BinTable(bins)
    table.add(np.asarray(rows[0], np.float64), np.asarray(rows[1], bool))
    return table.stats()


def in_one_order(rows: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A side's rows in one order whatever the file's lines: by confidence, then outcome. Rows
    equal in both are interchangeable, so an unpaired bootstrap of them draws the same rows
    however the input was ordered."""
    conf, corr = rows
    order = np.lexsort((corr, conf))
    return conf[order], corr[order]
