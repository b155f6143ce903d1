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
row's NLL and token count). Files read together are compared input by input
(:func:`same_sources`), the pieces of one input (byte ranges, ``--part`` pieces in several
summaries) added up first, and each against some of the others together
(:func:`union_of_others`: a file holding the rows of its shards, whatever else is read).
Rows are compared whether or not they carry ids: a copy's ids need not be its original's (``"7"``
in a JSON file is ``7`` in the CSV written from it; ids renamed), and two inputs of other rows
under the same ids are told apart by their rows. Each source also keeps the multiset hash of
its rows with every confidence, or NLL, rounded to float32
(:attr:`~calibcli.summaries.sources.Source.float32_hash`): rows written again through a float32
column (Parquet, or a CSV written from one) hold other doubles, and are told by it, under the
same rules (whether their values tell a copy is judged from the exact rows); so are NLLs
written from float32 losses with all their digits and a copy read as float32's shortest
digits. An input that holds only part of another's rows is told by the sketches of their rows
(:func:`contained_sources`, :mod:`calibcli.summaries.contained`). A summary file an earlier
calibcli wrote records none of these, or not all: beside other inputs of rows it is refused
(:func:`unchecked_part`), since whether they hold the same rows cannot be told; alone it is read.
"""

from __future__ import annotations

from copy import copy
from typing import Any

from calibcli.summaries.fingerprint import joined_tells_copies
from calibcli.summaries.ids import SummaryMismatch

FLOOR = 30
"""Rows each side must hold for equal rows to be taken for a copy."""

SAME_ROWS = "the same confidences and outcomes, in any order"
FLOAT32 = " (their confidences equal as float32)"
"""What a refusal adds when the rows are the same only with their confidences as float32."""
FLOAT32_NLL = " (their NLLs equal as float32)"
"""What a refusal of perplexity rows adds when they are the same only with their NLLs as
float32."""


def same_rows_text(kind: str) -> str:
    """How a message says two inputs hold the same rows, for a summary of ``kind``."""
    return "the same NLLs and token counts, in any order" if kind == "perplexity" else SAME_ROWS


def _noted(note: str, kind: str) -> str:
    """A refusal's note (``FLOAT32`` or "") as it reads for rows of ``kind``."""
    return FLOAT32_NLL if note and kind == "perplexity" else note


def _counted(summary: Any) -> list[Any]:
    return [s for s in summary.sources if s.skipped is None and s.rows]


def same_rows(a: Any, b: Any) -> bool:
    """Whether summaries ``a`` and ``b`` hold the same multiset of rows, at least ``FLOOR`` each.
    Never for byte ranges of one input (the parts share a source's content: whether they
    overlap is told by their ranges), for summaries without a fingerprint, for rows whose
    values repeat so much that two shards of other rows may hold the same multiset (a few
    levels, :meth:`~calibcli.summaries.fingerprint.RowFingerprint.tells_copies_apart`).
    Whether the rows record ids does not matter: a copy's ids need not be its original's."""
    fa, fb = getattr(a, "fingerprint", None), getattr(b, "fingerprint", None)
    if fa is None or fb is None or min(fa.rows, fb.rows) < FLOOR:
        return False
    if not (fa.tells_copies_apart() and fb.tells_copies_apart()):
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


