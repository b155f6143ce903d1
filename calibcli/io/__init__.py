"""Streaming JSONL reading: files, ``-`` (stdin) and ``.gz``, folded block by block into statistics.

The public API is this module's: :func:`read_calibration`, :func:`read_perplexity`, their results
:class:`CalibrationData` and :class:`PerplexityData`, and :class:`InputError`, whose message is one
line, ``path:line: what is wrong`` (or ``path: reason`` for a file that cannot be read). Lines are
1-based physical lines of the (decompressed) input.

Inside the package, one job per module: :mod:`~calibcli.io.sources` (files, stdin, gzip ->
newline-aligned blocks), :mod:`~calibcli.io.rows` (what a valid row is, every message),
:mod:`~calibcli.io.decode` (block -> columns), :mod:`~calibcli.io.fold` (columns -> statistics),
:mod:`~calibcli.io.reader` (the loop), :mod:`~calibcli.io.parallel` (worker processes) and
:mod:`~calibcli.io.progress`. Memory stays flat whatever the input's size (except the kept
columns, 8 bytes per row); results do not depend on the block size or the number of workers
beyond rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calibcli.io.data import CalibrationData, InputError, PerplexityData
from calibcli.io.sources import MAX_LINE_BYTES, display_name

__all__ = [
    "MAX_LINE_BYTES",
    "CalibrationData",
    "InputError",
    "PerplexityData",
    "read_calibration",
    "read_perplexity",
]

FORMATS = ("auto", "jsonl", "lm-eval", "logprobs")
MC_NORMS = ("none", "chars", "bytes")


STDIN_TASK = "stdin has no file name to take the lm-eval task from; use --by FIELD"


def _check_options(
    fmt: str, mc_norm: str, workers: int | None, max_line_bytes: int = MAX_LINE_BYTES
) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if mc_norm not in MC_NORMS:
        raise ValueError(f"unknown mc_norm {mc_norm!r}; expected one of {', '.join(MC_NORMS)}")
    if workers is not None and (type(workers) is not int or workers < 1):
        raise ValueError(f"workers must be a whole number >= 1 or None, not {workers!r}")
    if type(max_line_bytes) is not int or max_line_bytes < 1:
        raise ValueError(f"max_line_bytes must be a whole number >= 1, not {max_line_bytes!r}")


def _detector(
    field_names: dict[str, str], refuse: dict[str, str] | None = None
) -> Callable[[dict], str]:
    """Format detection from the first row; ``refuse`` maps formats this reader cannot use to
    the message to raise (ValueError, given a file and line by the reader)."""
    from calibcli.formats import detect_format

    def detect(row: dict) -> str:
        found = detect_format(row, **field_names)
        if refuse and found in refuse:
            raise ValueError(refuse[found])
        return found

    return detect


def _group_key(fmt: str, by: str | None, source: str) -> Callable[[dict], Any] | None:
    """Row -> group value for ``by``. lm-eval's ``task`` comes from the file name; on stdin,
    from the row's own ``task`` field when it has one (the harness does not write it)."""
    if by is None:
        return None
    from calibcli import formats

    if fmt == "lm-eval" and by == "task":
        if source != "-":
            task = formats.task_from_filename(source)
            return lambda row: task

        def row_task(row: dict) -> Any:
            if "task" not in row:
                raise ValueError(STDIN_TASK)
            return formats.by_value(row, "task")

        return row_task
    return lambda row: formats.by_value(row, by)


