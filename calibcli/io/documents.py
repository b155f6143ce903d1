"""Whole-document inputs: files that are one JSON value or a zip, not one JSON row per line.

- ``"eval-zip"``: an inspect-ai ``.eval`` log, a zip holding ``header.json`` and one
  ``samples/<id>_epoch_<n>.json`` per sample (entries deflate- or zstd-compressed).
- ``"json-array"``: one JSON array of row objects (lm-eval v0.4.0-v0.4.2 ``samples_*.json``,
  a vLLM or API dump saved with ``json.dump``, HELM's ``per_instance_stats.json``).
- ``"json-object"``: one JSON object spread over lines: an inspect-ai ``.json`` log (its rows
  are ``samples``) or any other object (one row: itself, e.g. a saved OpenAI response).
- ``"parquet"``, ``"arrow"``, ``"csv"``, ``"tsv"``: a table, one row per table row, read a
  batch or a record at a time (:mod:`calibcli.io.tables`, :mod:`calibcli.io.delimited`).
- ``"evals-log"``: an OpenAI evals record log, JSON Lines opening with ``{"spec": ...}``: its
  rows are the ``match`` events, each joined with the last ``sampling`` event of the same sample
  before it (under ``"sampling"``), so that a row holds both the verdict and the logprobs
  (:mod:`calibcli.io.evals_log`).

:func:`document_kind` tells them from JSON Lines by sniffing the content; :func:`iter_document`
yields ``(locator, row)`` pairs for the row functions of :mod:`calibcli.formats`. A locator is
the 1-based line where an array element starts (an ``int``, like a JSONL line number) or a
string naming the row inside the document (``"samples/3_epoch_1.json"``, ``"samples[2] (id 3,
epoch 1)"``). Errors are :class:`DocumentError` carrying the locator; the reader prints
``f"{path}:{error.locator}: {error}"``. Compressed documents (``.json.gz``, ``.json.zst``) are
read too.

Limits, so that no input can exhaust memory: sniffing reads at most the first non-blank line,
and gives up (JSON Lines, whose reader reports the over-long line) past ``max_line_bytes``; a
compressed document and each ``.eval`` member may decompress to at most
:data:`MAX_DOCUMENT_BYTES` (a plain file is read whole: its size is what it holds). Archive
errors (an unsupported or encrypted member, corrupt data) are named DocumentErrors.
"""

from __future__ import annotations

import io
import json
import re
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from os import PathLike
from typing import Any

from calibcli.io.compression import MAGIC_BYTES, ZSTD, codec_of, decompressed, read_errors
from calibcli.io.evals_log import evals_rows, is_evals_spec
from calibcli.io.helm_blocks import helm_entries
from calibcli.io.inspect_log import inspect_samples, log_samples, note_status, scored_samples
from calibcli.io.sources import MAX_LINE_BYTES
from calibcli.io.strict_json import (
    READS_UTF8,
    loads_text,
    long_integer,
    nul_note,
    raw_decode,
    wide_encoding,
)
from calibcli.io.tables import TABLE_KINDS, table_rows

DOCUMENT_KINDS = ("eval-zip", "json-array", "json-object", "evals-log", *TABLE_KINDS)

MAX_DOCUMENT_BYTES = 256 << 20
"""Most bytes a compressed document, or one member of an ``.eval`` zip, may decompress to
(256 MiB): a few kilobytes of compressed zeros must not become gigabytes in memory."""
SNIFF_BLOCK = 1 << 20
"""Bytes read at a time while sniffing past leading blank lines."""

_ZIP_MAGIC = b"PK\x03\x04"
_ZSTD_METHOD = 93  # the zip compression method number of Zstandard
# ASCII digits only: str.isdigit and \d also accept "²" and other digits int() refuses.
_SAMPLE_ENTRY = re.compile(r"^samples/(?P<id>[^/]+)_epoch_(?P<epoch>[0-9]+)\.json$")
_WHITESPACE = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte-order mark

Source = str | PathLike[str] | bytes


class DocumentError(ValueError):
    """Invalid document content; ``locator`` says where (a line number or a row name; None
    for the file as a whole)."""

    def __init__(self, message: str, locator: int | str | None = 1) -> None:
        super().__init__(message)
        self.locator = locator


class ResultsFile(DocumentError):
    """An lm-eval results file: aggregate figures, no per-document rows (a run folder holds one
    beside the samples files, so a reader skips it rather than stopping)."""