class _Input:
    """One input's rows among sources: every piece of one content (byte ranges read apart,
    ``--part`` pieces in several summaries) added up, since the multiset hashes add; the
    labels of the parts that hold its pieces; its hash None when a piece's is unknown."""

    def __init__(self, first: Any) -> None:
        self.first, self.pieces, self.labels = first, [], []
        self.rows, self.total, self.known = 0, 0, True
        self.total32, self.known32 = 0, True  # with confidences (NLLs) as float32
        self.told: list[tuple[int, bool]] = []  # each piece's rows, and whether it tells a copy
        self.sketches: list[Any] | None = []  # each piece's sketch; None when one's is unknown

    def add(self, source: Any, label: Any) -> None:
        self.pieces.append(source)
        self.labels.append(label)
        self.rows += source.rows
        if source.rows_hash is None:
            self.known = False
        else:
            self.total = (self.total + source.rows_hash[0]) % _WRAP
            self.told.append((source.rows, source.rows_hash[1]))
        sketch = getattr(source, "rows_sketch", None)  # none in older summaries
        if sketch is None or self.sketches is None:
            self.sketches = None
        else:
            self.sketches.append(sketch)
        rounded = getattr(source, "float32_hash", None)  # none in older summaries
        if rounded is None:
            self.known32 = False
        else:
            self.total32 = (self.total32 + rounded) % _WRAP

    def as_float32(self) -> _Input:
        """This input with its float32 hash as its hash (unknown when a piece lacks it)."""
        out = copy(self)
        out.total, out.known = self.total32, self.known and self.known32
        return out

    def judged(self) -> bool:
        """Whether equal rows elsewhere say that these are copied: at least ``FLOOR`` of them,
        their hash known, their values telling a copy."""
        return self.known and self.rows >= FLOOR and joined_tells_copies(self.told)


_WRAP = 1 << 64


def _inputs(sources: Any, labels: Any) -> list[_Input]:
    """The inputs ``sources`` hold, in the order each first appears (sources skipped or of no
    rows left out)."""
    found: dict[str, _Input] = {}
    for source, label in zip(sources, labels, strict=True):
        if source.skipped is None and source.rows:
            found.setdefault(source.content, _Input(source)).add(source, label)
    return list(found.values())


def _one_part(inputs: Any) -> bool:
    """Whether every piece of ``inputs`` is in one part (pooled there on purpose)."""
    return len({label for held in inputs for label in held.labels}) == 1


def _same_inputs(sources: Any, parts: Any) -> tuple[_Input, _Input, str] | None:
    """The first two inputs of the same rows, and ``FLOAT32`` when they are the same only with
    their confidences as float32 (else "")."""
    inputs = _inputs(sources, parts if parts is not None else range(len(sources)))
    seen: dict[tuple[int, int], list[_Input]] = {}
    seen32: dict[tuple[int, int], list[_Input]] = {}
    for held in inputs:
        if not held.judged():
            continue
        found = seen.setdefault((held.rows, held.total), [])
        found32 = seen32.setdefault((held.rows, held.total32), []) if held.known32 else []
        for earlier, note in [*((e, "") for e in found), *((e, FLOAT32) for e in found32)]:
            if not (parts is not None and _one_part((earlier, held))):
                return earlier, held, note
        found.append(held)
        if held.known32:
            found32.append(held)
    return None


def same_sources(
    sources: Any, parts: Any = None, kind: str = "calibration"
) -> tuple[Any, Any, str] | None:
    """The first two sources that hold the same rows in other bytes (a file and a copy of its
    rows in another order, or written again), by each input's multiset hash
    (:attr:`~calibcli.summaries.sources.Source.rows_hash`, the pieces of one input added up:
    a copy beside the ``--part`` pieces of its original is one too); None when there are none.
    With ``parts`` (one label per source) inputs held by one part alone are not compared: a
    part made with --all-runs pools copies on purpose. As for parts (:func:`same_rows`), only
    inputs of at least ``FLOOR`` rows whose values tell a copy are compared, whether or not
    their rows record ids. Inputs also hold the same rows when they do with every confidence
    (NLL, for perplexity rows: ``kind``) rounded to float32
    (:attr:`~calibcli.summaries.sources.Source.float32_hash`): the pair comes with ``FLOAT32``
    (``FLOAT32_NLL``) then (else ""), for the message to say so."""
    pair = _same_inputs(sources, parts)
    return None if pair is None else (pair[0].first, pair[1].first, _noted(pair[2], kind))


