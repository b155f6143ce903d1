"""Where a summary's rows came from: its sources, each known by its content, with its format,
byte range and row count (and the inspect-ai confidence mode), and the helpers that merge and
describe them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from calibcli.errors import shown_name
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
    and where it was not recorded (a summary file written before it was). ``inspect_counts``
    is, for rows auto took both ways (``auto``), how many samples it took by each mode
    (answer-token's, sequence's), to say so (:meth:`mode_counts`); None otherwise, and where
    they were not recorded (a reader's source, its rows not yet counted, gives the samples it
    decoded whatever their mode: :func:`joined_taking`). ``model`` and ``epochs`` are what its
    run recorded (an lm-eval run's model, an inspect-ai log's ``eval.model`` and
    ``eval.config.epochs``, a HELM file's train trials as its epochs), kept
    so that a summary read away from the files still knows them; None where the run names
    none or they were not recorded. A range read with ``--part k/K`` records ``size``, the
    whole input's bytes, and ``part``, the first and last of the K pieces it holds (k, k, K; a
    run of adjacent pieces once merged), so that pieces left out of a merge are known; both
    are None for a whole input, another range, or a summary written before they were recorded.
    ``pooled`` is the most rows a question holds among inputs pooled with ``--all-runs`` whose
    ids repeat across them (re-runs of the same questions,
    :func:`calibcli.io.pooled_ids.pooled_repeats`), where above what its run's ``epochs`` say;
    None otherwise.
    ``rows_hash`` is the multiset hash of the rows read from it (of each row's confidence and
    outcome, or NLL and token count: the sum of their hashes modulo 2**64,
    :class:`~calibcli.summaries.fingerprint.RowFingerprint`) and whether their values tell rows
    apart, to tell two inputs of the same rows in other bytes
    (:func:`~calibcli.summaries.copies.same_sources`); None where it held no rows or it was not
    recorded (a summary file written before it was). ``float32_hash`` is the same sum with
    every confidence, or NLL, rounded to the nearest float32
    (:func:`~calibcli.summaries.fingerprint.float32_hash_sum`,
    :func:`~calibcli.summaries.fingerprint.perplexity_float32_sum`), so that rows written again
    through a float32 column are told too; None where it held no rows or it was not recorded
    (whether the values tell a copy is judged by ``rows_hash``).
    ``rows_sketch`` is the sketch of its rows' distinct values: their smallest hashes, sorted,
    and those of them that more than one of its rows holds
    (:class:`~calibcli.summaries.fingerprint.SourceSketch`), to tell an input that holds part
    of another's rows (:func:`~calibcli.summaries.copies.contained_sources`); None where it
    held no rows or it was not recorded.
    ``content_filtered`` is how many of its sequences were left out of perplexity rows, the
    content filter having stopped them (OpenAI choices whose ``finish_reason`` is
    ``content_filter``): said in a warning (:func:`filtered_said`); None for none.
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
    size: int | None = None
    part: tuple[int, int, int] | None = None
    rows_hash: tuple[int, bool] | None = None
    pooled: int | None = None
    float32_hash: int | None = None
    rows_sketch: tuple[Any, Any] | None = None  # (sample, repeats): numpy arrays of uint64
    inspect_counts: tuple[int, int] | None = None
    content_filtered: int | None = None

    def mode_counts(self) -> tuple[int, int] | None:
        """How many of its inspect-ai samples took their confidences by answer-token and by
        sequence: ``inspect_counts`` where recorded, else all of its rows one way when they
        took one of those modes; None for other modes and formats, and for counts not
        recorded."""
        if self.inspect_counts is not None:
            return self.inspect_counts
        mode = self.inspect_confidence
        if mode == "answer-token":
            return self.rows, 0
        if mode == "sequence":
            return 0, self.rows
        return None

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
        for key in ("inspect_confidence", "model", "epochs", "size", "pooled", "content_filtered"):
            if getattr(self, key) is not None:
                found[key] = getattr(self, key)
        if self.part is not None:
            found["part"] = list(self.part)
        if self.inspect_counts is not None:
            found["inspect_counts"] = list(self.inspect_counts)
        return found

    def recorded(self) -> dict[str, Any]:
        """:meth:`describe` with what a summary file keeps beside it: ``rows_hash`` as
        ``[sum in hex, apart]``, ``float32_hash`` as the sum in hex, ``rows_sketch`` as
        ``[sample, repeats]`` (:func:`~calibcli.summaries.fingerprint.sketch_text`)."""
        from calibcli.summaries.fingerprint import sketch_text

        found = self.describe()
        if self.rows_hash is not None:
            found["rows_hash"] = [f"{self.rows_hash[0]:016x}", self.rows_hash[1]]
        if self.float32_hash is not None:
            found["float32_hash"] = f"{self.float32_hash:016x}"
        if self.rows_sketch is not None:
            found["rows_sketch"] = sketch_text(self.rows_sketch)
        return found


def recorded_hashes(entry: Any) -> dict[str, Any]:
    """A summary file's source entry's ``rows_hash``, ``float32_hash`` and ``rows_sketch``
    (:meth:`Source.recorded`; each absent in summaries written before it was recorded), as
    :class:`Source` fields; TypeError or ValueError when bad."""
    from calibcli.summaries.fingerprint import sketch_of

    value, rounded, sketch = (entry.get(k) for k in ("rows_hash", "float32_hash", "rows_sketch"))
    rows_hash = None
    if value is not None:
        total, apart = value
        if type(apart) is not bool:
            raise TypeError(value)
        rows_hash = _hex(total), apart
    return {
        "rows_hash": rows_hash,
        "float32_hash": None if rounded is None else _hex(rounded),
        "rows_sketch": None if sketch is None else sketch_of(sketch),
    }


def recorded_cut(entry: Any) -> dict[str, Any]:
    """A summary file's source entry's ``size`` and ``part`` (a range read with ``--part``;
    absent in other entries and in summaries written before they were recorded), as
    :class:`Source` fields; TypeError when bad."""
    size, part = entry.get("size"), entry.get("part")
    if size is not None and (type(size) is not int or size < 0):
        raise TypeError(size)
    if part is None:
        return {"size": size, "part": None}
    if not isinstance(part, list) or len(part) != 3 or any(type(k) is not int for k in part):
        raise TypeError(part)
    if not 1 <= part[0] <= part[1] <= part[2]:
        raise TypeError(part)
    return {"size": size, "part": (part[0], part[1], part[2])}


def recorded_counts(entry: Any) -> dict[str, Any]:
    """A summary file's source entry's ``inspect_counts`` and ``content_filtered`` (each absent
    where none were recorded), as :class:`Source` fields; TypeError or ValueError when bad."""
    filtered = entry.get("content_filtered")
    if filtered is not None and (type(filtered) is not int or filtered < 1):
        raise TypeError(filtered)
    value = entry.get("inspect_counts")
    if value is None:
        return {"inspect_counts": None, "content_filtered": filtered}
    answer, sequence = value
    if not all(type(n) is int and n >= 0 for n in (answer, sequence)):
        raise TypeError(value)
    return {"inspect_counts": (answer, sequence), "content_filtered": filtered}


def joined_taking(sources: Iterable[Source]) -> dict[str, Any]:
    """How the rows of ``sources`` (ranges of one input, or a source and the workers' shares of
    it) took their confidences together, as the :class:`Source` fields: their joined mode
    (:func:`joined_mode`) and, where it is ``auto``, the samples taken by each mode (None where
    a source's are not known)."""
    sources = list(sources)
    mode = joined_mode(s.inspect_confidence for s in sources)
    counts = [
        s.mode_counts()
        if s.inspect_counts is not None or (s.rows and s.format == "inspect-ai")
        else (0, 0)
        for s in sources
    ]
    joined = None
    if mode == "auto" and None not in counts:
        joined = sum(c[0] for c in counts), sum(c[1] for c in counts)
    return {"inspect_confidence": mode, "inspect_counts": joined}


def _hex(value: Any) -> int:
    """A 64-bit sum written as 16 hex digits; TypeError or ValueError when bad."""
    if not isinstance(value, str) or len(value) != 16:
        raise TypeError(value)
    return int(value, 16)


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
    """The most times a run read scored each sample (its recorded epochs, or the rows of a
    question among re-runs pooled with it, ``pooled``), when above 1: no question holds more
    rows than that. None when every run scored each sample once."""
    found = (max(s.epochs or 0, s.pooled or 0) for s in sources if s.skipped is None)
    most = max(found, default=0)
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
                **joined_taking([prev, s]),
                content_filtered=(prev.content_filtered or 0) + (s.content_filtered or 0) or None,
                size=prev.size if prev.size == s.size else None,
                part=_joined_pieces(prev.part, s.part),
                rows_hash=_joined_hash(prev, s),
                float32_hash=_joined_float32(prev, s),
                rows_sketch=_joined_sketch(prev, s),
            )
        else:
            out.append(s)
    return out


