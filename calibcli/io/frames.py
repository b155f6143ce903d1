"""Columnar rows: a DataFrame's partition, given as Arrow record batches, folded into a summary.

This is what a Spark or Dask task runs on its share of a DataFrame (:mod:`calibcli.spark`,
:mod:`calibcli.dask`): the columns are checked with the rules of :mod:`calibcli.io.rows` and
folded by the builders the file readers use, so a partition's summary is the one its rows
would give as JSON Lines (float32 and float16 values read as JSON writes them:
:mod:`calibcli.io.narrow`). Bad values are not raised here: they are counted per column, with
the first one and where it is (:class:`ColumnProblems`), so that the engine can add up the
counts of every partition and the driver names the column, the total and the first bad value
in partition order. pyarrow is imported only when a partition is folded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

CALIBRATION_COLUMNS = ("confidence", "correct")
PERPLEXITY_COLUMNS = ("nll", "tokens", "bytes", "words")


@dataclass(frozen=True)
class FrameSpec:
    """Which columns hold what, and the settings of the summary made of them.

    ``kind`` is ``calibration`` (``columns``: confidence, correct) or ``perplexity``
    (``columns``: nll, tokens and optionally bytes and words, None when absent). ``by`` names
    the column grouping the rows, ``key`` the column of row ids (rows with the same id are
    refused; with ``bootstrap=(samples, seed)`` the ids key the Poisson bootstrap, hashed as
    ``--id-field`` hashes them). ``label`` names the DataFrame in the summary's sources:
    partition ``i`` is the byte range [i, i + 1) of a source of that name, so parts merge in
    partition order and no partition can be counted twice."""

    kind: str
    columns: tuple[str | None, ...]
    label: str = "dataframe"
    bins: int = 10
    by: str | None = None
    key: str | None = None
    bootstrap: tuple[int, int] | None = None

    @property
    def content(self) -> str:
        return f"dataframe:{self.label}"

    def needed(self) -> list[str]:
        """Every column read, in order, each once."""
        names = [c for c in (*self.columns, self.by, self.key) if c is not None]
        return list(dict.fromkeys(names))

    def settings(self) -> Any:
        if self.kind == "calibration":
            from calibcli.summaries import CalibrationSettings

            return CalibrationSettings(
                bins=self.bins,
                confidence_field=self.columns[0],
                correct_field=self.columns[1],
                by=self.by,
                # what the command line records for rows read without --inspect-confidence,
                # so a written part is read back by it without a settings mismatch
                inspect_confidence="auto",
                id_field=self.key,  # the ids' column, as --id-field names it
            )
        from calibcli.summaries import PerplexitySettings

        nll, tokens, nbytes, words = self.columns
        return PerplexitySettings(
            nll_field=nll,
            tokens_field=tokens,
            bytes_field=nbytes or "bytes",
            words_field=words or "words",
            by=self.by,
            id_field=self.key,
        )


class ColumnProblems:
    """Bad values of a DataFrame's columns: per column, how many and the first one (by
    partition, then row). Adds up across partitions in any order."""

    def __init__(self, found: dict[str, tuple[int, str, str, tuple[int, int]]] | None = None):
        # column -> (count, first value as shown, what is wrong with it, (partition, row))
        self.found = dict(found or {})

    def add(self, column: str, count: int, value: str, why: str, where: tuple[int, int]) -> None:
        if not count:
            return
        old = self.found.get(column)
        if old is None:
            self.found[column] = (count, value, why, where)
            return
        first = (value, why, where) if where < old[3] else old[1:]
        self.found[column] = (old[0] + count, *first)

    def merged(self, other: ColumnProblems) -> ColumnProblems:
        out = ColumnProblems(self.found)
        for column, (count, value, why, where) in other.found.items():
            out.add(column, count, value, why, where)
        return out

    def __bool__(self) -> bool:
        return bool(self.found)

    def message(self) -> str:
        """One line per column, in the order of the first bad value."""
        lines = []
        for column, (count, value, why, (partition, row)) in sorted(
            self.found.items(), key=lambda item: item[1][3]
        ):
            plural = "value" if count == 1 else "values"
            lines.append(
                f"column {column!r}: {count:,} bad {plural}; the first is {value} "
                f"(row {row + 1} of partition {partition}): {why}"
            )
        return "\n".join(lines)

    def __reduce__(self):
        return (ColumnProblems, (self.found,))


def _first(mask: Any) -> int:
    import numpy as np

    return int(np.argmax(mask))


def as_float64(array: Any) -> Any:
    """A numeric Arrow column as a float64 numpy array, each value the double nearest it. A
    decimal column is read through its digits: Arrow's decimal-to-double cast divides by a
    power of ten and lands one unit in the last place below about a third of decimals (0.900000
    at scale 6 as 0.8999999999999999), which moves them into the bin below an edge; its
    text-to-double parse rounds correctly, as a JSON or CSV file of the same digits reads."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_decimal(array.type):
        array = pc.cast(array, pa.string())
    # an integer beyond 2**53 has no exact double: its nearest, not Arrow's "not in range"
    safe = not pa.types.is_integer(array.type)
    return pc.cast(array, pa.float64(), safe=safe).to_numpy(zero_copy_only=False)


