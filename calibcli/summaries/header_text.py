"""A summary file's header written as other JSON text of the same values, for where the file's
bytes are read as text (a GitHub Actions runner reads a job's stdout for workflow commands)."""

from __future__ import annotations

from calibcli.summaries import MAGIC
from calibcli.summaries.encoding import _PREFIX


def header_escaped(data: bytes, old: bytes, new: bytes) -> bytes:
    """A summary file's first piece (its prefix and JSON header, as
    :func:`~calibcli.summaries.encoding.pieces` gives it)
    with each ``old`` in the header written ``new`` (JSON text of the same value), padded again
    to a multiple of 8 bytes and its length set, so the file reads as the same summary; any
    other data as it is."""
    size = _PREFIX.size
    if len(data) < size or bytes(data[:16]) != MAGIC:
        return data
    magic, version, reserved, length = _PREFIX.unpack(bytes(data[:size]))
    header = bytes(data[size : size + length])
    if old not in header or len(data) != size + length:
        return data
    text = header.rstrip(b" ").replace(old, new)
    text += b" " * (-len(text) % 8)
    return _PREFIX.pack(magic, version, reserved, len(text)) + text
