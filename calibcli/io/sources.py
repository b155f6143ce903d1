"""Input sources: files and ``-`` (stdin), plain or compressed, read as newline-aligned blocks
of bytes.

Bytes are read in blocks of about 1 MB cut at a newline into one reused buffer, so memory does
not grow with the input. A compressed input (gzip, Zstandard, xz, bzip2) is recognised by its
magic bytes, not by the name, and decompressed as a stream (:mod:`calibcli.io.compression`).
Lines are 1-based physical lines of the (decompressed) input.
"""

from __future__ import annotations

import codecs
import os
import sys
from collections.abc import Iterator
from typing import Any

from calibcli.errors import InputError, shown_name
from calibcli.io.compression import (
    GZIP,
    MAGIC_BYTES,
    Appended,
    Codec,
    codec_of,
    decompressed,
    read_errors,
)
from calibcli.io.strict_json import READS_UTF8

BLOCK_SIZE = 1 << 20
"""Bytes read per block (blocks are then cut back to the last newline)."""
MAX_LINE_BYTES = 64 << 20
"""Longest line read by default (64 MiB): a longer one is an error, found without holding it."""
STDIN_NAME = "<stdin>"
_BOM = b"\xef\xbb\xbf"
# Byte-order marks of the encodings calibcli does not read, longest first (UTF-32LE's opens
# with UTF-16LE's).
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def note_once(warnings: list[str], name: str, text: str) -> None:
    """Add the warning ``name: text`` about a file to ``warnings``, once however often the file
    is read (--all-runs pools a file given twice)."""
    line = f"{shown_name(name)}: {text}"
    if line not in warnings:
        warnings.append(line)


def display_name(source: str) -> str:
    """The name errors use for a source: its path, or ``<stdin>`` for ``-``."""
    return STDIN_NAME if source == "-" else source


def line_limit_message(max_line_bytes: int) -> str:
    """The error for a line longer than ``max_line_bytes``."""
    return f"line longer than {max_line_bytes / (1 << 20):g} MiB; raise --max-line-mb"


def _wide_encoding(head: bytes | bytearray) -> str | None:
    """The encoding a UTF-16/UTF-32 byte-order mark at the start of ``head`` names, if any."""
    for bom, encoding in _WIDE_BOMS:
        if head.startswith(bom):
            return encoding
    return None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


class _Chain:
    """A read()-only stream that first returns ``head`` then the rest of ``stream``."""

    def __init__(self, head: bytes, stream: Any) -> None:
        self._head = head
        self._stream = stream

    def read(self, n: int = -1) -> bytes:
        if self._head:
            if n < 0:
                out = self._head + self._stream.read()
                self._head = b""
                return out
            out, self._head = self._head[:n], self._head[n:]
            return out
        return self._stream.read(n)

    def readinto(self, b: Any) -> int:
        if self._head:
            k = min(len(b), len(self._head))
            b[:k] = self._head[:k]
            self._head = self._head[k:]
            return k
        return self._stream.readinto(b)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        pass