def read_calibration(
    sources: list[str],
    *,
    confidence_field: str = "confidence",
    correct_field: str = "correct",
    bins: int = 10,
    keep_columns: bool = False,
    per_source: bool = False,
    by: str | None = None,
    fmt: str = "auto",
    mc_norm: str = "none",
    progress: bool = False,
    workers: int | None = None,
    block_size: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> CalibrationData:
    """Read (confidence, correct) rows from files or ``-`` into pooled per-bin statistics.

    ``keep_columns`` also keeps every confidence (8 bytes per row) for the estimators that need
    all rows; ``per_source`` adds one result per source; ``by`` (a dotted field path, or ``task``
    for lm-eval input) adds one result per group. ``fmt`` is ``auto`` (detected from the first
    row), ``jsonl``, ``lm-eval`` or ``logprobs`` (refused: it carries no calibration rows).
    ``workers`` is the number of processes per source (>= 1; None: two on a machine with two
    CPUs or more for an input of 32 MB or more, else one). ``progress`` shows a bar on a
    terminal for large files. A line longer than ``max_line_bytes`` (default 64 MiB) is invalid
    input. Raises :class:`InputError` for unreadable or invalid input and ValueError for invalid
    options.
    """
    _check_options(fmt, mc_norm, workers, max_line_bytes)
    if fmt == "logprobs":
        raise ValueError("the logprobs format carries no calibration rows; use perplexity")
    from calibcli.io.decode import BlockDecoder
    from calibcli.io.fold import CalibrationSink
    from calibcli.io.reader import Reader
    from calibcli.io.rows import CalibrationRow
    from calibcli.metrics.core import bin_edges

    bin_edges(bins)  # validates bins before any reading
    spec = CalibrationRow(confidence_field, correct_field)

    def make_decoder(fmt_: str, source: str) -> BlockDecoder:
        if fmt_ == "jsonl" and by is None:
            return BlockDecoder(spec)
        convert = spec.converter(fmt_, mc_norm=mc_norm)
        return BlockDecoder(spec, convert=convert, key=_group_key(fmt_, by, source))

    def new_sink() -> CalibrationSink:
        return CalibrationSink(bins, keep_columns, grouped=by is not None)

    reader = Reader(
        fmt=fmt,
        make_decoder=make_decoder,
        new_sink=new_sink,
        detect=_detector(
            {"confidence_field": confidence_field, "correct_field": correct_field},
            refuse={
                "logprobs": "rows hold per-token logprobs (input for perplexity), not "
                f"{confidence_field!r}/{correct_field!r}"
            },
        ),
        progress=progress,
        workers=workers,
        block_size=block_size,
        max_line_bytes=max_line_bytes,
    )
    sources = list(sources)
    if not per_source:
        sink = new_sink()
        for source in sources:
            reader.read(source, sink)
        return sink.result(reader.fmt or "jsonl")
    sinks = []
    for source in sources:
        sinks.append(new_sink())
        reader.read(source, sinks[-1])
    found = reader.fmt or "jsonl"
    pooled = new_sink()
    for source, sink in zip(sources, sinks, strict=True):
        pooled.absorb(sink.export(), display_name(source))
    result = pooled.result(found)
    parts = {source: sink.result(found) for source, sink in zip(sources, sinks, strict=True)}
    return CalibrationData(
        stats=result.stats,
        columns=result.columns,
        per_source=parts,
        groups=result.groups,
        rows=result.rows,
        fmt=found,
    )


def read_perplexity(
    sources: list[str],
    *,
    nll_field: str = "nll",
    tokens_field: str = "tokens",
    bytes_field: str = "bytes",
    words_field: str = "words",
    logprobs_field: str = "logprobs",
    by: str | None = None,
    fmt: str = "auto",
    progress: bool = False,
    workers: int | None = None,
    block_size: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> PerplexityData:
    """Read per-sequence NLL rows (or lm-eval rolling rows, or per-token logprobs) into totals.

    Native rows: ``{"nll": summed NLL in nats, "tokens": count}`` plus optional ``bytes`` and
    ``words`` (totalled only when every row has them). Totals are exact integers; the NLL is
    summed per block and pooled with ``math.fsum``; a sum beyond the largest double is +inf with
    ``nll_overflow`` set. ``workers``, ``progress``, ``max_line_bytes`` as for
    :func:`read_calibration`. Raises :class:`InputError` on bad input.
    """
    _check_options(fmt, "none", workers, max_line_bytes)
    from calibcli.io.decode import BlockDecoder
    from calibcli.io.fold import PerplexitySink
    from calibcli.io.reader import Reader
    from calibcli.io.rows import PerplexityRow

    spec = PerplexityRow(nll_field, tokens_field, bytes_field, words_field, logprobs_field)

    def make_decoder(fmt_: str, source: str) -> BlockDecoder:
        if fmt_ == "jsonl" and by is None:
            return BlockDecoder(spec)
        return BlockDecoder(spec, convert=spec.converter(fmt_), key=_group_key(fmt_, by, source))

    def new_sink() -> PerplexitySink:
        return PerplexitySink(spec, grouped=by is not None)

    reader = Reader(
        fmt=fmt,
        make_decoder=make_decoder,
        new_sink=new_sink,
        detect=_detector(
            {
                "nll_field": nll_field,
                "tokens_field": tokens_field,
                "logprobs_field": logprobs_field,
            }
        ),
        progress=progress,
        workers=workers,
        block_size=block_size,
        max_line_bytes=max_line_bytes,
    )
    sink = new_sink()
    for source in sources:
        reader.read(source, sink)
    return sink.result(reader.fmt or "jsonl")
