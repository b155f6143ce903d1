"""Inputs that hold the same rows though no source of theirs shares bytes with the other's: one
input summarized twice by other routes (plain and compressed, from a file and from standard
input, its rows in another order), which the sources' content hashes cannot tell.

A calibration summary keeps a fingerprint of its rows (:mod:`calibcli.summaries.fingerprint`),
whose row count and hash sum are an exact multiset hash: the same rows give the same fingerprint
whatever their order and the bytes that held them. It is one fingerprint per summary, not one
per source, so a part is compared whole: a copy of one source among several of a part is not
seen. Below ``FLOOR`` rows on either side, or with values repeated so much that other rows share
them (a few verbal levels), equal rows may be two inputs' by chance and nothing is said. A
perplexity summary keeps no fingerprint and is not compared. Files read together are compared
source by source (:func:`same_sources`), each source's rows making their own fingerprint.
"""

from __future__ import annotations

from typing import Any

from calibcli.summaries.ids import SummaryMismatch

FLOOR = 30
"""Rows each side must hold for equal rows to be taken for a copy."""

SAME_ROWS = "the same confidences and outcomes, in any order"


def _counted(summary: Any) -> list[Any]:
    return [s for s in summary.sources if s.skipped is None and s.rows]


def same_rows(a: Any, b: Any) -> bool:
    """Whether summaries ``a`` and ``b`` hold the same multiset of rows, at least ``FLOOR`` each.
    Never for byte ranges of one input (the parts share a source's content: whether they
    overlap is told by their ranges), for summaries without a fingerprint, for rows whose
    values repeat so much that two shards of other rows may hold the same multiset (coarse
    confidences, :meth:`~calibcli.summaries.fingerprint.RowFingerprint.tells_rows_apart`), nor
    for two summaries that both record their rows' ids (the ids tell whether rows repeat)."""
    fa, fb = getattr(a, "fingerprint", None), getattr(b, "fingerprint", None)
    if fa is None or fb is None or min(fa.rows, fb.rows) < FLOOR:
        return False
    if not (fa.tells_rows_apart() and fb.tells_rows_apart()):
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


def same_sources(sources: Any) -> tuple[Any, Any] | None:
    """The first two sources read here that hold the same rows in other bytes (a file and a
    copy of its rows in another order, or re-encoded), by the fingerprint each source's rows
    made as they were read; None when there are none. As for parts (:func:`same_rows`), only
    sources of at least ``FLOOR`` rows whose values tell rows apart are compared: a source
    without a fingerprint (a summary file's), and byte ranges of one input, never are."""
    seen: dict[tuple[int, int], Any] = {}
    for source in sources:
        made = source.fingerprint
        if source.skipped is not None or made is None or made.rows < FLOOR:
            continue
        if not made.tells_rows_apart():
            continue
        earlier = seen.setdefault((made.rows, made.total), source)
        other = earlier is not source and earlier.content != source.content
        if other and earlier.fingerprint.same_rows(made):
            return earlier, source
    return None
