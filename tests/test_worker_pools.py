"""The bootstrap's worker processes (calibrate --ci, compare): never more than the CPUs whatever
--workers or CALIBCLI_WORKERS ask, and a pool that cannot start its processes, or loses one,
is exit 2 with one line, never a traceback (exit 3) or a wait on a pool that will never answer.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.process
import os
from concurrent.futures.process import _process_worker

import pytest
from harness import make_rows, run, write_jsonl

import calibcli.metrics.bootstrap as bootstrap
import calibcli.metrics.paired as paired
import calibcli.metrics.replicates as replicates

FEW = ("--bootstrap", "200")


@pytest.fixture
def three_cpus(monkeypatch):
    """A machine with three CPUs, whatever runs the tests."""
    monkeypatch.setattr("calibcli.system.cpus", lambda: 3)


@pytest.fixture
def rows(tmp_path):
    return write_jsonl(tmp_path / "rows.jsonl", make_rows(300))


def spy(monkeypatch, module):
    """Record the workers each bootstrap is given, and run it in this process."""
    seen = []

    def run_replicates(engine, seed, samples, workers, **options):
        seen.append(workers)
        return engine.run(seed, 0, samples)

    monkeypatch.setattr(module, "run_replicates", run_replicates)
    return seen


@pytest.mark.parametrize(
    ("args", "env"), [(["--workers", "600"], {}), ([], {"CALIBCLI_WORKERS": "100000"})]
)
def test_compare_is_capped_at_the_cpus(monkeypatch, three_cpus, rows, args, env):
    seen = spy(monkeypatch, paired)
    result = run(["compare", rows, rows, *FEW, *args, "-q", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert seen == [3, 3]  # each side's resamples in turn, one side's engine in memory at a time


@pytest.mark.parametrize(
    ("args", "env"), [(["--workers", "600"], {}), ([], {"CALIBCLI_WORKERS": "100000"})]
)
def test_calibrate_is_capped_at_the_cpus(monkeypatch, three_cpus, rows, args, env):
    seen = spy(monkeypatch, bootstrap)
    result = run(["calibrate", rows, "--ci", "0.95", *FEW, *args, "-q", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert seen == [3]


def test_compare_without_workers_stays_in_one_process_for_a_small_job(
    monkeypatch, three_cpus, rows
):
    seen = spy(monkeypatch, paired)
    result = run(["compare", rows, rows, *FEW, "-q", "--json"])
    assert result.exit_code == 0
    assert seen == [1, 1]


def refuse_after(monkeypatch, starts):
    """A process pool's worker starts ``starts`` times, then fails as fork does without memory
    (other processes, such as a reader's, start as usual)."""
    real = multiprocessing.process.BaseProcess.start
    count = {"n": 0}

    def start(self):
        if getattr(self, "_target", None) is _process_worker:
            count["n"] += 1
            if count["n"] > starts:
                raise BlockingIOError(11, "Resource temporarily unavailable")
        return real(self)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)


COMMANDS = {
    "calibrate": lambda path: ["calibrate", path, "--ci", "0.95"],
    "compare": lambda path: ["compare", path, path],
}


def invoke(command, path, *args):
    return run([*COMMANDS[command](path), *FEW, "--workers", "2", "-q", *args])


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("starts", [0, 1])
def test_a_pool_that_cannot_start_is_exit_2(monkeypatch, three_cpus, rows, command, starts):
    """No process starts, or the first does and the second is refused: one line, exit 2, and
    no process left behind waiting for work."""
    before = set(multiprocessing.active_children())
    refuse_after(monkeypatch, starts)
    result = invoke(command, rows)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "Error: cannot start worker processes: [Errno 11] Resource temporarily unavailable; "
        "try --workers 1"
    ]
    assert set(multiprocessing.active_children()) <= before


def die(seed, start, stop):  # a worker killed mid-run (the kernel's out-of-memory killer)
    os._exit(9)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_worker_that_dies_is_exit_2(monkeypatch, three_cpus, rows, command):
    monkeypatch.setattr(replicates, "_run_chunk", die)
    result = invoke(command, rows)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: a worker process stopped abruptly")
    assert lines[0].endswith("; try --workers 1")
