"""xz stream padding: NUL bytes after (and between) xz streams are part of the format, which
``xz -t`` accepts, so such a file is read in full; bytes after a stream that start no stream
and are not padding are still refused (rows appended uncompressed would be dropped unread)."""

from __future__ import annotations

import json
import lzma

from harness import run

ROWS = [{"confidence": (i + 0.5) / 40, "correct": i % 3 != 0} for i in range(40)]


def text(rows):
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def n_of(path):
    result = run(["calibrate", path, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["n"]


def test_padding_after_and_between_streams_is_skipped(tmp_path):
    padded = tmp_path / "p.jsonl.xz"
    padded.write_bytes(lzma.compress(text(ROWS)) + b"\0" * 4)
    assert n_of(padded) == 40
    two = tmp_path / "two.jsonl.xz"
    two.write_bytes(
        lzma.compress(text(ROWS[:25])) + b"\0" * 8 + lzma.compress(text(ROWS[25:])) + b"\0" * 4
    )
    assert n_of(two) == 40


def test_other_bytes_after_a_stream_are_refused(tmp_path):
    tail = tmp_path / "t.jsonl.xz"
    tail.write_bytes(lzma.compress(text(ROWS)) + b"\0" * 4 + text(ROWS[:1]))
    result = run(["calibrate", tail])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {tail}")