def _floats(array: Any, column: str, problems: ColumnProblems, ok: Any, why: str, where: Any):
    """A numeric Arrow column as float64, its nulls, its NaNs and the values ``ok`` refuses
    recorded (a NaN as not a number, as a file's row says it, whatever ``ok`` says of it)."""
    import numpy as np

    from calibcli.io.rows import show

    values = as_float64(array)
    nulls = array.is_null().to_numpy(zero_copy_only=False)
    with np.errstate(invalid="ignore"):
        bad = nulls | ~ok(values)
    count = int(bad.sum())
    if count:
        i = _first(bad)
        value = "null" if nulls[i] else show(float(values[i]))
        reason = "a null" if nulls[i] else "not a number" if np.isnan(values[i]) else why
        problems.add(column, count, value, reason, where(i))
    return values, bad


def _at_scale_zero(array: Any) -> Any:
    """A decimal column of negative scale (decimal128(5, -2): multiples of 100, whole numbers)
    as the same values at scale 0, which Arrow's rounding and comparison kernels take and which
    read as integers (100, not 1E+2); any other column as it is, and one too wide for a scale-0
    decimal (over 76 digits) too."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if not pa.types.is_decimal(kind) or kind.scale >= 0:
        return array
    digits = kind.precision - kind.scale
    if digits > 76:
        return array
    return pc.cast(array, (pa.decimal128 if digits <= 38 else pa.decimal256)(digits, 0))


def _whole(array: Any) -> tuple[Any, Any]:
    """(whether each value of a decimal column is a whole number, judged on its digits; each
    value truncated to int64, exact where it is whole and within int64). A value whose double
    is whole need not be: 0.999999999999999999999999999999 has the double 1.0."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    array = _at_scale_zero(array)
    kind = array.type
    if kind.scale < 0:  # whole numbers past any scale-0 decimal: each value's integer
        values = array.to_pylist()
        ints = [0 if v is None else max(min(int(v), 2**63 - 1), -(2**63)) for v in values]
        return np.array([v is not None for v in values], bool), np.array(ints, np.int64)
    if not (pa.types.is_decimal128(kind) or pa.types.is_decimal256(kind)):
        # the narrow decimals have no rounding kernel; decimal128 holds every value they hold
        array = pc.cast(array, pa.decimal128(kind.precision, kind.scale))
    truncated = pc.round(array, 0, round_mode="towards_zero")
    whole = pc.fill_null(pc.equal(array, truncated), False).to_numpy(zero_copy_only=False)
    ints = pc.fill_null(pc.cast(truncated, pa.int64(), safe=False), 0)
    return whole, ints.to_numpy(zero_copy_only=False)


def _not_numbers(array: Any, column: str, problems: ColumnProblems, wanted: str, where: Any):
    """Every row of a boolean or text column where numbers are wanted, recorded as bad (true is
    neither one token nor an NLL of 1, and "0.5" is text, as the JSON rows have them); None for
    a column of another type."""
    import numpy as np
    import pyarrow as pa

    from calibcli.io.rows import show

    kind = array.type
    if pa.types.is_boolean(kind):
        what = "a boolean"
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        what = "a string"
    else:
        return None
    if len(array) == 0:
        return np.zeros(0, bool)
    first = array[0].as_py()
    shown = "null" if first is None else show(first)
    problems.add(column, len(array), shown, f"{what}, not {wanted}", where(0))
    return np.ones(len(array), bool)