def _joined_hash(first: Source, then: Source) -> tuple[int, bool] | None:
    """The multiset hash of two adjacent ranges' rows together (the sums add; whether the
    values tell a copy, :func:`~calibcli.summaries.fingerprint.joined_key`); None when a range
    held rows without recording it."""
    from calibcli.summaries.fingerprint import joined_key

    if first.rows_hash is None or then.rows_hash is None:
        return None if first.rows and then.rows else first.rows_hash or then.rows_hash
    return joined_key([(first.rows, first.rows_hash), (then.rows, then.rows_hash)])


def _joined_float32(first: Source, then: Source) -> int | None:
    """The float32 multiset hash of two adjacent ranges' rows together (the sums add); None
    when a range held rows without recording it."""
    if first.float32_hash is None or then.float32_hash is None:
        return None if first.rows and then.rows else first.float32_hash or then.float32_hash
    return (first.float32_hash + then.float32_hash) % (1 << 64)


def _joined_sketch(first: Source, then: Source) -> tuple[Any, Any] | None:
    """The sketch of two adjacent ranges' rows together
    (:func:`~calibcli.summaries.fingerprint.joined_sketch`); None when a range held rows
    without recording it."""
    from calibcli.summaries.fingerprint import joined_sketch

    if first.rows_sketch is None or then.rows_sketch is None:
        return None if first.rows and then.rows else _either(first, then).rows_sketch
    return joined_sketch([first.rows_sketch, then.rows_sketch])