SEARCHED = 16
"""Inputs on each side of the search for the others whose rows add up to an input's (2 ** 16
sums each side): beyond twice as many inputs that could be among them, it is not searched."""
BUDGET = 1 << 22
"""Sums an input's search may list in all, over every input looked at, so that a folder of
many files is never held up."""
_SPREAD = 0x9E3779B97F4A7C15  # odd: a row count and a hash sum folded into one key, linearly


def _sums(items: list[_Input]) -> Any:
    """The key (:data:`_SPREAD`) of every subset of ``items``, subset i holding item k where
    bit k of i is set."""
    import numpy as np

    keys = np.zeros(1, np.uint64)
    for held in items:
        step = np.uint64((held.total + held.rows * _SPREAD) % _WRAP)
        keys = np.concatenate([keys, keys + step])  # uint64 arrays wrap modulo 2**64
    return keys


def _subsets(target: _Input, items: list[_Input]) -> list[list[_Input]]:
    """Each subset of two or more of ``items`` whose rows and hash sum are ``target``'s (by
    meeting in the middle: the sums of each half's subsets, one half's looked up for what the
    other's leave), every one checked exactly."""
    import numpy as np

    half = len(items) // 2
    low, high = items[:half], items[half:]
    lows, highs = _sums(low), _sums(high)
    order = np.argsort(highs, kind="stable")
    ranked = highs[order]
    want = np.uint64((target.total + target.rows * _SPREAD) % _WRAP)
    looked = want - lows  # what the high half must add to each low subset
    first = np.searchsorted(ranked, looked, side="left")
    last = np.searchsorted(ranked, looked, side="right")
    found = []
    for i in np.nonzero(last > first)[0].tolist():
        for j in order[first[i] : last[i]].tolist():
            chosen = [h for k, h in enumerate(low) if i >> k & 1]
            chosen += [h for k, h in enumerate(high) if j >> k & 1]
            rows = sum(h.rows for h in chosen)
            total = sum(h.total for h in chosen) % _WRAP
            if len(chosen) > 1 and rows == target.rows and total == target.total:
                found.append(chosen)
    return found


def _reachable(rows: int, items: list[_Input]) -> bool:
    """Whether some of ``items`` hold ``rows`` rows together (a subset sum of row counts)."""
    reach, mask = 1, (1 << (rows + 1)) - 1
    for held in items:
        reach = (reach | reach << held.rows) & mask
    return bool(reach >> rows & 1)


