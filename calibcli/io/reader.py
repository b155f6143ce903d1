"""The reading loop: sources -> blocks -> decoder -> summary builder, in this process or with
workers.

Each source is routed on its own: its format comes from its first row (or is forced), and a
source whose rows do not serve the command is skipped with a warning. A regular file holding one
whole JSON document (an array, a pretty-printed object, an inspect-ai ``.eval`` zip) is read
through :func:`calibcli.io.documents.iter_document` instead of line by line.
"""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import Callable, Iterator
from typing import Any

from calibcli.errors import InputError, RepeatedRowError, shown_name
from calibcli.io.compression import MAGIC_BYTES, codec_of
from calibcli.io.content import StreamHash, file_content_id
from calibcli.io.fold import RESULTS_SKIPPED, SkipFile, SourceFold
from calibcli.io.ids import SeenIds
from calibcli.io.sources import Source, blocks, display_name, note_once
from calibcli.system import PARALLEL_MIN_BYTES, cpus, workers

DOCUMENT_BATCH = 4096
"""Rows of a whole document decoded and folded at a time."""

_cpus = cpus  # the machine's CPUs (a module name, so a test can pretend another machine)


_KINDS_SHOWN = {
    "csv": "a CSV table",
    "tsv": "a TSV table",
    "parquet": "a Parquet table",
    "arrow": "an Arrow table",
    "eval-zip": "an inspect-ai .eval log",
}
"""How the --part refusal names a file that is not JSON Lines; other kinds are JSON documents."""


def _refuse_wide(source: str, name: str) -> None:
    """InputError for a file whose text is UTF-16 or UTF-32 (without a byte-order mark, JSON
    in it reads as a document's opening), worded as the whole-document reader words it."""
    from calibcli.io.strict_json import READS_UTF8, wide_encoding

    with open(source, "rb") as f:
        wide = wide_encoding(f.read(4))
    if wide is not None:
        raise InputError(name, None, f"{wide} text; {READS_UTF8}")


def whole_document_kind(source: str, max_line_bytes: int | None = None) -> str | None:
    """The whole-document kind of a regular file (None for JSON Lines, stdin and pipes,
    which are never sniffed: that would consume their first line); the sniff reads no more
    than ``max_line_bytes`` of a first line."""
    if source == "-":
        return None
    try:
        if not stat.S_ISREG(os.stat(source).st_mode):
            return None
        from calibcli.io.delimited import delimited_kind
        from calibcli.io.documents import document_kind

        if (table := delimited_kind(source)) is not None:  # its name says: text has no magic
            return table
        if max_line_bytes is None:
            return document_kind(source)
        return document_kind(source, max_line_bytes=max_line_bytes)
    except (OSError, EOFError, ValueError, RecursionError):
        return None  # the line reader reports what is wrong with the file


def document_rows(
    source: str,
    kind: str,
    max_document_bytes: int | None = None,
    slim: Callable[[Any], bool] | None = None,
    sample_type: Any = None,
    notes: Callable[[str], None] | None = None,
) -> Iterator[tuple[int | str, Any]]:
    """(locator, row) of a whole document (:func:`calibcli.io.documents.iter_document`, with
    ``slim``, ``sample_type`` and ``notes``), its errors as :class:`InputError` naming the file
    and the row; an lm-eval results file raises :class:`SkipFile`."""
    from calibcli.io.compression import AppendedBytes, read_errors, read_failure
    from calibcli.io.documents import DocumentError, ResultsFile, iter_document

    name = display_name(source)
    try:
        yield from iter_document(
            source,
            kind=kind,
            max_document_bytes=max_document_bytes,
            slim=slim,
            sample_type=sample_type,
            notes=notes,
        )
    except ResultsFile:
        raise SkipFile("lm-eval", RESULTS_SKIPPED) from None
    except DocumentError as e:
        raise InputError(name, e.locator, str(e)) from None
    except UnicodeDecodeError:
        raise InputError(name, None, "the document is not valid UTF-8") from None
    except RecursionError:
        raise InputError(name, None, "JSON nested too deeply") from None
    except AppendedBytes as e:
        raise InputError(name, None, e.detail) from None
    except read_errors() as e:
        raise InputError(name, None, read_failure(source, e)) from None


