"""Streaming JSONL reading: files, ``-`` (stdin) and ``.gz``, folded block by block into statistics.

The public API is this module's: :func:`read_calibration`, :func:`read_perplexity`, their results
:class:`CalibrationData` and :class:`PerplexityData`, and :class:`InputError`, whose message is one
line, ``path:line: what is wrong`` (or ``path: reason`` for a file that cannot be read). Lines are
1-based physical lines of the (decompressed) input.

Inside the package, one job per module: :mod:`~calibcli.io.sources` (files, stdin, gzip ->
newline-aligned blocks), :mod:`~calibcli.io.rows` (what a valid row is, every message),
:mod:`~calibcli.io.route` (each file's format, skipped files, converters of other formats),
:mod:`~calibcli.io.decode` (block -> columns), :mod:`~calibcli.io.fold` (columns -> statistics),
:mod:`~calibcli.io.reader` (the loop), :mod:`~calibcli.io.parallel` (worker processes) and
:mod:`~calibcli.cli.progress`. Memory stays flat whatever the input's size (except the kept
columns, 8 bytes per row); results do not depend on the block size or the number of workers
beyond rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from calibcli.errors import InputError
from calibcli.io.data import CalibrationData, PerplexityData
from calibcli.io.sources import MAX_LINE_BYTES, display_name

__all__ = [
    "MAX_LINE_BYTES",
    "CalibrationData",
    "InputError",
    "PerplexityData",
    "read_calibration",
    "read_perplexity",
]

FORMATS = ("auto", "jsonl", "lm-eval", "logprobs", "openai", "vllm", "inspect-ai")
MC_NORMS = ("none", "chars", "bytes")


STDIN_TASK = "stdin has no file name to take the lm-eval task from; use --by FIELD"


def _check_options(
    fmt: str, mc_norm: str, workers: int | None, command: str, max_line_bytes: int
) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if mc_norm not in MC_NORMS:
        raise ValueError(f"unknown mc_norm {mc_norm!r}; expected one of {', '.join(MC_NORMS)}")
    if workers is not None and (type(workers) is not int or workers < 1):
        raise ValueError(f"workers must be a whole number >= 1 or None, not {workers!r}")
    if fmt != "auto":
        from calibcli.formats import FORMAT_PROVIDES

        if command not in FORMAT_PROVIDES[fmt]:
            other = "perplexity" if command == "calibration" else "calibrate"
            raise ValueError(f"the {fmt} format carries no {command} rows; use {other}")
    if type(max_line_bytes) is not int or max_line_bytes < 1:
        raise ValueError(f"max_line_bytes must be a whole number >= 1, not {max_line_bytes!r}")


def _reader(
    spec: Any, router: Any, new_sink: Callable[[], Any], *, by: str | None, **options: Any
) -> Any:
    """A :class:`~calibcli.io.reader.Reader` of one row kind (``spec``): native rows through the
    typed fast path (dicts with ``--by``), other formats through ``router``'s converters."""
    from calibcli.io.decode import BlockDecoder
    from calibcli.io.reader import Reader

    def make_decoder(fmt: str, source: str) -> BlockDecoder:
        key = _group_key(fmt, by, source)
        if fmt == "jsonl":
            if by is None:
                return BlockDecoder(spec)
            return BlockDecoder(spec, convert=spec.check, key=key)
        return BlockDecoder(spec, convert=router.converter(fmt), key=key, many=True)

    return Reader(make_decoder=make_decoder, new_sink=new_sink, route=router.route, **options)


def _overall(reader: Any) -> str:
    """The report's format: the one every source with rows is in, else ``mixed``."""
    found = set(reader.formats.values())
    if not found:
        return reader.forced or "jsonl"
    return found.pop() if len(found) == 1 else "mixed"


