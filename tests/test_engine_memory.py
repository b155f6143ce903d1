"""calibcli.engines.memory: a task keeps the memory it frees for reuse while it runs, in a
process whose environment fixed glibc's trim threshold (as Dask's nanny starts its workers),
and hands it back when the process's last task ends. The thresholds the environment gave are
read as glibc reads them; the calls made to the C library are recorded by a stand-in, and one
test counts page faults of a real glibc process in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from calibcli.engines import memory


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, None),  # thresholds that still adapt: left alone
        ({"MALLOC_MMAP_THRESHOLD_": "4096"}, None),
        ({"MALLOC_TRIM_THRESHOLD_": "65536"}, (65536, 128 * 1024)),  # Dask's nanny
        ({"MALLOC_TRIM_THRESHOLD_": "0", "MALLOC_MMAP_THRESHOLD_": "1048576"}, (0, 1048576)),
        (
            {
                "MALLOC_TRIM_THRESHOLD_": "65536",
                "GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=100",
            },
            (100, 128 * 1024),
        ),
        ({"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=8192"}, None),
        (
            {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=7:glibc.malloc.mmap_threshold=8192"},
            (7, 8192),
        ),
        ({"MALLOC_TRIM_THRESHOLD_": "lots"}, None),
        ({"MALLOC_TRIM_THRESHOLD_": str(1 << 40)}, None),  # more than mallopt's int holds
    ],
)
def test_the_thresholds_to_restore_are_those_the_environment_gave(environ, expected):
    assert memory._fixed_thresholds(environ) == expected


class FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


@pytest.fixture
def libc(monkeypatch):
    fake = FakeLibc()
    monkeypatch.setattr(memory, "_malloc", lambda: (fake, (65536, 131072)))
    return fake


HELD = [("mallopt", -3, 32 << 20), ("mallopt", -1, (1 << 31) - 1)]
RESTORED = [("mallopt", -3, 131072), ("mallopt", -1, 65536), ("malloc_trim", 0)]


def test_nested_tasks_hold_memory_once_and_restore_it_when_the_outer_one_ends(libc):
    @memory.held_memory
    def inner(x):
        assert libc.calls == HELD
        return x + 1

    @memory.held_memory
    def outer(x):
        return [inner(x), inner(x + 1)]

    assert outer(1) == [2, 3]
    assert libc.calls == HELD + RESTORED
    assert memory._running == 0


def test_a_task_that_raises_restores_the_thresholds(libc):
    @memory.held_memory
    def fails():
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        fails()
    assert libc.calls == HELD + RESTORED
    assert memory._running == 0


def test_without_fixed_thresholds_nothing_is_called(monkeypatch):
    monkeypatch.setattr(memory, "_malloc", lambda: None)
    assert memory.held_memory(lambda: 5)() == 5
    assert memory._running == 0


def test_engine_tasks_pickle_by_reference_as_wrapped():
    import pickle

    from calibcli.engines import file_group_task, file_task, finish, merge_all

    for function in (file_task, file_group_task, merge_all, finish):
        assert pickle.loads(pickle.dumps(function)) is function
        assert function.__wrapped__.__name__ == function.__name__


FAULTS = textwrap.dedent(
    """
    import resource
    import numpy as np
    from calibcli.engines.memory import held_memory

    def churn():
        total = 0.0
        for _ in range(20):
            total += float(np.ones(1 << 17).sum())  # 1 MiB allocated, touched, freed
        return total

    def faults(function):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        assert function() == 20.0 * (1 << 17)
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    print(faults(churn), faults(held_memory(churn)), faults(churn))
    """
)


@pytest.mark.skipif(
    not hasattr(os, "confstr") or not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"),
    reason="glibc's malloc only",
)
def test_under_dask_s_trim_threshold_a_held_task_reuses_the_arrays_it_frees():
    env = dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
    env.pop("GLIBC_TUNABLES", None)
    done = subprocess.run(
        [sys.executable, "-c", FAULTS], capture_output=True, text=True, env=env, check=True
    )
    plain, held, after = map(int, done.stdout.split())
    # each 1 MiB array mapped anew faults in its 256 pages; held, the first one's are reused
    assert plain >= 20 * 256
    assert held < plain / 4
    assert after >= 20 * 256  # the process's own setting is back once the task returns