KNOWN_NEWLINES_FILES = 64
"""Files whose newline counts a process remembers (the most recently counted)."""

_known_newlines: dict[tuple[int, int, int, int], dict[int, int]] = {}
"""Per file (device, inode, size, modification time): newlines before byte offsets this process
counted or read through. A worker given many byte ranges of one file then counts each byte of
it once, from the nearest offset it knows, instead of from the start of the file per range."""


def _file_identity(f: Any) -> tuple[int, int, int, int]:
    st = os.fstat(f.fileno())
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _remember_newlines(identity: tuple[int, int, int, int], offset: int, count: int) -> None:
    known = _known_newlines.pop(identity, None) or {}
    known[offset] = count
    _known_newlines[identity] = known  # now the most recent
    while len(_known_newlines) > KNOWN_NEWLINES_FILES:
        del _known_newlines[next(iter(_known_newlines))]


def newlines_before(f: Any, offset: int) -> int:
    """Newlines in the first ``offset`` bytes of an open file."""
    identity = _file_identity(f)
    known = _known_newlines.get(identity, {})
    done = max((o for o in known if o <= offset), default=0)
    count = known.get(done, 0)
    f.seek(done)
    while done < offset:
        chunk = f.read(min(1 << 24, offset - done))
        if not chunk:
            break
        count += chunk.count(b"\n")
        done += len(chunk)
    if offset > 0:
        _remember_newlines(identity, offset, count)
    return count


def _line_start(f: Any, pos: int, size: int) -> int:
    """The first line start at or after byte ``pos`` of an open file of ``size`` bytes."""
    if pos <= 0:
        return 0
    if pos >= size:
        return size
    from calibcli.io.parallel import _next_line_start

    return min(_next_line_start(f, pos - 1), size)


def file_spans(path: str, blocksize: int) -> list[tuple[int, int]] | None:
    """Byte ranges of ``blocksize`` bytes tiling a plain JSON Lines file (the lines starting in
    each are read by :meth:`Reader.read_span`); None for a file read whole: stdin, a compressed
    file, a whole document, a table or a summary file, or one no larger than ``blocksize``."""
    from calibcli.io.parts import is_summary_file

    try:
        if path == "-" or not stat.S_ISREG(os.stat(path).st_mode) or is_summary_file(path):
            return None
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(MAGIC_BYTES)
    except OSError:
        return None  # the reader says what is wrong with it
    if size <= blocksize or codec_of(head) or whole_document_kind(path) is not None:
        return None
    return [(lo, min(lo + blocksize, size)) for lo in range(0, size, blocksize)]


