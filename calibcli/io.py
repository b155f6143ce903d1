"""Streaming JSONL reading: files, ``-`` (stdin) and ``.gz``, folded block by block into statistics.

Design (measured on a 2-core machine, 1M calibration rows, 52 MB; see BENCHMARKS.md):

* Bytes are read in blocks of about 1 MB cut at a newline, so memory does not grow with the file.
* Each block is decoded by msgspec into typed structs (``Decoder(Row).decode_lines``): 0.11 s per
  million rows, against 0.34 s for msgspec into dicts and ~1.8 s for ``json.loads`` per line. The
  struct's field types carry the type checks (confidence a number, correct a bool or the integer
  0/1, tokens an integer); the ranges (confidence in [0, 1], nll ≥ 0, tokens ≥ 0) are checked on
  the numpy columns, which is ~10 ns per row cheaper than range constraints in the decoder. A
  valid block needs no further per-row Python work beyond pulling the columns out (a list
  comprehension per field, then ``np.fromiter`` over the list: ~65 ns per row for two columns,
  against ~95 ns for ``np.fromiter(map(attrgetter(...)))``; the dominant remaining cost).
* Line counting writes into scratch arrays reused from block to block: fresh megabyte-sized
  temporaries were returned to the OS and faulted back in on every block (~0.3 s of system time
  for 5M rows).
* A block that fails to decode, or whose row count differs from its line count (blank lines),
  goes through the precise path: line by line, ``json.loads`` and plain-Python checks that name
  the exact line and what is wrong. That path also accepts what msgspec refuses but the input
  rules allow: ``Infinity`` and overflowing literals such as ``1e999`` as an NLL of +inf.
* Each block is folded into :class:`~calibcli.metrics.core.BinStats` through a compensated
  :class:`~calibcli.metrics.core.StatsAccumulator` and dropped; with ``keep_columns`` the
  confidences are also appended, split by correctness, to preallocated float64 buffers
  (8 bytes per row; unused capacity is never touched, so it costs no resident memory).
* A large regular file is split at line boundaries between this process and forked workers; their
  statistics are merged in file order, so results are identical run to run and agree with the
  single-process result to rounding (1e-12 relative is the tested bound).
* gzip input is decompressed by python-isal in a background thread where it is installed (about
  1.6x faster than zlib), else by the standard :mod:`gzip` module.

Lines are 1-based physical lines of the (decompressed) input. Every error is an
:class:`InputError` whose message is one line: ``path:line: what is wrong`` or, for a file that
cannot be opened or decompressed, ``path: reason``.

msgspec's ``decode_lines`` accepts a JSON value split across lines and several values on one line,
so a block decoded in one call is trusted only when every physical line opens with ``{`` and the
row count equals the line count; anything else (blank lines included) is re-read line by line.
Known limit: an object split across lines whose continuation lines also open with ``{``, in the
same ~1 MB block as a line holding two objects, would pass unnoticed.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from calibcli.metrics.core import BinStats, PredictionColumns

__all__ = [
    "CalibrationData",
    "InputError",
    "PerplexityData",
    "read_calibration",
    "read_perplexity",
]

BLOCK_SIZE = 1 << 20
"""Bytes read per block (blocks are then cut back to the last newline)."""
PARALLEL_MIN_BYTES = 32 << 20
"""Regular uncompressed files at least this large are split across worker processes."""
PROGRESS_MIN_BYTES = 8 << 20
"""A progress bar is shown (on a terminal) only for inputs at least this large."""
SMALL_BLOCK = 64 << 10
"""Native input that starts with a block smaller than this is read with json.loads line by line
(about 2 ms per 1,000 rows), which spares importing msgspec on small runs."""

STDIN_NAME = "<stdin>"
FORMATS = ("auto", "jsonl", "lm-eval", "logprobs")
MC_NORMS = ("none", "chars", "bytes")
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


class InputError(Exception):
    """Invalid or unreadable input. ``str(error)`` is one line naming the file and line."""

    def __init__(self, path: str, line: int | None, detail: str) -> None:
        self.path = path
        self.line = line
        self.detail = detail
        super().__init__(f"{path}:{line}: {detail}" if line is not None else f"{path}: {detail}")

    def __reduce__(self):  # picklable across worker processes
        return (InputError, (self.path, self.line, self.detail))


@dataclass(frozen=True)
class CalibrationData:
    """Calibration rows read from one or more sources."""

    stats: BinStats
    columns: PredictionColumns | None = None
    per_source: dict[str, CalibrationData] | None = None
    groups: dict[str, CalibrationData] | None = None
    rows: int = 0
    fmt: str = "jsonl"


@dataclass(frozen=True)
class PerplexityData:
    """Pooled perplexity totals read from one or more sources.

    ``total_tokens`` is None when the format carries no token counts (lm-eval rolling rows);
    ``total_bytes`` / ``total_words`` are None unless every row carries them.
    """

    sequences: int
    total_nll: float
    total_tokens: int | None
    total_bytes: int | None = None
    total_words: int | None = None
    null_logprobs: int = 0
    sentinel_logprobs: int = 0
    groups: dict[str, PerplexityData] | None = None
    fmt: str = "jsonl"


# --------------------------------------------------------------------------- value checks


def _show(value: Any) -> str:
    """A value as it would read in JSON, shortened for an error message."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _field(obj: dict, name: str) -> Any:
    try:
        return obj[name]
    except KeyError:
        raise ValueError(f'missing field "{name}"') from None


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_confidence(v: Any, name: str) -> float:
    if not _is_number(v):
        raise ValueError(f"{name} {_show(v)} is not a number")
    try:
        x = float(v)
    except OverflowError:
        raise ValueError(f"{name} {_show(v)} is outside [0, 1]") from None
    if math.isnan(x):
        raise ValueError(f"{name} NaN is not a number")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{name} {_show(v)} is outside [0, 1]")
    return x


def _check_correct(v: Any, name: str) -> bool:
    if isinstance(v, bool):
        return v
    if type(v) is int and v in (0, 1):
        return bool(v)
    raise ValueError(f"{name} {_show(v)} is not true/false/0/1")


def _check_nll(v: Any, name: str) -> float:
    if not _is_number(v):
        raise ValueError(f"{name} {_show(v)} is not a number")
    try:
        x = float(v)
    except OverflowError:
        x = math.inf if v > 0 else -math.inf
    if math.isnan(x):
        raise ValueError(f"{name} NaN is not a number")
    if x < 0:
        raise ValueError(f"{name} {_show(v)} is negative (expected a negative log-likelihood >= 0)")
    return x


_MAX_COUNT = 1 << 62


def _check_count(v: Any, name: str) -> int:
    if type(v) is not int or v < 0:
        raise ValueError(f"{name} {_show(v)} is not a non-negative integer")
    if v > _MAX_COUNT:
        raise ValueError(f"{name} {_show(v)} is too large")
    return v


def _parse_line(line: bytes) -> dict:
    """One JSON object from one physical line (precise path; accepts Infinity and 1e999)."""
    try:
        obj = json.loads(line)
    except UnicodeDecodeError:
        raise ValueError("line is not valid UTF-8") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"line is not a JSON object ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError("line is not a JSON object")
    return obj


