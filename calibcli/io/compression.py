"""Compressed inputs and outputs: gzip, Zstandard, xz and bzip2.

An input is compressed when its first bytes are one of the formats' magic numbers; the name
does not decide (``preds.jsonl`` holding gzip bytes is read, and so is a pipe). A name's
compression suffix (``.gz``, ``.zst``, ``.xz``, ``.bz2``) is looked through wherever a name
matters: a folder's input files, ``.csv.zst`` tables, lm-eval file names. Output is compressed
by the suffix of the file written (``apply -o rows.jsonl.zst``).

Every decompressor streams with bounded memory, reads concatenated streams (``cat a.gz b.gz``)
as one, and refuses rather than ends the rows early: a truncated stream (an incomplete last
frame, block or member), and bytes after a stream that start none. gzip is read by python-isal
in a background thread where it is installed, else by :mod:`gzip`; Zstandard, xz and bzip2 by
the decompressors of :mod:`compression.zstd` (Python 3.14) or its backport, :mod:`lzma` and
:mod:`bz2` under a reader of this module, since the standard library's file readers ignore
what follows the last stream, and so that NUL padding after a stream is skipped in each.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Codec:
    """One compression format: its name in messages, its file suffix, and its magic numbers
    (a stream starts with one of them)."""

    name: str
    suffix: str
    magics: tuple[bytes, ...]


GZIP = Codec("gzip", ".gz", (b"\x1f\x8b",))
# A Zstandard frame, or a skippable frame (magic 0x184D2A50..5F, little-endian).
ZSTD = Codec(
    "Zstandard",
    ".zst",
    (b"\x28\xb5\x2f\xfd", *(bytes([k, 0x2A, 0x4D, 0x18]) for k in range(0x50, 0x60))),
)
XZ = Codec("xz", ".xz", (b"\xfd7zXZ\x00",))
# "BZh", the block size 1-9, then the first block's magic (the digits of pi) or, for an empty
# stream, the end-of-stream magic (those of sqrt(pi)): ten bytes, so no text header matches.
BZIP2 = Codec(
    "bzip2",
    ".bz2",
    tuple(
        b"BZh" + level + magic
        for level in (bytes([digit]) for digit in b"123456789")
        for magic in (b"\x31\x41\x59\x26\x53\x59", b"\x17\x72\x45\x38\x50\x90")
    ),
)
CODECS = (GZIP, ZSTD, XZ, BZIP2)
"""Every format read, in the order their magic numbers are tried."""
SUFFIXES = tuple(codec.suffix for codec in CODECS)
"""The compression suffixes a name may end with: ``.gz``, ``.zst``, ``.xz``, ``.bz2``."""
TRUNCATED = "Compressed file ended before the end-of-stream marker was reached"
"""The error of a stream that ends inside a frame, block or member (as the standard library
words it for every format)."""
_CHUNK = 1 << 16  # compressed bytes read at a time

MAGIC_BYTES = max(len(magic) for codec in CODECS for magic in codec.magics)
"""Bytes to read from the start of an input to know its codec (:func:`codec_of`)."""


def codec_of(head: bytes | bytearray) -> Codec | None:
    """The format whose magic number ``head`` (an input's first :data:`MAGIC_BYTES` bytes, or
    all of a shorter one) starts with; None for uncompressed content."""
    for codec in CODECS:
        if bytes(head).startswith(codec.magics):
            return codec
    return None


def without_suffix(name: str) -> str:
    """``name`` less one compression suffix, in any case (``x.CSV.GZ`` -> ``x.CSV``)."""
    lowered = name.lower()
    for suffix in SUFFIXES:
        if lowered.endswith(suffix):
            return name[: -len(suffix)]
    return name


def suffix_codec(name: str) -> Codec | None:
    """The format a file of this name is written in (by its suffix, in any case); None for
    uncompressed."""
    lowered = name.lower()
    for codec in CODECS:
        if lowered.endswith(codec.suffix):
            return codec
    return None


def _zstd() -> Any:
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14
    except ImportError:
        from backports import zstd  # type: ignore[import-not-found,no-redef]
    return zstd


def decompressed(fileobj: Any, codec: Codec, *, threaded: bool = False) -> Any:
    """A binary reader (``read``, ``readinto``) of ``fileobj``'s content decompressed.
    ``threaded`` decompresses gzip in a background thread where python-isal is installed."""
    if codec is GZIP:
        if threaded:
            try:
                from isal import igzip_threaded

                return igzip_threaded.open(fileobj, "rb", threads=1)
            except ImportError:  # pragma: no cover - isal missing
                pass
        import gzip

        return gzip.GzipFile(fileobj=fileobj, mode="rb")
    return io.BufferedReader(_Streams(fileobj, _factory(codec)), _CHUNK)


class _Streams(io.RawIOBase):
    """The content of one or more concatenated Zstandard, xz or bzip2 streams (a Zstandard
    skippable frame is a stream of no content). Unlike the standard library's readers, bytes
    after a stream that start no stream are an error, not ignored: rows appended uncompressed
    to a compressed file would otherwise be dropped unread. NUL bytes between and after
    streams are padding, skipped in every format as ``xz`` and ``gzip`` skip them (a block
    device or a tape pads a file so)."""

    def __init__(self, fileobj: Any, factory: Callable[[], Any]) -> None:
        self._fp = fileobj
        self._factory = factory
        self._decompressor = factory()
        self._padding = True

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        with memoryview(b) as view, view.cast("B") as out:
            while True:
                d = self._decompressor
                if d.eof:
                    rest = d.unused_data or self._fp.read(_CHUNK)
                    while self._padding and rest and not rest.strip(b"\0"):
                        rest = self._fp.read(_CHUNK)  # padding only so far: read on
                    if self._padding:
                        rest = rest.lstrip(b"\0")
                    if not rest:
                        return 0
                    self._decompressor = d = self._factory()  # the next stream
                    data = d.decompress(rest, len(out))
                elif d.needs_input:
                    raw = self._fp.read(_CHUNK)
                    if not raw:
                        raise EOFError(TRUNCATED)
                    data = d.decompress(raw, len(out))
                else:
                    data = d.decompress(b"", len(out))
                if data:
                    out[: len(data)] = data
                    return len(data)


def read_errors() -> tuple[type[BaseException], ...]:
    """What reading a file, or decompressing one, may raise (a damaged or truncated stream
    gives ``EOFError`` or one of the formats' own errors)."""
    import lzma
    import zlib

    errors: list[type[BaseException]] = [OSError, EOFError, zlib.error, lzma.LZMAError]
    with contextlib.suppress(ImportError):  # neither Python 3.14 nor the backport: no Zstandard
        errors.append(_zstd().ZstdError)
    try:
        from isal import isal_zlib

        errors.append(isal_zlib.error)
    except ImportError:  # pragma: no cover - isal missing
        pass
    return tuple(errors)


def read_failure(source: str, exc: BaseException) -> str:
    """What a failed read of the file ``source`` is called, in the words the line reader uses:
    ``cannot decompress: ...`` for a compressed file (a truncated or damaged stream), else
    ``cannot read: ...``, with an OS error's own words."""
    if isinstance(exc, OSError) and exc.strerror:
        reason = exc.strerror
    else:
        reason = next(iter(str(exc).splitlines()), "") or type(exc).__name__
    try:
        with open(source, "rb") as f:
            compressed = codec_of(f.read(MAGIC_BYTES)) is not None
    except OSError:
        compressed = False
    return f"{'cannot decompress' if compressed else 'cannot read'}: {reason}"


def trailing_bytes(path: str, codec: Codec) -> int | None:
    """How many bytes at the end of a compressed file follow its last whole stream and start
    no stream of ``codec`` (rows appended to a file after it was compressed), or None when
    there are none, or the file fails otherwise (a damaged or truncated stream). The file is
    decompressed again, its content dropped: a read on the error path only."""
    import os
    import zlib

    make: Callable[[], Any] = (lambda: zlib.decompressobj(31)) if codec is GZIP else _factory(codec)
    longest = max(len(magic) for magic in codec.magics)
    with open(path, "rb") as raw:
        size = os.fstat(raw.fileno()).st_size
        pending, d = b"", None
        while True:
            if d is None:  # between streams: NUL padding skipped, then a magic number or not
                pending = pending.lstrip(b"\0")
                while len(pending) < longest:
                    more = raw.read(_CHUNK)
                    if not more:
                        break
                    pending = (pending + more).lstrip(b"\0")
                if not pending:
                    return None
                head = pending[:longest]
                if not any(head.startswith(m) or m.startswith(head) for m in codec.magics):
                    return size - (raw.tell() - len(pending))
                if not any(head.startswith(m) for m in codec.magics):
                    return None  # the start of a magic number, cut off: a truncated stream
                d = make()
            data, pending = pending or raw.read(_CHUNK), b""
            if not data:
                return None  # the file ends inside a stream
            try:
                d.decompress(data)
            except Exception:  # a damaged stream, not bytes after one
                return None
            if d.eof:
                pending, d = d.unused_data, None


def _factory(codec: Codec) -> Callable[[], Any]:
    """The streaming decompressor of a format other than gzip."""
    if codec is ZSTD:
        return _zstd().ZstdDecompressor
    if codec is XZ:
        import lzma

        return lzma.LZMADecompressor
    import bz2

    return bz2.BZ2Decompressor


def trailing_reason(count: int, codec: Codec) -> str:
    """What reading a file whose last ``count`` bytes follow its last stream is refused for."""
    what = "byte comes" if count == 1 else f"{count:,} bytes come"
    start = "starts" if count == 1 else "start"
    return (
        f"its last {what} after the end of the {codec.name} data and {start} no {codec.name} "
        "stream (written to the file after it was compressed?)"
    )


class AppendedBytes(OSError):
    """A compressed file's decompression failed on bytes written after its last stream (rows
    ``echo``-ed onto a ``.gz``): ``str()`` is :func:`trailing_reason`, ``detail`` what every
    reader of a file says for it."""

    def __init__(self, count: int, codec: Codec) -> None:
        super().__init__(trailing_reason(count, codec))
        self.count = count
        self.codec = codec

    def __reduce__(self):  # picklable across worker processes
        return (AppendedBytes, (self.count, self.codec))

    @property
    def detail(self) -> str:
        return f"cannot decompress: {self}"


class Appended:
    """A regular file's decompressed stream whose failures name bytes written after the
    compressed data (:class:`AppendedBytes`) when the file ends so: a decompressor calls them
    a truncated stream or a bad magic number, which would send a user looking for a download
    cut short. Other failures pass as the decompressor raised them."""

    def __init__(self, stream: Any, path: str, codec: Codec) -> None:
        self._stream = stream
        self._path = path
        self._codec = codec

    def _named(self, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except read_errors() as e:
            if isinstance(e, AppendedBytes):
                raise
            count = trailing_bytes(self._path, self._codec)
            if count is None:
                raise
            raise AppendedBytes(count, self._codec) from e

    def readinto(self, b: Any) -> int:
        return self._named(lambda: self._stream.readinto(b))

    def read(self, n: int = -1) -> bytes:
        return self._named(lambda: self._stream.read(n))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def open_path(path: str) -> Any:
    """A binary reader of a file's content, decompressed when it is compressed (buffered, so
    that ``readline`` costs what it costs on a plain file); the caller closes it. Bytes
    written onto a compressed regular file after its last stream fail a read with
    :class:`AppendedBytes`."""
    import os
    import stat

    raw = open(path, "rb")  # noqa: SIM115 - returned open, closed by the caller
    try:
        codec = codec_of(raw.read(MAGIC_BYTES))
        raw.seek(0)
        regular = stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
    except BaseException:
        raw.close()
        raise
    if codec is None:
        return raw
    stream = decompressed(raw, codec)
    if regular:  # a pipe cannot be read again to count the bytes
        stream = Appended(stream, path, codec)
    return io.BufferedReader(_Owning(stream, raw), _CHUNK)


class _Owning(io.RawIOBase):
    """A decompressing reader that also closes the file under it."""

    def __init__(self, stream: Any, raw: Any) -> None:
        self._stream = stream
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        return self._stream.readinto(b)

    def close(self) -> None:
        if not self.closed:
            try:
                self._stream.close()
            finally:
                self._raw.close()
                super().close()


def compressing(
    write: Callable[[bytes], None], codec: Codec
) -> tuple[Callable[[bytes], None], Callable[[], None]]:
    """``write`` wrapped in a streaming compressor of ``codec``, and the function that ends
    the stream (to call once, after the last write)."""
    compressor: Any
    if codec is GZIP:
        import zlib

        compressor = zlib.compressobj(6, zlib.DEFLATED, 31)  # wbits 31: the gzip container
    elif codec is ZSTD:
        compressor = _zstd().ZstdCompressor()
    elif codec is XZ:
        import lzma

        compressor = lzma.LZMACompressor()
    else:
        import bz2

        compressor = bz2.BZ2Compressor()

    def compressed(data: bytes) -> None:
        out = compressor.compress(data)
        if out:
            write(out)

    def finish() -> None:
        write(compressor.flush())

    return compressed, finish