def _column(batch: Any, name: str) -> Any:
    return batch.column(batch.schema.get_field_index(name))


def _calibration_block(batch: Any, spec: FrameSpec, problems: ColumnProblems, where: Any):
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from calibcli.io.rows import confidence_ok, show

    conf_name, correct_name = spec.columns
    raw_conf = _column(batch, conf_name)
    if _not_numbers(raw_conf, conf_name, problems, "a number", where) is None:
        conf, _ = _floats(raw_conf, conf_name, problems, confidence_ok, "outside [0, 1]", where)
    else:  # true is not a confidence of 1, as the JSON rows have it
        conf = np.zeros(len(raw_conf))
    raw = _at_scale_zero(_column(batch, correct_name))
    floats = False
    if pa.types.is_boolean(raw.type):
        flags = pc.fill_null(raw, False).to_numpy(zero_copy_only=False)
        wrong = raw.is_null().to_numpy(zero_copy_only=False)
        first = "null"
    else:
        numbers = as_float64(raw)
        wrong = (numbers != 0.0) & (numbers != 1.0)
        kind = raw.type
        floats = pa.types.is_floating(kind) or (pa.types.is_decimal(kind) and kind.scale > 0)
        if floats:  # 1.0 or 1.00 spells a float, not an outcome, as a file's rows have it
            wrong = np.ones(len(raw), bool)
        elif pa.types.is_decimal(kind):  # 0 or 1 exactly: not a value whose double is 1.0
            wrong |= ~_whole(raw)[0]
        flags = (numbers == 1.0) & ~wrong
        first = None
    if wrong.any():
        i = _first(wrong)
        if first is None:
            first = "null" if raw[i].as_py() is None else show(raw[i].as_py())
        why = "a null" if first == "null" else "not true, false, 0 or 1"
        if floats and first != "null":
            why += " (a column of floats: cast it to booleans or integers)"
        problems.add(correct_name, int(wrong.sum()), first, why, where(i))
    return conf, np.asarray(flags, bool)


