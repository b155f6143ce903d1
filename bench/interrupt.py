"""Time Ctrl-C during a bootstrap, and what drawing its progress costs; writes BENCHMARKS.md.

Ctrl-C: ``calibcli calibrate --ci 0.95 --bootstrap 100000 --workers 2 -o FILE`` on generated
rows; once both worker processes run, SIGINT goes to the command's process group (what a
terminal's Ctrl-C does) or to the command alone (``kill -INT``), and the wall time until it
exits is recorded with its exit code, whether any worker outlived it and whether FILE exists.
The target is 1 s of wall time: a latency, so wall is what counts (the machine is shared, so
the figures are upper bounds). ``--before PATH`` times another installed calibcli the same way
(an earlier build), giving up after ``--give-up`` seconds.

Progress: the CPU seconds (user + sys of the command and its workers, from ``os.wait4``) of
the same bootstrap at 1,000 resamples with stderr on a pseudo-terminal (progress drawn) and
piped (no hook), in interleaved rounds; stdout must be the same bytes.

    python bench/interrupt.py [--rows 20000] [--rounds 3] [--before PATH] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import pty
import random
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import drain_pty  # noqa: E402
from sections import write_section  # noqa: E402

CALIBCLI = Path(sys.executable).parent / "calibcli"
START, END = "<!-- interrupt:start -->", "<!-- interrupt:end -->"


def write_rows(path: Path, n: int) -> None:
    rng = random.Random(11)
    with path.open("w") as f:
        for i in range(n):
            c = rng.random()
            correct = "true" if rng.random() < c else "false"
            f.write(f'{{"id": {i}, "confidence": {c:.6f}, "correct": {correct}}}\n')


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def interrupt(calibcli: Path, rows: Path, out: Path, group: bool, give_up: float) -> dict:
    """One interrupted run: wall seconds from SIGINT to exit, exit code, leftovers."""
    out.unlink(missing_ok=True)
    command = [str(calibcli), "calibrate", str(rows), "--ci", "0.95", "--bootstrap", "100000"]
    proc = subprocess.Popen(
        [*command, "--workers", "2", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    workers: list[int] = []
    while len(workers) < 2 and proc.poll() is None:
        workers = children(proc.pid)
        time.sleep(0.02)
    time.sleep(1.0)  # the workers are inside their chunks
    sent = time.monotonic()
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    stderr, line, waited = b"", None, None
    while time.monotonic() - sent < give_up:
        ready, _, _ = select.select([proc.stderr], [], [], 0.005)
        if ready:
            data = os.read(proc.stderr.fileno(), 65536)
            if data and line is None:
                line = time.monotonic() - sent
            stderr += data
            if data:
                continue
        if proc.poll() is not None:
            waited = time.monotonic() - sent
            break
    if waited is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    time.sleep(0.2)
    return {
        "wall": waited,
        "line": line,
        "code": proc.returncode,
        "left": sum(alive(p) for p in workers),
        "file": out.exists(),
        "lines": len(stderr.decode(errors="replace").splitlines()),
    }


def cpu_run(args: list[str], terminal: bool) -> tuple[float, bytes]:
    """CPU seconds (user + sys, with the workers) of one run, and its stdout."""
    leader = follower = None
    if terminal:
        leader, follower = pty.openpty()
    with tempfile.TemporaryFile() as stdout:
        proc = subprocess.Popen(
            args, stdout=stdout, stderr=follower if terminal else subprocess.DEVNULL
        )
        if terminal:
            os.close(follower)
            drain_pty(leader)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        assert proc.returncode == 0, proc.returncode
        stdout.seek(0)
        return usage.ru_utime + usage.ru_stime, stdout.read()


def describe(runs: list[dict], give_up: float) -> str:
    walls = [r["wall"] for r in runs]
    if any(w is None for w in walls):
        wall = f"> {give_up:.0f} s (gave up in {sum(w is None for w in walls)} of {len(runs)})"
    else:
        wall = f"{statistics.median(walls):.2f} s (max {max(walls):.2f})"
    stops = [r["line"] for r in runs if r["line"] is not None]
    line = f"{statistics.median(stops):.2f} s" if stops else "none"
    codes = ",".join(sorted({str(r["code"]) for r in runs if r["wall"] is not None}))
    left = str(max(r["left"] for r in runs if r["wall"] is not None)) if codes else "-"
    codes = codes or "none: still running, killed"
    files = sum(r["file"] for r in runs)
    lines = ",".join(sorted({str(r["lines"]) for r in runs}))
    return f"{line} | {wall} | {codes} | {left} | {files} | {lines}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another calibcli to time the same way")
    parser.add_argument("--give-up", type=float, default=30.0)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        rows = Path(tmp) / "rows.jsonl"
        write_rows(rows, args.rows)
        builds = [("this build", CALIBCLI)] + ([("before", args.before)] if args.before else [])
        lines = []
        for name, calibcli in builds:
            for group in (True, False):
                runs = [
                    interrupt(calibcli, rows, Path(tmp) / "out.json", group, args.give_up)
                    for _ in range(args.rounds)
                ]
                how = "Ctrl-C (group)" if group else "kill -INT (parent)"
                lines.append(f"| {name} | {how} | {describe(runs, args.give_up)} |")
                print(lines[-1], flush=True)

        command = [str(CALIBCLI), "calibrate", str(rows), "--ci", "0.95", "--bootstrap", "1000"]
        command += ["--workers", "2", "--json"]
        cpu: dict[bool, list[float]] = {False: [], True: []}
        outputs = set()
        for _ in range(args.rounds):
            for terminal in (False, True):
                seconds, stdout = cpu_run(command, terminal)
                cpu[terminal].append(seconds)
                outputs.add(stdout)
        assert len(outputs) == 1, "stdout differs with progress drawn"
        piped, drawn = statistics.median(cpu[False]), statistics.median(cpu[True])
        print(f"cpu piped {piped:.2f} s, on a terminal {drawn:.2f} s", flush=True)

    section = "\n".join(
        [
            START,
            "## Ctrl-C and progress (`make bench-interrupt`)",
            "",
            f"`calibcli calibrate ROWS --ci 0.95 --bootstrap 100000 --workers 2 -o FILE` on "
            f"{args.rows:,} generated rows, interrupted once both workers run; median of "
            f"{args.rounds} runs (wall seconds from SIGINT to exit: a latency; the machine is "
            "shared, so upper bounds). Target: 1 s, exit 130, one stderr line, no worker left, "
            "no FILE.",
            "",
            "| build | signal | SIGINT to its stderr line | SIGINT to exit | exit code | "
            "workers left | FILE written | stderr lines |",
            "|---|---|---|---|---|---|---|---|",
            *lines,
            "",
            f"Progress drawn on a terminal, same command at `--bootstrap 1000 --json`: "
            f"{drawn:.2f} s CPU against {piped:.2f} s piped (no hook), median of "
            f"{args.rounds} interleaved rounds, user + sys with the workers; stdout identical.",
            END,
        ]
    )
    if not args.no_write:
        write_section(ROOT / "BENCHMARKS.md", section, START, END)
    print(section)


if __name__ == "__main__":
    main()
