"""The ids of the rows a summary holds, where rows have them (lm-eval task + doc_id, an
inspect-ai sample's id + epoch, or ``--id-field``): 64-bit hashes, each with its line (-1 for a
row of a whole document). They travel inside the summary so that rows read twice are refused
wherever the parts meet: in one reading, between a worker's share and the rest, in a merge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


class SummaryMismatch(ValueError):
    """Summaries that cannot be merged (other kinds or settings); the message says why, and
    ``part``, when known, names the summary file it is about."""

    def __init__(self, message: str, *, part: str | None = None) -> None:
        super().__init__(message)
        self.part = part


@dataclass(frozen=True, eq=False)
class RowIds:
    """Hashes (uint64) and lines (int64, -1 when not a line) of identified rows, in input
    order."""

    hashes: np.ndarray
    lines: np.ndarray

    @classmethod
    def concat(cls, parts: list[RowIds]) -> RowIds | None:
        if not parts:
            return None
        return cls(
            np.concatenate([p.hashes for p in parts]), np.concatenate([p.lines for p in parts])
        )

    def repeated(self) -> int | None:
        """The index of the first row whose id an earlier row has, else None."""
        if self.hashes.shape[0] < 2:
            return None
        order = np.argsort(self.hashes, kind="stable")
        ordered = self.hashes[order]
        same = np.flatnonzero(ordered[1:] == ordered[:-1])
        if not same.shape[0]:
            return None
        return int(order[same + 1].min())


class IdLog:
    """Collects the ids of rows as they are read, a batch (arrays) at a time."""

    def __init__(self) -> None:
        self._hashes: list[np.ndarray] = []
        self._lines: list[np.ndarray] = []

    def add(self, hashes: Any, lines: Any) -> None:
        """A batch of ids: their hashes and lines (-1 for a row that has no line)."""
        self._hashes.append(np.asarray(hashes, np.uint64))
        self._lines.append(np.asarray(lines, np.int64))

    def extend(self, ids: RowIds, offset: int = 0) -> None:
        self._hashes.append(ids.hashes)
        self._lines.append(np.where(ids.lines >= 0, ids.lines + offset, -1))

    def result(self) -> RowIds | None:
        if not sum(h.shape[0] for h in self._hashes):
            return None
        return RowIds(
            np.concatenate(self._hashes).astype(np.uint64, copy=False),
            np.concatenate(self._lines).astype(np.int64, copy=False),
        )


# --------------------------------------------------------------------------- row keys
# A row's key names it for the Poisson bootstrap (calibcli.metrics.poisson): the same row has
# the same key in any process, shard or order. A row with an id is keyed by the id's hash; any
# other row by its source's content and its line (or its locator in a whole document), never by
# the path as typed.

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def mix64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser of each uint64 (a bijection that spreads every bit)."""
    return mix64_in_place(np.asarray(z, np.uint64).copy())


def mix64_in_place(z: np.ndarray) -> np.ndarray:
    """:func:`mix64` written over the uint64 array ``z`` itself (no copy); returns ``z``."""
    with np.errstate(over="ignore"):
        z ^= z >> np.uint64(30)
        z *= _M1
        z ^= z >> np.uint64(27)
        z *= _M2
        z ^= z >> np.uint64(31)
    return z


def content_key(content: str) -> np.uint64:
    """64 bits of a source's content identity."""
    import hashlib

    digest = hashlib.blake2b(content.encode("utf-8"), digest_size=8).digest()
    return np.uint64(int.from_bytes(digest, "little"))


def locator_numbers(where: list[Any]) -> np.ndarray:
    """Lines as they are; a whole document's locators (strings) hashed to 64 bits."""
    import hashlib

    out = np.empty(len(where), np.uint64)
    for i, w in enumerate(where):
        if isinstance(w, int):
            out[i] = w
        else:
            digest = hashlib.blake2b(str(w).encode("utf-8"), digest_size=8).digest()
            out[i] = int.from_bytes(digest, "little")
    return out


def line_keys(content: str, lines: np.ndarray) -> np.ndarray:
    """The keys of rows known by their lines (or hashed locators) in a source of ``content``:
    mix64(content_key ^ mix64(line))."""
    return mix64(content_key(content) ^ mix64(lines))


def merged_ids(summaries: list[Any]) -> RowIds | None:
    """The ids of merged summaries; SummaryMismatch when a row is in two of them."""
    ids = RowIds.concat([s.row_ids for s in summaries if s.row_ids is not None])
    if ids is not None and ids.repeated() is not None:
        raise SummaryMismatch(
            "a row is in two of the parts (the same id): parts of one input merged twice, or "
            "re-runs of a task; merge each row once"
        )
    return ids