def _counts(batch: Any, name: str | None, problems: ColumnProblems, where: Any):
    """A count column as int64 (None for a column not given), its bad values recorded."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from calibcli.io.rows import MAX_COUNT, show

    if name is None:
        return None, None
    raw = _at_scale_zero(_column(batch, name))
    bad = _not_numbers(raw, name, problems, "a count", where)
    if bad is not None:
        return np.zeros(len(raw), np.int64), bad
    nulls = raw.is_null().to_numpy(zero_copy_only=False)
    if pa.types.is_integer(raw.type):  # exact beyond 2**53, unlike a detour through floats
        over = np.zeros(len(raw), bool)
        if pa.types.is_uint64(raw.type):  # beyond int64 is over the most too: found, cast as 0
            most = pa.scalar(MAX_COUNT, raw.type)
            above = pc.fill_null(pc.greater(raw, most), False)
            over = above.to_numpy(zero_copy_only=False)
            kept = pc.if_else(above, pa.scalar(0, raw.type), raw)
        else:
            kept = raw
        ints = pc.fill_null(pc.cast(kept, "int64"), 0).to_numpy(zero_copy_only=False)
        bad = nulls | over | (ints < 0) | (ints > MAX_COUNT)
    else:
        numbers = as_float64(raw)
        with np.errstate(invalid="ignore"):
            whole = (numbers >= 0) & (numbers <= MAX_COUNT) & (numbers == np.floor(numbers))
        if pa.types.is_decimal(raw.type):  # whole by its digits, read as its exact integer
            exact, truncated = _whole(raw)
            ints = np.where(whole & exact, truncated, 0)
            whole &= exact & (ints <= MAX_COUNT)  # 2**62 + 1 has the double 2**62
        else:
            ints = np.where(whole, numbers, 0).astype(np.int64)
        bad = nulls | ~whole
    if bad.any():
        i = _first(bad)
        why = "a null" if nulls[i] else "not a whole number in [0, 2**62]"
        problems.add(name, int(bad.sum()), show(raw[i].as_py()), why, where(i))
    return np.where(bad, 0, ints), bad


def _perplexity_block(batch: Any, spec: FrameSpec, problems: ColumnProblems, where: Any):
    import numpy as np

    from calibcli.io.rows import nll_ok, nll_tokens_ok, scored_count_ok

    nll_name, tokens_name, bytes_name, words_name = spec.columns
    raw = _column(batch, nll_name)
    bad = _not_numbers(raw, nll_name, problems, "a number", where)
    if bad is None:
        nll, bad = _floats(raw, nll_name, problems, nll_ok, "negative", where)
    else:
        nll = np.zeros(len(raw))
    tokens, bad_tokens = _counts(batch, tokens_name, problems, where)
    bad |= bad_tokens
    with np.errstate(invalid="ignore"):
        broken = ~nll_tokens_ok(nll, tokens) & ~bad
    if broken.any():
        i = _first(broken)
        problems.add(
            nll_name, int(broken.sum()), repr(float(nll[i])), f"> 0 with 0 {tokens_name}", where(i)
        )
        bad |= broken
    optional = []
    for name in (bytes_name, words_name):
        col, wrong = _counts(batch, name, problems, where)
        if wrong is not None:
            bad |= wrong
        if col is not None:  # the counts of a sequence are those of its scored tokens
            unscored = ~scored_count_ok(tokens, col) & ~bad
            if unscored.any():
                i = _first(unscored)
                why = "with no scored token: a sequence's counts are those of its scored tokens"
                problems.add(name, int(unscored.sum()), str(int(col[i])), why, where(i))
                bad |= unscored
        optional.append(col)
    zeros = np.zeros(nll.shape[0], np.int64)
    return (nll, tokens, *optional, zeros, zeros, zeros)


def _group_names(batch: Any, name: str) -> list[str]:
    from calibcli.io.rows import group_name

    return [group_name(v) for v in _column(batch, name).to_pylist()]


ROW_BITS = 32
"""A DataFrame row's id is recorded with its place, ``partition << ROW_BITS | row`` (a line
number where a file's rows have one), so that a repeat found where two parts merge names both
rows (:func:`repeated_frame_id`)."""

OWN_ID = "each row's id must be its own (a row given twice, or ids that are not unique)"


class _Ids:
    """A partition's ids as its rows arrive: a null id, or an id an earlier row of the
    partition has, recorded as a bad value of the key column, with the first such row."""

    def __init__(self, name: str, partition: int) -> None:
        from calibcli.io.ids import SeenIds

        self.name, self.partition, self.seen = name, partition, SeenIds()
        self.first: tuple[str, str, tuple[int, int]] | None = None  # (value, why, where)
        self.read: list[Any] = []  # the hashes of the ids read

    def hashes(self, batch: Any, offset: int, problems: ColumnProblems, where: Any) -> Any:
        """The hashes of a batch's ids (as ``--id-field`` hashes them) and their places."""
        import numpy as np

        from calibcli.io.ids import id_hash, id_key, show_id
        from calibcli.io.rows import show

        values = _column(batch, self.name).to_pylist()
        hashes = np.zeros(len(values), np.uint64)
        ok = np.ones(len(values), bool)
        keys: list[Any] = [None] * len(values)
        for i, v in enumerate(values):
            if v is None:
                ok[i] = False
                problems.add(self.name, 1, "null", "a null: every row needs its id", where(i))
                continue
            try:
                keys[i] = id_key(v)
            except ValueError as e:
                ok[i] = False
                problems.add(self.name, 1, show(v), f"an id that {e}", where(i))
                continue
            hashes[i] = id_hash(keys[i])
        rows = np.arange(offset, offset + len(values), dtype=np.int64)
        places = (np.int64(self.partition) << np.int64(ROW_BITS)) | rows
        new, at = hashes[ok], places[ok]
        i = self.seen.first_repeat(new) if self.first is None else None
        if i is not None:
            _, earlier = self.seen.where(int(new[i]), (self.name, new, at, None))
            j = int(np.flatnonzero(ok)[i])
            why = f"the id of the row at {_place(earlier)} too: {OWN_ID}"
            self.first = (show_id(keys[j]), why, where(j))
        self.seen.record(self.name, new, at)
        self.read.append(new)
        return hashes, places

    def end(self, problems: ColumnProblems) -> None:
        """Record the partition's rows whose id an earlier row has, the first named."""
        import numpy as np

        if self.first is not None:
            read = np.concatenate(self.read)
            repeats = read.shape[0] - np.unique(read).shape[0]
            value, why, where = self.first
            problems.add(self.name, repeats, value, why, where)