def _held_by_others(inputs: list[_Input], accept: Any) -> tuple[_Input, list[_Input]] | None:
    """The first input whose rows are those of two or more other inputs together, exactly (the
    rows and the multiset hashes add up), with those others, when ``accept(input, others)``;
    None when there is none. Only inputs whose rows tell a copy are judged, and only the
    inputs of known hashes and no more rows than it are looked among: all of them together at
    once (running sums over the inputs in order of their rows, so a folder of many files costs
    a sort), and their subsets while at most ``2 * SEARCHED`` and the budget lasts."""
    from bisect import bisect_right
    from itertools import accumulate

    ranked = sorted((h for h in inputs if h.known), key=lambda h: h.rows)
    place = {id(h): i for i, h in enumerate(inputs)}  # the others are named in input order
    sizes = [h.rows for h in ranked]
    rows_upto = [0, *accumulate(sizes)]
    totals_upto = [0, *accumulate(h.total for h in ranked)]
    spent = 0
    for target in inputs:
        if not target.judged():
            continue
        k = bisect_right(sizes, target.rows)  # the known inputs of no more rows, target among them
        if k - 1 < 2:
            continue
        every = rows_upto[k] - target.rows, (totals_upto[k] - target.total) % _WRAP
        if every == (target.rows, target.total):
            items = sorted((h for h in ranked[:k] if h is not target), key=lambda h: place[id(h)])
            if accept(target, items):
                return target, items  # all of them: known at once, however many
        if k - 1 > 2 * SEARCHED or spent > BUDGET:
            continue
        items = sorted((h for h in ranked[:k] if h is not target), key=lambda h: place[id(h)])
        if not _reachable(target.rows, items):
            continue
        spent += 1 << (len(items) - len(items) // 2)
        if spent > BUDGET:
            continue
        for chosen in _subsets(target, items):
            if accept(target, chosen):
                return target, chosen
    return None


def union_of_others(sources: Any, kind: str = "calibration") -> tuple[Any, list[Any], str] | None:
    """The first input whose rows are those of some other inputs together (a file beside the
    shards it was split into, or joined from, whatever else is read with them), by the
    multiset hashes of their rows (:attr:`~calibcli.summaries.sources.Source.rows_hash`,
    which add up), with those others; None when there is none. Byte ranges of one input count
    as that input. Looked for only for an input of at least ``FLOOR`` rows whose values tell a
    copy: the others of no more rows all together, else some of them when at most
    ``2 * SEARCHED`` could be among them. Then the same with every confidence (NLL, for
    perplexity rows: ``kind``) rounded to float32, the result coming with ``FLOAT32``
    (``FLOAT32_NLL``) then (else "")."""
    found = _held_by_others_noted(_inputs(sources, range(len(sources))), lambda *_: True)
    if found is None:
        return None
    return found[0].first, [h.first for h in found[1]], _noted(found[2], kind)


def _held_by_others_noted(inputs: list[_Input], accept: Any) -> tuple | None:
    """:func:`_held_by_others` on the exact hashes, then on the float32 ones (with ``FLOAT32``
    as a third item, else ""). The float32 pass searches as the exact one does, so it at most
    doubles the search."""
    found = _held_by_others(inputs, accept)
    if found is not None:
        return (*found, "")
    if not any(h.known32 for h in inputs):
        return None
    found = _held_by_others([h.as_float32() for h in inputs], accept)
    return None if found is None else (*found, FLOAT32)


def check_source_copies(groups: list[tuple[str | None, Any]], remedy: str) -> None:
    """SummaryMismatch when an input of one part holds the rows of an input of another
    (:func:`same_sources`), or of several others together (:func:`union_of_others`), or part
    of them (:func:`contained_sources`), and when a part records too little of its rows for
    these checks beside other inputs of rows (:func:`unchecked_part`):
    ``groups`` are (label, summary) pairs, the label None for the files read here. Names the
    inputs and the parts that hold them."""
    sources, labels = [], []
    for label, summary in groups:
        for source in summary.sources:
            sources.append(source)
            labels.append(label)
    kind = groups[0][1].kind if groups else "calibration"

    def named(held: _Input) -> str:
        where = [label for label in dict.fromkeys(held.labels) if label is not None]
        return held.first.display if not where else f"{held.first.display} (in {listed(where)})"

    def part(*inputs: _Input) -> Any:
        return next((label for h in inputs for label in h.labels if label is not None), None)

    twice = _same_inputs(sources, labels)
    if twice is not None:
        first, later, note = twice
        note = _noted(note, kind)
        raise SummaryMismatch(
            f"{named(later)} holds the rows of {named(first)} ({same_rows_text(kind)}){note}: "
            f"one input counted twice, by other routes; {remedy}",
            part=part(later, first),
        )
    # only a part that pooled a file and its shards did so on purpose (--all-runs); files read
    # here beside a part, or parts merged, that hold them are counted twice
    pooled = _inputs(sources, labels)
    found = _held_by_others_noted(pooled, lambda t, o: not _one_part([t, *o]))
    if found is not None:
        union, others, note = found
        note = _noted(note, kind)
        raise SummaryMismatch(
            f"{named(union)} holds the rows of {listed([named(h) for h in others])} together "
            f"({same_rows_text(kind)}){note}: one input counted twice, by other routes; {remedy}",
            part=part(union, *others),
        )
    held = _contained(pooled, True)  # part of an input's rows in another part
    if held is not None:
        inner, holders, share = held
        raise SummaryMismatch(
            f"{named(inner)}: {held_text(share, [named(h) for h in holders])}: they would count "
            f"twice; {remedy}",
            part=part(inner, *holders),
        )
    unrecorded = unchecked_part(groups)
    if unrecorded is not None:
        label, source, lacking = unrecorded
        raise SummaryMismatch(
            f"{label} holds rows of {source.display} that an earlier calibcli summarized without "
            f"recording their {lacking}, so whether the other inputs hold some of the same rows "
            "cannot be checked; summarize its files again",
            part=label,
        )


RECORDED = {"rows_hash": "hash", "float32_hash": "float32 hash", "rows_sketch": "sketch"}
"""What each source of rows records for the checks of :func:`check_source_copies` (summary
files an earlier calibcli wrote lack some), and how a refusal names each."""


def unchecked_part(groups: list[tuple[str | None, Any]]) -> tuple[str, Any, str] | None:
    """The first part holding rows without one of ``RECORDED`` (a summary file an earlier
    calibcli wrote, or one made from it alone) when another part, or the files read here
    (label None), hold rows too: as (its label, the first such source, what it lacks as a
    message names it). The checks of :func:`check_source_copies` cannot see whether those rows
    are the others', so the inputs are refused rather than counted unchecked, as a part whose
    ids an earlier calibcli hashed otherwise is. None when every part records them, or when
    no other input holds rows (a part read alone is read as before)."""
    holding = [(label, _counted(summary)) for label, summary in groups]
    holding = [(label, sources) for label, sources in holding if sources]
    if len(holding) < 2:
        return None
    for label, sources in holding:
        for source in sources if label is not None else ():
            lacking = [
                text for name, text in RECORDED.items() if getattr(source, name, None) is None
            ]
            if lacking:
                return label, source, listed(lacking)
    return None


def _contained(inputs: list[_Input], parts: bool) -> tuple[_Input, list[_Input], float] | None:
    """The input most of whose distinct rows others hold, those others and the estimated share
    (:func:`~calibcli.summaries.contained.held_rows`, on each input's sketch, its pieces' joined).
    With ``parts``, inputs held by one part alone are not compared (pooled there on purpose)."""
    from calibcli.summaries.contained import held_rows
    from calibcli.summaries.fingerprint import joined_sketch

    sketches = [None if not h.sketches else joined_sketch(h.sketches) for h in inputs]
    together = None
    if parts:  # an input whose pieces are in several parts is compared with every other
        together = [h.labels[0] if _one_part([h]) else ("pieces", i) for i, h in enumerate(inputs)]
    found = held_rows([h.rows for h in inputs], sketches, together)
    if found is None:
        return None
    inner, holders, share = found
    return inputs[inner], [inputs[i] for i in holders], share


def contained_sources(sources: Any) -> tuple[Any, list[Any], float] | None:
    """An input whose distinct rows other inputs hold in part, at least
    :data:`~calibcli.summaries.contained.SHARE` of them by the sketches of their rows
    (:attr:`~calibcli.summaries.sources.Source.rows_sketch`): a file beside some of its shards,
    two files sharing many rows. As (its first source, the first source of each input that
    holds them, the estimated share); None when there is none, and for inputs whose sketch is
    not known (summaries written before it was recorded). The pieces of one input are joined
    first and never compared with each other; inputs of fewer than ``FLOOR`` rows, or whose
    values do not tell rows apart, are not compared (see :mod:`calibcli.summaries.contained`)."""
    found = _contained(_inputs(sources, range(len(sources))), False)
    return None if found is None else (found[0].first, [h.first for h in found[1]], found[2])


def held_text(share: float, holders: list[str]) -> str:
    """How a message says that an input's rows are held by ``holders`` (about ``share`` of its
    distinct rows, :func:`contained_sources`)."""
    also = "together" if len(holders) > 1 else "too"
    return f"its rows are held by {listed(holders)} {also} (about {share:.0%} of them)"


def listed(names: list[str], shown: int = 3) -> str:
    """Names in a message: the first ``shown``, and how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    if len(names) <= shown:
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{', '.join(names[:shown])}{more}"
