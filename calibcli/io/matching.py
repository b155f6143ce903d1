"""Two sides' keyed rows matched by id, as ``compare`` pairs them (:mod:`calibcli.io.keyed` reads
them), and what it checks of them once read: no id given twice, each matched id in one --by
group on both sides, and matched rows that ask the same question (an lm-eval document, an
inspect-ai sample)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from calibcli.errors import InputError, shown_name
from calibcli.io.ids import show_id
from calibcli.io.keys import IdHashes, IdIndex, canonical_id, hash_ids
from calibcli.io.runs import repeat_reason, runs_of_one_task
from calibcli.io.sources import display_name


def raise_repeat(reader: Any, repeat: tuple[int, int] | None, spans: list, side: Any) -> None:
    """InputError naming ``repeat``'s rows (the earliest row whose id an earlier row holds, and
    that row), if there is one."""
    if repeat is None:
        return
    (first_name, first_at, _), (name, at, key) = (
        side.kept.get(i) or reader.locate(spans, i) for i in repeat
    )
    message = f"duplicate id {show_id(key)} (first at {first_name}:{first_at})"
    files = [next(s[0] for s in spans if s[2] <= i < s[3]) for i in repeat]
    said = repeat_reason(files[1], at, files[0], first_at)  # two models' runs, two filters
    if said is not None:
        raise InputError(name, at, said)
    raise InputError(name, at, message + runs_of_one_task(*files, dict(reader.formats)))


def raise_regrouped(reader: Any, spans: list, side: Any, base: Any, by: str) -> None:
    """InputError at the earliest NEW row whose --by group differs from that of the BASE row
    holding its id: the matched rows are grouped by BASE's groups, so NEW's would be dropped
    without a word (``--by model`` of two models' files, a field each side fills its own way)."""
    rows = np.flatnonzero(side.row_of >= 0)
    theirs = side.row_of[rows]
    new_groups, base_groups = side.groups, base.groups
    bad = [
        (r, j)
        for j, r in zip(rows.tolist(), theirs.tolist(), strict=True)
        if new_groups[r] != base_groups[j]
    ]
    if not bad:
        return
    r, j = min(bad)
    name, at, key = side.kept.get(r) or reader.locate(spans, r)
    raise InputError(
        name,
        at,
        f"--by {by} is {new_groups[r]!r} here but {base_groups[j]!r} for id {show_id(key)} in "
        f"{_base_file(base, j)}; compare groups matched rows, so both sides must "
        "put an id in the same group",
    )


def note_other_documents(reader: Any, spans: list, side: Any, base: Any) -> None:
    """Warn, at the earliest NEW row, when matched rows ask different questions (see
    :func:`document`): an lm-eval id is the task named by the file and ``doc_id``, so two
    tasks' files given the same name (``preds.jsonl`` in two folders) match question 0 of one
    with question 0 of the other; an inspect-ai id is the sample's ``id`` and epoch, numbered
    1, 2, ... in many tasks' datasets alike."""
    rows = np.flatnonzero(side.row_of >= 0)
    pairs = zip(rows.tolist(), side.row_of[rows].tolist(), strict=True)
    found = other_documents(((r, j) for j, r in pairs), base.docs, side.docs)
    if found is None:
        return
    r, j, count = found
    name, at, key = side.kept.get(r) or reader.locate(spans, r)
    text = other_documents_text(key, side.docs[r][0], _base_file(base, j), count, rows.shape[0])
    reader.note(f"{name}:{at}", text)


def other_documents(
    pairs: Iterable[tuple[int, int]], base_docs: dict, new_docs: dict
) -> tuple[int, int, int] | None:
    """(NEW row, BASE row) of the earliest NEW row of the matched ``pairs`` (NEW row, BASE
    row) whose two rows ask different questions (:func:`document`), and how many pairs do;
    None when none does. Rows without a document, and documents of two kinds (the sides'
    formats may differ when --id-field matches them), are not compared."""
    other = [
        (r, j)
        for r, j in pairs
        if j in base_docs
        and r in new_docs
        and base_docs[j][0] == new_docs[r][0]
        and base_docs[j][1] != new_docs[r][1]
    ]
    if not other:
        return None
    r, j = min(other)
    return r, j, len(other)


def other_documents_text(key: Any, kind: str, base_file: str, count: int, matched: int) -> str:
    """The warning about ``count`` of ``matched`` ids asking another question on NEW, the
    first one ``key`` (documents of ``kind``: lm-eval or inspect-ai)."""
    more = f", as do {count - 1:,} more" if count > 1 else ""
    what, why = ("document", "doc_hash") if kind == "lm-eval" else ("sample", "input or target")
    return (
        f"id {show_id(key)} holds another {what} here than in {base_file} (its {why} "
        f"differs){more} of the {matched:,} matched ids: are the two files of the same task "
        "and dataset?"
    )


def _base_file(base: Any, row: int) -> str:
    """The name of the BASE file holding ``row``, as messages show it."""
    source = next(source for source, _, start, stop in base.spans if start <= row < stop)
    return shown_name(display_name(source))


def document(fmt: str | None, row: dict) -> tuple[str, str] | None:
    """What a row asks, to tell matched rows of different questions apart: (the format, an
    lm-eval row's ``doc_hash`` or a hash of an inspect-ai sample's ``input`` and ``target``,
    its chat messages as :func:`asked_input` keeps them); None for other formats and rows
    without them."""
    if fmt == "lm-eval":
        doc = row.get("doc_hash")
        return (fmt, doc) if isinstance(doc, str) else None
    if fmt == "inspect-ai" and "input" in row:
        import hashlib
        import json

        asked = [asked_input(row["input"]), row.get("target")]
        text = json.dumps(asked, sort_keys=True, ensure_ascii=False)
        digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
        return fmt, digest.hexdigest()
    return None


PER_RUN = ("id", "source")
"""The fields of an inspect-ai chat message that are not what it asks: its ``id``, drawn at
random each time inspect-ai builds the message (a ``shortuuid``), so two runs of one dataset
give each message another; and its ``source``, where the message came from (``"input"``),
which some inspect-ai versions write and others do not."""


def asked_input(value: Any) -> Any:
    """An inspect-ai sample's ``input`` as what it asks: a string as it is; a list of chat
    messages with each message's :data:`PER_RUN` fields, and those it gives as null (as
    unset), left out: two runs of one sample then hash alike, and a sample whose messages
    say something else does not."""
    if not isinstance(value, list):
        return value
    return [
        {k: v for k, v in m.items() if k not in PER_RUN and v is not None}
        if isinstance(m, dict) and "role" in m
        else m
        for m in value
    ]


def match_keys(base: Any, new: Any, base_name: str = "base") -> Any:
    """Two sides' rows with their ids as row keys (:class:`~calibcli.summaries.KeyedRows`, each
    side's keys distinct) matched as :func:`~calibcli.io.keyed.read_matched` matches them: each
    key's canonical bytes hashed, NEW's looked up among BASE's. The matched rows are grouped by
    BASE's groups: ValueError when NEW has groups and BASE none, or puts a matched id in another
    group. Where both sides keep what their rows ask (``docs``), matched rows asking different
    questions are named in a warning, naming BASE's source ``base_name``."""
    if new.groups is not None and base.groups is None:
        raise ValueError(
            "new has groups and base none: compare groups the matched rows by BASE's groups, "
            "so give them on base too"
        )
    index = IdIndex(IdHashes(*hash_ids([canonical_id(k) for k in base.keys])))
    at = index.rows_of(*hash_ids([canonical_id(k) for k in new.keys]))
    hit = at >= 0
    mine = at[hit]
    rows = np.flatnonzero(hit)  # NEW's matched rows; row rows[i] holds BASE's row mine[i]
    row_of = np.full(base.n, -1, index.order.dtype)
    row_of[mine] = rows

    def where(r: int) -> str:
        return new.where[r] if new.where else f"new: index {r}"

    if new.groups is not None:
        bad = next(
            (
                (r, j)
                for r, j in zip(rows.tolist(), mine.tolist(), strict=True)
                if new.groups[r] != base.groups[j]
            ),
            None,
        )
        if bad is not None:
            r, j = bad
            raise ValueError(
                f"{where(r)}: id {show_id(new.keys[r])} is in group {new.groups[r]!r} "
                f"but in {base.groups[j]!r} on base; compare groups matched rows, so both "
                "sides must put an id in the same group"
            )
    conf, corr = np.zeros(base.n), np.zeros(base.n, bool)
    conf[mine] = new.confidence[hit]
    corr[mine] = new.correct[hit]
    paired = aligned(base, row_of, conf, corr, new.n, new.groups, ranks=index.ranks())
    found = None
    if base.docs and new.docs:
        pairs = zip(rows.tolist(), mine.tolist(), strict=True)
        found = other_documents(pairs, base.docs, new.docs)
    if found is None:
        return paired
    r, _, count = found
    base_file = shown_name(display_name(base_name))
    text = other_documents_text(new.keys[r], new.docs[r][0], base_file, count, rows.shape[0])
    return replace(paired, warnings=(f"{where(r)}: {text}",))


def aligned(
    base: Any,
    row_of: np.ndarray,
    conf: np.ndarray,
    corr: np.ndarray,
    new_n: int,
    new_groups: Iterable[str] | None = None,
    *,
    ranks: np.ndarray | None = None,
) -> Any:
    """The rows both sides hold in BASE's order, from NEW's ``conf`` and ``corr`` written at
    their BASE rows (``row_of`` -1 where NEW has none); ``new_groups``, NEW's --by group of each
    of its rows, names the groups only NEW holds. ``ranks``, each BASE row's place in the order
    of its id's hash (:meth:`~calibcli.io.keys.IdIndex.ranks`), gives the pairs' ``order``."""
    from calibcli.summaries import PairedRows

    pairs = int(np.count_nonzero(row_of >= 0))
    # BASE's questions, by which the pairs are drawn (None: one row each)
    questions = getattr(base, "questions", None)
    if pairs == base.n:  # every BASE row matched: the columns as they are
        base_rows, new_rows = (base.confidence, base.correct), (conf, corr)
        groups = base.groups
        order = ranks
    else:
        rows = np.flatnonzero(row_of >= 0)
        base_rows = (base.confidence[rows], base.correct[rows])
        new_rows = (conf[rows], corr[rows])
        groups = None if base.groups is None else [base.groups[i] for i in rows.tolist()]
        questions = None if questions is None else questions[rows]
        order = None if ranks is None else ranks[rows]
    lost = (
        () if groups is None or pairs == base.n else tuple(sorted(set(base.groups) - set(groups)))
    )
    only_new = ()
    if base.groups is not None and new_groups is not None:
        only_new = tuple(sorted(set(new_groups) - set(base.groups)))
    return PairedRows(
        base_rows,
        new_rows,
        groups,
        base.n - pairs,
        new_n - pairs,
        base.n,
        new_n,
        (),
        lost,
        questions=questions,
        new_only_groups=only_new,
        order=order,
    )