def repeated_frame_id(parts: list[Any]) -> str | None:
    """What to say of DataFrame parts that cannot be merged because a row of one has the id
    of a row of another (the rows' places are recorded with their ids, :data:`ROW_BITS`):
    both rows, by partition and row. None when the parts are not a DataFrame's, or their ids
    do not repeat."""
    import numpy as np

    frames = all(
        p.sources and all(s.content.startswith("dataframe:") for s in p.sources) for p in parts
    )
    ids = [p.row_ids for p in parts if p.row_ids is not None]
    if not frames or not ids:
        return None
    hashes = np.concatenate([i.hashes for i in ids])
    places = np.concatenate([i.lines for i in ids])
    order = np.lexsort((places, hashes))
    ordered = hashes[order]
    same = np.flatnonzero(ordered[1:] == ordered[:-1])
    if not same.shape[0]:
        return None
    later = order[same + 1]
    k = int(np.argmin(places[later]))  # the first row, in partition order, repeating an id
    repeat = int(later[k])
    first = int(order[np.searchsorted(ordered, hashes[repeat])])
    name = parts[0].settings.id_field
    return (
        f"column {name!r}: the row at {_place(int(places[repeat]))} has the id of the row at "
        f"{_place(int(places[first]))}: {OWN_ID}"
    )


def _place(line: int) -> str:
    """A row's place recorded with its id (:data:`ROW_BITS`), as messages name it."""
    return f"row {(line & (2**ROW_BITS - 1)) + 1} of partition {line >> ROW_BITS}"


def frame_summary(batches: Iterable[Any], spec: FrameSpec, partition: int) -> tuple[Any, Any]:
    """(summary, :class:`ColumnProblems`) of one partition's record batches: the summary with
    its rows kept (calibration), None once a bad value was found (the rest is only checked)."""
    from calibcli.io.narrow import written_columns
    from calibcli.summaries import Source

    problems = ColumnProblems()
    settings = spec.settings()
    grouped = spec.by is not None
    if spec.kind == "calibration":
        from calibcli.summaries import CalibrationBuilder

        builder: Any = CalibrationBuilder(
            settings, keep_rows=True, grouped=grouped, row_keys=spec.bootstrap is not None
        )
    else:
        from calibcli.io.rows import PerplexityRow
        from calibcli.summaries import PerplexityBuilder

        nll, tokens, nbytes, words = spec.columns
        row = PerplexityRow(nll, tokens, nbytes or "bytes", words or "words")
        builder = PerplexityBuilder(settings, row, grouped=grouped)
    builder.begin_source()
    ids = _Ids(spec.key, partition) if spec.key is not None else None
    offset = 0
    for batch in batches:
        n = batch.num_rows
        if not n:
            continue
        # float32 and float16 values read as their JSON rows have them (0.7, not 0.69999998...)
        batch = written_columns(batch)

        def where(i: int, start: int = offset) -> tuple[int, int]:
            return (partition, start + i)

        if spec.kind == "calibration":
            cols: tuple = _calibration_block(batch, spec, problems, where)
        else:
            cols = _perplexity_block(batch, spec, problems, where)
        hashes = None if ids is None else ids.hashes(batch, offset, problems, where)
        if not problems:
            keys = _group_names(batch, spec.by) if grouped else None
            if hashes is not None:
                builder.add_ids(*hashes)
            builder.add(cols, keys, lambda i, start=offset: (spec.label, start + i + 1))
        offset += n
    if ids is not None:
        ids.end(problems)
    if problems:
        return None, problems
    builder.end_source(Source(spec.label, spec.content, "jsonl", 0, partition, partition + 1))
    return builder.summary(), problems
