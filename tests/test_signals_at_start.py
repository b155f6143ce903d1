"""SIGTERM or Ctrl-C while calibcli starts (its imports, before the command runs) ends the run
with its one line and exit code and, under GitHub Actions, the step outputs of a run without a
report; a Ctrl-C the caller ignores (``trap '' INT``, a background job of a script) stays
ignored, as Python keeps it, from the start to the end of the command.

Each run is a fresh Python process that sends itself the signal at a chosen import (a finder
on sys.meta_path), so the moment is exact rather than a race with a sleep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from github_steps import WITHOUT_REPORT, github_env, lines_of
from harness import write_jsonl

# The script of a run: SIGNAL sent to itself when MODULE is first imported, then calibcli's
# entry point with ARGS, as the console script calls it.
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    if {ignore_sigint}:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:  # as Python starts where Ctrl-C is not ignored, whatever the test runner's is
        signal.signal(signal.SIGINT, signal.default_int_handler)

    class SendAt:
        def find_spec(self, name, path=None, target=None):
            if name == {module!r}:
                sys.meta_path.remove(self)
                os.kill(os.getpid(), {signum})
            return None

    sys.meta_path.insert(0, SendAt())
    sys.argv = ["calibcli", *{args!r}]
    from calibcli.cli import main
    sys.exit(main())
    """
)

CALIBRATE_WITHOUT_REPORT = WITHOUT_REPORT["calibrate"]


@pytest.fixture
def rows(tmp_path):
    data = [{"id": i, "confidence": 0.8, "correct": i < 8} for i in range(10)]
    return write_jsonl(tmp_path / "rows.jsonl", data)


def start(tmp_path, module, signum, args, *, ignore_sigint=False):
    github, outputs = github_env(tmp_path)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **github}
    script = SCRIPT.format(
        module=module, signum=int(signum), args=[str(a) for a in args], ignore_sigint=ignore_sigint
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    return done, dict(lines_of(outputs))


@pytest.mark.parametrize(
    "module",
    [
        "typer",  # while calibcli.cli imports the app: the step outputs' module is half there
        "calibcli.cli.commands.calibrate",  # while main() imports the command
    ],
)
@pytest.mark.parametrize(
    ("signum", "code", "line"),
    [(signal.SIGTERM, 143, "Terminated"), (signal.SIGINT, 130, "Interrupted")],
)
def test_a_signal_while_starting_writes_the_outputs(tmp_path, rows, module, signum, code, line):
    done, written = start(tmp_path, module, signum, ["calibrate", rows, "--max-ece", "0.5"])
    assert done.returncode == code, done.stderr
    assert done.stderr.splitlines() == [line]
    assert written == CALIBRATE_WITHOUT_REPORT


def test_annotations_none_writes_no_outputs(tmp_path, rows):
    done, written = start(
        tmp_path, "typer", signal.SIGTERM, ["calibrate", rows, "--annotations", "none"]
    )
    assert done.returncode == 143 and written == {}


def test_a_command_without_outputs_writes_none(tmp_path, rows):
    done, written = start(
        tmp_path, "typer", signal.SIGTERM, ["summarize", rows, "-o", tmp_path / "s.cbs"]
    )
    assert done.returncode == 143 and written == {}
    assert not (tmp_path / "s.cbs").exists()


@pytest.mark.parametrize(
    "module",
    [
        "typer",  # while starting
        "calibcli.reports.calibrate",  # while the command runs (its report, imported then)
    ],
)
def test_an_ignored_ctrl_c_stays_ignored(tmp_path, rows, module):
    done, written = start(
        tmp_path, module, signal.SIGINT, ["calibrate", rows, "-q"], ignore_sigint=True
    )
    assert done.returncode == 0, done.stderr
    assert "Interrupted" not in done.stderr
    assert written["passed"] == "true" and float(written["ece"]) == pytest.approx(0.0, abs=1e-12)
