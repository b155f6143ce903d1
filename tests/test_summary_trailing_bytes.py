"""A summary file holds its header and the arrays it lists, nothing after them: bytes beyond
the last array would go unread, so a file of two summaries joined with ``cat`` (read as the
first alone) or one with junk appended is refused, exit 2, naming the file."""

from __future__ import annotations

import json

import pytest
from harness import run


def _summary(tmp_path, name, rows):
    source = tmp_path / f"{name}.jsonl"
    source.write_text(
        "".join(
            json.dumps({"confidence": (i + 1) / (rows + 1), "correct": i % 3 == 0}) + "\n"
            for i in range(rows)
        )
    )
    out = tmp_path / f"{name}.cbs"
    result = run(["summarize", source, "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    return out


def test_two_summaries_joined_into_one_file_are_refused(tmp_path):
    a, b = _summary(tmp_path, "a", 40), _summary(tmp_path, "b", 50)
    joined = tmp_path / "all.cbs"
    joined.write_bytes(a.read_bytes() + b.read_bytes())
    for command in (["calibrate", joined], ["merge", joined, "-o", tmp_path / "m.cbs"]):
        result = run([*command, "-q"])
        assert result.exit_code == 2, result.stdout
        assert result.stderr == (
            f"Error: {joined}: two calibcli summaries joined into one file (another starts "
            "after the first's last array): merge summaries with 'calibcli merge', or give "
            "each file\n"
        )
    assert not (tmp_path / "m.cbs").exists()
    # each alone reads: 40 and 50 rows
    assert json.loads(run(["calibrate", a, "--json", "-q"]).stdout)["n"] == 40
    assert json.loads(run(["calibrate", b, "--json", "-q"]).stdout)["n"] == 50


@pytest.mark.parametrize("tail", [b"\0" * 8, b"x", bytes(range(256)) * 20])
def test_bytes_after_the_last_array_are_refused(tmp_path, tail):
    a = _summary(tmp_path, "a", 40)
    damaged = tmp_path / "damaged.cbs"
    damaged.write_bytes(a.read_bytes() + tail)
    result = run(["calibrate", damaged, "--max-ece", "1", "-q"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {damaged}: a damaged calibcli summary ({len(tail):,} bytes after its last array)\n"
    )


@pytest.mark.parametrize("codec", ["gzip", "bz2", "lzma"])
def test_a_compressed_summary_reads_as_the_summary(tmp_path, codec):
    import importlib

    module = importlib.import_module(codec)
    a, b = _summary(tmp_path, "a", 40), _summary(tmp_path, "b", 50)
    packed = tmp_path / "a.summary"  # whatever its name
    packed.write_bytes(module.compress(a.read_bytes()))
    plain = run(["calibrate", a, "--json", "-q"])
    read = run(["calibrate", packed, "--json", "-q"])
    assert read.exit_code == 0, read.stderr
    assert json.loads(read.stdout) == json.loads(plain.stdout.replace(str(a), str(packed)))
    # joined, then compressed: named as joined; cut short: refused as damaged
    joined = tmp_path / "ab.summary"
    joined.write_bytes(module.compress(a.read_bytes() + b.read_bytes()))
    result = run(["calibrate", joined, "-q"])
    assert result.exit_code == 2 and "two calibcli summaries joined" in result.stderr
    cut = tmp_path / "cut.summary"
    cut.write_bytes(packed.read_bytes()[:-20])
    result = run(["calibrate", cut, "-q"])
    assert result.exit_code == 2  # by the summary reader, or (bzip2: no whole block to tell
    # it by) the rows' reader: either names the file and the end cut short
    assert result.stderr.startswith(f"Error: {cut}: ")
    assert "ended before the end-of-stream marker" in result.stderr
