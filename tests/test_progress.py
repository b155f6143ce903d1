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
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
from harness import make_rows, read_pty, run, write_jsonl

from calibcli.metrics import (
    PoissonState,
    PredictionColumns,
    RiskCoverage,
    accuracy_lower_bound,
    bootstrap_intervals,
    cross_fit,
    curve_lower_bounds,
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


def write_parts(tmp_path, count, rows=400, extra=()):
    """``count`` summary files of ``rows`` rows each (distinct inputs), made by summarize."""
    paths = []
    for i in range(count):
        source = write_jsonl(tmp_path / f"shard{i}.jsonl", make_rows(rows, seed=100 + i))
        path = tmp_path / f"part{i}.summary"
        result = run(["summarize", source, "-o", path, "-q", *extra])
        assert result.exit_code == 0, result.stderr
        paths.append(str(path))
    return paths


def test_merging_parts_reports_each_phase_and_merges_the_same(tmp_path):
    from calibcli.io import load_summary
    from calibcli.summaries import load_parts, merge_parts, to_bytes

    paths = write_parts(tmp_path, 6, extra=("--bootstrap-samples", "200"))
    plain = to_bytes(merge_parts([load_summary(p) for p in paths], paths))
    hook = Recorder()
    with reporting_progress(hook):
        watched = to_bytes(merge_parts(load_parts(paths, load_summary), paths))
    assert watched == plain
    assert hook.phases() == [
        "reading parts",
        "merging bin tables",
        "merging distinct confidences",
        "merging NLL and smooth-ECE sums",
        "merging bootstrap sums",
    ]
    for name in ("reading parts", "merging bin tables", "merging NLL and smooth-ECE sums"):
        assert runs(hook.calls, name) == [[0, 1, 2, 3, 4, 5, 6, 6]]
    assert runs(hook.calls, "merging distinct confidences") == [[0, 6]]


def test_the_table_bounds_are_the_bounds_of_every_point_and_report_their_slices():
    rng = np.random.default_rng(8)
    c = rng.uniform(0, 1, 20000)
    curve = RiskCoverage.from_arrays(c, rng.uniform(0, 1, 20000) < c)
    rows = np.arange(curve.thresholds.shape[0])
    accepted, errors = curve.accepted, curve.errors
    whole = accuracy_lower_bound(accepted - errors, accepted, delta=0.05)
    hook = Recorder()
    sliced = curve_lower_bounds(curve, rows, delta=0.05, progress=hook)
    assert np.array_equal(sliced, whole)  # each bound is solved alone: the same bits
    assert runs(hook.calls, "table accuracy bounds") == [[0, 8192, 16384, 20000, 20000]]
    assert curve_lower_bounds(curve, rows[:5], delta=0.05).tolist() == whole[:5].tolist()


def ctrl_c_as_by_default() -> None:
    """In the child: Ctrl-C at its default, which a test runner started with it ignored (a
    script's background job) would pass on, and calibcli keeps ignored as Python does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_with_stderr_on_a_pty(args):
    """Run calibcli with stdout piped and stderr on a pseudo-terminal: (stdout, terminal)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color"}
    # stdout goes to a file: a pipe read only at the end would fill and stall a long report
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen(
            [str(CALIBCLI), *map(str, args)], stdout=sink, stderr=follower, env=env
        )
        os.close(follower)
        terminal = read_pty(leader)
        proc.wait(timeout=300)
        sink.seek(0)
        stdout = sink.read()
    assert proc.returncode == 0
    return stdout, terminal


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
        preexec_fn=ctrl_c_as_by_default,
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


@needs_entry_point
@needs_fork
def test_a_terminal_sees_merge_read_and_merge_its_parts(tmp_path):
    paths = write_parts(tmp_path, 8)
    piped = tmp_path / "piped.summary"
    result = subprocess.run(
        [str(CALIBCLI), "merge", *paths, "-o", str(piped)], capture_output=True, check=True
    )
    assert result.stdout == b""
    assert b"merging" not in result.stderr  # only the closing line
    shown = tmp_path / "shown.summary"
    stdout, terminal = run_with_stderr_on_a_pty(["merge", *paths, "-o", shown])
    assert stdout == b""
    assert shown.read_bytes() == piped.read_bytes()
    for label in ("reading parts", "merging bin tables", "merging NLL and smooth-ECE sums"):
        assert label in terminal
    assert "/8" in terminal
    _, quiet_terminal = run_with_stderr_on_a_pty(["merge", *paths, "-o", shown, "-q"])
    assert "merging" not in quiet_terminal and "reading parts" not in quiet_terminal
    # calibrate reading the same parts as inputs shows the same phases, stdout unchanged
    args = ["calibrate", *paths, "--json"]
    piped_report = subprocess.run([str(CALIBCLI), *args], capture_output=True, check=True)
    stdout, terminal = run_with_stderr_on_a_pty(args)
    assert stdout == piped_report.stdout
    assert "reading parts" in terminal and "merging bin tables" in terminal


@needs_entry_point
@needs_fork
def test_a_terminal_sees_threshold_full_s_table_bounds(tmp_path):
    rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(20000))
    args = ["threshold", rows, "--target-accuracy", "0.8", "--full", "-o"]
    piped = subprocess.run(
        [str(CALIBCLI), *map(str, args), tmp_path / "piped.json"],
        capture_output=True,
        check=True,
        env={**os.environ, "COLUMNS": "100"},  # the width the pty run's text is laid out at
    )
    assert b"bounds" not in piped.stderr
    stdout, terminal = run_with_stderr_on_a_pty([*args, tmp_path / "shown.json"])
    assert stdout == piped.stdout
    assert (tmp_path / "shown.json").read_bytes() == (tmp_path / "piped.json").read_bytes()
    assert "table accuracy bounds" in terminal


@needs_entry_point
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_ctrl_c_stops_threshold_full_s_table_bounds_with_exit_130(tmp_path):
    """SIGINT to the group while the bounds of every distinct confidence are solved (minutes
    at 500,000 of them): exit 130, one line, no -o file."""
    rng = np.random.default_rng(3)
    c = rng.uniform(0, 1, 500_000)
    lines = [
        f'{{"confidence": {x!r}, "correct": {str(y).lower()}}}\n'
        for x, y in zip(c.tolist(), (rng.uniform(0, 1, c.shape[0]) < c).tolist(), strict=True)
    ]
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(lines))
    out = tmp_path / "out" / "report.json"
    out.parent.mkdir()
    args = ["threshold", str(rows), "--target-accuracy", "0.8", "--full", "-o", str(out)]
    proc = subprocess.Popen(
        [str(CALIBCLI), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=ctrl_c_as_by_default,
    )
    time.sleep(8)  # reading 500,000 rows takes a few seconds; the bounds take minutes
    assert proc.poll() is None, "threshold ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    sent = time.monotonic()
    stdout, stderr = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 10  # the target is 1 s; the bound spares a loaded machine
    assert proc.returncode == 130
    assert stderr.decode().endswith("Interrupted\n")
    assert "Traceback" not in stderr.decode()
    assert stdout == b""
    assert list(out.parent.iterdir()) == []
