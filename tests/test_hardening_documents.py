"""Whole documents and format sniffing under hostile input: every case is one error line naming
the file and the row (the archive member) with exit 2, or is read; none exhausts memory or time.

Archives are built here with zipfile and then patched byte by byte where zipfile cannot write
what a hostile or foreign tool can (a deflate64 or zstd method number, the encryption flag).
"""

from __future__ import annotations

import gzip
import io
import json
import time
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from harness import run

from calibcli.io import documents

SAMPLES = json.loads(
    (Path(__file__).parent / "fixtures" / "inspect_ai" / "toy_arithmetic.json").read_text()
)["samples"]
HEADER = json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}})


def one_error_line(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def eval_zip(path: Path, members: dict[str, bytes], *, method: int | None = None) -> Path:
    """A zip of ``members`` (deflated); ``method`` rewrites every member's compression method
    number in the local and central headers."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    raw = bytearray(buffer.getvalue())
    if method is not None:
        patch_headers(raw, local=8, central=10, value=method)
    path.write_bytes(bytes(raw))
    return path


def patch_headers(raw: bytearray, *, local: int, central: int, value: int) -> None:
    """Set a 2-byte field at ``local`` in every local header and ``central`` in every central
    directory entry."""
    for magic, offset in ((b"PK\x03\x04", local), (b"PK\x01\x02", central)):
        at = raw.find(magic)
        while at >= 0:
            raw[at + offset : at + offset + 2] = value.to_bytes(2, "little")
            at = raw.find(magic, at + 4)


def sample(i: int = 0) -> bytes:
    return json.dumps(SAMPLES[i]).encode()


# --------------------------------------------------------------------------- 1. sniffing


def test_sniffing_holds_no_more_than_the_line_cap(tmp_path):
    path = tmp_path / "long.jsonl"
    with path.open("wb") as f:
        f.write(b'{"confidence": 0.5, "pad": "')
        for _ in range(10):
            f.write(b"x" * (1 << 20))
        f.write(b'"}\n')
    tracemalloc.start()
    try:
        kind = documents.document_kind(path, max_line_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert kind is None  # JSON Lines: its reader reports the over-long line
    assert peak < 4 << 20


@pytest.mark.slow
def test_a_first_line_past_the_default_cap_is_the_line_cap_error(tmp_path):
    # An unterminated object: sniffing it whole made it a "json-object" document, read whole.
    path = tmp_path / "long.jsonl.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b'{"confidence": 0.5, "pad": "')
        for _ in range(65):
            f.write(b"x" * (1 << 20))
    line = one_error_line(run(["calibrate", path]))
    assert line == f"Error: {path}:1: line longer than 64 MiB; raise --max-line-mb"


def test_a_corrupt_gzip_file_is_an_input_error(tmp_path):
    path = tmp_path / "bad.jsonl.gz"
    # a gzip header, then bytes that are no deflate block: zlib.error, not an OSError
    path.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbagegarbage")
    line = one_error_line(run(["calibrate", path]))
    assert line.startswith(f"Error: {path}: cannot decompress: ")


# --------------------------------------------------------------------------- 4. blank lines


def test_leading_blank_lines_are_sniffed_block_by_block(tmp_path):
    # Line by line, sniffing 16 MiB of newlines took about as many seconds as there are MiB.
    path = tmp_path / "blank.jsonl.gz"
    row = b'{"confidence": 0.5, "correct": true}\n'
    path.write_bytes(gzip.compress(b"\n" * (16 << 20) + row * 3))
    started = time.perf_counter()
    assert documents.document_kind(path) is None
    assert time.perf_counter() - started < 2.0
    body = json.loads(run(["calibrate", path, "--json"]).stdout)
    assert body["n"] == 3


# --------------------------------------------------------------------------- 2. archives


def test_an_eval_member_past_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(documents, "MAX_DOCUMENT_BYTES", 1 << 20)
    big = sample(0)[:-1] + b', "pad": "' + b"x" * (2 << 20) + b'"}'
    path = eval_zip(
        tmp_path / "big.eval", {"header.json": HEADER.encode(), "samples/1_epoch_1.json": big}
    )
    line = one_error_line(run(["calibrate", path]))
    assert line == (
        f"Error: {path}:samples/1_epoch_1.json: decompresses to more than 1 MiB, calibcli's "
        "limit for one compressed document or archive member"
    )


@pytest.mark.parametrize("kind", ["array", "object"])
def test_a_gzip_document_past_the_limit_is_refused(tmp_path, monkeypatch, kind):
    monkeypatch.setattr(documents, "MAX_DOCUMENT_BYTES", 1 << 20)
    rows = [{"confidence": 0.5, "correct": True, "pad": "x" * 1000} for _ in range(3000)]
    text = (
        json.dumps(rows, indent=1)
        if kind == "array"
        else json.dumps({"version": 2, "eval": {}, "samples": rows}, indent=1)
    )
    path = tmp_path / f"{kind}.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    line = one_error_line(run(["calibrate", path]))
    assert line.startswith(f"Error: {path}:1: decompresses to more than 1 MiB")


def test_the_limit_reads_a_document_below_it(tmp_path, monkeypatch):
    monkeypatch.setattr(documents, "MAX_DOCUMENT_BYTES", 1 << 20)
    rows = [{"confidence": 0.5, "correct": True} for _ in range(100)]
    path = tmp_path / "small.json.gz"
    path.write_bytes(gzip.compress(json.dumps(rows, indent=1).encode()))
    assert json.loads(run(["calibrate", path, "--json"]).stdout)["n"] == 100


@pytest.mark.parametrize(
    ("method", "message"),
    [
        (9, "compression method 9 is not supported"),  # deflate64
        (93, "cannot decompress the member: "),  # zstd, but the data is deflate
    ],
)
def test_unreadable_eval_members_are_named(tmp_path, method, message):
    members = {"header.json": HEADER.encode(), "samples/1_epoch_1.json": sample(0)}
    path = eval_zip(tmp_path / "odd.eval", members, method=method)
    line = one_error_line(run(["calibrate", path]))
    assert line.startswith(f"Error: {path}:header.json: {message}") or line.startswith(
        f"Error: {path}:samples/1_epoch_1.json: {message}"
    ), line


def test_an_encrypted_eval_member_is_named(tmp_path):
    path = eval_zip(tmp_path / "locked.eval", {"samples/1_epoch_1.json": sample(0)})
    raw = bytearray(path.read_bytes())
    patch_headers(raw, local=6, central=8, value=1)  # general purpose flag bit 0: encrypted
    path.write_bytes(bytes(raw))
    line = one_error_line(run(["calibrate", path]))
    assert line == (
        f"Error: {path}:samples/1_epoch_1.json: the member is encrypted; calibcli reads "
        "unencrypted logs"
    )


def test_a_corrupt_member_is_named(tmp_path):
    path = eval_zip(tmp_path / "crc.eval", {"samples/1_epoch_1.json": sample(0) * 3})
    raw = bytearray(path.read_bytes())
    at = raw.find(b"PK\x03\x04") + 30 + len("samples/1_epoch_1.json") + 20
    raw[at : at + 8] = b"\xff" * 8
    path.write_bytes(bytes(raw))
    line = one_error_line(run(["calibrate", path]))
    assert line.startswith(f"Error: {path}:samples/1_epoch_1.json: cannot decompress the member")


def test_an_unparsable_header_is_named(tmp_path):
    path = eval_zip(tmp_path / "header.eval", {"header.json": b'{"status": '})
    line = one_error_line(run(["calibrate", path]))
    assert line.startswith(f"Error: {path}:header.json: invalid JSON: ")


@pytest.mark.parametrize(
    "names",
    [
        ["samples/\u00b2_epoch_1.json", "samples/1_epoch_1.json"],  # "²".isdigit() is True
        ["samples/1_epoch_" + "9" * 5000 + ".json", "samples/1_epoch_1.json"],  # int() refuses
    ],
)
def test_odd_sample_names_are_read(tmp_path, names):
    members = {"header.json": HEADER.encode()}
    members.update({name: sample(i) for i, name in enumerate(names)})
    path = eval_zip(tmp_path / "names.eval", members)
    result = run(["calibrate", path, "--scorer", "match", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 2
    # the sample of epoch 1 sorts before the other
    assert next(n for n, _ in documents.iter_document(path)) == "samples/1_epoch_1.json"
