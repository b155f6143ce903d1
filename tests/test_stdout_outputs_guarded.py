"""Under GitHub Actions an output file written to the job's stdout (``/dev/stdout``, a pipe)
is shown as text, as ``--json`` is: the runner reads every line of it for workflow commands,
and text from the data (a group named ``x\\n::error::INJECTED`` or ``##[error]V1INJECTED``)
must not start one. JSON writes ``##[`` as ``##\\u005b``, HTML and SVG use character
references, Markdown is put between stop-commands lines, a summary file's JSON header is
escaped as JSON. Regular files are written byte for byte as outside Actions.

These run calibcli in a subprocess: ``/dev/stdout`` must be the process's own stdout, a pipe."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NEWLINE_GROUP = "x\n::error::INJECTED"
BRACKET_GROUP = "##[error]V1INJECTED"


def _rows(tmp_path: Path, name: str = "inj.jsonl") -> Path:
    path = tmp_path / name
    rows = [
        {"confidence": 0.9, "correct": True, "grp": NEWLINE_GROUP},
        {"confidence": 0.2, "correct": False, "grp": BRACKET_GROUP},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(args: list[str], cwd: Path, actions: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    if actions:
        env["GITHUB_ACTIONS"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "calibcli", *args],
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def _outside_stop_commands(text: str) -> str:
    """``text`` without its ``::stop-commands::TOKEN`` ... ``::TOKEN::`` blocks: what the
    runner reads for workflow commands."""
    kept, token = [], None
    for line in re.split(r"\r\n|\r|\n", text):
        if token is None:
            found = re.fullmatch(r"::stop-commands::(\w+)", line)
            if found:
                token = found.group(1)
            else:
                kept.append(line)
        elif line == f"::{token}::":
            token = None
    assert token is None, "a stop-commands block is never ended"
    return "\n".join(kept)


def _commands(text: str) -> list[str]:
    """The lines the runner would read as workflow commands."""
    lines = re.split(r"\r\n|\r|\n", _outside_stop_commands(text))
    return [line for line in lines if line.lstrip().startswith("::") or "##[" in line]


def test_html_to_stdout_uses_character_references_and_regular_files_are_unchanged(tmp_path):
    _rows(tmp_path)
    args = ["calibrate", "inj.jsonl", "--by", "grp", "-q", "--no-summary"]
    done = _run([*args, "--html", "/dev/stdout", "-o", "report.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")
    assert _commands(out) == []
    page = out[out.index("<!DOCTYPE html>") :]
    assert (
        "<li>2 groups, ##&#91;error]V1INJECTED (1 of 10), x\n&#58;:error::INJECTED (1 of 10)"
        in page
    )
    assert '<th scope="row">##&#91;error]V1INJECTED</th>' in page
    # the browser reads the references as the data's text; a name with a line break is shown
    # as its literal, as every table shows it
    assert """<th scope="row">'x\\n::error::INJECTED'</th>""" in html.unescape(page)
    # the -o file is a regular file: byte for byte what a run outside Actions writes
    under_actions = (tmp_path / "report.json").read_bytes()
    assert b'"##[error]V1INJECTED"' in under_actions
    done = _run([*args, "-o", "report.json"], tmp_path, actions=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report.json").read_bytes() == under_actions


def test_report_to_stdout_is_json_with_the_bracket_escaped(tmp_path):
    _rows(tmp_path)
    args = ["calibrate", "inj.jsonl", "--by", "grp", "-q", "--no-summary", "--json"]
    done = _run([*args, "-o", "/dev/stdout"], tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")
    assert _commands(out) == []
    printed, written = out.splitlines()  # --json's report, then -o's, one line each
    assert '"##\\u005berror]V1INJECTED"' in written
    assert "##[" not in written
    assert json.loads(written) == json.loads(printed)
    assert sorted(json.loads(written)["groups"]) == [BRACKET_GROUP, NEWLINE_GROUP]


def test_outside_actions_stdout_outputs_are_unchanged(tmp_path):
    _rows(tmp_path)
    args = ["calibrate", "inj.jsonl", "--by", "grp", "-q", "--json", "-o", "/dev/stdout"]
    done = _run(args, tmp_path, actions=False)
    assert done.returncode == 0, done.stderr
    written = done.stdout.decode("utf-8").splitlines()[1]
    assert '"##[error]V1INJECTED"' in written


def test_summary_file_to_stdout_escapes_its_header_and_reads_as_the_same_summary(tmp_path):
    _rows(tmp_path)
    done = _run(["summarize", "inj.jsonl", "--by", "grp", "-q", "-o", "/dev/stdout"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert b"##[" not in done.stdout
    assert b'"##\\u005berror]V1INJECTED"' in done.stdout
    plain = _run(["summarize", "inj.jsonl", "--by", "grp", "-q", "-o", "plain.sum"], tmp_path)
    assert plain.returncode == 0, plain.stderr
    (tmp_path / "streamed.sum").write_bytes(done.stdout)
    from calibcli.summaries.encoding import read_header

    meta, start = read_header(done.stdout)
    assert meta["groups"] == [BRACKET_GROUP, NEWLINE_GROUP]
    assert start % 8 == 0  # the arrays stay aligned
    reports = []
    for name in ("streamed.sum", "plain.sum"):
        shown = _run(["calibrate", name, "--json", "-q"], tmp_path, actions=False)
        assert shown.returncode == 0, shown.stderr
        reports.append(json.loads(shown.stdout))
    assert reports[0] == reports[1]
    assert sorted(reports[0]["groups"]) == [BRACKET_GROUP, NEWLINE_GROUP]


def test_markdown_summary_to_stdout_is_between_stop_commands(tmp_path):
    _rows(tmp_path, "##[warning]f.jsonl")
    args = ["calibrate", "##[warning]f.jsonl", "--json", "--summary", "/dev/stdout"]
    done = _run(args, tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")
    assert _commands(out) == []
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("::stop-commands::"))
    token = lines[start].removeprefix("::stop-commands::")
    assert lines[start + 1] == "### calibcli calibrate: `##[warning]f.jsonl`"
    assert lines[-1] == f"::{token}::"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\n  ::error::x", "a\n  &#58;:error::x"),
        ("::warning::x\r::y", "&#58;:warning::x\r&#58;:y"),
        ("<b>##[error]x</b> a::b", "<b>##&#91;error]x</b> a::b"),
        ("plain text", "plain text"),
    ],
)
def test_markup_is_escaped_by_character_references(monkeypatch, text, expected):
    from calibcli.cli import github

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    shown = github.stream_guarded(text.encode(), "markup").decode()
    assert shown == expected
    assert html.unescape(shown) == text
    monkeypatch.setenv("GITHUB_ACTIONS", "false")
    assert github.stream_guarded(text.encode(), "markup").decode() == text