def document_kind(source: Source, *, max_line_bytes: int = MAX_LINE_BYTES) -> str | None:
    """``"eval-zip"``, ``"json-array"``, ``"json-object"``, or ``None`` for JSON Lines.

    ``source`` is a path or the whole content as ``bytes``. Sniffed from the content, not the
    name: zip magic -> ``"eval-zip"``; first non-space byte ``[`` -> ``"json-array"`` (calibcli's
    rows are objects, so a JSONL file never starts with ``[``); ``{`` -> ``"json-object"`` when
    the first line alone is not complete JSON (a pretty-printed object) or is a whole inspect-ai
    log on one line, else ``None`` (a UTF-8 byte-order mark skipped). Gzip is decompressed
    first; an empty file is ``None``, and so is a first line longer than ``max_line_bytes`` or
    content that cannot be read or decompressed: the line reader then reports what is wrong.
    """
    from calibcli.io.tables import table_kind

    try:
        with open_content(source) as f:
            head = f.read(6)
            if head.startswith(_ZIP_MAGIC):
                return "eval-zip"
            table = table_kind(head)
            if table is not None:
                return None if isinstance(source, bytes) else table
            # a UTF-8 byte-order mark is not the text's: the readers skip it
            line = _first_line(f, head.removeprefix(_BOM), max_line_bytes)
    except read_errors():
        return None
    if line is None or line.startswith(b"["):
        return None if line is None else "json-array"
    if not line.startswith(b"{"):
        return None
    try:
        value = json.loads(line.decode("utf-8"))
    except json.JSONDecodeError:
        return "json-object"
    except (ValueError, RecursionError):
        # the line reader names the line: not UTF-8, an integer too long for int(), or JSON
        # nested too deeply
        return None
    if isinstance(value, Mapping) and _is_inspect_log(value):
        return "json-object"
    if isinstance(value, Mapping) and is_evals_spec(value):
        return "evals-log"
    return None


def _first_line(f: Any, head: bytes, max_line_bytes: int) -> bytes | None:
    """The first non-blank line from its first non-space byte (only that byte unless it opens
    an object), read block by block; None for no such line or one longer than the cap."""
    chunk = head
    while not (line := chunk.lstrip(_WHITESPACE)):
        chunk = f.read(SNIFF_BLOCK)
        if not chunk:
            return None
    if not line.startswith(b"{"):
        return line[:1]
    parts, size = [], 0
    while True:
        end = line.find(b"\n")
        parts.append(line if end < 0 else line[:end])
        size += len(parts[-1])
        if size > max_line_bytes:
            return None
        if end >= 0:
            break
        line = f.read(SNIFF_BLOCK)
        if not line:
            break
    return b"".join(parts)


