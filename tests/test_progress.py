"""Progress of the long phases and Ctrl-C.

The metrics report a phase's steps to a hook (none by default) and compute the same numbers
with or without one; the CLI draws the phases on stderr only when stderr is a terminal. Ctrl-C
stops a command with exit 130 and one line, its worker processes stopped and no output file
written (checked on the installed entry point, with a real SIGINT).
"""

from __future__ import annotations

import json
import os
import pty
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from harness import make_rows, run, write_jsonl

from calibcli.metrics import (
    PoissonState,
    PredictionColumns,
    bootstrap_intervals,
    cross_fit,
    paired_bootstrap,
    poisson_intervals,
    reporting_progress,
)

CALIBCLI = Path(sys.executable).parent / "calibcli"
needs_entry_point = pytest.mark.skipif(not CALIBCLI.exists(), reason="calibcli is not installed")
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and a pty")


class Recorder:
    """A progress hook that keeps every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.calls.append((phase, done, total))

    def phases(self) -> list[str]:
        return list(dict.fromkeys(p for p, _, _ in self.calls))


def runs(calls, phase):
    """The ``done`` values of each run of ``phase`` (a run starts at 0)."""
    found = []
    for p, done, _ in calls:
        if p == phase:
            if done == 0:
                found.append([])
            found[-1].append(done)
    return found


def check_run(done, total):
    """One run of a phase: 0 first, ``total`` last, never going back, steps in between (so a
    display moves while the phase runs)."""
    assert done[0] == 0 and done[-1] == total
    assert done == sorted(done)
    assert len(done) > 3


@pytest.fixture(scope="module")
def sample():
    rng = np.random.default_rng(5)
    c = rng.uniform(0, 1, 3000)
    y = rng.uniform(0, 1, 3000) < c**1.4
    return c, y


@pytest.mark.parametrize("workers", [1, 2])
def test_the_bootstrap_reports_its_resamples_and_computes_the_same(sample, workers):
    columns = PredictionColumns.from_arrays(*sample)
    plain = bootstrap_intervals(columns, samples=300, workers=workers)
    hook = Recorder()
    watched = bootstrap_intervals(columns, samples=300, workers=workers, progress=hook)
    assert watched == plain
    assert hook.phases() == ["bootstrap resamples"]
    (done,) = runs(hook.calls, "bootstrap resamples")
    check_run(done, 300)


def test_an_installed_hook_reaches_every_bootstrap_and_the_folds(sample):
    c, y = sample
    columns = PredictionColumns.from_arrays(c, y)
    keys = np.arange(c.shape[0], dtype=np.uint64)
    plain = (
        poisson_intervals(columns, keys[y], keys[~y], samples=200),
        paired_bootstrap((c, y), (c**0.9, y), samples=200),
        cross_fit(c, y, method="platt", folds=4),
    )
    hook = Recorder()
    with reporting_progress(hook):
        watched = (
            poisson_intervals(columns, keys[y], keys[~y], samples=200),
            paired_bootstrap((c, y), (c**0.9, y), samples=200),
            cross_fit(c, y, method="platt", folds=4),
        )
    assert watched[:2] == plain[:2]
    assert np.array_equal(watched[2], plain[2])
    assert hook.phases() == ["bootstrap resamples", "cross-fitting folds"]
    poisson, paired = runs(hook.calls, "bootstrap resamples")
    check_run(poisson, 200)
    check_run(paired, 200)
    assert runs(hook.calls, "cross-fitting folds") == [[0, 1, 2, 3, 4, 4]]
    hook.calls.clear()
    bootstrap_intervals(columns, samples=200)  # outside the block: no hook
    assert hook.calls == []


def test_a_summary_s_bootstrap_sums_report_their_resamples(sample):
    c, y = sample
    keys = np.arange(c.shape[0], dtype=np.uint64)
    args = (c[y], c[~y], keys[y], keys[~y])
    plain = PoissonState.from_rows(*args, bins=10, samples=40, seed=3).to_arrays()
    hook = Recorder()
    with reporting_progress(hook):
        watched = PoissonState.from_rows(*args, bins=10, samples=40, seed=3).to_arrays()
    assert plain.keys() == watched.keys()
    assert all(np.array_equal(plain[k], watched[k]) for k in plain)
    assert runs(hook.calls, "bootstrap sums") == [[*range(41), 40]]


def test_a_phase_that_fails_still_ends(sample):
    c, _ = sample
    hook = Recorder()
    with pytest.raises(ValueError, match="fold"):
        cross_fit(
            np.r_[c[:3], 0.5],
            np.r_[True, True, True, False],
            method="platt",
            folds=4,
            progress=hook,
        )
    assert hook.calls[0] == ("cross-fitting folds", 0, 4)
    assert hook.calls[-1] == ("cross-fitting folds", 4, 4)


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(2000))
    result = run(["calibrate", rows, "--ci", "0.95", "--bootstrap", "500", "--json"])
    assert result.exit_code == 0
    assert result.stderr == ""
    json.loads(result.stdout)


def run_with_stderr_on_a_pty(args):
    """Run calibcli with stdout piped and stderr on a pseudo-terminal: (stdout, terminal)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [str(CALIBCLI), *map(str, args)], stdout=subprocess.PIPE, stderr=follower, env=env
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    stdout = proc.stdout.read()
    proc.wait(timeout=300)
    os.close(leader)
    assert proc.returncode == 0
    return stdout, b"".join(chunks).decode("utf-8", "replace")


