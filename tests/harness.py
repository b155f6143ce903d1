"""Running the CLI in tests, and the JSONL inputs the CLI tests write."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from calibcli.cli import app


def run(args, input=None, env=None):
    """Invoke the app; a Python exception escaping a command is a test failure, not exit 1."""
    result = CliRunner().invoke(app, [str(a) for a in args], input=input, env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def refused(*args, input=None, env=None) -> str:
    """The one error line of a run of ``args`` that must exit 2: nothing on stdout, no
    traceback."""
    result = run(args, input=input, env=env)
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == "", result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def write_jsonl(path, rows, *, raw_lines=()):
    """Write one JSON object per line, then ``raw_lines`` verbatim; returns ``path``."""
    text = "".join(json.dumps(r) + "\n" for r in rows) + "".join(raw_lines)
    path.write_text(text, encoding="utf-8")
    return path


def make_rows(n, seed=7, *, skew=1.5, low=0.0, high=1.0):
    """Rows {id, confidence, correct}: confidence uniform in [low, high), correct with
    probability confidence**skew, drawn from random.Random(seed)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        c = low + (high - low) * rng.random()
        rows.append({"id": i, "confidence": c, "correct": rng.random() < c**skew})
    return rows


def columns(rows):
    """(confidences, correct) lists of calibration rows."""
    return [r["confidence"] for r in rows], [bool(r["correct"]) for r in rows]


def read_pty(leader: int) -> str:
    """Everything written to a pseudo-terminal until its last writer closes it (Linux then
    fails the read with EIO), as text; closes ``leader``."""
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def pack(suffix: str, data: bytes) -> bytes:
    """``data`` compressed in the format a file suffix names (``.gz``, ``.zst``, ``.xz``,
    ``.bz2``), by libraries other than the ones calibcli reads with where one exists
    (``zstandard`` for Zstandard)."""
    import bz2
    import gzip
    import lzma

    import zstandard

    packers = {
        ".gz": gzip.compress,
        ".zst": zstandard.ZstdCompressor().compress,
        ".xz": lzma.compress,
        ".bz2": bz2.compress,
    }
    return packers[suffix](data)


def calibcli_at(commit: str, folder: Path) -> Path | None:
    """``folder`` holding the calibcli package as it was at ``commit`` (run it with ``folder``
    on PYTHONPATH), to write files an earlier calibcli wrote; None when git or that commit is
    not at hand."""
    folder.mkdir()
    root = Path(__file__).resolve().parent.parent
    try:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", commit, "calibcli"],
            capture_output=True,
            check=True,
            timeout=60,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return folder
