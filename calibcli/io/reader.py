"""The reading loop: sources -> blocks -> decoder -> sink, in this process or with workers.

Each source is routed on its own: its format comes from its first row (or is forced), and a
source whose rows do not serve the command is skipped with a warning. A regular file holding one
whole JSON document (an array, a pretty-printed object, an inspect-ai ``.eval`` zip) is read
through :func:`calibcli.io.documents.iter_document` instead of line by line.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from calibcli.errors import InputError
from calibcli.io.sources import BLOCK_SIZE, MAX_LINE_BYTES, Source, blocks, display_name

DOCUMENT_BATCH = 4096
"""Rows of a whole document decoded and folded at a time."""

PARALLEL_MIN_BYTES = 32 << 20
"""With ``workers=None``, inputs of at least this many (decompressed) bytes get a worker."""


def _cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def first_row(block: memoryview | bytes, first_line: int) -> tuple[int, Any] | None:
    """(line, parsed object or None if unparseable) of the first non-blank line, if any."""
    data = block.obj if isinstance(block, memoryview) else block
    end = len(block)
    found = _NON_BLANK.search(data, 0, end)
    if found is None:
        return None
    start = data.rfind(b"\n", 0, found.start()) + 1
    stop = data.find(b"\n", found.start(), end)
    line = bytes(data[start : end if stop < 0 else stop])
    line_no = first_line + data.count(b"\n", 0, start)
    try:
        return line_no, json.loads(line)
    except (ValueError, RecursionError):
        return line_no, None


_NON_BLANK = re.compile(rb"[^ \t\n\r\x0b\x0c]")
"""A byte that makes a line non-blank (what ``bytes.strip`` keeps, as in ``lines_of``)."""


RESULTS_SKIPPED = (
    "lm-eval results file: aggregate figures, no per-document rows (the samples_* files beside "
    "it hold them); skipped"
)


def whole_document_kind(source: str) -> str | None:
    """The whole-document kind of a regular file (None for JSON Lines, stdin and pipes,
    which are never sniffed: that would consume their first line)."""
    if source == "-":
        return None
    try:
        if not stat.S_ISREG(os.stat(source).st_mode):
            return None
        from calibcli.io.documents import document_kind

        return document_kind(source)
    except (OSError, EOFError, ValueError, RecursionError):
        return None  # the line reader reports what is wrong with the file


def document_rows(source: str, kind: str) -> Iterator[tuple[int | str, Any]]:
    """(locator, row) of a whole document (:func:`calibcli.io.documents.iter_document`), its errors
    as :class:`InputError` naming the file and the row; an lm-eval results file raises
    :class:`SkipFile`."""
    import zlib

    from calibcli.io.documents import DocumentError, ResultsFile, iter_document

    name = display_name(source)
    try:
        yield from iter_document(source, kind=kind)
    except ResultsFile:
        raise SkipFile("lm-eval", RESULTS_SKIPPED) from None
    except DocumentError as e:
        raise InputError(name, e.locator, str(e)) from None  # type: ignore[arg-type]
    except UnicodeDecodeError:
        raise InputError(name, None, "the document is not valid UTF-8") from None
    except RecursionError:
        raise InputError(name, None, "JSON nested too deeply") from None
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(name, None, f"cannot read: {e}") from None


class SkipFile(Exception):
    """A source whose rows do not serve the command: skipped, with ``reason`` as its warning."""

    def __init__(self, fmt: str, reason: str) -> None:
        super().__init__(reason)
        self.fmt = fmt
        self.reason = reason


class Reader:
    """Streams sources block by block through a decoder into sinks.

    ``make_decoder(fmt, source)`` builds a source's block decoder once its format is known;
    ``new_sink()`` makes an empty sink; ``route(row, forced)`` gives ``(format, reason to skip
    or None)`` from a source's first row (``forced``: the format given, None for ``auto``) and
    raises ValueError for a format it cannot read. ``workers`` is the number of processes per
    source, None for automatic: two on a machine with two CPUs or more for an input of
    ``PARALLEL_MIN_BYTES`` or more. A line longer than ``max_line_bytes`` is an error.

    After reading, ``formats`` maps each source with rows (display name) to its format,
    ``skipped`` lists the skipped sources and ``warnings`` says why, one line each.
    """

    def __init__(
        self,
        *,
        fmt: str,
        make_decoder: Callable[[str, str], Any],
        new_sink: Callable[[], Any],
        route: Callable[[dict, str | None], tuple[str, str | None]],
        progress: Callable[[str, int | None], Any] | None,
        workers: int | None,
        block_size: int | None,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self.forced: str | None = None if fmt == "auto" else fmt
        self.fmt: str | None = None  # the current source's format, once known
        self.make_decoder = make_decoder
        self.new_sink = new_sink
        self._route = route
        self._progress = progress
        self._workers = workers
        self.block_size = block_size or BLOCK_SIZE
        self.formats: dict[str, str] = {}
        self.skipped: list[str] = []
        self.warnings: list[str] = []
        self.max_line_bytes = max_line_bytes

    def resolve(self, block: memoryview | bytes, first_line: int, name: str) -> bool:
        """Route the source from the first row of this block; False if the block is blank.
        Raises :class:`SkipFile` for a source to skip."""
        found = first_row(block, first_line)
        if found is None:
            return False
        line_no, row = found
        self.resolve_row(row, line_no, name)
        return True

    def resolve_row(self, row: Any, where: int | str, name: str) -> None:
        """Set the format from a source's first row (``where``: its line or locator)."""
        if not isinstance(row, dict):
            self.fmt = self.forced or "jsonl"  # the decoder reports the bad row
            return
        try:
            fmt, skip = self._route(row, self.forced)
        except ValueError as e:
            raise InputError(name, where, str(e)) from None  # type: ignore[arg-type]
        if skip is not None:
            raise SkipFile(fmt, skip)
        self.fmt = fmt

    def read(self, source: str, sink: Any) -> bool:
        """Fold one source (a path or ``-``) into ``sink``; False when it was skipped."""
        name = display_name(source)
        self.fmt = None
        try:
            kind = whole_document_kind(source)
            if kind is None:
                self._read_lines(source, sink)
            else:
                self._read_document(source, kind, sink)
        except SkipFile as skip:
            self.formats[name] = skip.fmt
            self.skipped.append(name)
            self.warnings.append(f"{name}: {skip.reason}")
            return False
        if self.fmt is not None:
            self.formats[name] = self.fmt
        return True

    def _read_document(self, source: str, kind: str, sink: Any) -> None:
        name = display_name(source)
        decoder = None
        rows = document_rows(source, kind)
        while chunk := list(itertools.islice(rows, DOCUMENT_BATCH)):
            if self.fmt is None:
                self.resolve_row(chunk[0][1], chunk[0][0], name)
            if decoder is None:
                decoder = self.make_decoder(self.fmt, source)
            cols, keys, where = decoder.rows(chunk, name)
            sink.add(cols, keys, lambda i, where=where: (name, where[i]))

    def _read_lines(self, source: str, sink: Any) -> None:
        src = Source(source)
        src.probe()
        try:
            parts = self._parts(src)
            if parts > 1:
                from calibcli.io import parallel

                if parallel.read(self, src, sink, parts):
                    return
            stream = src.stream()
            try:
                self.fold(src, self.blocks(src, stream), sink, bar=self.bar(src))
            finally:
                stream.close()
        finally:
            src.close()

    def bar(self, src: Source) -> Any:
        """A progress bar over one source's bytes from the ``progress`` factory given (None:
        no bar): an object with ``update(completed)`` and ``close()``, or None."""
        if self._progress is None or src.source == "-":
            return None
        return self._progress(src.name, src.size)

    def _parts(self, src: Source) -> int:
        """Processes to use for one source."""
        if src.size == 0:
            return 1
        if self._workers is None:
            expected = src.expected_bytes()
            if expected is None or expected < PARALLEL_MIN_BYTES:
                return 1  # small, or stdin (size unknown)
            return min(2, _cpus())
        return self._workers

    def blocks(self, src: Source, stream: Any, limit: int | None = None, start: int = 0) -> Any:
        """The blocks of ``stream`` (``limit`` bytes of it, from byte ``start`` of the input)."""
        what = "cannot decompress" if src.gzip else "cannot read"
        return blocks(
            stream,
            src.name,
            self.block_size,
            limit,
            strip_bom=start == 0,
            what=what,
            max_line_bytes=self.max_line_bytes,
        )

    def fold(
        self,
        src: Source,
        items: Iterable[tuple[int, Any, int, int]],
        sink: Any,
        *,
        bar: Any = None,
        limit: int | None = None,
        scale: int = 1,
        start: int = 0,
        expect: int | None = None,
        handoff: Callable[[int, Any, int, int], bool] | None = None,
    ) -> int:
        """Decode blocks into ``sink``; return the number of newlines seen.

        ``items`` are ``(first line, block, newlines, expected rows)`` as from :meth:`blocks`.
        ``expect`` is the number of input bytes whose rows ``sink`` will hold (for sizing its
        column buffers; default: this share's, from ``limit``). ``handoff(first_line, block,
        newlines, expected)`` may take a block away (True) to be decoded elsewhere; it returns
        None to stop reading. The bar shows ``scale`` times the bytes read from ``start``.
        """
        name = src.name
        decoder = None
        newlines = 0
        reserved = False
        try:
            for first_line, block, nl, expected in items:
                newlines = first_line - 1 + nl
                if self.fmt is None and not self.resolve(block, first_line, name):
                    continue
                if handoff is not None:
                    taken = handoff(first_line, block, nl, expected)
                    if taken is None:
                        break
                    if taken:
                        continue
                if decoder is None:
                    decoder = self.make_decoder(self.fmt, src.source)
                cols, keys, lines = decoder.block(block, first_line, name, expected)
                if not reserved:
                    reserved = True
                    expected_bytes = expect or src.expected_bytes(limit)
                    if expected_bytes and len(block):
                        rows = expected_bytes / len(block) * cols[0].shape[0]
                        sink.reserve(int(rows * 1.1) + 1024)

                def locate(i: int, first_line=first_line, lines=lines) -> tuple[str, int]:
                    return name, first_line + i if lines is None else int(lines[i])

                sink.add(cols, keys, locate)
                if bar is not None:
                    bar.update((src.position() - start) * scale)
        finally:
            if bar is not None:
                bar.close()
        return newlines