def _nothing_left(reader: Any, what: str) -> InputError:
    """Every source was skipped (or the rest held no rows): bad input, naming why."""
    first = reader.warnings[0].removeprefix(f"{reader.skipped[0]}: ").removesuffix("; skipped")
    more = len(reader.skipped) - 1
    others = f", and {more} other file(s) skipped too" if more else ""
    return InputError(reader.skipped[0], None, f"{first}{others}: no {what} left to read")


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
    scorer: str | None = None,
    inspect_confidence: str = "sequence",
    progress: Callable[[str, int | None], Any] | None = None,
    workers: int | None = None,
    block_size: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> CalibrationData:
    """Read (confidence, correct) rows from files or ``-`` into pooled per-bin statistics.

    ``keep_columns`` also keeps every confidence (8 bytes per row) for the estimators that need
    all rows; ``per_source`` adds one result per source read (its statistics, never a second
    copy of its columns); ``by`` (a dotted field path, or
    ``task`` for lm-eval input) adds one result per group. ``fmt`` is ``auto`` (detected per
    file from its first row) or one of :data:`FORMATS` that carries calibration rows (``jsonl``,
    ``lm-eval``, ``inspect-ai``). An lm-eval file of another task kind than multiple choice is
    skipped with a warning (``warnings``); it is an error when nothing is left. ``scorer`` names
    the inspect-ai scorer giving correctness (needed when the samples have several);
    ``inspect_confidence`` how an inspect-ai answer's confidence comes from its output's token
    logprobs (``sequence``, ``first-token`` or ``mean-token``).
    ``workers`` is the number of processes per source (>= 1; None: two on a machine with two
    CPUs or more for an input of 32 MB or more, else one). ``progress(name, size)``, when given,
    makes a progress bar for a source (an object with ``update(bytes)`` and ``close()``, or
    None). A line longer than ``max_line_bytes`` (default 64 MiB) is invalid input. Raises
    :class:`InputError` for unreadable or invalid input and ValueError for invalid options.
    """
    _check_options(fmt, mc_norm, workers, "calibration", max_line_bytes)
    from calibcli.io.fold import CalibrationSink
    from calibcli.io.route import calibration_router
    from calibcli.io.rows import CalibrationRow
    from calibcli.metrics.core import bin_edges

    bin_edges(bins)  # validates bins before any reading
    spec = CalibrationRow(confidence_field, correct_field)
    router = calibration_router(
        spec, mc_norm=mc_norm, scorer=scorer, inspect_confidence=inspect_confidence
    )

    def new_sink() -> CalibrationSink:
        return CalibrationSink(bins, keep_columns, grouped=by is not None)

    reader = _reader(
        spec,
        router,
        new_sink,
        by=by,
        fmt=fmt,
        progress=progress,
        workers=workers,
        block_size=block_size,
        max_line_bytes=max_line_bytes,
    )
    sources = list(sources)
    single = per_source and len(sources) == 1  # one source: the pooled result is its part
    per_source = per_source and not single
    sinks: list[tuple[str, CalibrationSink]] = []  # per source read, in input order
    pooled = new_sink()
    for source in sources:
        sink = new_sink() if per_source else pooled
        if reader.read(source, sink) and per_source:
            pooled.absorb(sink.export(), display_name(source))
            # a source's part keeps its statistics only: its rows now live in the pooled columns
            sink.keep_columns, sink.columns = False, None
            sinks.append((source, sink))
    found = _overall(reader)
    result = pooled.result(found)
    if reader.skipped and result.rows == 0:
        raise _nothing_left(reader, "calibration rows")
    parts = None
    if per_source:
        parts = {
            source: sink.result(reader.formats.get(display_name(source), found))
            for source, sink in sinks
        }
    elif single and result.rows:
        from dataclasses import replace

        parts = {sources[0]: replace(result, columns=None, groups=None)}
    return CalibrationData(
        stats=result.stats,
        columns=result.columns,
        per_source=parts,
        groups=result.groups,
        rows=result.rows,
        fmt=found,
        formats=dict(reader.formats),
        warnings=tuple(reader.warnings),
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
    progress: Callable[[str, int | None], Any] | None = None,
    workers: int | None = None,
    block_size: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> PerplexityData:
    """Read per-sequence NLL rows (or lm-eval rolling rows, per-token logprobs, OpenAI responses
    with logprobs, vLLM prompt logprobs) into totals.

    Native rows: ``{"nll": summed NLL in nats, "tokens": count}`` plus optional ``bytes`` and
    ``words`` (totalled only when every row carries them). Totals are exact integers; the NLL is
    summed per block and pooled with ``math.fsum``; a sum beyond the largest double is +inf with
    ``nll_overflow`` set. The format is detected per file (``fmt`` ``auto``) or forced; lm-eval
    files of tasks other than ``loglikelihood_rolling`` are skipped with a warning.
    ``workers``, ``progress``, ``max_line_bytes`` as for :func:`read_calibration`. Raises
    :class:`InputError` on bad input.
    """
    _check_options(fmt, "none", workers, "perplexity", max_line_bytes)
    from calibcli.io.fold import PerplexitySink
    from calibcli.io.route import perplexity_router
    from calibcli.io.rows import PerplexityRow

    spec = PerplexityRow(nll_field, tokens_field, bytes_field, words_field, logprobs_field)
    router = perplexity_router(spec)

    def new_sink() -> PerplexitySink:
        return PerplexitySink(spec, grouped=by is not None)

    reader = _reader(
        spec,
        router,
        new_sink,
        by=by,
        fmt=fmt,
        progress=progress,
        workers=workers,
        block_size=block_size,
        max_line_bytes=max_line_bytes,
    )
    sink = new_sink()
    for source in sources:
        reader.read(source, sink)
    result = sink.result(_overall(reader))
    if reader.skipped and result.sequences == 0:
        raise _nothing_left(reader, "perplexity rows")
    return replace(result, formats=dict(reader.formats), warnings=tuple(reader.warnings))
