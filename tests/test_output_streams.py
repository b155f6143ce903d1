"""Standard output and standard error redirected by the shell onto a file the run writes (-o,
--summary, --html) or reads.

The installed ``calibcli`` runs under ``sh -c`` with the shell's own redirections (``>``,
``>>``, ``2>``, ``2>>``, ``2>&1``), which CliRunner cannot give a command: it has no file
descriptors.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from harness import run, write_jsonl

CALIBCLI = Path(sys.executable).parent / "calibcli"

ROWS = [{"confidence": 0.05 + 0.9 * i / 59, "correct": i % 3 != 0} for i in range(60)]
EARLIER = "### an earlier step\n"  # what a Markdown summary held before the run


@pytest.fixture
def folder(tmp_path):
    """A folder with rows, a saved report (rep.json) and a summary of an earlier step."""
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    assert run(["calibrate", rows, "-q", "-o", tmp_path / "rep.json"]).exit_code == 0
    (tmp_path / "s.md").write_text(EARLIER, encoding="utf-8")
    return tmp_path


def shell(line: str, folder: Path) -> subprocess.CompletedProcess:
    """``line`` run by sh in ``folder``, ``calibcli`` the installed entry point; stdout and
    stderr not redirected by ``line`` are captured."""
    return subprocess.run(
        ["sh", "-c", line.replace("calibcli", shlex.quote(str(CALIBCLI)))],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _status_and_line(line: str, folder: Path, where: str | None) -> tuple[int, str]:
    """The exit status and the error line: on the captured stderr, or in the file ``where``
    when stderr is redirected there."""
    done = shell(line, folder)
    text = done.stderr if where is None else (folder / where).read_text(encoding="utf-8")
    errors = [x for x in text.splitlines() if x.startswith("Error: ")]
    return done.returncode, errors[-1] if errors else text


# (shell line, the file stderr holds or None, the error line) for stdout or stderr redirected
# onto an output
ONTO_AN_OUTPUT = [
    (
        "calibcli calibrate rows.jsonl --json -q -o r.json > r.json",
        None,
        "r.json is both the -o file and standard output",
    ),
    (
        "calibcli calibrate rows.jsonl -q -o r.json >> r.json",
        None,
        "r.json is both the -o file and standard output",
    ),
    (
        "calibcli fit rows.jsonl --method platt -q -o cal.json > cal.json",
        None,
        "cal.json is both the -o file and standard output",
    ),
    (
        "calibcli calibrate rows.jsonl -q --summary s.md >> s.md",
        None,
        "s.md is both the --summary file and standard output",
    ),
    (
        "calibcli calibrate rows.jsonl -q -o r.json 2> r.json",
        "r.json",
        "r.json is both the -o file and standard error",
    ),
    (
        "calibcli summarize rows.jsonl -q -o s.cbs > s.cbs 2>&1",
        "s.cbs",
        "s.cbs is both the -o file and standard error",
    ),
    (
        "calibcli render rep.json --html p.html 2> p.html",
        "p.html",
        "p.html is both the --html file and standard error",
    ),
]


@pytest.mark.parametrize(("line", "where", "message"), ONTO_AN_OUTPUT)
def test_a_stream_onto_an_output_is_refused(folder, line, where, message):
    """What is printed would be lost with the file an output replaces, or mixed into an
    appended one: exit 2, one line, and no output written."""
    status, error = _status_and_line(line, folder, where)
    assert status == 2, error
    assert error.startswith(f"Error: {message} (redirected to it): "), error
    assert error.endswith("elsewhere")
    assert (folder / "s.md").read_text(encoding="utf-8") == EARLIER


# (shell line, the file stderr holds or None, the error line) for a stream onto an input
ONTO_AN_INPUT = [
    (
        "calibcli calibrate rows.jsonl 2> rows.jsonl",
        "rows.jsonl",
        "rows.jsonl is both an input and standard error ('2>' emptied it before it could be "
        "read); send standard error elsewhere",
    ),
    (
        "calibcli calibrate rows.jsonl -q --max-ece 0.0001 2>> rows.jsonl",
        "rows.jsonl",
        "rows.jsonl is both an input and standard error ('2>>' would append the run's "
        "messages to it); send standard error elsewhere",
    ),
    (
        "calibcli summarize rows.jsonl -q -o s.cbs > rows.jsonl",
        None,
        "rows.jsonl is both an input and standard output ('>' emptied it before it could be "
        "read); send standard output elsewhere",
    ),
    (
        "calibcli calibrate - -q < rows.jsonl 2>> rows.jsonl",
        "rows.jsonl",
        "standard input is redirected from the file standard error is redirected to ('2>>' "
        "would append the run's messages to it); send standard error elsewhere",
    ),
]


@pytest.mark.parametrize(("line", "where", "message"), ONTO_AN_INPUT)
def test_a_stream_onto_an_input_is_refused(folder, line, where, message):
    """An input emptied by the shell is not read as no rows (calibrate said N 0, exit 0); one
    appended to would get the run's warnings and verdict."""
    status, error = _status_and_line(line, folder, where)
    assert (status, error) == (2, f"Error: {message}")
    assert not (folder / "s.cbs").exists()


