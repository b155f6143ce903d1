"""What identifies an input: a hash of its content, never its path as typed.

A regular file is identified by a BLAKE2b hash of its size and of samples of its bytes (the
first and last 64 KiB and 16 windows of 4 KiB spread between them), read in a few seeks
whatever its size: files that differ only outside the samples would share an identity, which
in practice takes a deliberate forgery. Standard input, which can be read only once, is
identified by a hash of every byte read (:class:`StreamHash`).
"""

from __future__ import annotations

import hashlib
import os

_EDGE = 64 << 10
_WINDOW = 4 << 10
_WINDOWS = 16


def file_version(path: str) -> tuple[str, int, int] | None:
    """(real path, mtime, size) of a file, by which what is read of it may be cached (None
    when it cannot be found): a change to the file, or another path to it, is seen."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return os.path.realpath(path), found.st_mtime_ns, found.st_size


def file_content_id(path: str) -> str:
    """``"sampled:<hex>"``, the identity of a regular file's content (see the module
    docstring); ``""`` when the file cannot be read (the reader reports why)."""
    h = hashlib.blake2b(digest_size=16)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            h.update(size.to_bytes(8, "little"))
            if size <= 2 * _EDGE + _WINDOWS * _WINDOW:
                h.update(f.read())
            else:
                h.update(f.read(_EDGE))
                step = (size - 2 * _EDGE) // (_WINDOWS + 1)
                for k in range(1, _WINDOWS + 1):
                    f.seek(_EDGE + k * step)
                    h.update(f.read(_WINDOW))
                f.seek(size - _EDGE)
                h.update(f.read(_EDGE))
    except OSError:
        return ""
    return f"sampled:{h.hexdigest()}"


class StreamHash:
    """A hash of every byte of a stream, fed block by block: ``"stream:<hex>"``."""

    def __init__(self) -> None:
        self._h = hashlib.blake2b(digest_size=16)

    def update(self, block: bytes | memoryview) -> None:
        self._h.update(block)

    def identity(self) -> str:
        return f"stream:{self._h.hexdigest()}"
