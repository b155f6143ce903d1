"""Whole-document inputs: files that are one JSON value or a zip, not one JSON row per line.

- ``"eval-zip"``: an inspect-ai ``.eval`` log, a zip holding ``header.json`` and one
  ``samples/<id>_epoch_<n>.json`` per sample (entries deflate- or zstd-compressed).
- ``"json-array"``: one JSON array of row objects (lm-eval v0.4.0-v0.4.2 ``samples_*.json``,
  a vLLM or API dump saved with ``json.dump``).
- ``"json-object"``: one JSON object spread over lines: an inspect-ai ``.json`` log (its rows
  are ``samples``) or any other object (one row: itself, e.g. a saved OpenAI response).

:func:`document_kind` tells them from JSON Lines by sniffing the content; :func:`iter_document`
yields ``(locator, row)`` pairs for the row functions of :mod:`calibcli.formats`. A locator is
the 1-based line where an array element starts (an ``int``, like a JSONL line number) or a
string naming the row inside the document (``"samples/3_epoch_1.json"``, ``"samples[2] (id 3,
epoch 1)"``). Errors are :class:`DocumentError` carrying the locator; the reader prints
``f"{path}:{error.locator}: {error}"``. Gzip-compressed documents (``.json.gz``) are read too.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import struct
import zipfile
from collections.abc import Iterator, Mapping
from os import PathLike
from typing import Any

DOCUMENT_KINDS = ("eval-zip", "json-array", "json-object")

_ZIP_MAGIC = b"PK\x03\x04"
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_METHOD = 93  # the zip compression method number of Zstandard
_SAMPLE_ENTRY = re.compile(r"^samples/(?P<id>[^/]+)_epoch_(?P<epoch>\d+)\.json$")
_WHITESPACE = b" \t\r\n"

Source = str | PathLike[str] | bytes


class DocumentError(ValueError):
    """Invalid document content; ``locator`` says where (a line number or a row name)."""

    def __init__(self, message: str, locator: int | str = 1) -> None:
        super().__init__(message)
        self.locator = locator


class ResultsFile(DocumentError):
    """An lm-eval results file: aggregate figures, no per-document rows (a run folder holds one
    beside the samples files, so a reader skips it rather than stopping)."""


def document_kind(source: Source) -> str | None:
    """``"eval-zip"``, ``"json-array"``, ``"json-object"``, or ``None`` for JSON Lines.

    ``source`` is a path or the whole content as ``bytes``. Sniffed from the content, not the
    name: zip magic -> ``"eval-zip"``; first non-space byte ``[`` -> ``"json-array"`` (calibcli's
    rows are objects, so a JSONL file never starts with ``[``); ``{`` -> ``"json-object"`` when
    the first line alone is not complete JSON (a pretty-printed object) or is a whole inspect-ai
    log on one line, else ``None``. Gzip is decompressed first; an empty file is ``None``.
    """
    with _open(source) as f:
        head = f.read(4)
        if head.startswith(_ZIP_MAGIC):
            return "eval-zip"
        line = head + f.readline()
        while line and not line.strip(_WHITESPACE):  # blank leading lines
            line = f.readline()
    stripped = line.lstrip(_WHITESPACE)
    if stripped.startswith(b"["):
        return "json-array"
    if not stripped.startswith(b"{"):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return "json-object"
    if isinstance(value, Mapping) and _is_inspect_log(value):
        return "json-object"
    return None


def iter_document(source: Source, *, kind: str | None = None) -> Iterator[tuple[int | str, Any]]:
    """Yield ``(locator, row)`` for each row of a whole document (see the module docstring).

    ``kind`` defaults to :func:`document_kind`. Rows: each element of an array; each sample of
    an inspect-ai log (``.json`` or ``.eval``, in log order for ``.json``, by epoch then sample
    id for ``.eval``); the object itself for any other object. Raises :class:`DocumentError` for
    invalid JSON, a log without samples, an lm-eval results file, or a zstd-compressed ``.eval``
    when no Zstandard decoder is available.
    """
    kind = kind or document_kind(source)
    if kind == "eval-zip":
        yield from _eval_zip_rows(source)
        return
    if kind not in ("json-array", "json-object"):
        raise ValueError(f"kind must be one of {', '.join(DOCUMENT_KINDS)}, not {kind!r}")
    with _open(source) as f:
        text = f.read().decode("utf-8-sig")
    if kind == "json-array":
        yield from _array_rows(text)
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
        for i, sample in enumerate(samples):
            ident = sample.get("id") if isinstance(sample, Mapping) else None
            epoch = sample.get("epoch") if isinstance(sample, Mapping) else None
            yield f"samples[{i}] (id {ident}, epoch {epoch})", sample
        return
    yield 1, value


# --------------------------------------------------------------------------- JSON text


def _array_rows(text: str) -> Iterator[tuple[int, Any]]:
    """Each element of a JSON array with the line its text starts on, decoded one at a time."""
    decoder = json.JSONDecoder()
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
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise DocumentError(f"invalid JSON in the array: {e.msg}", _line(text, e.pos)) from None
        yield line, value
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
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DocumentError(
            f"neither one JSON document nor JSON lines: {e.msg}", _line(text, e.pos)
        ) from None


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


# --------------------------------------------------------------------------- .eval zip


def _eval_zip_rows(source: Source) -> Iterator[tuple[str, Any]]:
    raw = source if isinstance(source, bytes) else None
    with _open(source) as f:
        data = raw if raw is not None else f.read()
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as e:
        raise DocumentError(f"not a readable zip archive: {e}") from None
    with archive:
        entries = []
        for info in archive.infolist():
            match = _SAMPLE_ENTRY.match(info.filename)
            if match:
                ident = match["id"]
                key = (0, int(ident), "") if ident.isdigit() else (1, 0, ident)
                entries.append((int(match["epoch"]), key, info))
        if not entries:
            status = None
            if "header.json" in archive.namelist():
                header = json.loads(_entry_bytes(archive, archive.getinfo("header.json"), data))
                status = header.get("status") if isinstance(header, Mapping) else None
            elif not any(n.startswith("_journal/") for n in archive.namelist()):
                raise DocumentError("a zip archive that is not an inspect-ai .eval log")
            raise DocumentError(_no_samples(status))
        for _, _, info in sorted(entries, key=lambda e: (e[0], e[1])):
            try:
                sample = json.loads(_entry_bytes(archive, info, data))
            except json.JSONDecodeError as e:
                raise DocumentError(f"invalid JSON: {e.msg}", info.filename) from None
            yield info.filename, sample


def _entry_bytes(archive: zipfile.ZipFile, info: zipfile.ZipInfo, data: bytes) -> bytes:
    """An entry's content; zstd entries (method 93, written by inspect-ai since it adopted
    Zstandard) are decoded from their raw bytes when the stdlib zipfile cannot."""
    if info.compress_type != _ZSTD_METHOD or hasattr(zipfile, "ZIP_ZSTANDARD"):
        return archive.read(info)
    # Local file header: 30 fixed bytes, then the name and the extra field.
    offset = info.header_offset
    name_len, extra_len = struct.unpack("<HH", data[offset + 26 : offset + 30])
    start = offset + 30 + name_len + extra_len
    return _zstd_decompress(data[start : start + info.compress_size], info.filename)


def _zstd_decompress(blob: bytes, where: str) -> bytes:
    try:
        from compression import zstd  # type: ignore[import-not-found]  # Python >= 3.14

        return zstd.decompress(blob)
    except ImportError:
        pass
    try:
        import zstandard  # type: ignore[import-not-found]
    except ImportError:
        raise DocumentError(
            "this .eval log is Zstandard-compressed; reading it needs Python 3.14 or the "
            "'zstandard' package (pip install zstandard)",
            where,
        ) from None
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob), read_across_frames=True)
    with reader:
        return reader.read()


# --------------------------------------------------------------------------- opening


def _open(source: Source) -> io.BufferedIOBase:
    """A binary reader over the content, gunzipped when it starts with the gzip magic."""
    if isinstance(source, bytes):
        data = source
        if data.startswith(_GZIP_MAGIC):
            data = gzip.decompress(data)
        return io.BytesIO(data)
    with open(source, "rb") as f:
        gzipped = f.read(2) == _GZIP_MAGIC
    if gzipped:
        return gzip.open(source, "rb")  # type: ignore[return-value]
    return open(source, "rb")
