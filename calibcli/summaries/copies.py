"""Inputs that hold the same rows though no source of theirs shares bytes with the other's: one
input summarized twice by other routes (plain and compressed, from a file and from standard
input, its rows in another order), which the sources' content hashes cannot tell.

A calibration summary keeps a fingerprint of its rows (:mod:`calibcli.summaries.fingerprint`),
whose row count and hash sum are an exact multiset hash: the same rows give the same fingerprint
whatever their order and the bytes that held them. It is one fingerprint per summary; each
source also keeps its rows' multiset hash
(:attr:`~calibcli.summaries.sources.Source.rows_hash`), so a copy of one source among several of
a part is seen too (:func:`check_source_copies`). Below ``FLOOR`` rows on either side, or with
values repeated so much that other rows share them (fewer than 64 distinct rows, and fewer than
half the rows: a few verbal levels), equal rows may be two inputs' by chance and nothing is
said. A perplexity summary keeps no fingerprint of its own, only its sources' hashes (of each
row's NLL and token count). Files read together are compared source by source
(:func:`same_sources`), and each against all the others together (:func:`union_of_others`: a
file holding the rows of its shards).
"""

from __future__ import annotations

from typing import Any

from calibcli.summaries.ids import SummaryMismatch

FLOOR = 30
"""Rows each side must hold for equal rows to be taken for a copy."""

SAME_ROWS = "the same confidences and outcomes, in any order"


def same_rows_text(kind: str) -> str:
    """How a message says two inputs hold the same rows, for a summary of ``kind``."""
    return "the same NLLs and token counts, in any order" if kind == "perplexity" else SAME_ROWS


def _counted(summary: Any) -> list[Any]:
    return [s for s in summary.sources if s.skipped is None and s.rows]


def same_rows(a: Any, b: Any) -> bool:
    """Whether summaries ``a`` and ``b`` hold the same multiset of rows, at least ``FLOOR`` each.
    Never for byte ranges of one input (the parts share a source's content: whether they
    overlap is told by their ranges), for summaries without a fingerprint, for rows whose
    values repeat so much that two shards of other rows may hold the same multiset (a few
    levels, :meth:`~calibcli.summaries.fingerprint.RowFingerprint.tells_copies_apart`), nor
    for two summaries that both record their rows' ids (the ids tell whether rows repeat)."""
    fa, fb = getattr(a, "fingerprint", None), getattr(b, "fingerprint", None)
    if fa is None or fb is None or min(fa.rows, fb.rows) < FLOOR:
        return False
    if not (fa.tells_copies_apart() and fb.tells_copies_apart()):
        return False
    if getattr(a, "row_ids", None) is not None and getattr(b, "row_ids", None) is not None:
        return False
    if {s.content for s in _counted(a)} & {s.content for s in _counted(b)}:
        return False
    return fa.same_rows(fb)


def _named(summary: Any) -> str:
    """How a message names a summary's sources: the first one, and how many more."""
    shown = list(dict.fromkeys(s.display for s in _counted(summary)))
    if not shown:
        return "no file"
    return shown[0] if len(shown) == 1 else f"{shown[0]} and {len(shown) - 1} more"


def check_copies(parts: list[Any], labels: list[str], remedy: str) -> None:
    """SummaryMismatch when two parts hold the same rows (:func:`same_rows`), naming both
    parts and the sources each read; ``remedy`` ends the message."""
    for j, later in enumerate(parts):
        for i in range(j):
            if same_rows(parts[i], later):
                raise SummaryMismatch(
                    f"{labels[i]} and {labels[j]} both hold the same "
                    f"{later.fingerprint.rows:,} rows, read from {_named(parts[i])} and "
                    f"{_named(later)} ({SAME_ROWS}): one input summarized twice, by other routes; "
                    f"{remedy}",
                    part=labels[j],
                )


def check_read_copies(read: Any, parts: list[Any], labels: list[str], merged: Any) -> None:
    """SummaryMismatch when the rows of the files read here (``read``) are the rows of a
    summary file given beside them (:func:`same_rows`), or of all of them (``merged``)."""
    found = next((k for k, p in enumerate(parts) if same_rows(read, p)), None)
    summary = "the summary"
    if found is not None:
        held = labels[found]
    elif len(parts) > 1 and same_rows(read, merged):
        held, summary = " and ".join(labels), "the summaries"
    else:
        return
    many = len({s.display for s in _counted(read)}) > 1
    files = f"{_named(read)} are" if many else f"{_named(read)} is"
    their, file = ("their", "the files") if many else ("its", "the file")
    raise SummaryMismatch(
        f"{files} read here and {their} {read.fingerprint.rows:,} rows are counted in {held} "
        f"too ({SAME_ROWS}): give {summary} or {file}, not both (pass --all-runs to pool them on "
        "purpose)",
        part=labels[found if found is not None else 0],
    )


