"""Outputs and the files the shell redirects standard input and output from and to; output
names: ``-``, a folder's (``out/``), a compression suffix; and text appended to a summary that
ends without a newline.

Redirections are file descriptors, which CliRunner does not give a command: those cases run
``python -m calibcli`` in a subprocess with real redirections (``stdin=open(path)``,
``stdout=open(path, "ab")``), as a shell's ``< path`` and ``>> path`` are.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest
from harness import run, write_jsonl

ROWS = [{"confidence": 0.05 + 0.9 * i / 59, "correct": i % 3 != 0} for i in range(60)]
HELD = [{"confidence": 0.1 + 0.8 * i / 39, "correct": i % 2 == 0} for i in range(40)]


def cli(*args, cwd=None, **streams):
    """``python -m calibcli ARGS`` with the given streams; stderr as text."""
    return subprocess.run(
        [sys.executable, "-m", "calibcli", *map(str, args)],
        stderr=subprocess.PIPE,
        check=False,
        cwd=cwd,
        **streams,
    )


@pytest.fixture
def files(tmp_path):
    """Rows, held-out rows, a calibrator fitted on the rows, and a saved report."""
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    held = write_jsonl(tmp_path / "held.jsonl", HELD)
    cal, report = tmp_path / "cal.json", tmp_path / "r.json"
    assert run(["fit", rows, "--method", "platt", "-q", "-o", cal]).exit_code == 0
    assert run(["calibrate", rows, "-q", "-o", report]).exit_code == 0
    return {"rows": rows, "held": held, "cal": cal, "report": report}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# --------------------------------------------------------------------------- stdout an input

# (command line, the input stdout is appended to) with {name} for the files of ``files``
STDOUT_IS_INPUT = [
    ("apply {cal} {held}", "held"),
    ("apply {cal} {held}", "cal"),
    ("apply {cal} {held} -o -", "held"),
    ("calibrate {rows} -q", "rows"),
    ("calibrate {rows} -q --json -o {out}", "rows"),
    ("fit {rows} --method platt -q --json", "rows"),
    ("summarize {rows} -q -o -", "rows"),
    ("render {report} --html -", "report"),
]


@pytest.mark.parametrize(("line", "name"), STDOUT_IS_INPUT)
def test_stdout_appended_to_an_input_is_refused_before_reading(files, tmp_path, line, name):
    """``>> input``: the rows written would be read again (apply without ids never ends)."""
    args = line.format(**files, out=tmp_path / "out.json").split()
    before = _snapshot(tmp_path)
    with open(files[name], "ab") as stdout:
        done = cli(*args, stdout=stdout, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode() == (
        f"Error: {files[name]}: the input file is also standard output (redirected to it); "
        "send standard output elsewhere\n"
    )
    assert _snapshot(tmp_path) == before


def test_stdout_written_over_an_input_is_refused(files):
    """``> input``: the shell has emptied it; the run says so rather than write nothing and
    exit 0."""
    with open(files["held"], "wb") as stdout:
        done = cli("apply", files["cal"], files["held"], stdout=stdout)
    assert done.returncode == 2
    assert b"the input file is also standard output" in done.stderr


def test_stdin_and_stdout_one_file_is_refused(files):
    held = files["held"]
    text = held.read_bytes()
    with open(held, "rb") as stdin, open(held, "ab") as stdout:
        done = cli("calibrate", "-", "-q", stdin=stdin, stdout=stdout)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "Error: standard input and standard output are redirected from and to one file; "
        "send standard output elsewhere\n"
    )
    assert held.read_bytes() == text


def test_stdout_in_another_file_or_unused_is_no_input(files, tmp_path):
    """A command writing nothing on stdout (summarize -o FILE) may have it redirected
    anywhere; a report printed to a file of its own is written."""
    rows = files["rows"]
    text = rows.read_bytes()
    with open(rows, "ab") as stdout:
        done = cli("summarize", rows, "-q", "-o", tmp_path / "s.cbs", stdout=stdout)
    assert done.returncode == 0, done.stderr
    assert rows.read_bytes() == text
    with open(tmp_path / "printed.json", "wb") as stdout:
        done = cli("calibrate", rows, "-q", "--json", stdout=stdout)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "printed.json").read_text())["n"] == len(ROWS)


# --------------------------------------------------------------------------- stdin an output

STDIN_IS_OUTPUT = [
    "calibrate - -q -o {out}",
    "calibrate - -q --summary {out}",
    "calibrate - -q --html {out}",
    "apply {cal} - -q -o {out}",
    "summarize - -q -o {out}",
    "render - --html {out}",
]


@pytest.mark.parametrize("line", STDIN_IS_OUTPUT)
def test_stdin_redirected_from_an_output_is_refused_before_reading(files, tmp_path, line):
    """``- -o FILE < FILE``: the output would replace (or be appended to) the input, which
    naming FILE instead of ``-`` refuses already."""
    source = files["report"] if line.startswith("render") else files["held"]
    args = line.format(**files, out=source).split()
    before = _snapshot(tmp_path)
    with open(source, "rb") as stdin:
        done = cli(*args, stdin=stdin, stdout=subprocess.PIPE)
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    assert done.stderr.decode() == (
        f"Error: {source}: the output file is also an input (standard input); "
        "write the output elsewhere\n"
    )
    assert _snapshot(tmp_path) == before


def test_dev_stdin_as_the_output_of_redirected_stdin_is_refused(files, tmp_path):
    held = files["held"]
    before = _snapshot(tmp_path)
    with open(held, "rb") as stdin:
        done = cli("calibrate", "-", "-q", "-o", "/dev/stdin", stdin=stdin, stdout=subprocess.PIPE)
    assert done.returncode == 2, done.stderr
    assert b"/dev/stdin: the output file is also an input (standard input)" in done.stderr
    assert _snapshot(tmp_path) == before


def test_stdin_from_a_file_written_elsewhere_is_read(files, tmp_path):
    out = tmp_path / "new.json"
    with open(files["held"], "rb") as stdin:
        done = cli("calibrate", "-", "-q", "-o", out, stdin=stdin, stdout=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["n"] == len(HELD)


# --------------------------------------------------------------------------- the summary


def _summary_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")


EARLIER = "| step | result |\n| --- | --- |\n| lint | ok |"  # an earlier step's, no newline


def test_a_summary_after_a_line_without_newline_starts_on_a_line_of_its_own(files, tmp_path):
    summary = tmp_path / "s.md"
    summary.write_text(EARLIER, encoding="utf-8")
    result = run(["calibrate", files["rows"], "-q", "--max-ece", "0.0001", "--summary", summary])
    assert result.exit_code == 1
    lines = _summary_lines(summary)
    assert lines[2] == "| lint | ok |"
    assert lines[3].startswith("### calibcli calibrate") and "FAILED" in lines[3]


def test_a_summary_after_a_newline_gets_no_other(files, tmp_path):
    summary = tmp_path / "s.md"
    summary.write_text(EARLIER + "\n", encoding="utf-8")
    assert run(["calibrate", files["rows"], "-q", "--summary", summary]).exit_code == 0
    assert _summary_lines(summary)[3].startswith("### calibcli calibrate")


def test_the_job_summary_after_a_line_without_newline_keeps_its_heading(files, tmp_path):
    summary = tmp_path / "step.md"
    summary.write_text(EARLIER, encoding="utf-8")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    result = run(["calibrate", files["rows"], "-q", "--max-ece", "0.0001"], env=env)
    assert result.exit_code == 1
    lines = _summary_lines(summary)
    assert lines[2] == "| lint | ok |"
    assert lines[3].startswith("### calibcli calibrate") and "FAILED" in lines[3]


# --------------------------------------------------------------------------- compressed names

DECOMPRESS = {".gz": gzip.decompress, ".xz": lzma.decompress, ".bz2": bz2.decompress}


@pytest.mark.parametrize("suffix", sorted(DECOMPRESS))
def test_summary_files_are_compressed_by_their_suffix(files, tmp_path, suffix):
    plain, packed = tmp_path / "a.cbs", tmp_path / f"a.cbs{suffix}"
    assert run(["summarize", files["rows"], "-q", "-o", plain]).exit_code == 0
    assert run(["summarize", files["rows"], "-q", "-o", packed]).exit_code == 0
    assert DECOMPRESS[suffix](packed.read_bytes()) == plain.read_bytes()
    merged = tmp_path / f"m.cbs{suffix}"
    assert run(["merge", packed, "-q", "-o", merged]).exit_code == 0
    assert DECOMPRESS[suffix](merged.read_bytes()) == plain.read_bytes()
    # read back as the plain file is
    shown = [run(["calibrate", p, "-q", "--json"]).stdout for p in (plain, packed)]
    assert json.loads(shown[0])["ece"] == json.loads(shown[1])["ece"]


def test_apply_rows_are_compressed_once(files, tmp_path):
    out = tmp_path / "rows.jsonl.gz"
    assert run(["apply", files["cal"], files["held"], "-q", "-o", out]).exit_code == 0
    rows = [json.loads(line) for line in gzip.decompress(out.read_bytes()).splitlines()]
    assert len(rows) == len(HELD)


PLAIN_ONLY = [
    ("calibrate {rows} -q -o r.json.gz", "r.json.gz", "-o", "gzip", ".gz"),
    ("fit {rows} --method platt -q -o c.json.xz", "c.json.xz", "-o", "xz", ".xz"),
    ("calibrate {rows} -q --html h.html.gz", "h.html.gz", "--html", "gzip", ".gz"),
    ("render {report} --html h.html.bz2", "h.html.bz2", "--html", "bzip2", ".bz2"),
    ("calibrate {rows} -q --summary s.md.zst", "s.md.zst", "--summary", "Zstandard", ".zst"),
]


@pytest.mark.parametrize(("line", "name", "option", "codec", "suffix"), PLAIN_ONLY)
def test_compressed_names_of_plain_outputs_are_refused(
    files, tmp_path, monkeypatch, line, name, option, codec, suffix
):
    """calibcli reads reports and calibrator files as plain JSON, a browser opens no
    compressed page from a file, and a Markdown summary is appended to."""
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    result = run(line.format(**files).split())
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"Error: {name}: {option} writes no {codec} file ({suffix}): ")
    assert result.stderr.endswith(f"; name the file without {suffix}\n")
    assert _snapshot(tmp_path) == before


# --------------------------------------------------------------------------- -o - and out/


def test_dash_is_stdout_for_apply_summarize_merge_and_render(files, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run(["apply", files["cal"], files["held"], "-q", "-o", "-"])
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["correct"] for r in rows] == [r["correct"] for r in HELD]
    assert [r["confidence"] for r in rows] != [r["confidence"] for r in HELD]
    part = tmp_path / "p.cbs"
    assert run(["summarize", files["rows"], "-q", "-o", part]).exit_code == 0
    printed = cli("summarize", files["rows"], "-q", "-o", "-", stdout=subprocess.PIPE)
    assert printed.returncode == 0 and printed.stdout == part.read_bytes()
    merged = cli("merge", part, "-q", "-o", "-", stdout=subprocess.PIPE)
    assert merged.returncode == 0 and merged.stdout == part.read_bytes()
    page = run(["render", files["report"], "--html", "-"])
    assert page.exit_code == 0 and page.stdout.startswith("<!DOCTYPE html>")
    assert not (tmp_path / "-").exists()


def test_a_summary_to_stdout_whose_reader_leaves_is_no_error(tmp_path):
    rows = [{"confidence": (i * 7919 % 30011) / 30011, "correct": i % 2 == 0} for i in range(30000)]
    big = write_jsonl(tmp_path / "big.jsonl", rows)  # a summary file of about 0.8 MB
    with subprocess.Popen(
        [sys.executable, "-m", "calibcli", "summarize", str(big), "-q", "-o", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout.read(16) == b"CALIBCLI SUMMARY"
        proc.stdout.close()
        err = proc.stderr.read()
    assert proc.returncode == 0, err
    assert err == b""


@pytest.mark.parametrize(
    ("option", "hint"),
    [
        ("-o", "give --json to print the JSON there"),
        ("--summary", "name a file for --summary"),
        ("--html", "name a file for --html"),
        ("--plot", "name a file for --plot"),
    ],
)
def test_dash_is_refused_where_stdout_carries_the_table(files, tmp_path, monkeypatch, option, hint):
    monkeypatch.chdir(tmp_path)
    result = run(["calibrate", files["rows"], option, "-"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: {option} -: standard output carries the command's table (its JSON with "
        f"--json); {hint}\n"
    )
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("option", ["-o", "--summary", "--html", "--plot"])
@pytest.mark.parametrize("given", ["newdir/", "newdir/.", "."])
def test_a_path_naming_a_folder_is_refused(files, tmp_path, monkeypatch, option, given):
    """``out/`` would be written as the file ``out``: Path drops the slash."""
    monkeypatch.chdir(tmp_path)
    before = _snapshot(tmp_path)
    result = run(["calibrate", files["rows"], "-q", option, given])
    assert result.exit_code == 2
    assert f"{given!r} names a folder; give the path of a file to write" in result.stderr
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "newdir").exists()
