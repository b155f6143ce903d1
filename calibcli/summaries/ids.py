"""The ids of the rows a summary holds, where rows have them (lm-eval task + doc_id, an
inspect-ai sample's id + epoch + its log's task, or ``--id-field``): 64-bit hashes, each with
its line (-1 for a row of a whole document). They travel inside the summary so that rows read
twice are refused wherever the parts meet: in one reading, between a worker's share and the
rest, in a merge."""

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
    order. ``batched``: read from a summary an earlier calibcli wrote, whose hash of an id
    depended on the ids hashed with it, so that its hashes match no other summary's.
    ``taskless``: of a summary whose inspect-ai samples' ids do not carry their log's task
    (:func:`taskless_ids`), so that they match no other summary's samples; ``modelless``: of
    one whose rows' own ids do not carry their run's model (:func:`modelless_ids`)."""

    hashes: np.ndarray
    lines: np.ndarray
    batched: bool = False
    taskless: bool = False
    modelless: bool = False

    @classmethod
    def concat(cls, parts: list[RowIds]) -> RowIds | None:
        if not parts:
            return None
        return cls(
            np.concatenate([p.hashes for p in parts]),
            np.concatenate([p.lines for p in parts]),
            any(p.batched for p in parts),
            any(p.taskless for p in parts),
            any(p.modelless for p in parts),
        )

    @property
    def pooled(self) -> np.ndarray:
        """Which entries are the question keys of rows pooled with ``--all-runs``
        (:func:`pooled_keys`), whose repeats are re-runs, not rows read twice."""
        return self.lines <= POOLED

    def questions(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The question keys of the rows pooled with ``--all-runs`` and each one's tokens (-1:
        none), as :func:`pooled_keys` records them; None when it holds none."""
        pooled = self.pooled
        if not pooled.any():
            return None
        return self.hashes[pooled], POOLED - 1 - self.lines[pooled]

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


POOLED = -2
"""The line of the entries of :class:`RowIds` that are question keys of rows pooled with
``--all-runs`` (:func:`pooled_keys`), and below it: ``POOLED - 1 - tokens``. A row's line is
never below -1 (-1: a row of a whole document)."""


def pooled_keys(questions: Any, tokens: Any = None, held: RowIds | None = None) -> RowIds:
    """The question keys of rows pooled with ``--all-runs`` (their ids' questions: re-runs of
    a question share it), as entries of :class:`RowIds` that a summary carries so that the
    questions its parts repeat across each other are found wherever the parts meet, as a
    reading of all their files at once finds them; ``tokens``, each perplexity row's (-1:
    none), so that --min-tokens counts a question's tokens once. Their lines say what they
    are (:data:`POOLED`). ``held``: the summary's ids so far, put first."""
    hashes = np.asarray(questions, np.uint64)
    counts = np.full(hashes.shape[0], -1, np.int64) if tokens is None else tokens
    keys = RowIds(hashes, POOLED - 1 - np.asarray(counts, np.int64))
    if held is None:
        return keys
    return RowIds(
        np.concatenate([held.hashes, keys.hashes]),
        np.concatenate([held.lines, keys.lines]),
        held.batched,
        held.taskless,
        held.modelless,
    )


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


_TWICE = "a row is in two of the parts (the same id)"


def inspect_rows(sources: Any) -> bool:
    """Whether ``sources`` (a summary's) hold rows of an inspect-ai log."""
    return any(s.format == "inspect-ai" and s.skipped is None and s.rows for s in sources)


def taskless_ids(settings: Any, sources: Any) -> bool:
    """Whether the ids of a summary an earlier calibcli wrote (format version 3 or before) are
    inspect-ai samples' without their log's task: rows of an inspect-ai log read without
    ``--id-field``, whose ids were the sample's ``id`` and ``epoch`` alone (they carry the
    task and model now, :func:`calibcli.io.ids.sample_scope`)."""
    return getattr(settings, "id_field", None) is None and inspect_rows(sources)


SCOPED = ("inspect-ai", "helm", "openai-evals")
"""The formats whose rows' own ids carry their run's model (and a HELM run's scenario) from
summary format version 5 on."""