def test_stderr_appended_to_an_input_gets_only_the_error_line(folder):
    rows = folder / "rows.jsonl"
    text = rows.read_text(encoding="utf-8")
    done = shell("calibcli calibrate rows.jsonl --max-ece 0.0001 2>> rows.jsonl", folder)
    assert done.returncode == 2
    assert done.stdout == ""
    added = rows.read_text(encoding="utf-8")[len(text) :]
    assert added.startswith("Error: rows.jsonl is both an input and standard error")
    assert added.count("\n") == 1


# shell lines that must run, each with a check of what it wrote
ALLOWED = [
    "calibcli calibrate rows.jsonl --json -q -o r.json > printed.json",
    "calibcli calibrate rows.jsonl --json -q -o r.json | cat > printed.json",
    "calibcli calibrate rows.jsonl --json -q -o r.json > /dev/null; cp r.json printed.json",
    "calibcli calibrate rows.jsonl --json -o r.json > printed.json 2> log",
    "calibcli calibrate rows.jsonl --json -q -o r.json > printed.json 2>&1",
    "calibcli calibrate rows.jsonl --json -q -o /dev/stdout > printed.json",
]


@pytest.mark.parametrize("line", ALLOWED)
def test_streams_elsewhere_keep_working(folder, line):
    """A pipe, /dev/null, another file, a log shared by stdout and stderr, and an output
    written through to standard output."""
    done = shell(line, folder)
    assert done.returncode == 0, done.stderr
    printed = (folder / "printed.json").read_text(encoding="utf-8")
    documents = [json.loads(x) for x in printed.splitlines() if x.startswith("{")]
    assert documents and all(d["n"] == len(ROWS) for d in documents)


def test_a_command_printing_nothing_may_have_stdout_on_its_output(folder):
    """summarize -o FILE prints nothing: ``> FILE`` only empties what -o then replaces, and
    ``-o -`` is standard output itself."""
    for line in (
        "calibcli summarize rows.jsonl -q -o s.cbs > s.cbs",
        "calibcli summarize rows.jsonl -q -o - > t.cbs",
        "calibcli summarize rows.jsonl -q -o u.cbs >> rows.jsonl",
    ):
        done = shell(line, folder)
        assert done.returncode == 0, (line, done.stderr)
    assert (folder / "s.cbs").read_bytes() == (folder / "t.cbs").read_bytes()
    assert (folder / "s.cbs").read_bytes() == (folder / "u.cbs").read_bytes()
    assert (folder / "rows.jsonl").read_text(encoding="utf-8").count("\n") == len(ROWS)


def test_stdout_appended_to_the_job_summary_under_github_actions_is_not_refused(folder):
    """A workflow step's ``calibcli ... >> "$GITHUB_STEP_SUMMARY"`` prints its table into the
    job summary, as every step may; the run's own automatic summary is appended there too, so
    the gate's verdict stands on its figures."""
    (folder / "job.md").write_text(EARLIER, encoding="utf-8")
    outputs = folder / "outputs.txt"
    line = (
        f"export GITHUB_ACTIONS=true GITHUB_OUTPUT={outputs} "
        f"GITHUB_STEP_SUMMARY={folder / 'job.md'}; "
        'calibcli calibrate rows.jsonl --max-ece 0.9 >> "$GITHUB_STEP_SUMMARY"'
    )
    done = shell(line, folder)
    assert done.returncode == 0, done.stderr
    summary = (folder / "job.md").read_text(encoding="utf-8")
    assert summary.startswith(EARLIER)
    assert "ECE" in summary  # the table printed on stdout
    assert "passed=true" in outputs.read_text(encoding="utf-8").splitlines()


def test_summary_named_as_the_job_summary_with_stdout_appended_there_is_not_refused(folder):
    """``--summary "$GITHUB_STEP_SUMMARY" >> "$GITHUB_STEP_SUMMARY"``, as the README's
    workflows name the job summary, is that shared file too."""
    (folder / "job.md").write_text(EARLIER, encoding="utf-8")
    line = (
        f"export GITHUB_ACTIONS=true GITHUB_STEP_SUMMARY={folder / 'job.md'}; "
        'calibcli calibrate rows.jsonl --summary "$GITHUB_STEP_SUMMARY" --max-ece 0.9 '
        '>> "$GITHUB_STEP_SUMMARY"'
    )
    done = shell(line, folder)
    assert done.returncode == 0, done.stderr
    assert (folder / "job.md").read_text(encoding="utf-8").startswith(EARLIER)