def _either(first: Source, then: Source) -> Source:
    """The one of two ranges that held rows (``first`` when both or neither did)."""
    return then if then.rows and not first.rows else first


def _joined_pieces(
    first: tuple[int, int, int] | None, then: tuple[int, int, int] | None
) -> tuple[int, int, int] | None:
    """The pieces of ``--part`` two adjacent ranges hold together; None unless both were cut
    into the same number of pieces, ``then`` holding the ones after ``first``'s."""
    if first is None or then is None or first[2] != then[2] or then[0] != first[1] + 1:
        return None
    return (first[0], then[1], first[2])


def _missing_pieces(held: list[tuple[int, int, int]]) -> tuple[list[int], int] | None:
    """(the pieces of ``--part k/K`` not held, K) when every range says it was cut into the
    same K pieces, else None."""
    if not held or len({p[2] for p in held}) != 1:
        return None
    count = held[0][2]
    have = {k for first, last, _ in held for k in range(first, last + 1)}
    return [k for k in range(1, count + 1) if k not in have], count


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _unread(ranges: list[Source]) -> str | None:
    """What ``ranges`` of one input (read with ``--part``, the same size recorded) leave
    unread, as a message says it; None when they hold every byte."""
    size, gaps, at = ranges[0].size, [], 0
    for s in sorted(ranges, key=lambda s: s.start):
        if s.start > at:
            gaps.append(f"{at:,}-{s.start:,}")
        at = max(at, s.stop)
    if at < size:
        gaps.append(f"{at:,}-{size:,}")
    if not gaps:
        return None
    bytes_ = f"bytes {_listed(gaps)} of {size:,}"
    missing = _missing_pieces([s.part for s in ranges if s.part is not None])
    if missing is None or not missing[0] or any(s.part is None for s in ranges):
        return f"leave {bytes_} unread"
    pieces, count = missing
    shown = _listed([f"{k}/{count}" for k in pieces])
    return f"cover {count - len(pieces)} of its {count} pieces (--part {shown} missing: {bytes_})"