def scoped_rows(sources: Any) -> bool:
    """Whether ``sources`` (a summary's) hold rows of a format in :data:`SCOPED`."""
    return any(s.format in SCOPED and s.skipped is None and s.rows for s in sources)


def modelless_ids(settings: Any, sources: Any) -> bool:
    """Whether the ids of a summary an earlier calibcli wrote (format version 4 or before) are
    rows' of a format in :data:`SCOPED` without their run's model (or a HELM run's scenario):
    rows read without ``--id-field``."""
    return getattr(settings, "id_field", None) is None and scoped_rows(sources)


def check_id_schemes(summaries: list[Any], labels: list[str] | None = None) -> None:
    """SummaryMismatch when a summary whose inspect-ai samples' ids carry no task, or whose
    ids of :data:`SCOPED` rows carry no model (:attr:`RowIds.taskless`,
    :attr:`RowIds.modelless`), is counted with another holding ids of such rows that carry
    them: a row has another id in each, so the re-runs they share would go unseen, pooled as
    other questions. Summaries whose ids follow one scheme agree with each other. ``labels``:
    the summaries' names (without them, the message names the summary by the first such
    file it read)."""
    for fmt in SCOPED:  # rows of two formats never share an id: each format's schemes apart
        holding = [
            i
            for i, s in enumerate(summaries)
            if s.row_ids is not None and any(_held(src, fmt) for src in s.sources)
        ]
        schemes = {_scheme(summaries[i].row_ids) for i in holding}
        for i in holding if len(schemes) > 1 else ():  # summaries of one scheme agree
            if _scheme(summaries[i].row_ids) != max(schemes):
                _refuse_scheme(summaries[i], fmt, None if labels is None else labels[i])


def _held(source: Any, fmt: str) -> bool:
    return source.format == fmt and source.skipped is None and bool(source.rows)


def _refuse_scheme(summary: Any, fmt: str, label: str | None) -> None:
    """SummaryMismatch naming ``summary`` (``label``, else by its first file of ``fmt``),
    whose ids of ``fmt`` rows follow an older scheme than the other inputs'."""
    ids = summary.row_ids
    part = label
    if label is None:
        log = next(s for s in summary.sources if _held(s, fmt))
        label = f"a summary file of {log.display}"
    lacking = (
        "inspect-ai samples without their log's task, as calibcli wrote them before summary "
        "format version 4"
        if ids.taskless
        else "inspect-ai, HELM or OpenAI evals rows without their run's model (a HELM run's "
        "without its scenario), as calibcli wrote them before summary format version 5"
    )
    raise SummaryMismatch(
        f"{label} holds ids of {lacking}, so the re-runs of a task it shares with the other "
        "inputs cannot be found; summarize its files again with this calibcli",
        part=part,
    )


def _scheme(ids: RowIds) -> int:
    """How much of a row's run its own id carries: 0 (inspect-ai) neither task nor model, 1
    no model, 2 all of it (summaries of one scheme only can be counted together)."""
    return 0 if ids.taskless else 1 if ids.modelless else 2


def merged_ids(summaries: list[Any]) -> RowIds | None:
    """The ids of merged summaries; SummaryMismatch when a row is in two of them. The question
    keys of rows pooled with ``--all-runs`` (:func:`pooled_keys`) may repeat across them (the
    re-runs the summaries pooled on purpose), but not the id of a row read without it: pooling
    is asked for by every part that pools, so a part read without ``--all-runs`` holding a
    question a pooling part holds is refused (summarize it with ``--all-runs`` too), as is a
    summary whose ids follow another scheme than theirs (:func:`check_id_schemes`)."""
    check_id_schemes(summaries)
    ids = RowIds.concat([s.row_ids for s in summaries if s.row_ids is not None])
    if ids is None:
        return None
    pooled = ids.pooled
    checked = RowIds(ids.hashes[~pooled], ids.lines[~pooled])
    if checked.repeated() is not None:
        raise SummaryMismatch(
            f"{_TWICE}: parts of one input merged twice, or re-runs of a task; merge each row once"
        )
    if pooled.any() and np.isin(checked.hashes, ids.hashes[pooled]).any():
        raise SummaryMismatch(
            f"{_TWICE}: a part read without --all-runs holds a question that a part read with "
            "--all-runs holds too; summarize both with --all-runs to pool their re-runs"
        )
    return ids