class Reader:
    """Streams sources block by block into a summary builder (``plan``: a
    :class:`~calibcli.io.plan.ReadPlan`).

    ``workers`` is the number of processes per source (capped at the CPUs), None for automatic:
    two on a machine with two CPUs or more for an input of 32 MB or more
    (:mod:`calibcli.system`). ``progress(name,
    size)``, when given, makes a progress bar for a large file (an object with
    ``update(bytes)`` and ``close()``, or None). After reading, ``warnings`` says which sources
    were skipped and why, and which were read with a note (an inspect-ai log of a run that did
    not succeed), one line each.
    """

    def __init__(
        self,
        plan: Any,
        *,
        workers: int | None = None,
        progress: Callable[[str, int | None], Any] | None = None,
    ) -> None:
        self.plan = plan
        self._workers = workers
        self._progress = progress
        self.warnings: list[str] = []
        self.skipped: list[str] = []
        self.reasons: list[str] = []  # why each of them was skipped
        self.current: SourceFold | None = None  # the source being read (for the workers)
        self.seen = SeenIds()  # the ids read so far, over every source
        self.stream_hash: StreamHash | None = None

    def skip(self, name: str, reason: str) -> None:
        """Record a source skipped, and its warning ``name: reason``."""
        self.skipped.append(name)
        self.reasons.append(reason)
        self.warnings.append(f"{shown_name(name)}: {reason}")

    def note(self, name: str, text: str) -> None:
        """Record the warning ``name: text`` about a source (:func:`note_once`)."""
        note_once(self.warnings, name, text)

    def read(self, source: str, builder: Any) -> bool:
        """Fold one source (a path or ``-``) into ``builder``; False when it was skipped."""
        from calibcli.summaries import Source as SourceInfo

        name = display_name(source)
        fold = SourceFold(self.plan, name, source, seen=self.seen)
        builder.begin_source()
        stream_hash = StreamHash() if source == "-" else None
        try:
            kind = whole_document_kind(source, self.plan.max_line_bytes)
            if kind is None:
                self._read_lines(source, fold, builder, stream_hash)
            else:
                self._read_document(source, kind, fold, builder)
        except SkipFile as skip:
            self.skip(name, skip.reason)
            content = file_content_id(source) if stream_hash is None else stream_hash.identity()
            builder.end_source(SourceInfo(source, content, skip.fmt, 0, skipped=skip.reason))
            return False
        except RepeatedRowError as exc:
            from calibcli.io.runs import repeat_told

            raise repeat_told(exc) from None
        content = file_content_id(source) if stream_hash is None else stream_hash.identity()
        builder.end_source(SourceInfo(source, content, fold.fmt, 0, **fold.taken()))
        return True

    def read_part(self, source: str, part: int, parts: int, builder: Any) -> bool:
        """Fold part ``part`` (1-based) of ``parts`` of one plain file, cut at line starts
        into ranges of about equal size; lines keep their numbers in the whole file. Only a
        regular uncompressed JSON Lines file can be cut (InputError otherwise). False when the
        file was skipped."""
        from calibcli.io.parallel import _split_points

        size = self._cuttable(source, "--part")
        bounds = _split_points(source, size, parts)
        # the whole file's size and the piece, by which pieces missing from a merge are known
        cut = {"size": size, "part": (part, part, parts)}
        return self._read_range(source, bounds[part - 1], bounds[part], builder, cut)

    def read_span(self, source: str, start: int, stop: int, builder: Any) -> bool:
        """Fold the lines of one plain file that start in bytes [``start``, ``stop``): ranges
        that tile the file read every line once, each with its number in the whole file (what
        an engine's task reads of a file cut into blocks). Cut as :meth:`read_part` cuts."""
        size = self._cuttable(source, "a byte range")
        with open(source, "rb") as f:
            lo, hi = _line_start(f, start, size), _line_start(f, stop, size)
        return self._read_range(source, lo, max(lo, hi), builder)

    def _cuttable(self, source: str, what: str) -> int:
        """The size of a file that can be cut at line starts; InputError otherwise."""
        name = display_name(source)
        src = Source(source)
        if source == "-":
            raise InputError(name, None, f"{what} cuts a file by position; stdin cannot be cut")
        src.probe()
        try:
            kind = whole_document_kind(source, self.plan.max_line_bytes)
            if kind is not None and not src.codec:  # named as a whole reading names it
                _refuse_wide(source, name)
            if src.codec or src.size is None or kind is not None:
                found = (
                    f"a {src.codec.name} stream"
                    if src.codec
                    else _KINDS_SHOWN.get(kind, "a whole JSON document")
                )
                raise InputError(
                    name, None, f"{what} cuts plain JSON Lines at line starts; this is {found}"
                )
        finally:
            src.close()
        return src.size

    def _read_range(
        self, source: str, start: int, stop: int, builder: Any, cut: dict[str, Any] | None = None
    ) -> bool:
        from calibcli.summaries import Source as SourceInfo

        name = display_name(source)
        fold = SourceFold(self.plan, name, source, seen=self.seen, head_known=start > 0)
        builder.begin_source()
        content = file_content_id(source)
        try:
            with open(source, "rb") as f:
                if start > 0:  # the file's first row is watched for, as a whole reading does
                    fold.first_id = _head_watch(f, fold, self.plan)
                first_line = 1 + newlines_before(f, start)
                f.seek(start)
                through = fold.fold(
                    blocks(
                        f,
                        name,
                        self.plan.block_size,
                        stop - start,
                        strip_bom=start == 0,
                        max_line_bytes=self.plan.max_line_bytes,
                        first_line=first_line,
                    ),
                    builder,
                )
                if stop > start:  # the next range of the file starts where this one ends
                    _remember_newlines(_file_identity(f), stop, through)
        except SkipFile as skip:
            self.skip(name, skip.reason)
            builder.end_source(
                SourceInfo(
                    source, content, skip.fmt, 0, start, stop, skipped=skip.reason, **(cut or {})
                )
            )
            return False
        builder.end_source(
            SourceInfo(source, content, fold.fmt, 0, start, stop, **fold.taken(), **(cut or {}))
        )
        return True

    def _sample_type(self) -> Any:
        """The struct an inspect-ai log's samples are decoded into (calibration rows), or
        None (samples read as dicts): another kind, or a --by or --id-field name a msgspec
        struct cannot hold."""
        plan = self.plan
        if plan.kind != "calibration":
            return None
        from calibcli.io.decode import struct_names_ok
        from calibcli.io.inspect_rows import read_fields, typed_sample_type

        by, id_field = plan.settings.by, plan.id_field
        if not struct_names_ok(read_fields(by, id_field)):  # the samples are read as dicts
            return None
        return typed_sample_type(by, id_field)

    def _slim(self, first: Any) -> bool:
        """Whether a document whose first row is ``first`` is read as inspect-ai samples with
        no field but the ones its row functions read: the typed struct's, or with no --by or
        --id-field naming another."""
        plan = self.plan
        named = plan.settings.by is not None or plan.id_field is not None
        if named and self._sample_type() is None:
            return False
        if not isinstance(first, dict):
            return False
        try:
            fmt, skip = plan.router.route(first, plan.forced)
        except ValueError:
            return False
        return fmt == "inspect-ai" and skip is None

    def _read_document(self, source: str, kind: str, fold: SourceFold, builder: Any) -> None:
        name = display_name(source)
        rows = document_rows(
            source,
            kind,
            self.plan.max_document_bytes,
            self._slim,
            self._sample_type(),
            notes=lambda text: self.note(name, text),
        )
        while chunk := list(itertools.islice(rows, DOCUMENT_BATCH)):
            fold.fold_rows(chunk, builder)
            del chunk  # not held while the next one is read

    def _read_lines(
        self, source: str, fold: SourceFold, builder: Any, stream_hash: StreamHash | None
    ) -> None:
        src = Source(source)
        src.probe()
        try:
            parts = self._parts(src)
            if parts > 1:
                from calibcli.io import parallel

                self.current, self.stream_hash = fold, stream_hash
                if parallel.read(self, src, builder, parts):
                    return
            stream = src.stream()
            bar = self.bar(src)
            try:
                fold.fold(
                    self.blocks(src, stream),
                    builder,
                    expected_bytes=src.expected_bytes,
                    progress=None if bar is None else lambda: bar.update(src.position()),
                    seen=None if stream_hash is None else stream_hash.update,
                )
            finally:
                if bar is not None:
                    bar.close()
                stream.close()
        finally:
            src.close()

    def bar(self, src: Source) -> Any:
        """A progress bar over one source's bytes, or None."""
        if self._progress is None or src.source == "-":
            return None
        return self._progress(src.name, src.size)

    def _parts(self, src: Source) -> int:
        """Processes to use for one source (:func:`calibcli.system.workers`; stdin, whose
        size is unknown, is never large)."""
        if src.size == 0 or self.plan.row_keys:  # row keys need lines counted in one pass
            return 1
        expected = src.expected_bytes()
        large = expected is not None and expected >= PARALLEL_MIN_BYTES
        return workers(self._workers, large, _cpus())

    def blocks(self, src: Source, stream: Any) -> Any:
        return blocks(
            stream,
            src.name,
            self.plan.block_size,
            what=src.what,
            max_line_bytes=self.plan.max_line_bytes,
        )


HEAD_BYTES = 64 << 10
"""Bytes read at a time to find a file's first row for a range that starts after it."""


def _head_watch(f: Any, fold: SourceFold, plan: Any) -> Any:
    """The watch for a file's first row (:meth:`SourceFold.watch`), read from the start of
    ``f`` for a range that starts after it: a fold of its own resolves the format from that
    row."""
    head = SourceFold(plan, fold.name, fold.source)
    # a small block: only the first row is wanted (a longer line is carried into the next one),
    # and every range of a file read apart reads its head again
    for first_line, block, _, _ in blocks(
        f, fold.name, HEAD_BYTES, strip_bom=True, max_line_bytes=plan.max_line_bytes
    ):
        try:
            if head.resolve(block, first_line):
                return head.first_id
        except (InputError, SkipFile):
            return None  # the range's own rows say what is wrong
    return None
