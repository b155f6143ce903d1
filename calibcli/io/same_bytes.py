"""Whether files hold the same bytes, for :func:`calibcli.io.runs.choose_runs`: a compressed
file and a plain one holding its decompressed bytes, two compressions of one file, and files of
no rows (:func:`rowless`: blank, or an lm-eval results file, which hold no rows to count twice);
and a path given twice, or one file reached by two paths, which is never a re-run
(:func:`given_once`, :func:`reached_once`)."""

from __future__ import annotations

import os
import stat
import struct
import zlib
from collections.abc import Iterator

from calibcli.errors import InputError, shown_name
from calibcli.io.compression import (
    GZIP,
    MAGIC_BYTES,
    codec_of,
    open_path,
    read_errors,
    without_suffix,
)

BLANK_BYTES = 4096
"""Files up to this size are looked at for holding nothing but white space."""
ONCE = "a path given twice is not a re-run, and its rows would count twice (give it once)"
ONE_FILE = (
    "one file reached by two paths is not a re-run, and its rows would count twice (give one "
    "of the paths)"
)


def given_once(files: list[str]) -> None:
    """InputError for standard input given twice, or a path given twice (however it is
    spelt: ``a.jsonl`` and ``./a.jsonl``, or a folder and a file in it), ``--all-runs`` or
    not: pooling re-runs is no reason to read one file twice. Two paths to one file (a
    symbolic or a hard link) are refused by :func:`reached_once`."""
    if files.count("-") > 1:
        raise InputError("<stdin>", None, "standard input is given twice: it can be read once")
    first: dict[str, str] = {}
    for f in files:
        path = os.path.abspath(f) if f != "-" else None
        if path in first:
            also = "" if first[path] == f else f" (also as {shown_name(first[path])})"
            raise InputError(f, None, f"is given twice{also}: {ONCE}")
        if path is not None:
            first[path] = f


def regular_files(files: list[str]) -> Iterator[tuple[str, os.stat_result]]:
    """Each regular file among ``files``, with its ``os.stat``: standard input, streams,
    devices and paths that cannot be read are left to the reader, which says what they hold."""
    for f in files:
        if f == "-":
            continue
        try:
            found = os.stat(f)
        except OSError:
            continue
        if stat.S_ISREG(found.st_mode):
            yield f, found


def reached_once(files: list[str]) -> None:
    """InputError for one regular file reached by two paths among ``files``: a symbolic link
    to it or to a folder holding it (``out/latest -> org__model``), a hard link, a path spelt
    another way. ``--all-runs`` or not: a file pooled with itself is no re-run, and its rows
    would count twice. Streams and paths that cannot be read are left to the reader."""
    names: dict[tuple[int, int], str] = {}
    for f, found in regular_files(files):
        inode = (found.st_dev, found.st_ino)
        if inode in names:
            also = shown_name(names[inode])
            raise InputError(f, None, f"is given twice (also as {also}): {ONE_FILE}")
        names[inode] = f


def blank(path: str, size: int) -> bool:
    """Whether a file holds no rows: empty, or white space only (looked at up to
    ``BLANK_BYTES``)."""
    if size > BLANK_BYTES:
        return False
    try:
        with open(path, "rb") as f:
            return not f.read().strip()
    except OSError:
        return False  # the reader says what is wrong with it


def rowless(path: str, size: int) -> bool:
    """Whether a file of ``size`` bytes holds no rows to count twice: :func:`blank`, or an
    lm-eval results file (:func:`~calibcli.io.run_results.results_only`), which every reader
    skips or refuses, and which a run's samples files are read beside for its model and
    settings: two runs' results files may hold the same bytes, a copied run folder's do."""
    from calibcli.io.compression import SUFFIXES
    from calibcli.io.run_results import results_only

    if blank(path, size):
        return True
    # a results file is a JSON document (lm-eval names it ``<stem>_<stamp>.json``): rows in a
    # JSON Lines file read with --format are rows, whatever keys they hold
    name = os.path.basename(path)
    return any(name.endswith(f".json{s}") for s in ("", *SUFFIXES)) and results_only(path)


def decompressed_copies(files: list[str]) -> list[tuple[str, str]]:
    """Each (compressed file, plain or earlier compressed file) whose decompressed bytes the
    other holds too: for gzip, the trailer's CRC-32 and size (of its last member) against the
    plain file's, computed only for a plain file of that size and never for an empty one; for
    the other formats, which record neither, the content's CRC-32 against that of the plain file
    named as the compressed one less its suffix. Two compressed files of one name less their
    suffixes (``rows.jsonl.gz``, ``rows.jsonl.zst``) are compared by their contents' CRC-32 too."""
    trailers: dict[str, tuple[int, int]] = {}
    sizes: dict[int, list[str]] = {}
    others: list[str] = []
    for f in files:
        try:
            with open(f, "rb") as stream:
                codec = codec_of(stream.read(MAGIC_BYTES))
                if codec is GZIP:
                    stream.seek(-8, os.SEEK_END)
                    trailers[f] = struct.unpack("<II", stream.read(8))
                elif codec is not None:
                    others.append(f)
                else:
                    sizes.setdefault(os.fstat(stream.fileno()).st_size % (1 << 32), []).append(f)
        except (OSError, struct.error):
            continue  # the reader says what is wrong with it
    copies = []
    for packed, (crc, size) in trailers.items():
        if size:  # an empty stream's copy holds no rows to count twice
            copies += [(packed, plain) for plain in sizes.get(size, []) if _crc32(plain) == crc][:1]
    plain_files = {f for group in sizes.values() for f in group}
    for packed in others:
        plain = without_suffix(packed)
        if plain in plain_files:
            crc = _crc32(packed, decompress=True)
            if crc is not None and crc == _crc32(plain):
                copies.append((packed, plain))
    packed = [f for f in files if f in trailers or f in others]  # in the order given
    copies += _packed_copies(packed, {copy for copy, _ in copies})
    return copies


def _packed_copies(packed: list[str], said: set[str]) -> list[tuple[str, str]]:
    """(later, earlier) for each two compressed files of one name less their suffixes whose
    contents are the same bytes (``said``: files already said to copy a plain one)."""
    stems: dict[str, list[str]] = {}
    for f in packed:
        if f not in said:
            stems.setdefault(without_suffix(f), []).append(f)
    copies = []
    for group in stems.values():
        if len(group) < 2:
            continue
        seen: dict[int, str] = {}
        for f in group:
            crc = _crc32(f, decompress=True)
            if crc is not None and crc in seen:
                copies.append((f, seen[crc]))
            elif crc is not None:
                seen[crc] = f
    return copies


def _crc32(path: str, decompress: bool = False) -> int | None:
    """The CRC-32 of a file's bytes, or of its content decompressed; None if it cannot be
    read (the reader says why) or holds no bytes (no rows to count twice)."""
    crc, size = 0, 0
    try:
        with open_path(path) if decompress else open(path, "rb") as f:
            while block := f.read(1 << 20):
                crc, size = zlib.crc32(block, crc), size + len(block)
    except read_errors():
        return None
    return crc if size else None