def iter_document(
    source: Source,
    *,
    kind: str | None = None,
    max_document_bytes: int | None = None,
    with_text: bool = False,
    slim: Callable[[Any], bool] | None = None,
    sample_type: Any = None,
    notes: Callable[[str], None] | None = None,
) -> Iterator[tuple[Any, ...]]:
    """Yield ``(locator, row)`` for each row of a whole document (see the module docstring).

    ``kind`` defaults to :func:`document_kind`. Rows: each element of an array; each sample of
    an inspect-ai log (``.json`` or ``.eval``, in log order for ``.json``, by epoch then sample
    id for ``.eval``; those that ended in an error without a score left out,
    :func:`~calibcli.io.inspect_log.scored_samples`); the object itself for any other object.
    With ``with_text`` each item is ``(locator, row, text)``, ``text`` being the row's own JSON
    text as written. Raises :class:`DocumentError` for invalid JSON, a log without samples, an
    lm-eval results file, an archive member that cannot be read (named), and for a compressed
    document or member larger than ``max_document_bytes`` (default :data:`MAX_DOCUMENT_BYTES`)
    once decompressed.

    ``slim(first sample)`` may say that the samples of an inspect-ai ``.json`` log after the
    first are read for the inspect-ai row functions alone: each then holds only the fields
    they read (:data:`calibcli.io.inspect_log.SAMPLE_FIELDS`), which is all that is decoded of
    it. With ``sample_type`` (a struct of :func:`calibcli.formats.inspect_typed.sample_type`)
    each of those samples is instead ``(struct, text)``: the sample decoded into the struct and
    its JSON text, or the whole sample as a dict where it does not fit the struct.

    ``notes(text)``, when given, is told of an inspect-ai log whose run did not succeed, before
    its first row (:func:`~calibcli.io.inspect_log.status_note`; its rows are read all the same),
    of the samples left out for their errors, after its last, of a HELM run's perturbed
    entries, left out (:func:`~calibcli.io.helm_run.unperturbed`), and of an OpenAI evals log
    without its final report (:func:`~calibcli.io.evals_log.cut_note`).
    """
    limit = MAX_DOCUMENT_BYTES if max_document_bytes is None else max_document_bytes
    kind = kind or document_kind(source)
    if kind in TABLE_KINDS:
        for where, row in table_rows(str(source), kind, limit):
            yield (where, row, None) if with_text else (where, row)
        return
    if kind == "eval-zip":
        for name, sample, text in scored_samples(_eval_zip_rows(source, limit, notes), notes):
            yield (name, sample, text) if with_text else (name, sample)
        return
    if kind not in DOCUMENT_KINDS:
        raise ValueError(f"kind must be one of {', '.join(DOCUMENT_KINDS)}, not {kind!r}")
    data = _read_text(source, limit)
    wide = wide_encoding(data)
    if wide is not None:  # named, as a line in it would be, rather than failing as JSON
        raise DocumentError(f"{wide} text; {READS_UTF8}", None)
    if kind == "json-object" and not with_text:
        samples = inspect_samples(data, slim, sample_type, notes)
        if samples is not None:
            yield from samples
            return
    text = data.decode("utf-8-sig")
    del data
    if kind == "evals-log":
        for line, row, raw in evals_rows(text, notes):
            yield (line, row, raw) if with_text else (line, row)
        return
    if kind == "json-array":
        rows = helm_entries(text, _array_rows(text), notes)
        for line, value, start, end in rows:
            yield (line, value, text[start:end]) if with_text else (line, value)
        return
    value = _load_whole(text)
    if not isinstance(value, Mapping):
        raise DocumentError(f"the document is {type(value).__name__}, not a JSON object")
    if "results" in value and "configs" in value and "samples" not in value:
        raise ResultsFile(
            "an lm-eval results file (aggregate figures, no per-document rows): pass the "
            "samples_<task>_<date>.json(l) files written beside it with --log_samples"
        )
    if _is_inspect_log(value):
        samples = value.get("samples")
        if not isinstance(samples, list) or not samples:
            raise DocumentError(_no_samples(value.get("status")))
        if notes is not None:
            note_status(value, len(samples), notes)
        spans = _sample_spans(text) if with_text else None
        yield from scored_samples(log_samples(samples, spans, text), notes)
        return
    yield (1, value, text.strip()) if with_text else (1, value)


def document_records(
    source: str, kind: str, records: Iterator[Any] | None = None
) -> Iterator[tuple[str, int | str, Any, str]]:
    """``(name, locator, row, row text)`` of each row of a document (or of ``records``), errors
    as :class:`~calibcli.errors.InputError` naming file and row (a results file holds none)."""
    from calibcli.errors import InputError
    from calibcli.io.compression import AppendedBytes, read_failure
    from calibcli.io.sources import display_name

    name = display_name(source)
    try:
        for locator, row, text in records or iter_document(source, kind=kind, with_text=True):
            yield name, locator, row, text
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


def _sample_spans(text: str) -> list[tuple[int, int]]:
    """The text spans of an inspect-ai log's samples (the last ``samples`` key, as decoded)."""
    from calibcli.formats import json_elements as elements
    from calibcli.formats import value_span

    span = value_span(text, ["samples"])
    return [] if span is None else list(elements(text, span[0]))


# --------------------------------------------------------------------------- JSON text


def _array_rows(text: str) -> Iterator[tuple[int, Any, int, int]]:
    """Each element of a JSON array with the line its text starts on and its span, decoded one
    at a time."""
    pos = _skip_space(text, 0)
    if text[pos : pos + 1] != "[":
        raise DocumentError("expected a JSON array", _line(text, pos))
    line, counted = 1, 0
    pos = _skip_space(text, pos + 1)
    if text[pos : pos + 1] == "]":
        return
    while True:
        line += text.count("\n", counted, pos)
        counted = pos
        try:  # an integer longer than int() converts is kept, refused where it is read
            value, end = raw_decode(text, pos)
        except json.JSONDecodeError as e:
            said = f"invalid JSON in the array: {e.msg}{nul_note(text, e.pos)}"
            raise DocumentError(said, _line(text, e.pos)) from None
        except ValueError as e:  # such an integer in an element broken further on
            raise DocumentError(str(e), line) from None
        yield line, value, pos, end
        pos = _skip_space(text, end)
        if text[pos : pos + 1] == ",":
            pos = _skip_space(text, pos + 1)
            continue
        if text[pos : pos + 1] == "]":
            tail = _skip_space(text, pos + 1)
            if tail != len(text):
                raise DocumentError("unexpected content after the JSON array", _line(text, tail))
            return
        raise DocumentError("expected ',' or ']' between array elements", _line(text, pos))