def _partial(sources: Iterable[Source]) -> list[tuple[str, str]]:
    """(name, what its ranges leave unread) of each input read with ``--part`` whose ranges
    here do not hold all of it."""
    by_content: dict[str, list[Source]] = {}
    for s in sources:
        if s.skipped is None and s.stop is not None and s.size is not None and s.content:
            by_content.setdefault(s.content, []).append(s)
    found = []
    for ranges in by_content.values():
        if all(s.size == ranges[0].size for s in ranges):
            unread = _unread(ranges)
            if unread is not None:
                found.append((ranges[0].display, unread))
    return found


def partial_inputs(sources: Iterable[Source]) -> list[str]:
    """What to say of each input read with ``--part`` whose ranges here leave some of its
    bytes unread (a piece whose summary was not merged): the figures are then of part of the
    file, and every gate on them fails closed. Inputs read whole, and ranges that do not
    record the whole input's size (another reading, a summary written before it was
    recorded), are not judged."""
    return [
        f"the parts of {name} {unread}: the figures are of part of the file, and every gate "
        "on them fails"
        for name, unread in _partial(sources)
    ]


FILTERED = 'stopped by the content filter (finish_reason "content_filter")'
"""What the warning about sequences left out for the content filter says of them."""


def filtered_said(warnings: Iterable[str], sources: Iterable[Source]) -> tuple[str, ...]:
    """``warnings`` with one warning per input whose sequences the content filter stopped
    (its sources' ``content_filtered``, the byte ranges of one input added up), said again in
    place of what they said of them before (a part's, of its own share), e.g. ``out.jsonl: 30
    of 40 sequences were stopped by the content filter (finish_reason "content_filter") and
    are left out: ...``. Such a sequence is not a row: no figure, and no minimum, counts it."""
    counts: dict[tuple[str, str], list[int]] = {}
    for s in sources:
        if s.skipped is None and s.content_filtered:
            held = counts.setdefault((s.name, s.content), [0, 0])
            held[0] += s.content_filtered
            held[1] += s.rows
    said = [
        f"{shown_name('<stdin>' if name == '-' else name)}: {left} of {left + rows} sequences "
        f"{'was' if left == 1 else 'were'} {FILTERED} and {'is' if left == 1 else 'are'} left "
        "out: the filter cut their text, so their logprobs are not those of the text the model "
        f"would have written; the figures and --min-rows count the {rows} read"
        for (name, _), (left, rows) in counts.items()
    ]
    kept = [w for w in warnings if FILTERED not in w]
    return tuple(dict.fromkeys([*kept, *said]))


def partial_reason(sources: Iterable[Source]) -> str | None:
    """Why every gate fails closed on rows read from ``sources`` (:func:`partial_inputs`):
    they are only part of an input's; None when every input is whole."""
    names = [name for name, _ in _partial(sources)]
    if not names:
        return None
    return f"the summary covers only part of {_listed(names)} (see the warning)"


def one_model_groups(
    sources: Iterable[Source],
    groups: tuple[str, ...] | None,
    task_of: Callable[[str], str] | None,
    models_of: Callable[[str | None], list[str]],
) -> frozenset[str]:
    """The --by ``groups`` whose rows are known to be one model's, of the ``sources`` read
    (``models_of`` the models a source's recorded ``model`` names). All of an lm-eval file's
    rows are in the group ``task_of`` its name (given under --by task); any other source's
    group is not known (nor one not among ``groups``): its rows may be in any. A group holds the
    models of its own sources and those of every source whose group is not known; when that is
    one model, and each of those sources names its model, the group is that model's sample. A
    source that holds rows and names no model (native rows, standard input, a run that does
    not say) may be any model's: its group, or every group where its group is not known, is
    not one model's."""
    from calibcli.summaries.group_known import group_sources

    return frozenset(group_sources(sources, groups, task_of, models_of).models)
