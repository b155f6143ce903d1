"""Where a summary's rows came from: its sources, each known by its content, with its format,
byte range and row count, and the helpers that merge and describe them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from calibcli.summaries.tables import BinTable


@dataclass(frozen=True, eq=False)
class Source:
    """One input a summary read (or a byte range of one).

    ``name`` is the source as given (a path, or ``-`` for standard input) and never identifies
    it; ``content`` does (a hash of the bytes, see :mod:`calibcli.io.content`). ``format`` is the
    format its rows were read as (None when it held none), ``skipped`` the reason it was left
    out. ``table`` is its own bin table, kept without ``--by`` for per-file figures.
    """

    name: str
    content: str
    format: str | None
    rows: int
    start: int = 0
    stop: int | None = None
    skipped: str | None = None
    table: BinTable | None = None

    @property
    def display(self) -> str:
        """How messages and reports name it: the path as given, or ``<stdin>``."""
        return "<stdin>" if self.name == "-" else self.name

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "content": self.content,
            "format": self.format,
            "rows": self.rows,
            "start": self.start,
            "stop": self.stop,
            "skipped": self.skipped,
        }


def overall_format(sources: Iterable[Source], forced: str | None = None) -> str:
    """The report's format: the one every source with rows is in, else ``mixed``."""
    found = {s.format for s in sources if s.format is not None}
    if not found:
        return forced or "jsonl"
    return found.pop() if len(found) == 1 else "mixed"


def source_formats(sources: Iterable[Source]) -> dict[str, str]:
    """Display name -> format, for every source read (skipped ones included), in input order."""
    out: dict[str, str] = {}
    for s in sources:
        if s.format is not None:
            out[s.display] = s.format
    return out


def coalesce(sources: list[Source], merge_tables: Any) -> list[Source]:
    """Adjacent byte ranges of one input (worker parts) as one source."""
    out: list[Source] = []
    for s in sources:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.content == s.content
            and prev.name == s.name
            and prev.stop is not None
            and prev.stop == s.start
            and prev.skipped is None
            and s.skipped is None
        ):
            out[-1] = replace(
                prev,
                rows=prev.rows + s.rows,
                stop=s.stop,
                format=prev.format or s.format,
                table=merge_tables(prev.table, s.table),
            )
        else:
            out.append(s)
    return out