def _load_whole(text: str) -> Any:
    try:
        return loads_text(text)
    except json.JSONDecodeError as e:
        said = f"neither one JSON document nor JSON lines: {e.msg.removesuffix(' at')}"
        raise DocumentError(said + nul_note(text, e.pos), _line(text, e.pos)) from None
    except ValueError:  # an integer longer than int() converts
        raise DocumentError(long_integer(text), None) from None


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _is_inspect_log(value: Mapping[str, Any]) -> bool:
    return isinstance(value.get("eval"), Mapping) and ("samples" in value or "version" in value)


def _no_samples(status: Any) -> str:
    return (
        f"the inspect-ai log holds no samples (status {status!r}); calibcli needs the "
        "per-sample records (an eval run without --no-log-samples)"
    )


def too_large(limit: int) -> str:
    return (
        f"decompresses to more than {limit / (1 << 20):g} MiB, calibcli's limit for one "
        "compressed document or archive member"
    )


# --------------------------------------------------------------------------- .eval zip


def _digits_key(digits: str) -> tuple[int, str]:
    """Orders ASCII digit strings by their value without int(), which refuses more than 4,300
    digits."""
    stripped = digits.lstrip("0")
    return len(stripped), stripped


def _eval_zip_rows(
    source: Source, limit: int, notes: Callable[[str], None] | None = None
) -> Iterator[tuple[str, Any, str]]:
    with open_content(source) as f:
        # zipfile seeks; a decompressed stream cannot, so its (capped) content is held instead
        if not _plain(f):
            f = io.BytesIO(_capped(f, limit))
        try:
            archive = zipfile.ZipFile(f)
        except (zipfile.BadZipFile, ValueError, EOFError, OSError) as e:
            raise DocumentError(f"not a readable zip archive: {e}") from None
        with archive:
            entries = []
            for info in archive.infolist():
                match = _SAMPLE_ENTRY.match(info.filename)
                if match:
                    ident = match["id"]
                    numeric = ident.isascii() and ident.isdigit()
                    key = (0, *_digits_key(ident)) if numeric else (1, 0, ident)
                    entries.append((_digits_key(match["epoch"]), key, info))
            if not entries:
                names = archive.namelist()
                if "header.json" in names:
                    header = _member_json(archive, archive.getinfo("header.json"), f, limit)
                    status = header.get("status") if isinstance(header, Mapping) else None
                    raise DocumentError(_no_samples(status))
                if not any(n.startswith("_journal/") for n in names):
                    raise DocumentError("a zip archive that is not an inspect-ai .eval log")
                raise DocumentError(_no_samples(None))
            if notes is not None:
                header = eval_header(archive, f, limit)
                if header is not None:
                    note_status(header, len(entries), notes)
            for _, _, info in sorted(entries, key=lambda e: (e[0], e[1])):
                text = _member_text(archive, info, f, limit)
                yield info.filename, _member_value(text, info.filename), text


def eval_header(archive: zipfile.ZipFile, f: Any, limit: int) -> Mapping[str, Any] | None:
    """The top level of an ``.eval`` log without its samples: ``header.json``, written when the
    run ends; else, for a log with a journal, ``_journal/start.json`` (its ``eval``) with the
    status inspect-ai gives such a log, ``"started"``. None for neither, or for a header that
    cannot be read: the samples are read as without it."""
    names = set(archive.namelist())
    name = "header.json" if "header.json" in names else "_journal/start.json"
    if name not in names:
        return None
    try:
        header = _member_json(archive, archive.getinfo(name), f, limit)
    except DocumentError:
        return None
    if not isinstance(header, Mapping):
        return None
    return header if name == "header.json" else {**header, "status": "started"}


def _member_json(archive: zipfile.ZipFile, info: zipfile.ZipInfo, f: Any, limit: int) -> Any:
    return _member_value(_member_text(archive, info, f, limit), info.filename)


