"""calibcli's slower paths beside the peer a user would write instead (``make bench-paths``).

For each path, whole processes are timed in interleaved rounds (calibcli, then its peer, then
the next round), and the median CPU seconds (user + system, from ``os.wait4``) are compared:
on a shared machine the wall-clock ratio of the same two programs swings with the neighbours'
load, their CPU ratio much less. Before timing, each pair's figures are checked to agree.

* ``calibrate --by`` with 100,000 groups on 1M rows, beside DuckDB's ``GROUP BY`` (one thread,
  bench/duckdb_sql.py ``groups``): each group's count, accuracy, mean confidence, ECE and Brier
  must agree to 1e-9;
* ``calibrate --by`` with 1,000 groups on the same rows, beside ``calibrate`` without ``--by``.

The result replaces the section between ``<!-- paths:start -->`` and ``<!-- paths:end -->`` of
BENCHMARKS.md (appended when missing); nothing else in the file changes. Needs duckdb (the
``bench`` dependency group).

    python bench/paths.py                 # 1M rows, 3 rounds
    python bench/paths.py --rows 200k --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from run import calibcli_command, label, machine, parse_size, run_once  # noqa: E402
from sections import write_section  # noqa: E402

START, END = "<!-- paths:start -->", "<!-- paths:end -->"


def grouped_rows(path: Path, rows: int, groups: int, seed: int = 0) -> Path:
    """Rows of a slightly overconfident predictor, each in one of ``groups`` tasks."""
    rng = np.random.default_rng(seed)
    conf = rng.beta(4.0, 1.5, rows)
    correct = rng.random(rows) < conf * 0.9
    task = rng.integers(0, groups, rows)
    with open(path, "w") as f:
        for start in range(0, rows, 100_000):
            stop = start + 100_000
            f.write(
                "".join(
                    f'{{"confidence": {c!r}, "correct": {"true" if y else "false"}, '
                    f'"task": "t{k}"}}\n'
                    for c, y, k in zip(
                        conf[start:stop].tolist(),
                        correct[start:stop].tolist(),
                        task[start:stop].tolist(),
                        strict=True,
                    )
                )
            )
    return path


def check_groups(calibcli: list[str], path: Path, env: dict[str, str]) -> int:
    """calibcli's groups beside DuckDB's: the same names, counts and figures (to 1e-9)."""
    ours = json.loads(
        subprocess.run(
            [*calibcli, "calibrate", str(path), "--by", "task", "--json"],
            capture_output=True,
            env=env,
            check=True,
        ).stdout
    )["groups"]
    theirs = json.loads(
        subprocess.run(
            [sys.executable, str(BENCH / "duckdb_sql.py"), "groups", str(path), "task"],
            capture_output=True,
            env=env,
            check=True,
        ).stdout
    )
    if sorted(ours) != sorted(theirs):
        raise SystemExit("calibcli and DuckDB found different groups")
    for name, peer in theirs.items():
        mine = ours[name]
        for key, value in peer.items():
            if not np.isclose(mine[key], value, rtol=1e-9, atol=1e-12):
                raise SystemExit(f"group {name}: {key} {mine[key]!r} (calibcli) != {value!r}")
    return len(theirs)


def median_cpu(argv: list[str], env: dict[str, str], rounds: list[list[float]]) -> None:
    wall, cpu, rss = run_once(argv, env)
    rounds.append([wall, cpu, rss])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1M")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    args = parser.parse_args()
    rows = parse_size(args.rows)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    # as bench/peers.py: calibcli's modules load from their bytecode, as an installed copy's
    # do (without it every start compiles them again, about 0.2 s of CPU here)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    calibcli = calibcli_command()
    with tempfile.TemporaryDirectory() as tmp:
        many = grouped_rows(Path(tmp) / "many.jsonl", rows, 100_000)
        few = grouped_rows(Path(tmp) / "few.jsonl", rows, 1_000)
        checked = check_groups(calibcli, many, env)
        print(f"checked {checked:,} groups against DuckDB", file=sys.stderr)
        runs = {
            "by100k": [*calibcli, "calibrate", str(many), "--by", "task", "--json"],
            "duckdb100k": [
                sys.executable,
                str(BENCH / "duckdb_sql.py"),
                "groups",
                str(many),
                "task",
            ],
            "by1k": [*calibcli, "calibrate", str(few), "--by", "task", "--json"],
            "plain": [*calibcli, "calibrate", str(few), "--json"],
        }
        results: dict[str, list[list[float]]] = {k: [] for k in runs}
        for r in range(args.rounds):
            for key, argv in runs.items():
                median_cpu(argv, env, results[key])
                wall, cpu, rss = results[key][-1]
                print(
                    f"  round {r + 1} {key:<11} cpu {cpu:8.2f} s  wall {wall:8.2f} s  "
                    f"{rss:7.0f} MB",
                    file=sys.stderr,
                    flush=True,
                )
    cpu = {k: statistics.median(v[1] for v in runs_) for k, runs_ in results.items()}
    rss = {k: max(v[2] for v in runs_) for k, runs_ in results.items()}
    size = label(rows)
    by_ratio = cpu["by100k"] / cpu["duckdb100k"]
    few_ratio = cpu["by1k"] / cpu["plain"]
    per_group = (rss["by100k"] - rss["plain"]) * 1e6 / checked
    lines = [
        START,
        "## Slower paths beside their peers (bench/paths.py)",
        "",
        f"{size} rows, CPU seconds (user + system), median of {args.rounds} interleaved rounds; "
        f"peak RSS the largest of the rounds. Figures checked against the peer first "
        f"({checked:,} groups).",
        "",
        f"Machine: {machine()}.",
        "",
        "| path | calibcli CPU | peer | peer CPU | ratio | target | calibcli peak RSS |",
        "|---|---:|---|---:|---:|---:|---:|",
        f"| `calibrate --by`, {checked:,} groups | {cpu['by100k']:.2f} s | DuckDB GROUP BY, "
        f"1 thread | {cpu['duckdb100k']:.2f} s | {by_ratio:.1f}x | <= 6x | "
        f"{rss['by100k']:.0f} MB ({per_group / 1e3:.1f} KB/group over no --by) |",
        f"| `calibrate --by`, 1,000 groups | {cpu['by1k']:.2f} s | `calibrate` without --by "
        f"| {cpu['plain']:.2f} s | {few_ratio:.2f}x | <= 1.5x | {rss['by1k']:.0f} MB |",
        "",
        END,
    ]
    section = "\n".join(lines)
    write_section(args.out, section + "\n", START, END)
    print(section)


if __name__ == "__main__":
    main()
