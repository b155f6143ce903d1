"""The refusal of files read together that hold the same rows in other bytes: one input counted
twice by other routes (plain and compressed, from a file and from standard input, its rows in
another order or written again by another tool), which the byte checks of the runs cannot see.

The rows are compared by content (:func:`calibcli.summaries.same_sources`,
:func:`calibcli.summaries.union_of_others`) whether or not they carry ids: the ids of a copy
need not be its original's (``"7"`` in a JSON file, ``7`` in the CSV written from it, or ids
renamed), so ids that differ say nothing of whether the rows do. A file that holds part of
another's rows (beside some of the shards it was split into) is told by the sketches of their
rows (:func:`calibcli.summaries.contained_sources`), of each row's confidence and outcome, or
NLL and token count.
"""

from __future__ import annotations

from typing import Any

from calibcli.errors import InputError, shown_name


def refuse_same_rows(summary: Any, all_runs: bool) -> None:
    """:func:`same_rows_twice` on a reading's sources, unless ``all_runs`` pools them on
    purpose."""
    if not all_runs:
        same_rows_twice(summary.sources, summary.kind)


def same_rows_twice(sources: Any, kind: str = "calibration") -> None:
    """InputError when two files read here hold the same rows in other bytes (the rows of one
    in another order, or written again), or one holds the rows of some others together (a file
    beside its shards), or many of its rows are another's (a file beside some of its shards):
    they would count twice (:func:`calibcli.summaries.same_sources`)."""
    from calibcli.io.runs import COPY
    from calibcli.summaries import listed, same_rows_text, same_sources, union_of_others

    twice = same_sources(sources, kind=kind)
    if twice is not None:
        first, later, note = twice  # named as messages name a source (standard input as <stdin>)
        also = shown_name(first.display)
        held = f"holds the rows of {also} ({same_rows_text(kind)}){note}: {COPY}"
        raise InputError(later.display, None, held)
    whole = union_of_others(sources, kind)
    if whole is not None:  # a file beside the shards it was split into
        union, others, note = whole
        also = listed([shown_name(s.display) for s in others])
        held = f"holds the rows of {also} together ({same_rows_text(kind)}){note}: {COPY}"
        raise InputError(union.display, None, held)
    held = contained_rows(sources)
    if held is not None:
        inner, text = held
        raise InputError(inner.display, None, f"{text}: {COPY.replace('its rows', 'they', 1)}")


def contained_rows(sources: Any) -> tuple[Any, str] | None:
    """The source of an input many of whose rows other inputs hold
    (:func:`calibcli.summaries.contained_sources`), and how a message says so; None when there
    is none."""
    from calibcli.summaries import contained_sources, held_text

    held = contained_sources(sources)
    if held is None:
        return None
    inner, holders, share = held
    return inner, held_text(share, [shown_name(s.display) for s in holders])