def _member_value(text: str, name: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DocumentError(f"invalid JSON: {e.msg} (line {e.lineno})", name) from None
    except RecursionError:
        raise DocumentError("JSON nested too deeply", name) from None
    except ValueError:  # an integer longer than int() converts
        raise DocumentError(long_integer(text), name) from None


def _member_text(archive: zipfile.ZipFile, info: zipfile.ZipInfo, f: Any, limit: int) -> str:
    data = _member_bytes(archive, info, f, limit)
    wide = wide_encoding(data)
    if wide is not None:
        raise DocumentError(f"{wide} text; {READS_UTF8}", info.filename)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DocumentError("not valid UTF-8", info.filename) from None


def _member_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, f: Any, limit: int) -> bytes:
    """A member's content, at most ``limit`` bytes of it decompressed. zstd members (method 93,
    written by inspect-ai since it adopted Zstandard) are decoded from their raw bytes when the
    stdlib zipfile cannot."""
    import lzma

    name = info.filename
    if info.flag_bits & 0x1:
        raise DocumentError("the member is encrypted; calibcli reads unencrypted logs", name)
    try:
        if info.compress_type == _ZSTD_METHOD and not hasattr(zipfile, "ZIP_ZSTANDARD"):
            return _zstd_decompress(_raw_member(info, f), info, limit)
        with archive.open(info) as member:
            data = member.read(limit + 1)
    except NotImplementedError:
        raise DocumentError(
            f"compression method {info.compress_type} is not supported (calibcli reads stored, "
            "deflate, bzip2, lzma and zstd members)",
            name,
        ) from None
    except DocumentError:
        raise
    except RuntimeError as e:  # zipfile's "encrypted, password required"
        raise DocumentError(f"cannot read the member: {e}", name) from None
    except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, ValueError) as e:
        raise DocumentError(f"cannot decompress the member: {e}", name) from None
    if len(data) > limit:
        raise DocumentError(too_large(limit), name)
    return data


def _raw_member(info: zipfile.ZipInfo, f: Any) -> bytes:
    """The compressed bytes of a member, from its local file header (30 fixed bytes, then the
    name and the extra field)."""
    f.seek(info.header_offset)
    header = f.read(30)
    if len(header) < 30 or not header.startswith(_ZIP_MAGIC):
        raise zipfile.BadZipFile("bad local file header")
    name_len, extra_len = struct.unpack("<HH", header[26:30])
    f.seek(info.header_offset + 30 + name_len + extra_len)
    blob = f.read(info.compress_size)
    if len(blob) < info.compress_size:
        raise EOFError("the archive is truncated")
    return blob


def _zstd_decompress(blob: bytes, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A Zstandard member's content, checked against its CRC-32 (zipfile checks the others)."""
    where = info.filename
    try:
        with decompressed(io.BytesIO(blob), ZSTD) as reader:
            data = _capped(reader, limit, where)
    except ImportError:
        raise DocumentError(
            "this .eval log is Zstandard-compressed; reading it needs Python 3.14 or the "
            "'backports.zstd' package (pip install backports.zstd)",
            where,
        ) from None
    except DocumentError:
        raise
    except read_errors() as e:
        raise DocumentError(f"cannot decompress the member: {e}", where) from None
    if zlib.crc32(data) != info.CRC:
        raise DocumentError("the member's CRC-32 does not match: the archive is damaged", where)
    return data


def _capped(stream: Any, limit: int, where: int | str = 1) -> bytes:
    """Everything ``stream`` holds, or DocumentError (at ``where``) once it holds more than
    ``limit`` bytes."""
    parts, size = [], 0
    while size <= limit:
        part = stream.read(min(SNIFF_BLOCK, limit + 1 - size))
        if not part:
            return b"".join(parts)
        parts.append(part)
        size += len(part)
    raise DocumentError(too_large(limit), where)


# --------------------------------------------------------------------------- opening


def _read_text(source: Source, limit: int) -> bytes:
    """The whole content; a compressed one only up to ``limit`` bytes decompressed."""
    with open_content(source) as f:
        if not _plain(f):
            return _capped(f, limit)
        if isinstance(f, io.BufferedReader):  # a plain file (_plain)
            # the file's own reader: one buffer of the file's size (a buffered read(), after
            # the bytes sniffed, joins two copies)
            f.raw.seek(0)
            return f.raw.readall()
        return f.read()


def _plain(f: Any) -> bool:
    """Whether ``f`` (from :func:`open_content`) reads bytes as stored: a file, or bytes given."""
    return isinstance(f, io.BytesIO) or isinstance(getattr(f, "raw", None), io.FileIO)


def open_content(source: Source) -> Any:
    """A binary reader over the content, decompressed (as a stream) when it starts with a
    compression format's magic number (:mod:`calibcli.io.compression`)."""
    from calibcli.io.compression import open_path

    if not isinstance(source, bytes):
        return open_path(str(source))
    codec = codec_of(source[:MAGIC_BYTES])
    return io.BytesIO(source) if codec is None else decompressed(io.BytesIO(source), codec)
