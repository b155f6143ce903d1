"""A summary file piped into standard input is named as one: summaries are read by seeking, so
only from a file given by its path, and the bare "not valid UTF-8" left the user guessing."""

from __future__ import annotations

import gzip

import pytest
from harness import refused, run, write_jsonl

HINT = (
    "; it opens as a calibcli summary does: a summary is read from a file given by its path, "
    "not from standard input"
)


@pytest.fixture
def summary(tmp_path):
    rows = [
        {"id": f"q{i}", "confidence": (i % 9 + 1) / 10, "correct": i % 3 == 0} for i in range(40)
    ]
    source = tmp_path / "rows.jsonl"
    write_jsonl(source, rows)
    out = tmp_path / "rows.summary"
    result = run(["summarize", source, "-o", out])
    assert result.exit_code == 0, result.stderr
    data = out.read_bytes()
    assert data.startswith(b"CALIBCLI SUMMARY")
    return out, data


@pytest.mark.parametrize("command", ["calibrate", "reliability"])
@pytest.mark.parametrize("compress", [False, True])
def test_a_summary_piped_into_standard_input_is_named(summary, command, compress):
    path, data = summary
    # the summary itself reads fine from its path
    assert run([command, path]).exit_code == 0
    line = refused(command, "-", input=gzip.compress(data) if compress else data)
    assert line.startswith("Error: <stdin>:1: ")
    assert line.endswith(HINT)


def test_text_opening_with_the_summary_magic_gets_the_hint():
    assert refused("calibrate", "-", input=b"CALIBCLI SUMMARY\n").endswith(HINT)


def test_json_lines_on_standard_input_get_no_hint():
    assert "summary" not in refused("calibrate", "-", input=b"CALIBCLI\n")