# --------------------------------------------------------------------------- sources


def _display(source: str) -> str:
    return STDIN_NAME if source == "-" else source


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__


def _read_errors() -> tuple[type[BaseException], ...]:
    import zlib

    errors: list[type[BaseException]] = [OSError, EOFError, ValueError, zlib.error]
    try:
        from isal import isal_zlib

        errors.append(isal_zlib.error)
    except ImportError:  # pragma: no cover - isal missing
        pass
    return tuple(errors)


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


def _gunzip(fileobj: Any) -> Any:
    try:
        from isal import igzip_threaded

        return igzip_threaded.open(fileobj, "rb", threads=1)
    except ImportError:  # pragma: no cover - isal missing
        import gzip

        return gzip.GzipFile(fileobj=fileobj, mode="rb")


class _Source:
    """One input: a path or ``-``; knows its display name, size and whether it is gzip."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.name = _display(source)
        self.size: int | None = None  # bytes of a regular file (compressed size for gzip)
        self.gzip = False
        self.isize: int | None = None  # gzip trailer: uncompressed size modulo 2**32
        self.raw: Any = None
        self._head = b""  # bytes already read from a stream that cannot seek back

    def probe(self) -> None:
        """Open the input and look at its first bytes (gzip?) without starting to decompress;
        raises InputError when it cannot be opened."""
        if self.source == "-":
            try:
                self.raw = sys.stdin.buffer
                self._head = self.raw.read(2)
            except (AttributeError, OSError, ValueError) as e:  # no stdin, or closed
                raise InputError(self.name, None, f"cannot read: {_reason(e)}") from None
            self.gzip = self._head == _GZIP_MAGIC
            return
        try:
            raw = open(self.source, "rb")  # noqa: SIM115 - closed by close()
            st = os.fstat(raw.fileno())
            import stat

            if stat.S_ISDIR(st.st_mode):  # pragma: no cover - open() already refuses on Linux
                raw.close()
                raise IsADirectoryError(21, "Is a directory")
            self.size = st.st_size if stat.S_ISREG(st.st_mode) else None
            magic = raw.read(2)
            self.gzip = magic == _GZIP_MAGIC
            if self.size is None:  # a pipe or FIFO: keep what was read
                self._head = magic
            else:
                if self.gzip and self.size >= 18:
                    raw.seek(-4, os.SEEK_END)
                    self.isize = int.from_bytes(raw.read(4), "little")
                raw.seek(0)
        except OSError as e:
            raise InputError(self.name, None, _reason(e)) from None
        self.raw = raw

    def stream(self) -> Any:
        """The (decompressed) byte stream, after :meth:`probe`."""
        raw = self.raw if not self._head else _Chain(self._head, self.raw)
        return _gunzip(raw) if self.gzip else raw

    def close(self) -> None:
        if self.raw is not None and self.source != "-":
            self.raw.close()

    def expected_bytes(self, limit: int | None = None) -> int | None:
        """Decompressed bytes to expect (for sizing buffers), or None if unknown."""
        if limit is not None:
            return limit
        if self.size is None:
            return None
        if not self.gzip:
            return self.size
        isize = self.isize or 0
        return isize if isize >= self.size else 4 * self.size

    def position(self) -> int:
        """Bytes of the underlying file consumed so far (for progress)."""
        try:
            return self.raw.tell() if self.raw is not None else 0
        except (OSError, ValueError):
            return 0


def _blocks(
    stream: Any,
    name: str,
    block_size: int,
    limit: int | None = None,
    *,
    strip_bom: bool = True,
    what: str = "cannot read",
) -> Iterator[tuple[int, memoryview, int, int]]:
    """Yield (first line number, view, newlines, expected rows) of newline-aligned blocks.

    ``expected rows`` is the number of physical lines when every line opens with ``{``, else -1:
    a decoder trusts a block decoded in one call only when it yields exactly that many rows, so
    blank or indented lines, a value split across lines or several on one line all send the block
    down the precise line-by-line path.

    The bytes are read into one reused buffer, so a view is valid only until the next item is
    requested. ``limit`` stops after that many bytes (ranges are cut at line starts by the
    caller). Line numbers are 1-based; the last block may lack a trailing newline. A UTF-8
    byte-order mark at the start is dropped. A read or decompression failure raises
    ``InputError("path: ...")``.
    """
    import numpy as np

    errors = _read_errors()
    buf = bytearray(2 * block_size)
    marks = starts = np.empty(0, np.bool_)  # scratch for the line counts, sized on first use
    filled = 0  # bytes held in buf; the carried partial line sits at the front
    line = 1
    remaining = limit
    bom = strip_bom
    eof = False
    while not eof:
        if len(buf) - filled < block_size:  # a line longer than a block: make room
            buf.extend(bytes(len(buf)))
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
        filled += got
        if remaining is not None:
            remaining -= got
        if bom and (filled >= len(_BOM) or eof):
            bom = False
            if buf.startswith(_BOM):
                buf[0 : filled - len(_BOM)] = buf[len(_BOM) : filled]
                filled -= len(_BOM)
        cut = filled if eof else buf.rfind(b"\n", 0, filled) + 1
        if cut == 0:
            continue
        if marks.shape[0] < cut:
            marks = np.empty(len(buf), np.bool_)
            starts = np.empty(len(buf), np.bool_)
        with memoryview(buf) as whole, whole[:cut] as view:
            # numpy's vectorised compares count ~4x faster than bytearray.count; they write into
            # reused arrays (fresh megabyte arrays cost page faults on every block)
            arr = np.frombuffer(view, np.uint8)
            nl = np.equal(arr, 10, out=marks[:cut])
            newlines = int(np.count_nonzero(nl))
            physical = newlines + (buf[cut - 1] != 10)
            # a "{" right after a newline: a line opening an object
            opened_at = np.equal(arr[1:], 123, out=starts[: cut - 1])
            np.logical_and(opened_at, nl[:-1], out=opened_at)
            opened = int(np.count_nonzero(opened_at)) + (buf[0] == 123)
            del arr, nl, opened_at  # release the view before the buffer is reused
            yield line, view, newlines, physical if opened == physical else -1
        line += newlines
        tail = filled - cut
        if tail:
            buf[0:tail] = buf[cut:filled]
        filled = tail


def _lines(block: bytes | memoryview, first_line: int) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each non-blank line."""
    for i, line in enumerate(bytes(block).split(b"\n")):
        if line.strip():
            yield first_line + i, line


# --------------------------------------------------------------------------- row decoders
#
# A decoder turns one newline-aligned block into columns. ``block()`` returns
# ``(columns, keys, lines)``: ``columns`` a tuple of numpy arrays, ``keys`` the group name of each
# row (or None), ``lines`` the line number of each row, or None when row i is line first_line + i.


def _getter(name: str) -> Callable[[Any], Any]:
    from operator import attrgetter

    return attrgetter(name)


class _NativeDecoder:
    """Typed msgspec decoding with a precise per-line fallback (see the module docstring).

    Subclasses define ``_struct_fields()`` (msgspec field specs and renames), ``_columns(rows)``
    (numpy columns of decoded structs, or None to take the precise path), ``_row_of_struct(row)``
    (one row's values, None to let ``_row_of_dict`` word a range error) and ``_row_of_dict(obj)``
    (one row's values; ValueError with the message), and ``_make_columns(values)``.
    """

    def __init__(self) -> None:
        self._decoder: Any = None  # built on the first block large enough to need it

    def _typed(self) -> Any:
        if self._decoder is None:
            import msgspec

            fields, rename = self._struct_fields()
            row_type = msgspec.defstruct("Row", fields, rename=rename, gc=False)
            self._decoder = msgspec.json.Decoder(row_type)
            self._errors = (msgspec.DecodeError, msgspec.ValidationError)
        return self._decoder

    def block(self, block: memoryview, first_line: int, name: str, expected: int) -> tuple:
        if len(block) < SMALL_BLOCK and self._decoder is None:
            return self._precise(block, first_line, name)  # json.loads: no msgspec import
        decoder = self._typed()
        try:
            rows = decoder.decode_lines(block)
        except self._errors:
            rows = None
        if rows is not None and len(rows) == expected:
            cols = self._columns(rows, block)
            if cols is not None:
                return cols, None, None
        return self._precise(block, first_line, name)

    def _precise(self, block: memoryview, first_line: int, name: str) -> tuple:
        """Line by line: msgspec per line when loaded (fast), else or on failure json.loads and
        plain-Python checks (exact messages; Infinity and 1e999 accepted where allowed)."""
        values, lines = [], []
        decoder = self._decoder
        for line_no, line in _lines(block, first_line):
            try:
                row = None
                if decoder is not None:
                    with contextlib.suppress(self._errors):
                        row = self._row_of_struct(decoder.decode(line))
                values.append(row if row is not None else self._row_of_dict(_parse_line(line)))
            except ValueError as e:
                raise InputError(name, line_no, str(e)) from None
            lines.append(line_no)
        return self._make_columns(values), None, lines


class _CalibrationDecoder(_NativeDecoder):
    """Native calibration rows -> (confidence float64, correct bool)."""

    def __init__(self, confidence_field: str, correct_field: str) -> None:
        self.fields = (confidence_field, correct_field)
        super().__init__()

    def _struct_fields(self) -> tuple[list, dict]:
        from typing import Annotated

        from msgspec import Meta

        # The range of the confidence is checked on the column (``_columns``): a constrained
        # float costs the decoder ~10 ns per row, two vectorised reductions ~1 ns.
        fields = [("c", float), ("y", bool | Annotated[int, Meta(ge=0, le=1)])]
        return fields, {"c": self.fields[0], "y": self.fields[1]}

    def _columns(self, rows: list, block: memoryview) -> tuple | None:
        import numpy as np

        n = len(rows)
        # A list comprehension (specialised slot reads) then fromiter over the list is ~30 ns
        # per row cheaper than fromiter over map(attrgetter) for the two columns.
        conf = np.fromiter([r.c for r in rows], np.float64, n)
        if n and not (conf.min() >= 0.0 and conf.max() <= 1.0):
            return None  # the precise path names the line
        # correct is True/False or the int 0/1 (the decoder checked): bytes() packs the list
        # twice as fast as np.fromiter(..., np.bool_), and numpy reads it as bool in place.
        corr = np.frombuffer(bytes([r.y for r in rows]), np.bool_)
        return conf, corr

    def _row_of_struct(self, row: Any) -> tuple | None:
        if not 0.0 <= row.c <= 1.0:
            return None  # the plain-Python check words the message
        return row.c, bool(row.y)

    def _row_of_dict(self, obj: dict) -> tuple:
        cf, yf = self.fields
        return _check_confidence(_field(obj, cf), cf), _check_correct(_field(obj, yf), yf)

    _make_columns = staticmethod(lambda values: _calibration_columns(values))


def _contains(block: memoryview | bytes, key: bytes) -> bool:
    """Whether ``key`` occurs in the block (a view from :func:`_blocks`, which starts at offset 0
    of its buffer, so the buffer's own ``find`` searches it without a copy).

    A key written with JSON escapes (``"\\u0062ytes"``) is not found: such a field is then read
    as absent."""
    obj = block.obj if isinstance(block, memoryview) else block
    if isinstance(obj, (bytes, bytearray)):
        return obj.find(key, 0, len(block)) >= 0
    return key in bytes(block)  # pragma: no cover - other buffers


def _calibration_columns(values: list) -> tuple:
    import numpy as np

    n = len(values)
    conf = np.fromiter((v[0] for v in values), np.float64, n)
    corr = np.fromiter((v[1] for v in values), np.bool_, n)
    return conf, corr


class _PerplexityDecoder(_NativeDecoder):
    """Native perplexity rows -> perplexity columns (see ``_perplexity_columns``)."""

    def __init__(self, nll_field: str, tokens_field: str, bytes_field: str, words_field: str):
        self.fields = (nll_field, tokens_field, bytes_field, words_field)
        self._keys = [json.dumps(f).encode() for f in self.fields]  # as written in the JSON
        super().__init__()

    def _struct_fields(self) -> tuple[list, dict]:
        from typing import Annotated

        from msgspec import Meta

        count = Annotated[int, Meta(ge=0, le=_MAX_COUNT)]
        # nll >= 0 and the range of tokens are checked on the columns (``_columns``): constrained
        # fields cost the decoder ~10 ns per row, the vectorised checks ~1 ns. The optional
        # counts keep their constraint: -1 stands for "absent" there.
        fields = [
            ("nll", float),
            ("tokens", int),
            ("nbytes", count, -1),  # -1: the row lacks the field (a given value must be >= 0)
            ("words", count, -1),
        ]
        return fields, dict(zip(("nll", "tokens", "nbytes", "words"), self.fields, strict=True))

    def _columns(self, rows: list, block: memoryview) -> tuple | None:
        import numpy as np

        n = len(rows)
        # List comprehensions (specialised slot reads) then fromiter over the lists: cheaper
        # per row than fromiter over map(attrgetter).
        nll = np.fromiter([r.nll for r in rows], np.float64, n)
        try:
            tokens = np.fromiter([r.tokens for r in rows], np.int64, n)
        except OverflowError:
            return None  # beyond int64: the precise path names the line
        if n and not (nll.min() >= 0.0 and tokens.min() >= 0 and tokens.max() <= _MAX_COUNT):
            return None
        if np.any((tokens == 0) & (nll > 0)):
            return None  # the precise path names the line
        optional = []
        for attr, key in (("nbytes", self._keys[2]), ("words", self._keys[3])):
            # A block without the key has no row carrying the field: skip the per-row pass.
            if _contains(block, key):
                optional.append(np.fromiter(map(_getter(attr), rows), np.int64, n))
            else:
                optional.append(None)
        return nll, tokens, *optional, None, None

    def _row_of_struct(self, row: Any) -> tuple | None:
        if not (row.nll >= 0.0 and 0 <= row.tokens <= _MAX_COUNT):
            return None  # the plain-Python checks word the message
        if row.tokens == 0 and row.nll > 0:
            raise ValueError(f"{self.fields[0]} {_show(row.nll)} > 0 with 0 {self.fields[1]}")
        return row.nll, row.tokens, row.nbytes, row.words, 0, 0

    def _row_of_dict(self, obj: dict) -> tuple:
        nf, tf, bf, wf = self.fields
        nll = _check_nll(_field(obj, nf), nf)
        tokens = _check_count(_field(obj, tf), tf)
        if tokens == 0 and nll > 0:
            raise ValueError(f"{nf} {_show(nll)} > 0 with 0 {tf}")
        return nll, tokens, *_optional_counts(obj, bf, wf), 0, 0

    _make_columns = staticmethod(lambda values: _perplexity_columns(values))


def _optional_counts(obj: dict, bytes_field: str, words_field: str) -> tuple:
    b = _check_count(obj[bytes_field], bytes_field) if bytes_field in obj else None
    w = _check_count(obj[words_field], words_field) if words_field in obj else None
    return b, w


def _perplexity_columns(values: list) -> tuple:
    """(nll, tokens, bytes, words, nulls, sentinels); counts are int64 with -1 for "absent"."""
    import numpy as np

    n = len(values)
    nll = np.fromiter((v[0] for v in values), np.float64, n)
    ints = [
        np.fromiter((-1 if v[k] is None else v[k] for v in values), np.int64, n)
        for k in range(1, 6)
    ]
    return (nll, *ints)


class _GenericDecoder:
    """Rows decoded as dicts and converted by plain-Python functions (other formats, ``by``).

    ``convert(obj)`` returns one row's values or raises ValueError (message without file/line);
    ``key(obj)`` returns the row's group name.
    """

    def __init__(
        self,
        convert: Callable[[dict], tuple],
        make_columns: Callable[[list], tuple],
        key: Callable[[dict], str] | None = None,
    ) -> None:
        self._convert = convert
        self._make_columns = make_columns
        self.key = key
        self._decoder: Any = None  # msgspec, built on the first block of SMALL_BLOCK or more

    def block(self, block: memoryview, first_line: int, name: str, expected: int) -> tuple:
        rows = None
        if self._decoder is None and len(block) >= SMALL_BLOCK:
            import msgspec

            self._decoder = msgspec.json.Decoder()
            self._errors = (msgspec.DecodeError, msgspec.ValidationError)
        if self._decoder is not None:
            with contextlib.suppress(self._errors):
                rows = self._decoder.decode_lines(block)
        lines: list[int] | None = None
        if rows is None or len(rows) != expected:
            rows, lines = [], []
            for line_no, line in _lines(block, first_line):
                row = None
                if self._decoder is not None:
                    with contextlib.suppress(self._errors):
                        row = self._decoder.decode(line)
                if row is None:
                    try:
                        row = _parse_line(line)
                    except ValueError as e:
                        raise InputError(name, line_no, str(e)) from None
                rows.append(row)
                lines.append(line_no)
        values = []
        keys: list[str] | None = [] if self.key is not None else None
        convert, key = self._convert, self.key
        for i, row in enumerate(rows):
            try:
                if not isinstance(row, dict):
                    raise ValueError("line is not a JSON object")
                values.append(convert(row))
                if keys is not None:
                    keys.append(_group_name(key(row)))
            except ValueError as e:
                line_no = first_line + i if lines is None else lines[i]
                raise InputError(name, line_no, str(e)) from None
        return self._make_columns(values), keys, lines


def _group_name(value: Any) -> str:
    """Group key: strings as they are, other JSON values as JSON text (true, 3, null)."""
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return _show(value)
    return json.dumps(value)


# --------------------------------------------------------------------------- sinks


class _ColumnBuffer:
    """Growable float64 buffers for the confidences of right and of wrong answers.

    Capacity comes from a row estimate; unused capacity is allocated but never touched, so it
    costs address space, not resident memory. Estimates are capped at ``MAX_RESERVE`` rows per
    buffer (an allocation far beyond the machine's memory could be refused); growth doubles.
    """

    MAX_RESERVE = 1 << 26  # 512 MB of address space per buffer

    def __init__(self, capacity: int) -> None:
        import numpy as np

        cap = min(max(int(capacity), 4096), self.MAX_RESERVE)
        self._bufs = [np.empty(cap), np.empty(cap)]  # [right, wrong]
        self._n = [0, 0]

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` more rows in each buffer (a no-op if there is room)."""
        rows = min(int(rows), self.MAX_RESERVE)
        for i in (0, 1):
            self._grow(i, self._n[i] + rows)

    def _grow(self, i: int, need: int) -> None:
        import numpy as np

        buf = self._bufs[i]
        if need > buf.shape[0]:
            grown = np.empty(max(2 * buf.shape[0], need))
            grown[: self._n[i]] = buf[: self._n[i]]
            self._bufs[i] = grown

    def _append(self, i: int, values: np.ndarray) -> None:
        n, k = self._n[i], values.shape[0]
        self._grow(i, n + k)
        self._bufs[i][n : n + k] = values
        self._n[i] = n + k

    def add(self, conf: np.ndarray, corr: np.ndarray) -> None:
        self._append(0, conf[corr])
        self._append(1, conf[~corr])

    def extend(self, right: np.ndarray, wrong: np.ndarray) -> None:
        self._append(0, right)
        self._append(1, wrong)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return self._bufs[0][: self._n[0]], self._bufs[1][: self._n[1]]

    def receive(self, conn: Any, lengths: list[int]) -> None:
        """Read ``lengths[i]`` float64 values for buffer i from a pipe (sent by :func:`_send`)."""
        for i, k in enumerate(lengths):
            n = self._n[i]
            self._grow(i, n + k)
            buf = self._bufs[i]
            for start in range(n, n + k, _PIPE_CHUNK):
                conn.recv_bytes_into(buf, start * 8)  # in place, one chunk at a time
            self._n[i] = n + k


_PIPE_CHUNK = 1 << 17  # float64 values per message (1 MB): bounds the pipe's transient copies


def _send(conn: Any, array: np.ndarray) -> None:
    """Send a float64 array in chunks that :meth:`_ColumnBuffer.receive` reads in place."""
    for start in range(0, array.shape[0], _PIPE_CHUNK):
        conn.send_bytes(array[start : start + _PIPE_CHUNK])


def _group_indices(keys: list[str]) -> Iterator[tuple[str, Any]]:
    """(key, row selector) for each distinct key of a block, in first-seen order."""
    import numpy as np

    first = keys[0]
    if keys.count(first) == len(keys):
        yield first, slice(None)
        return
    positions: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        positions.setdefault(k, []).append(i)
    for k, idx in positions.items():
        yield k, np.asarray(idx, dtype=np.intp)


class _CalibrationSink:
    """Folds calibration blocks into statistics (and columns), optionally per group."""

    def __init__(self, bins: int, keep_columns: bool, grouped: bool = False) -> None:
        from calibcli.metrics.core import StatsAccumulator

        self.bins = bins
        self.keep_columns = keep_columns
        self.acc = StatsAccumulator(bins)
        self.columns: _ColumnBuffer | None = None
        self.rows = 0
        self.groups: dict[str, _CalibrationSink] | None = {} if grouped else None

    def reserve(self, rows: int) -> None:
        """Hint: about ``rows`` more rows are coming (sizes the column buffers)."""
        if not self.keep_columns:
            return
        if self.columns is None:
            self.columns = _ColumnBuffer(rows)
        else:
            self.columns.reserve(rows)

    def _group(self, key: str) -> _CalibrationSink:
        assert self.groups is not None
        sink = self.groups.get(key)
        if sink is None:
            sink = self.groups[key] = _CalibrationSink(self.bins, self.keep_columns)
        return sink

    def add(self, cols: tuple, keys: list[str] | None, locate: Any) -> None:
        conf, corr = cols
        if conf.shape[0] == 0:
            return
        self._add(conf, corr)
        if self.groups is not None and keys is not None:
            for key, sel in _group_indices(keys):
                self._group(key)._add(conf[sel], corr[sel])

    def _add(self, conf: np.ndarray, corr: np.ndarray) -> None:
        from calibcli.metrics.core import BinStats

        self.acc.add(BinStats.from_arrays(conf, corr, self.bins, validate=False))
        if self.keep_columns:
            if self.columns is None:
                self.columns = _ColumnBuffer(1 << 16)
            self.columns.add(conf, corr)
        self.rows += conf.shape[0]

    def export(self, with_columns: bool = True) -> dict:
        """Picklable state, to merge a worker's (or a source's) share into another sink.

        ``with_columns=False`` leaves the top-level columns out; a worker sends them with
        :meth:`bulk` as raw bytes, which the parent receives in place (:meth:`receive_bulk`).
        """
        return {
            "stats": self.acc.result(),
            "columns": None if self.columns is None or not with_columns else self.columns.arrays(),
            "rows": self.rows,
            "groups": None
            if self.groups is None
            else {k: g.export() for k, g in self.groups.items()},
        }

    def absorb(self, state: dict, path: str = "", line_offset: int = 0) -> None:
        self.acc.add(state["stats"])
        if self.keep_columns and state["columns"] is not None:
            if self.columns is None:
                self.columns = _ColumnBuffer(state["rows"])
            self.columns.extend(*state["columns"])
        self.rows += state["rows"]
        if self.groups is not None and state["groups"] is not None:
            for key, sub in state["groups"].items():
                self._group(key).absorb(sub)

    def bulk(self) -> list[np.ndarray]:
        """The arrays a worker sends raw: the confidences of right, then of wrong answers."""
        return [] if self.columns is None else list(self.columns.arrays())

    def receive_bulk(self, conn: Any, lengths: list[int]) -> None:
        """Append arrays sent by a worker's :meth:`bulk` straight into the column buffers."""
        if not lengths:
            return
        if self.columns is None:
            self.columns = _ColumnBuffer(sum(lengths))
        self.columns.receive(conn, lengths)

    def result(self, fmt: str) -> CalibrationData:
        import numpy as np

        from calibcli.metrics.core import PredictionColumns

        columns = None
        if self.keep_columns:
            if self.columns is None:
                columns = PredictionColumns(np.zeros(0), np.zeros(0))
            else:
                columns = PredictionColumns(*self.columns.arrays())
        groups = None
        if self.groups is not None:
            groups = {k: self.groups[k].result(fmt) for k in sorted(self.groups)}
        return CalibrationData(
            stats=self.acc.result(), columns=columns, groups=groups, rows=self.rows, fmt=fmt
        )


_OPTIONAL = ("tokens", "bytes", "words")


class _PerplexitySink:
    """Folds perplexity blocks: exact integer totals; NLL summed per block, pooled with fsum.

    ``tokens``, ``bytes`` and ``words`` are totalled only when every row carries them; a row that
    breaks the pattern set by the first row is an error naming that row.
    """

    def __init__(self, fields: dict[str, str], grouped: bool = False) -> None:
        self.fields = fields  # column -> field name, for messages
        self.nll_parts: list[float] = []
        self.sequences = 0
        self.totals = dict.fromkeys(_OPTIONAL, 0)
        self.present: dict[str, bool | None] = dict.fromkeys(_OPTIONAL)
        self.first_line: int | None = None
        self.nulls = 0
        self.sentinels = 0
        self.groups: dict[str, _PerplexitySink] | None = {} if grouped else None

    def reserve(self, rows: int) -> None:
        pass

    def bulk(self) -> list:
        return []

    def receive_bulk(self, conn: Any, lengths: list[int]) -> None:
        pass

    def _group(self, key: str) -> _PerplexitySink:
        assert self.groups is not None
        sink = self.groups.get(key)
        if sink is None:
            sink = self.groups[key] = _PerplexitySink(self.fields)
        return sink

    def add(self, cols: tuple, keys: list[str] | None, locate: Any) -> None:
        """``locate(i)`` gives (path, line) of row i of the block, for error messages."""
        if cols[0].shape[0] == 0:
            return
        self._add(cols, locate)
        if self.groups is not None and keys is not None:
            for key, sel in _group_indices(keys):
                part = tuple(None if c is None else c[sel] for c in cols)
                self._group(key)._add(part, lambda i, sel=sel: locate(_pick(sel, i)))

    def _mismatch(self, name: str, path: str, line: int, has_it: bool) -> InputError:
        field = self.fields[name]
        if has_it:
            return InputError(path, line, f'field "{field}" is given here but not on earlier rows')
        return InputError(path, line, f'missing field "{field}" (earlier rows have it)')

    def _add(self, cols: tuple, where: Callable[[int], tuple[str, int]]) -> None:
        import numpy as np

        nll = cols[0]
        n = nll.shape[0]
        if self.first_line is None:
            self.first_line = where(0)[1]
        for name, col in zip(_OPTIONAL, cols[1:4], strict=True):
            state = self.present[name]
            if col is None:
                if state:
                    raise self._mismatch(name, *where(0), has_it=False)
                self.present[name] = False
                continue
            has = col >= 0
            if state is None:
                state = self.present[name] = bool(has[0])
            bad = ~has if state else has
            if bad.any():
                raise self._mismatch(name, *where(int(np.argmax(bad))), has_it=not state)
            if state:
                self.totals[name] += int(col.sum())
        if cols[4] is not None:
            self.nulls += int(cols[4].sum())
        if cols[5] is not None:
            self.sentinels += int(cols[5].sum())
        self.nll_parts.append(float(nll.sum()))
        self.sequences += n

    def export(self, with_columns: bool = True) -> dict:
        return {
            "nll_parts": list(self.nll_parts),
            "sequences": self.sequences,
            "totals": dict(self.totals),
            "present": dict(self.present),
            "first_line": self.first_line,
            "nulls": self.nulls,
            "sentinels": self.sentinels,
            "groups": None
            if self.groups is None
            else {k: g.export() for k, g in self.groups.items()},
        }

    def absorb(self, state: dict, path: str = "", line_offset: int = 0) -> None:
        if state["sequences"]:
            line = state["first_line"] + line_offset
            for name in _OPTIONAL:
                mine, theirs = self.present[name], state["present"][name]
                if mine is not None and mine != theirs:
                    raise self._mismatch(name, path, line, has_it=bool(theirs))
                self.present[name] = theirs
                self.totals[name] += state["totals"][name]
            if self.first_line is None:
                self.first_line = line
        self.nll_parts.extend(state["nll_parts"])
        self.sequences += state["sequences"]
        self.nulls += state["nulls"]
        self.sentinels += state["sentinels"]
        if self.groups is not None and state["groups"] is not None:
            for key, sub in state["groups"].items():
                self._group(key).absorb(sub, path, line_offset)

    def result(self, fmt: str) -> PerplexityData:
        def total(name: str) -> int | None:
            return self.totals[name] if self.present[name] else None

        groups = None
        if self.groups is not None:
            groups = {k: self.groups[k].result(fmt) for k in sorted(self.groups)}
        tokens = total("tokens")
        if self.sequences == 0 and fmt != "lm-eval":
            tokens = 0
        return PerplexityData(
            sequences=self.sequences,
            total_nll=math.fsum(self.nll_parts),
            total_tokens=tokens,
            total_bytes=total("bytes"),
            total_words=total("words"),
            null_logprobs=self.nulls,
            sentinel_logprobs=self.sentinels,
            groups=groups,
            fmt=fmt,
        )


def _pick(sel: Any, i: int) -> int:
    """Block row index of the i-th row of a group selection."""
    return i if isinstance(sel, slice) else int(sel[i])


# --------------------------------------------------------------------------- progress


class _ProgressBar:
    """A rich progress bar on stderr over the bytes of one file (transient)."""

    def __init__(self, name: str, total: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.total = total
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._progress.add_task(name, total=total)
        self._progress.start()

    def update(self, completed: int) -> None:
        self._progress.update(self._task, completed=min(completed, self.total))

    def close(self) -> None:
        self._progress.stop()


# --------------------------------------------------------------------------- the reader


def _first_row(block: memoryview, first_line: int) -> tuple[int, Any] | None:
    """(line, parsed object or None if unparseable) of the first non-blank line, if any."""
    size = 4096
    while True:
        whole = size >= len(block)
        lines = bytes(block[:size]).split(b"\n")
        for i, line in enumerate(lines if whole else lines[:-1]):  # only complete lines
            if line.strip():
                try:
                    return first_line + i, json.loads(line)
                except ValueError:
                    return first_line + i, None
        if whole:
            return None
        size *= 16


def _split_points(path: str, size: int, parts: int) -> list[int]:
    """Byte offsets [0, b1, ..., size] cutting a file into ``parts`` ranges at line starts."""
    bounds = [0]
    with open(path, "rb") as f:
        for k in range(1, parts):
            pos = max(size * k // parts, bounds[-1])
            if pos == 0:
                bounds.append(0)
                continue
            f.seek(pos - 1)
            f.readline()  # to the start of the line after the one holding byte pos - 1
            bounds.append(min(f.tell(), size))
    bounds.append(size)
    return bounds


class _Sender:
    """Sends blocks to a worker from a background thread, so that this process goes on reading
    and decoding while a block crosses the pipe (a pipe holds only 64 KB)."""

    def __init__(self, conn: Any, depth: int = 3) -> None:
        import queue
        import threading

        self._conn = conn
        self._queue: Any = queue.Queue(depth)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="calibcli-sender", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        broken = False
        while True:
            item = self._queue.get()
            if item is None:
                break
            if broken:
                continue
            try:
                self._conn.send(item[0])
                self._conn.send_bytes(item[1])
            except OSError:  # the worker is gone; the reader learns why from its result
                broken = True
        if not broken:
            with contextlib.suppress(OSError):
                self._conn.send(None)  # end of input

    def send(self, header: tuple, block: memoryview | bytes) -> None:
        self._queue.put((header, bytes(block)))  # a copy: the reader reuses its buffer

    def close(self) -> None:
        """Send the end marker after the queued blocks and wait for the thread."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()


def _cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _workers_from_env(workers: int | None) -> int | None:
    """``workers``, or the CALIBCLI_WORKERS environment variable when it is None."""
    if workers is not None:
        return workers
    text = os.environ.get("CALIBCLI_WORKERS", "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:  # reported like bad input: one line, exit 2 in the CLI
        raise InputError("CALIBCLI_WORKERS", None, f"{text!r} is not a whole number >= 1")
    return value


def _flush_std_streams() -> None:
    """Flush stdout/stderr before forking: a child must not repeat buffered output."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.flush()


def _limit_threads() -> None:
    """In a worker: keep BLAS/OpenMP pools to one thread (a spinning pool starves the others)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"


class _Reader:
    """Streams sources block by block through a decoder into sinks (see the module docstring).

    ``make_decoder(fmt, source)`` builds the row decoder once the format is known; ``new_sink()``
    makes an empty sink; ``detect(row)`` names the format of the first row (``fmt="auto"``).
    """

    def __init__(
        self,
        *,
        fmt: str,
        make_decoder: Callable[[str, str], Any],
        new_sink: Callable[[], Any],
        detect: Callable[[dict], str],
        progress: bool,
        workers: int | None,
        block_size: int | None,
    ) -> None:
        self.fmt: str | None = None if fmt == "auto" else fmt
        self._make_decoder = make_decoder
        self.new_sink = new_sink
        self._detect = detect
        self._progress = progress
        self._workers = _workers_from_env(workers)
        self._block_size = block_size or BLOCK_SIZE

    # ----- format detection

    def _resolve(self, block: bytes, first_line: int, name: str) -> bool:
        """Detect the format from the first row of this block; False if the block is blank."""
        found = _first_row(block, first_line)
        if found is None:
            return False
        line_no, row = found
        if not isinstance(row, dict):
            self.fmt = "jsonl"  # the native decoder reports the bad line
            return True
        try:
            self.fmt = self._detect(row)
        except ValueError as e:
            raise InputError(name, line_no, str(e)) from None
        return True

    # ----- one source

    def read(self, source: str, sink: Any) -> None:
        src = _Source(source)
        src.probe()
        try:
            parts = self._parts(src)
            if parts > 1 and src.size is not None and not src.gzip:
                self._read_parallel(src, sink, parts)
            elif parts > 1:
                self._read_dispatched(src, sink)
            else:
                stream = src.stream()
                try:
                    self._read_range(src, stream, sink, self._bar(src), None, 1)
                finally:
                    stream.close()
        finally:
            src.close()

    def _parts(self, src: _Source) -> int:
        """Processes to use: a regular file is split into byte ranges; gzip and stdin are read
        by this process, which hands every other block to one worker."""
        if src.size == 0:
            return 1
        if self._workers is None:
            expected = src.expected_bytes()
            if expected is None or expected < PARALLEL_MIN_BYTES:
                return 1  # small, or stdin (size unknown)
            return max(1, min(2, _cpus()))
        return max(1, int(self._workers))

    def _bar(self, src: _Source) -> _ProgressBar | None:
        if not self._progress or src.size is None or src.size < PROGRESS_MIN_BYTES:
            return None
        try:
            if not sys.stderr.isatty():
                return None
        except (AttributeError, ValueError):
            return None
        return _ProgressBar(src.name, src.size)

    def _read_range(
        self,
        src: _Source,
        stream: Any,
        sink: Any,
        bar: _ProgressBar | None,
        limit: int | None,
        scale: int,
        start: int = 0,
        expect: int | None = None,
        handoff: tuple[Any, Any, int] | None = None,
    ) -> int:
        """Decode one stream (or ``limit`` bytes of it) into ``sink``; return its newline count.

        ``expect`` is the number of bytes whose rows ``sink`` will hold (for sizing its column
        buffers; default: this stream's). With ``handoff`` (the pipes to and from a worker and a
        period k, see :meth:`_read_dispatched`) only one block in k is decoded here, the others
        are sent to the worker.
        """
        name = src.name
        decoder = None
        newlines = 0
        what = "cannot decompress" if src.gzip else "cannot read"
        reserved = False
        turn = 0
        try:
            for first_line, block, nl, expected in _blocks(
                stream, name, self._block_size, limit, strip_bom=start == 0, what=what
            ):
                newlines = first_line - 1 + nl
                if self.fmt is None and not self._resolve(block, first_line, name):
                    continue
                turn += 1
                if handoff is not None and turn % handoff[2] != 1:
                    sender, from_worker, _ = handoff
                    sender.send((self.fmt, first_line, expected), block)
                    if from_worker.poll():
                        break  # the worker found a bad line: nothing after it matters
                    continue
                if decoder is None:
                    decoder = self._make_decoder(self.fmt, src.source)
                cols, keys, lines = decoder.block(block, first_line, name, expected)
                if not reserved:
                    reserved = True
                    expected_bytes = expect or src.expected_bytes(limit)
                    if expected_bytes:
                        rows = expected_bytes / len(block) * cols[0].shape[0]
                        sink.reserve(int(rows * 1.1) + 1024)

                def locate(i: int, first_line=first_line, lines=lines) -> tuple[str, int]:
                    return name, first_line + i if lines is None else lines[i]

                sink.add(cols, keys, locate)
                if bar is not None:
                    bar.update((src.position() - start) * scale)
        finally:
            if bar is not None:
                bar.close()
        return newlines

    # ----- a stream (gzip, stdin) with a helper process

    def _read_dispatched(self, src: _Source, sink: Any) -> None:
        """Read and decompress here; decode most blocks in one forked worker.

        The worker is forked before decompression starts (no thread exists to fork). Blocks are
        shared in a fixed pattern, so the statistics are identical from run to run. The first bad
        line wins: a worker error stops the reading, and an error here waits for the worker's
        verdict on the earlier blocks it holds.
        """
        import multiprocessing

        try:
            ctx = multiprocessing.get_context("fork")
        except ValueError:  # pragma: no cover - no fork (Windows)
            stream = src.stream()
            try:
                self._read_range(src, stream, sink, self._bar(src), None, 1)
            finally:
                stream.close()
            return
        _flush_std_streams()
        to_worker_recv, to_worker = ctx.Pipe(duplex=False)
        from_worker, from_worker_send = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=self._dispatch_child, args=(to_worker_recv, from_worker_send, src), daemon=True
        )
        proc.start()
        to_worker_recv.close()
        from_worker_send.close()
        errors: list[InputError] = []
        finished = False
        sender = _Sender(to_worker)
        stream = src.stream()
        try:
            try:
                # This process also reads (and decompresses): it keeps one block in three for
                # itself from gzip, one in two from plain stdin.
                handoff = (sender, from_worker, 3 if src.gzip else 2)
                self._read_range(src, stream, sink, self._bar(src), None, 1, handoff=handoff)
            except InputError as e:
                errors.append(e)
            sender.close()
            try:
                message = from_worker.recv()
            except EOFError:
                proc.join()
                message = ("crash", f"worker exited with code {proc.exitcode}")
            if message[0] == "crash":
                raise RuntimeError(f"a worker reading {src.name} failed:\n{message[1]}")
            if message[0] == "input":
                errors.append(InputError(*message[1:]))
            else:
                _, state, lengths = message
                try:
                    sink.absorb(state, src.name)
                except InputError as e:  # rows of the two shares disagree (bytes/words fields)
                    errors.append(e)
                if not errors:
                    sink.receive_bulk(from_worker, lengths)
            if errors:
                raise min(errors, key=lambda e: math.inf if e.line is None else e.line)
            finished = True
        finally:
            stream.close()
            if not finished and proc.is_alive():
                proc.terminate()
            sender.close()
            proc.join()
            to_worker.close()
            from_worker.close()

    def _dispatch_child(self, blocks: Any, results: Any, src: _Source) -> None:
        """Worker body for :meth:`_read_dispatched`: decode the blocks it is sent."""
        import traceback

        _limit_threads()
        failed = False
        try:
            sink = self.new_sink()
            decoder = None
            while True:
                header = blocks.recv()
                if header is None:
                    break
                data = blocks.recv_bytes()
                if failed:
                    continue  # keep draining so the reader never blocks
                fmt, first_line, expected = header
                if decoder is None:
                    decoder = self._make_decoder(fmt, src.source)
                try:
                    cols, keys, lines = decoder.block(data, first_line, src.name, expected)

                    def locate(i: int, first_line=first_line, lines=lines) -> tuple[str, int]:
                        return src.name, first_line + i if lines is None else lines[i]

                    sink.add(cols, keys, locate)
                except InputError as e:
                    failed = True
                    results.send(("input", e.path, e.line, e.detail))
            if not failed:
                bulk = sink.bulk()
                results.send(("ok", sink.export(with_columns=False), [a.shape[0] for a in bulk]))
                for array in bulk:
                    _send(results, array)
        except BaseException:
            if not failed:
                results.send(("crash", traceback.format_exc()))
        results.close()

    # ----- a large file across processes

    def _read_parallel(self, src: _Source, sink: Any, parts: int) -> None:
        import multiprocessing

        path, size = src.source, src.size
        assert size is not None
        src.close()  # each process opens the file itself
        if self.fmt is None:
            with open(path, "rb") as f:
                for first_line, block, _, _ in _blocks(f, src.name, self._block_size):
                    if self._resolve(block, first_line, src.name):
                        break
            if self.fmt is None:
                return  # only blank lines
        try:
            ctx = multiprocessing.get_context("fork")
        except ValueError:  # pragma: no cover - no fork (Windows)
            with open(path, "rb") as f:
                self._read_range(src, f, sink, self._bar(src), None, 1)
            return
        bounds = _split_points(path, size, parts)
        _flush_std_streams()
        children = []
        finished = False
        try:
            for k in range(1, parts):
                recv, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(
                    target=self._child, args=(send, src, bounds[k], bounds[k + 1]), daemon=True
                )
                proc.start()
                send.close()
                children.append((proc, recv))
            with open(path, "rb") as f:
                src.raw = f
                offset = self._read_range(
                    src, f, sink, self._bar(src), bounds[1], parts, expect=size
                )
            for proc, recv in children:
                try:
                    message = recv.recv()
                except EOFError:
                    proc.join()
                    message = ("crash", f"worker exited with code {proc.exitcode}")
                if message[0] == "input":
                    _, path_, line, detail = message
                    raise InputError(path_, None if line is None else line + offset, detail)
                if message[0] == "crash":
                    raise RuntimeError(f"a worker reading {src.name} failed:\n{message[1]}")
                _, state, newlines, lengths = message
                sink.absorb(state, src.name, offset)
                sink.receive_bulk(recv, lengths)
                offset += newlines
            finished = True
        finally:
            for proc, recv in children:
                if not finished and proc.is_alive():
                    proc.terminate()  # an error elsewhere: its result is not needed
                proc.join()
                recv.close()

    def _child(self, conn: Any, src: _Source, start: int, stop: int) -> None:
        """Worker process body: read [start, stop) and send back the sink's state."""
        import traceback

        _limit_threads()
        try:
            sink = self.new_sink()
            with open(src.source, "rb") as f:
                f.seek(start)
                src.raw = f
                newlines = self._read_range(src, f, sink, None, stop - start, 1, start)
            bulk = sink.bulk()
            message: tuple = (
                "ok",
                sink.export(with_columns=False),
                newlines,
                [a.shape[0] for a in bulk],
            )
        except InputError as e:
            bulk, message = [], ("input", e.path, e.line, e.detail)
        except BaseException:
            bulk, message = [], ("crash", traceback.format_exc())
        conn.send(message)
        for array in bulk:  # raw bytes, received in place: no pickled copy on either side
            _send(conn, array)
        conn.close()


# --------------------------------------------------------------------------- public API


def _formats() -> Any:
    """calibcli.formats, or None while it is not available."""
    try:
        from calibcli import formats
    except ImportError:  # pragma: no cover - depends on the checkout
        return None
    return formats


def _call_with_known(func: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call ``func`` with the keyword arguments it accepts."""
    import inspect

    params = inspect.signature(func).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
    return func(*args, **kwargs)


def _detector(
    field_names: dict[str, str], refuse: dict[str, str] | None = None
) -> Callable[[dict], str]:
    """Format detection from the first row; ``refuse`` maps formats this reader cannot use to
    the message to raise (ValueError, given a file and line by the reader)."""

    def detect(row: dict) -> str:
        formats = _formats()
        if formats is None:
            return "jsonl"
        found = _call_with_known(formats.detect_format, row, **field_names)
        if refuse and found in refuse:
            raise ValueError(refuse[found])
        return found

    return detect


def _by_value(by: str) -> Callable[[dict], Any]:
    formats = _formats()
    if formats is not None:
        return lambda row: formats.by_value(row, by)

    def value(row: dict) -> Any:  # pragma: no cover - fallback until calibcli.formats exists
        node: Any = row
        for part in by.split("."):
            if not isinstance(node, dict) or part not in node:
                raise ValueError(f'missing field "{by}"')
            node = node[part]
        return node

    return value


def _group_key(fmt: str, by: str | None, source: str) -> Callable[[dict], Any] | None:
    if by is None:
        return None
    if fmt == "lm-eval" and by == "task":
        task = _formats().task_from_filename(source)
        return lambda row: task
    return _by_value(by)


def _check_options(fmt: str, mc_norm: str = "none") -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if mc_norm not in MC_NORMS:
        raise ValueError(f"unknown mc_norm {mc_norm!r}; expected one of {', '.join(MC_NORMS)}")


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
) -> CalibrationData:
    """Read (confidence, correct) rows from files or ``-`` into pooled per-bin statistics.

    ``keep_columns`` also keeps every confidence (8 bytes per row) for the estimators that need
    all rows; ``per_source`` adds one result per source; ``by`` (a dotted field path, or ``task``
    for lm-eval input) adds one result per group. ``fmt`` is ``auto`` (detected from the first
    row), ``jsonl``, ``lm-eval`` or ``logprobs`` (refused: it carries no calibration rows).
    ``workers`` is the number of processes for one source (default: 2 on a machine with two
    CPUs or more when a file holds 32 MB or more; the CALIBCLI_WORKERS environment variable sets
    it; 1 turns workers off).
    Raises :class:`InputError` for unreadable or invalid input.
    """
    _check_options(fmt, mc_norm)
    if fmt == "logprobs":
        raise ValueError("the logprobs format carries no calibration rows; use perplexity")
    from calibcli.metrics.core import bin_edges

    bin_edges(bins)  # validates bins before any reading

    def make_decoder(fmt_: str, source: str) -> Any:
        if fmt_ == "jsonl" and by is None:
            return _CalibrationDecoder(confidence_field, correct_field)
        if fmt_ == "jsonl":
            cf, yf = confidence_field, correct_field

            def convert(obj: dict) -> tuple:
                return _check_confidence(_field(obj, cf), cf), _check_correct(_field(obj, yf), yf)

        else:
            lm_eval_choice_row = _formats().lm_eval_choice_row

            def convert(obj: dict) -> tuple:
                c, y = lm_eval_choice_row(obj, mc_norm=mc_norm)
                return float(c), bool(y)

        return _GenericDecoder(convert, _calibration_columns, _group_key(fmt_, by, source))

    def new_sink() -> _CalibrationSink:
        return _CalibrationSink(bins, keep_columns, grouped=by is not None)

    reader = _Reader(
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
        pooled.absorb(sink.export(), _display(source))
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
) -> PerplexityData:
    """Read per-sequence NLL rows (or lm-eval rolling rows, or per-token logprobs) into totals.

    Native rows: ``{"nll": summed NLL in nats, "tokens": count}`` plus optional ``bytes`` and
    ``words`` (totalled only when every row has them). Totals are exact integers; the NLL is
    summed per block and pooled with ``math.fsum``. ``workers`` as for :func:`read_calibration`.
    Raises :class:`InputError` on bad input.
    """
    _check_options(fmt)
    fields = {
        "tokens": tokens_field,
        "bytes": bytes_field,
        "words": words_field,
    }

    def make_decoder(fmt_: str, source: str) -> Any:
        if fmt_ == "jsonl" and by is None:
            return _PerplexityDecoder(nll_field, tokens_field, bytes_field, words_field)
        if fmt_ == "jsonl":

            def convert(obj: dict) -> tuple:
                nll = _check_nll(_field(obj, nll_field), nll_field)
                tokens = _check_count(_field(obj, tokens_field), tokens_field)
                if tokens == 0 and nll > 0:
                    raise ValueError(f"{nll_field} {_show(nll)} > 0 with 0 {tokens_field}")
                return nll, tokens, *_optional_counts(obj, bytes_field, words_field), 0, 0

        elif fmt_ == "lm-eval":
            rolling_row = _formats().lm_eval_rolling_row

            def convert(obj: dict) -> tuple:
                nll, words, nbytes = rolling_row(obj)
                return float(nll), None, nbytes, words, 0, 0

        else:
            logprobs_row = _formats().logprobs_row

            def convert(obj: dict) -> tuple:
                nll, tokens, nulls, sentinels = logprobs_row(obj, field=logprobs_field)
                extra = _optional_counts(obj, bytes_field, words_field)
                return float(nll), int(tokens), *extra, int(nulls), int(sentinels)

        return _GenericDecoder(convert, _perplexity_columns, _group_key(fmt_, by, source))

    def new_sink() -> _PerplexitySink:
        return _PerplexitySink(fields, grouped=by is not None)

    reader = _Reader(
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
    )
    sink = new_sink()
    for source in sources:
        reader.read(source, sink)
    return sink.result(reader.fmt or "jsonl")