class Source:
    """One input: a path or ``-``; knows its display name, size and compression (``codec``,
    None for plain bytes)."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.name = display_name(source)
        self.size: int | None = None  # bytes of a regular file (compressed size if compressed)
        self.codec: Codec | None = None
        self.isize: int | None = None  # gzip trailer: uncompressed size modulo 2**32
        self.raw: Any = None
        self._head = b""  # bytes already read from a stream that cannot seek back

    def probe(self) -> None:
        """Open the input and look at its first bytes (compressed?) without starting to
        decompress; raises InputError when it cannot be opened."""
        if self.source == "-":
            if sys.stdin is None:  # started with file descriptor 0 closed
                raise InputError(self.name, None, "cannot read: standard input is closed")
            try:
                self.raw = sys.stdin.buffer
                self._head = self.raw.read(MAGIC_BYTES)
            except (AttributeError, OSError, ValueError) as e:  # no stdin, or closed
                raise InputError(self.name, None, f"cannot read: {_reason(e)}") from None
            self.codec = codec_of(self._head)
            return
        try:
            raw = open(self.source, "rb")  # noqa: SIM115 - closed by close()
            st = os.fstat(raw.fileno())
            import stat

            if stat.S_ISDIR(st.st_mode):  # pragma: no cover - open() already refuses on Linux
                raw.close()
                raise IsADirectoryError(21, "Is a directory")
            self.size = st.st_size if stat.S_ISREG(st.st_mode) else None
            magic = raw.read(MAGIC_BYTES)
            self.codec = codec_of(magic)
            if self.size is None:  # a pipe or FIFO: keep what was read
                self._head = magic
            else:
                if self.codec is GZIP and self.size >= 18:
                    raw.seek(-4, os.SEEK_END)
                    self.isize = int.from_bytes(raw.read(4), "little")
                raw.seek(0)
        except OSError as e:
            raise InputError(self.name, None, _reason(e)) from None
        self.raw = raw

    @property
    def what(self) -> str:
        """What a failure to read the stream is called: decompressing it, for a compressed
        one."""
        return "cannot decompress" if self.codec else "cannot read"

    def stream(self) -> Any:
        """The (decompressed) byte stream, after :meth:`probe`."""
        raw = self.raw if not self._head else _Chain(self._head, self.raw)
        if self.codec is None:
            return raw
        stream = decompressed(raw, self.codec, threaded=True)
        return stream if self.size is None else Appended(stream, self.source, self.codec)

    def close(self) -> None:
        if self.raw is not None and self.source != "-":
            self.raw.close()

    def expected_bytes(self, limit: int | None = None) -> int | None:
        """Decompressed bytes to expect (for sizing buffers), or None if unknown."""
        if limit is not None:
            return limit
        if self.size is None:
            return None
        if self.codec is None:
            return self.size
        if self.codec is not GZIP:  # no size recorded: a typical text ratio
            return 4 * self.size
        isize = self.isize or 0
        return isize if isize >= self.size else 4 * self.size

    def position(self) -> int:
        """Bytes of the underlying file consumed so far (for progress)."""
        try:
            return self.raw.tell() if self.raw is not None else 0
        except (OSError, ValueError):
            return 0


def blocks(
    stream: Any,
    name: str,
    block_size: int,
    limit: int | None = None,
    *,
    strip_bom: bool = True,
    what: str = "cannot read",
    max_line_bytes: int = MAX_LINE_BYTES,
    first_line: int = 1,
) -> Iterator[tuple[int, memoryview, int, int]]:
    """Yield (first line number, view, newlines, expected rows) of newline-aligned blocks.

    ``expected rows`` is the number of non-empty lines when every one of them opens with ``{``
    and closes with ``}`` (before its newline or CRLF), else -1: a decoder trusts a block
    decoded in one call only when it yields exactly that many
    rows, so whitespace-only or indented lines, a value split across lines or several on one line
    all send the block down the precise line-by-line path. Empty lines (a newline right after a
    newline) are not counted, so that blank lines between rows cost no more than the rows.

    The bytes are read into one reused buffer, so a view is valid only until the next item is
    requested. ``limit`` stops after that many bytes (ranges are cut at line starts by the
    caller). Line numbers are 1-based, counted from ``first_line`` (a range's first line in
    its file); the last block may lack a trailing newline. A UTF-8
    byte-order mark at the start is dropped; a UTF-16 or UTF-32 one raises InputError. A line
    longer than ``max_line_bytes`` raises ``InputError("path:line: line longer than ...")`` as
    soon as that many bytes of it are held, so memory stays bounded whatever the line. A read or
    decompression failure raises ``InputError("path: ...")``.
    """
    import numpy as np

    errors = (*read_errors(), ValueError)
    # No single read holds a whole line longer than the cap, so such a line always arrives in
    # pieces and is caught while it is carried from one read to the next.
    block_size = max(1, min(block_size, max_line_bytes))
    buf = bytearray(2 * block_size)
    marks = starts = np.empty(0, np.bool_)  # scratch for the line counts, sized on first use
    filled = 0  # bytes held in buf; the carried partial line sits at the front
    line = first_line
    remaining = limit
    bom = strip_bom
    eof = False
    while not eof:
        if len(buf) - filled < block_size:  # a line longer than a block: make room
            grown = min(2 * len(buf), max_line_bytes + 2 * block_size)
            buf.extend(bytes(max(grown, filled + block_size) - len(buf)))
        want = block_size if remaining is None else min(block_size, remaining)
        got = 0
        if want > 0:
            try:
                with memoryview(buf) as whole, whole[filled : filled + want] as part:
                    got = stream.readinto(part) or 0
            except errors as e:
                raise InputError(name, None, f"{what}: {_reason(e)}") from None
        if got == 0:
            eof = True
        carried = filled
        filled += got
        if remaining is not None:
            remaining -= got
        if bom and (filled >= 4 or eof):
            bom = False
            encoding = _wide_encoding(buf[:4])
            if encoding is not None:
                raise InputError(name, None, f"{encoding} text (byte order mark); {READS_UTF8}")
            if buf.startswith(_BOM):
                buf[0 : filled - len(_BOM)] = buf[len(_BOM) : filled]
                filled -= len(_BOM)
        first_end = buf.find(b"\n", 0, filled) if carried else -1
        if carried and (filled if first_end < 0 else first_end) > max_line_bytes:
            raise InputError(name, line, line_limit_message(max_line_bytes))
        cut = filled if eof else buf.rfind(b"\n", 0, filled) + 1
        if cut == 0:
            continue
        if marks.shape[0] < cut:
            marks = np.empty(len(buf), np.bool_)
            starts = np.empty(len(buf), np.bool_)
        with memoryview(buf) as whole, whole[:cut] as view:
            # Vectorised compares count lines faster than bytearray.count. They write into
            # arrays reused from block to block: fresh megabyte-sized temporaries would be
            # returned to the OS and faulted back in on every block.
            arr = np.frombuffer(view, np.uint8)
            nl = np.equal(arr, 10, out=marks[:cut])
            newlines = int(np.count_nonzero(nl))
            physical = newlines + (buf[cut - 1] != 10)
            # a "{" right after a newline: a line opening an object
            opened_at = np.equal(arr[1:], 123, out=starts[: cut - 1])
            np.logical_and(opened_at, nl[:-1], out=opened_at)
            opened = int(np.count_nonzero(opened_at)) + (buf[0] == 123)
            empty = 0  # when every line opens an object, none is empty
            if opened != physical:
                # a newline right after a newline: an empty line
                empty_at = np.logical_and(nl[1:], nl[:-1], out=starts[: cut - 1])
                empty = int(np.count_nonzero(empty_at)) + (buf[0] == 10)
                del empty_at
            rows = physical - empty
            if opened == rows:
                # and every line closes one: a "}" right before a newline (or "}\r\n"), so that
                # an object split across lines cannot make up for two objects on one line
                closed_at = np.equal(arr[:-1], 125, out=starts[: cut - 1])
                np.logical_and(closed_at, nl[1:], out=closed_at)
                closed = int(np.count_nonzero(closed_at)) + (buf[cut - 1] == 125)
                if closed != rows and cut > 2:
                    crlf = np.equal(arr[1:-1], 13, out=starts[: cut - 2])
                    np.logical_and(crlf, nl[2:], out=crlf)
                    np.logical_and(crlf, arr[:-2] == 125, out=crlf)
                    closed += int(np.count_nonzero(crlf))
                    del crlf
                del closed_at
                opened = opened if closed == rows else -1
            del arr, nl, opened_at  # release the view before the buffer is reused
            yield line, view, newlines, rows if opened == rows else -1
        line += newlines
        tail = filled - cut
        if tail:
            buf[0:tail] = buf[cut:filled]
        filled = tail


def lines_of(block: bytes | memoryview, first_line: int) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each non-blank line."""
    for i, line in enumerate(bytes(block).split(b"\n")):
        if line.strip():
            yield first_line + i, line


def is_utf8(block: memoryview | bytes) -> bool:
    """Whether a block is UTF-8 throughout (the README's input rule), fields no rule reads
    included: one pass in C, an ASCII block at memory speed. msgspec's block decoders skip a
    field no rule reads without checking its text, so each checks its block first."""
    try:
        codecs.utf_8_decode(block, "strict", True)
    except UnicodeDecodeError:
        return False
    return True