def same_sources(
    sources: Any, parts: Any = None, with_ids: Any = frozenset()
) -> tuple[Any, Any] | None:
    """The first two sources that hold the same rows in other bytes (a file and a copy of its
    rows in another order, or written again), by each source's multiset hash
    (:attr:`~calibcli.summaries.sources.Source.rows_hash`); None when there are none. With
    ``parts`` (one label per source) only sources of different parts are compared: a part made
    with --all-runs pools copies on purpose. As for parts (:func:`same_rows`), only sources of
    at least ``FLOOR`` rows whose values tell rows apart are compared, never two byte ranges of
    one input, and never two sources of parts in ``with_ids`` (parts whose rows record their
    ids, which tell whether a row repeats)."""
    seen: dict[tuple[int, int], list[tuple[Any, Any]]] = {}
    labels = parts if parts is not None else range(len(sources))
    for source, label in zip(sources, labels, strict=True):
        held = source.rows_hash
        if source.skipped is not None or held is None or not held[1] or source.rows < FLOOR:
            continue
        found = seen.setdefault((source.rows, held[0]), [])
        for earlier, where in found:
            told = where in with_ids and label in with_ids
            if where != label and earlier.content != source.content and not told:
                return earlier, source
        found.append((source, label))
    return None


def union_of_others(sources: Any) -> tuple[Any, list[Any]] | None:
    """The first input whose rows are those of all the other inputs together (a file beside
    the shards it was split into, or joined from), by the multiset hashes of their rows
    (:attr:`~calibcli.summaries.sources.Source.rows_hash`, which add up), with those others; None
    when there is none. Byte ranges of one input count as that input. Looked for only among
    three inputs or more, for an input of at least ``FLOOR`` rows whose values tell a copy, and
    only when every other input's hash is known."""
    inputs: dict[str, list[Any]] = {}
    for source in sources:
        if source.skipped is None and source.rows:
            inputs.setdefault(source.content, []).append(source)
    if len(inputs) < 3:
        return None
    held: dict[str, tuple[int, int, bool]] = {}
    for content, pieces in inputs.items():
        if any(p.rows_hash is None for p in pieces):
            return None
        total = sum(p.rows_hash[0] for p in pieces) % (1 << 64)
        held[content] = (sum(p.rows for p in pieces), total, all(p.rows_hash[1] for p in pieces))
    rows = sum(r for r, _, _ in held.values())
    total = sum(t for _, t, _ in held.values()) % (1 << 64)
    for content, (mine, hashed, apart) in held.items():
        # the others' rows and hash: everything's less this input's
        if apart and mine >= FLOOR and 2 * mine == rows and (2 * hashed - total) % (1 << 64) == 0:
            others = [ps[0] for c, ps in inputs.items() if c != content]
            return inputs[content][0], others
    return None


def check_source_copies(groups: list[tuple[str | None, Any]], remedy: str) -> None:
    """SummaryMismatch when a source of one part holds the rows of a source of another
    (:func:`same_sources`): ``groups`` are (label, summary) pairs, the label None for the
    files read here. Names both sources and the parts that hold them."""
    sources, labels = [], []
    for label, summary in groups:
        for source in summary.sources:
            sources.append(source)
            labels.append(label)
    with_ids = {label for label, summary in groups if summary.row_ids is not None}
    kind = groups[0][1].kind if groups else "calibration"
    where = {id(s): label for s, label in zip(sources, labels, strict=True)}

    def named(source: Any) -> str:
        label = where[id(source)]
        return source.display if label is None else f"{source.display} (in {label})"

    twice = same_sources(sources, labels, with_ids)
    if twice is not None:
        first, later = twice
        raise SummaryMismatch(
            f"{named(later)} holds the rows of {named(first)} ({same_rows_text(kind)}): one "
            f"input counted twice, by other routes; {remedy}",
            part=where[id(later)] or where[id(first)],
        )
    whole = None if with_ids else union_of_others(sources)
    # only a part that pooled a file and all its shards did so on purpose (--all-runs); files
    # read here beside a part, or parts merged, that hold them are counted twice
    if whole is not None and len({where[id(s)] for s in (whole[0], *whole[1])}) > 1:
        union, others = whole
        raise SummaryMismatch(
            f"{named(union)} holds the rows of {listed([named(s) for s in others])} together "
            f"({same_rows_text(kind)}): one input counted twice, by other routes; {remedy}",
            part=where[id(union)] or where[id(others[0])],
        )


def listed(names: list[str], shown: int = 3) -> str:
    """Names in a message: the first ``shown``, and how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    if len(names) <= shown:
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{', '.join(names[:shown])}{more}"
