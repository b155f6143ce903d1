"""Where a summary's rows came from: its sources, each known by its content, with its format,
byte range and row count (and the inspect-ai confidence mode), and the helpers that merge and
describe them."""

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
    ``inspect_confidence`` is the ``--inspect-confidence`` mode its inspect-ai rows took their
    confidences by, ``auto`` resolved (:func:`joined_mode`); None for rows of other formats,
    and where it was not recorded (a summary file written before it was). ``model`` and
    ``epochs`` are what its run recorded (an lm-eval run's model, an inspect-ai log's
    ``eval.model`` and ``eval.config.epochs``, a HELM file's train trials as its epochs), kept
    so that a summary read away from the files still knows them; None where the run names
    none or they were not recorded.
    """

    name: str
    content: str
    format: str | None
    rows: int
    start: int = 0
    stop: int | None = None
    skipped: str | None = None
    table: BinTable | None = None
    inspect_confidence: str | None = None
    model: str | None = None
    epochs: int | None = None

    @property
    def display(self) -> str:
        """How messages and reports name it: the path as given, or ``<stdin>``."""
        return "<stdin>" if self.name == "-" else self.name

    def describe(self) -> dict[str, Any]:
        found = {
            "name": self.name,
            "content": self.content,
            "format": self.format,
            "rows": self.rows,
            "start": self.start,
            "stop": self.stop,
            "skipped": self.skipped,
        }
        # other formats' entries are as they were
        for key in ("inspect_confidence", "model", "epochs"):
            if getattr(self, key) is not None:
                found[key] = getattr(self, key)
        return found


def joined_mode(modes: Iterable[str | None]) -> str | None:
    """The one ``--inspect-confidence`` value naming how inspect-ai rows taken by ``modes``
    got their confidences (each the mode of a sample, :func:`calibcli.formats.taken_mode`, or
    of rows already joined; None for no rows): their common mode, or ``auto`` where
    answer-token and sequence rows meet (auto's own rule). None for no rows, or for modes that
    no one reading mixes."""
    found = {m for m in modes if m is not None}
    if len(found) == 1:
        return found.pop()
    if len(found) > 1 and found <= {"auto", "answer-token", "sequence"}:
        return "auto"
    return None


def same_rule(fitted: str, taken: str, given: str) -> bool:
    """Whether rows read with ``--inspect-confidence given``, whose confidences were taken by
    ``taken`` (:func:`joined_mode`), got them by the rule of the rows a calibrator was fitted
    on, taken by ``fitted``: the same mode; or, when those were auto rows of both kinds, auto's
    own rule (answer-token where a sample has the answer line, else sequence), which rows read
    with ``auto`` keep, and rows read with ``answer-token`` too (each one has the line)."""
    return taken == fitted or (fitted == "auto" and given in ("auto", "answer-token"))


def inspect_mode(sources: Iterable[Source]) -> str | None:
    """The ``--inspect-confidence`` mode the inspect-ai rows of ``sources`` took their
    confidences by (:func:`joined_mode` of theirs); None without inspect-ai rows, or when a
    source of them does not say (a summary file written before the mode was recorded)."""
    modes = [s.inspect_confidence for s in sources if s.format == "inspect-ai" and s.rows]
    return None if not modes or None in modes else joined_mode(modes)


def repeated_questions(sources: Iterable[Source]) -> bool:
    """Whether a run read scored each sample several times (a source's recorded epochs > 1):
    its rows are then not one answer per question."""
    return most_epochs(sources) is not None


def most_epochs(sources: Iterable[Source]) -> int | None:
    """The most times a run read scored each sample (its recorded epochs), when above 1: no
    question holds more rows than that. None when every run scored each sample once."""
    most = max((s.epochs or 0 for s in sources if s.skipped is None), default=0)
    return most if most > 1 else None


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
                inspect_confidence=joined_mode([prev.inspect_confidence, s.inspect_confidence]),
            )
        else:
            out.append(s)
    return out