@needs_entry_point
@needs_fork
def test_a_terminal_sees_the_bootstrap_and_stdout_is_unchanged(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(2000))
    args = ["calibrate", rows, "--ci", "0.95", "--bootstrap", "2000", "--workers", "1", "--json"]
    piped = subprocess.run([str(CALIBCLI), *map(str, args)], capture_output=True, check=True)
    assert piped.stderr == b""
    stdout, terminal = run_with_stderr_on_a_pty(args)
    assert stdout == piped.stdout
    assert "bootstrap resamples" in terminal
    assert "/2000" in terminal  # resamples done of all
    quiet_stdout, quiet_terminal = run_with_stderr_on_a_pty([*args, "-q"])
    assert quiet_stdout == piped.stdout
    assert "bootstrap" not in quiet_terminal


def children(pid):
    """Process ids whose parent is ``pid`` (zombies left out), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@needs_entry_point
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("group", [False, True], ids=["kill", "ctrl-c"])
def test_ctrl_c_stops_the_bootstrap_and_its_workers_with_exit_130(tmp_path, group):
    """SIGINT to the process alone (kill -INT), or to its whole group as a terminal's Ctrl-C
    sends it (the workers get it too): exit 130, one line, no worker left, no -o file."""
    rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(20000))
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    workers = 2 if (os.cpu_count() or 1) >= 2 else 1
    proc = subprocess.Popen(
        [
            str(CALIBCLI),
            "calibrate",
            str(rows),
            "--ci",
            "0.95",
            "--bootstrap",
            "100000",
            "--workers",
            str(workers),
            "-o",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    started = []
    if workers == 1:
        time.sleep(5)  # reading 20,000 rows takes well under that; then the bootstrap runs
    deadline = time.monotonic() + 120
    while workers > 1 and len(started) < workers and time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        started = children(proc.pid)
        time.sleep(0.05)
    assert proc.poll() is None, "the bootstrap ended before it could be interrupted"
    time.sleep(0.5)  # the workers are running their chunks
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    stdout, stderr = proc.communicate(timeout=30)
    waited = time.monotonic() - sent
    assert proc.returncode == 130
    assert waited < 5  # the target is 1 s; this bound only keeps a loaded machine from failing
    assert stderr.decode() == "Interrupted\n"
    assert stdout == b""
    assert list(out.parent.iterdir()) == []  # neither the report nor a staged temporary file
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in started if alive(pid)]
