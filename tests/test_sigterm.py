"""SIGTERM (a CI job's timeout or cancel, ``docker stop``, ``kill``) stops a command as Ctrl-C
does: its worker processes stopped, no temporary file left beside an output, exit 143 with one
line on stderr (checked on the installed entry point, with a real SIGTERM)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness import make_rows, run, write_jsonl

from calibcli import cli
from calibcli.cli import github

CALIBCLI = Path(sys.executable).parent / "calibcli"
pytestmark = [
    pytest.mark.skipif(not CALIBCLI.exists(), reason="calibcli is not installed"),
    pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc"),
]


def children(pid: int) -> list[int]:
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


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def start(args: list, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [str(CALIBCLI), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=None if env is None else {**os.environ, **env},
    )


def terminated(proc: subprocess.Popen, *, group: bool = False) -> tuple[bytes, bytes]:
    """Send SIGTERM (to the process, or to its whole group) and wait for it to end."""
    if group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    return proc.communicate(timeout=30)


def stopped_while_writing(args: list, folder: Path, prefix: str) -> tuple[bytes, bytes]:
    """Run ``args`` and send SIGTERM while it writes the output whose temporary file (beside it,
    named ``prefix``...) exists: the process is frozen (SIGSTOP) as soon as the file appears,
    so the signal lands mid-write whatever the machine's speed. Tried a few times: a run may
    finish between two looks at the folder."""
    for _ in range(5):
        for entry in folder.iterdir():
            entry.unlink()
        proc = start(args)
        while proc.poll() is None:
            if any(name.startswith(prefix) for name in os.listdir(folder)):
                proc.send_signal(signal.SIGSTOP)
                break
        if proc.poll() is not None:
            proc.communicate()
            continue
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)
        stdout, stderr = proc.communicate(timeout=60)
        if proc.returncode == 0:  # it had renamed the file before it was frozen
            continue
        assert proc.returncode == 143, stderr.decode()
        return stdout, stderr
    pytest.fail(f"{args[0]} always finished before its temporary file was seen")


@pytest.fixture(scope="module")
def many_rows(tmp_path_factory) -> Path:
    """300,000 rows (about 20 MB): seconds to read and write, on a fast machine too."""
    return write_jsonl(tmp_path_factory.mktemp("rows") / "rows.jsonl", make_rows(300_000))


def test_sigterm_while_summarize_writes_leaves_no_temporary_file(tmp_path, many_rows):
    out = tmp_path / "out"
    out.mkdir()
    stdout, stderr = stopped_while_writing(
        ["summarize", many_rows, "-q", "-o", out / "a.cbs"], out, ".a.cbs."
    )
    assert stderr.decode() == "Terminated\n"
    assert stdout == b""
    assert os.listdir(out) == []


def test_sigterm_while_apply_streams_leaves_no_temporary_file(tmp_path, many_rows):
    calibrator = tmp_path / "iso.json"
    fitted = subprocess.run(
        [str(CALIBCLI), "fit", str(many_rows), "--method", "isotonic", "-q", "-o", str(calibrator)],
        capture_output=True,
    )
    assert fitted.returncode == 0, fitted.stderr.decode()
    out = tmp_path / "out"
    out.mkdir()
    stdout, stderr = stopped_while_writing(
        ["apply", calibrator, many_rows, "-q", "-o", out / "out.jsonl"], out, ".out.jsonl."
    )
    assert stderr.decode() == "Terminated\n"
    assert stdout == b""
    assert os.listdir(out) == []


@pytest.mark.parametrize("group", [False, True], ids=["kill", "group"])
def test_sigterm_stops_the_bootstrap_and_its_workers_with_exit_143(tmp_path, group):
    """SIGTERM to the process alone (``kill``, ``docker stop``), or to its whole group (a CI
    runner stopping the job's processes): exit 143, one line, no worker left, no -o file."""
    rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(20000))
    out = tmp_path / "out"
    out.mkdir()
    args = ["calibrate", rows, "--ci", "0.95", "--bootstrap", "100000", "--workers", "2"]
    proc = start([*args, "-o", out / "report.json"])
    started: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(started) < 2 and time.monotonic() < deadline and proc.poll() is None:
            started = children(proc.pid)
            time.sleep(0.05)
        assert len(started) == 2 and proc.poll() is None, "the bootstrap's workers never started"
        time.sleep(0.5)  # the workers are running their chunks
        stdout, stderr = terminated(proc, group=group)
        assert proc.returncode == 143
        assert stderr.decode() == "Terminated\n"
        assert stdout == b""
        assert os.listdir(out) == []
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in started if alive(pid)]
    finally:  # a worker left running (the failure this checks) must not outlive the test
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pid in started:
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_sigterm_under_github_actions_writes_the_outputs_of_a_run_without_a_report(tmp_path):
    """A step stopped by SIGTERM leaves no output empty (GitHub reads empty as 0, which would
    pass a later ``outputs.ece < 0.05``): passed=false and the figures NaN, as for Ctrl-C."""
    rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(20000))
    outputs = tmp_path / "github_output"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": ""}
    proc = start(["calibrate", rows, "--ci", "0.95", "--bootstrap", "100000"], env=env)
    try:
        deadline = time.monotonic() + 120
        while not children(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before the bootstrap started"
        _, stderr = terminated(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == 143
    assert stderr.decode().splitlines()[-1] == "Terminated"
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert written["passed"] == "false"
    assert written["ece"] == "NaN"


def sigterm_during_a_command(monkeypatch, call) -> tuple[object, object]:
    """SIGTERM's handler while a command runs in this process (seen as it writes its outputs),
    and after it."""
    seen = []
    finished = github.finished

    def record(report):
        seen.append(signal.getsignal(signal.SIGTERM))
        finished(report)

    monkeypatch.setattr(github, "finished", record)
    call()
    (during,) = seen
    return during, signal.getsignal(signal.SIGTERM)


def test_the_calibcli_program_handles_sigterm_and_gives_it_back(tmp_path, monkeypatch):
    """main() (the console script) stops on SIGTERM as on Ctrl-C while a command runs; the
    caller's handler is back once it returns."""
    rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(50))
    mine = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:

        def call():
            with pytest.raises(SystemExit) as exc:
                cli.main(["calibrate", str(rows), "-q", "--json"])
            assert (exc.value.code or 0) == 0

        during, after = sigterm_during_a_command(monkeypatch, call)
    finally:
        signal.signal(signal.SIGTERM, mine)
    assert during not in (signal.SIG_DFL, signal.SIG_IGN) and callable(during)
    assert after == signal.SIG_DFL


def test_a_program_running_the_app_in_its_own_process_keeps_its_sigterm(tmp_path, monkeypatch):
    """The app run in-process (a test runner's CliRunner) leaves SIGTERM to its program: a
    runner's timeout still stops the runner."""
    rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(50))
    before = signal.getsignal(signal.SIGTERM)
    during, after = sigterm_during_a_command(
        monkeypatch, lambda: run(["calibrate", rows, "-q", "--json"])
    )
    assert during == before and after == before
