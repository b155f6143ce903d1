"""``make bench-ab REF=<commit>``: this tree against an earlier commit, the same cases run
alternately, to show that a change of structure costs nothing measurable.

The earlier commit is checked out into a temporary git worktree; both trees run as
``python -m calibcli`` with their own folder first on PYTHONPATH, under this interpreter (so
both use the same numpy, msgspec and isal). Each round runs every case once with the old code
and once with the new, in alternating order (old first in even rounds), after one warm-up
round; the table gives the median wall time [min, max], the median CPU time (user + system of
the process and its workers) and the peak resident memory, as bench/run.py measures them. On
a shared machine wall times swing with the neighbours' load; CPU time and memory are the
columns to read. Every case's JSON report is compared between the two trees: the figures must
agree (the spine's exact bin sums may move a last digit, which is reported).

It writes its section of BENCHMARKS.md between ``<!-- ab:start -->`` and ``<!-- ab:end -->``
(bench/run.py keeps such sections when it rewrites the file) and prints it.

    python bench/ab.py --ref 6ff82af                 # 5M rows, 3 rounds
    python bench/ab.py --ref 6ff82af --rows 1M --rounds 1 --output /tmp/ab.md

``--cases bootstrap`` runs the bootstrap's cases instead (``make bench-ab-bootstrap``): compare
and calibrate --ci, with and without --by, on 14k rows in 57 tasks by default (an MMLU-sized
run), one worker; it writes its own section, between ``<!-- ab-bootstrap:start -->`` and
``<!-- ab-bootstrap:end -->``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import (
    CHUNK_ROWS,
    calibration_chunk,
    gzip_file,
    label,
    machine,
    parse_size,
    perplexity_chunk,
    run_once,
    write_repeated,
)
from sections import write_section

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- ab:start -->", "<!-- ab:end -->"
BOOT_START, BOOT_END = "<!-- ab-bootstrap:start -->", "<!-- ab-bootstrap:end -->"


def cases(folder: Path, rows: int) -> list[tuple[str, list[str]]]:
    """(name, calibcli arguments) of each case, generating its input once."""
    plain = folder / "calibration.jsonl"
    extra = folder / "calibration_extra.jsonl"
    ppl = folder / "perplexity.jsonl"
    if not plain.exists():
        write_repeated(plain, calibration_chunk(CHUNK_ROWS, False), CHUNK_ROWS, rows)
        write_repeated(extra, calibration_chunk(CHUNK_ROWS, True), CHUNK_ROWS, rows)
        write_repeated(ppl, perplexity_chunk(CHUNK_ROWS), CHUNK_ROWS, rows)
        gzip_file(plain, folder / "calibration.jsonl.gz")
    small = folder / "small.jsonl"
    if not small.exists():
        write_repeated(small, calibration_chunk(1_000, False), 1_000, 1_000)
    quiet = ["--json", "-q"]
    return [
        ("calibrate", ["calibrate", str(plain), *quiet]),
        ("reliability", ["reliability", str(plain), *quiet]),
        ("perplexity", ["perplexity", str(ppl), *quiet]),
        ("calibrate .gz", ["calibrate", str(folder / "calibration.jsonl.gz"), *quiet]),
        ("calibrate --by task (57 groups)", ["calibrate", str(extra), "--by", "task", *quiet]),
        ("calibrate, 1,000 rows", ["calibrate", str(small), *quiet]),
        ("--help", ["--help"]),
    ]


def bootstrap_cases(folder: Path, rows: int) -> list[tuple[str, list[str]]]:
    """(name, calibcli arguments) of the bootstrap's cases: BASE of 57 tasks, NEW the same
    questions with each confidence moved by a normal step (sd 0.05, clipped to [0, 1])."""
    base, new = folder / "base.jsonl", folder / "new.jsonl"
    if not base.exists():
        chunk = calibration_chunk(rows, True)
        base.write_bytes(chunk)
        rng = np.random.default_rng(2)
        with open(new, "w") as out:
            for line in chunk.decode().splitlines():
                row = json.loads(line)
                moved = row["confidence"] + float(rng.normal(0.0, 0.05))
                row["confidence"] = min(1.0, max(0.0, moved))
                out.write(json.dumps(row) + "\n")
    one = ["--workers", "1", "--json", "-q"]
    pair = ["compare", str(base), str(new)]
    return [
        ("compare, 1,000 resamples", [*pair, *one]),
        ("compare --by task, 200 resamples", [*pair, "--by", "task", "--bootstrap", "200", *one]),
        ("calibrate --ci 0.95, 1,000 resamples", ["calibrate", str(base), "--ci", "0.95", *one]),
        (
            "calibrate --ci 0.95 --by task, 200 resamples",
            ["calibrate", str(base), "--ci", "0.95", "--by", "task", "--bootstrap", "200", *one],
        ),
        (
            "calibrate --ci 0.95, poisson",
            ["calibrate", str(base), "--ci", "0.95", "--bootstrap-scheme", "poisson", *one],
        ),
    ]


def check_tree(tree: Path, env: dict[str, str]) -> None:
    """Stop unless ``python -m calibcli`` with ``tree`` on PYTHONPATH imports that tree's code
    (an installed copy or a checkout in the working directory would shadow it)."""
    where = subprocess.run(
        [sys.executable, "-c", "import calibcli; print(calibcli.__file__)"],
        env=dict(env, PYTHONPATH=str(tree)),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(where).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"PYTHONPATH={tree} runs calibcli from {where}, not from that tree")


def report(tree: Path, args: list[str], env: dict[str, str]) -> dict | None:
    """The JSON report of one case under ``tree`` (None for --help)."""
    if "--json" not in args:
        return None
    done = subprocess.run(
        [sys.executable, "-m", "calibcli", *args],
        env=dict(env, PYTHONPATH=str(tree)),
        capture_output=True,
        check=False,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(done.stderr.decode(errors="replace")[-2000:])
    return json.loads(done.stdout)


def numbers(value, out: list[float]) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        out.append(float(value))
    elif isinstance(value, dict):
        for v in value.values():
            numbers(v, out)
    elif isinstance(value, list):
        for v in value:
            numbers(v, out)


def agreement(old: dict | None, new: dict | None) -> str:
    """How the two reports' numbers agree: identical, or the largest relative difference."""
    if old is None or new is None:
        return ""
    a: list[float] = []
    b: list[float] = []
    numbers(old, a)
    numbers(new, b)
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} numbers"
    worst = 0.0
    differ = 0
    for x, y in zip(a, b, strict=True):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        differ += 1
        worst = max(worst, abs(x - y) / max(abs(x), abs(y), 1e-300))
    if not differ:
        return f"all {len(a)} identical"
    return f"{len(a) - differ} of {len(a)} identical, the rest within {worst:.1e}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, help="the earlier commit")
    parser.add_argument("--rows", help="rows per input (default 5M; bootstrap cases 14k)")
    parser.add_argument("--cases", choices=("fast", "bootstrap"), default="fast")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"), help="report path")
    args = parser.parse_args(argv)
    rows = parse_size(args.rows or ("14k" if args.cases == "bootstrap" else "5M"))
    start, end = (START, END) if args.cases == "fast" else (BOOT_START, BOOT_END)
    ref = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", args.ref],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    env = dict(os.environ, PYTHONHASHSEED="0", NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="calibcli-ab-") as tmp:
        work = Path(tmp)
        # python -c and -m put the working directory first on sys.path, ahead of PYTHONPATH:
        # run from the checkout, both trees would run the checkout's code
        os.chdir(work)
        old_tree = work / "old"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old_tree), ref],
            check=True,
        )
        try:
            trees = {"old": old_tree, "new": ROOT}
            for tree in trees.values():
                check_tree(tree, env)
            todo = (cases if args.cases == "fast" else bootstrap_cases)(work, rows)
            wall = {(t, n): [] for t in trees for n, _ in todo}
            cpu = {(t, n): [] for t in trees for n, _ in todo}
            rss = dict.fromkeys(wall, 0.0)
            for r in range(args.rounds + 1):
                order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
                for name, case in todo:
                    for t in order:
                        cli = [sys.executable, "-m", "calibcli", *case]
                        w, c, m = run_once(cli, dict(env, PYTHONPATH=str(trees[t])))
                        if r:  # round 0 warms the page cache and the bytecode
                            wall[t, name].append(w)
                            cpu[t, name].append(c)
                            rss[t, name] = max(rss[t, name], m)
                        print(
                            f"  {r} {t} {name:<34} {w:7.3f} s  cpu {c:7.3f} s  {m:6.0f} MB",
                            file=sys.stderr,
                            flush=True,
                        )
            agree = {
                name: agreement(*(report(trees[t], case, env) for t in ("old", "new")))
                for name, case in todo
            }
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_tree)],
                check=False,
            )
    load_after = os.getloadavg()[0]

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"

    what = "" if args.cases == "fast" else " (the bootstrap)"
    target = "bench-ab" if args.cases == "fast" else "bench-ab-bootstrap"
    flag = "" if args.cases == "fast" else " --cases bootstrap"
    lines = [
        start,
        f"## A/B{what}: {head} against {ref}",
        "",
        f"Written by `make {target} REF={args.ref}` "
        f"(`python bench/ab.py --ref {args.ref}{flag}`); see "
        f"bench/ab.py for the method. {label(rows)} rows per input; {args.rounds} rounds after a "
        "warm-up, old and new alternating; median wall [min, max], median CPU (user + system, "
        "workers included), peak RSS.",
        "",
        f"Machine: {machine()}. Load average (1 min) {load_before:.2f} before the run and "
        f"{load_after:.2f} after it: the machine is shared, so read CPU time and memory.",
        "",
        f"| case | {ref}: wall (s) | CPU (s) | RSS (MB) | {head}: wall (s) | CPU (s) | RSS (MB) "
        "| CPU new/old | report |",
        "|---|---|---:|---:|---|---:|---:|---:|---|",
    ]
    for name, _ in todo:
        o, n = ("old", name), ("new", name)
        ratio = statistics.median(cpu[n]) / statistics.median(cpu[o])
        lines.append(
            f"| {name} | {cell(wall[o])} | {statistics.median(cpu[o]):.3f} | {rss[o]:.0f} | "
            f"{cell(wall[n])} | {statistics.median(cpu[n]):.3f} | {rss[n]:.0f} | {ratio:.2f} | "
            f"{agree[name]} |"
        )
    lines.append(end)
    section = "\n".join(lines) + "\n"
    write_section(Path(args.output), section, start, end)
    print(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
