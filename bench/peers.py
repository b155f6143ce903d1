"""The fast path beside its peers (``make bench-peers``): calibcli's ``reliability``,
``calibrate`` and ``perplexity`` on 5M rows against DuckDB's ``read_ndjson`` + SQL on one thread
(bench/duckdb_sql.py), and ``calibrate`` against the naive loop (bench/naive.py).

Whole processes are timed in interleaved rounds (each command once per round, in turn), and
the median CPU seconds (user + system of the process and its workers, from ``os.wait4``) are
compared: on a shared machine the wall-clock ratio of two programs swings with the neighbours'
load, their CPU ratio much less. Before timing, each pair's figures are checked to agree.

The result replaces the section between ``<!-- peers:start -->`` and ``<!-- peers:end -->`` of
BENCHMARKS.md (appended when missing); nothing else in the file changes. Needs duckdb (the
``bench`` dependency group).

    python bench/peers.py                   # 5M rows, 3 rounds
    python bench/peers.py --rows 1M --rounds 3
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

from run import (  # noqa: E402
    CHUNK_ROWS,
    calibcli_command,
    calibration_chunk,
    label,
    machine,
    parse_size,
    perplexity_chunk,
    run_once,
    write_repeated,
)
from sections import write_section  # noqa: E402

START, END = "<!-- peers:start -->", "<!-- peers:end -->"

# (command, CPU ratio to DuckDB's at most)
TARGETS = {"reliability": 1.40, "calibrate": 1.80, "perplexity": 1.70}
NAIVE_TARGET = 4.8  # the naive loop's CPU over calibrate's, at least
RSS_TARGET = 100.0  # MB, each calibcli command's peak


def _json(argv: list[str], env: dict[str, str]) -> dict:
    return json.loads(subprocess.run(argv, capture_output=True, env=env, check=True).stdout)


def _close(a: float, b: float) -> bool:
    return bool(np.isclose(a, b, rtol=1e-9, atol=1e-12))


def check(calibcli: list[str], calib: Path, ppl: Path, env: dict[str, str]) -> None:
    """calibcli's figures beside DuckDB's, for the three commands (to 1e-9)."""
    duck = [sys.executable, str(BENCH / "duckdb_sql.py")]
    for command in ("reliability", "calibrate"):
        ours = _json([*calibcli, command, str(calib), "--json", "-q"], env)
        theirs = _json([*duck, command, str(calib)], env)
        figures = ours.get("figures", ours)
        pairs = [("n", ours.get("n", figures.get("n")), theirs["n"])]
        for key in ("ece", "brier", "accuracy", "mce", "nll", "auroc"):
            if key in theirs and key in figures and isinstance(figures[key], (int, float)):
                pairs.append((key, figures[key], theirs[key]))
        for key, mine, peer in pairs:
            if mine is None or not _close(float(mine), float(peer)):
                raise SystemExit(f"{command}: {key} {mine!r} (calibcli) != {peer!r} (DuckDB)")
    ours = _json([*calibcli, "perplexity", str(ppl), "--json", "-q"], env)
    theirs = _json([*duck, "perplexity", str(ppl)], env)
    mine = ours.get("perplexity", ours.get("figures", {}).get("perplexity"))
    if mine is None or not _close(float(mine), theirs["perplexity"]):
        raise SystemExit(f"perplexity: {mine!r} (calibcli) != {theirs['perplexity']!r} (DuckDB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="5M")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--data", type=Path, help="generate the files here and keep them")
    parser.add_argument("--no-check", action="store_true", help="skip the figures check")
    args = parser.parse_args()
    rows = parse_size(args.rows)
    env = {**os.environ, "PYTHONHASHSEED": "0", "NO_COLOR": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    calibcli = calibcli_command()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="calibcli-peers-") as tmp:
        folder = args.data or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        size = label(rows)
        calib, ppl = folder / f"calib_{size}.jsonl", folder / f"ppl_{size}.jsonl"
        chunk_rows = min(CHUNK_ROWS, rows)
        if not calib.exists():
            write_repeated(calib, calibration_chunk(chunk_rows, False), chunk_rows, rows)
        if not ppl.exists():
            write_repeated(ppl, perplexity_chunk(chunk_rows), chunk_rows, rows)
        if not args.no_check:
            check(calibcli, calib, ppl, env)
            print("figures checked against DuckDB", file=sys.stderr)
        duck = [py, str(BENCH / "duckdb_sql.py")]
        runs = {
            "reliability": [*calibcli, "reliability", str(calib), "--json", "-q"],
            "duckdb reliability": [*duck, "reliability", str(calib)],
            "calibrate": [*calibcli, "calibrate", str(calib), "--json", "-q"],
            "duckdb calibrate": [*duck, "calibrate", str(calib)],
            "perplexity": [*calibcli, "perplexity", str(ppl), "--json", "-q"],
            "duckdb perplexity": [*duck, "perplexity", str(ppl)],
            "naive calibration": [py, str(BENCH / "naive.py"), "calibration", str(calib)],
        }
        results: dict[str, list[tuple[float, float, float]]] = {k: [] for k in runs}
        for key, argv in runs.items():  # warm the page cache and the bytecode once
            if not key.startswith("naive"):
                run_once(argv, env)
        for r in range(args.rounds):
            for key, argv in runs.items():
                results[key].append(run_once(argv, env))
                wall, cpu, rss = results[key][-1]
                print(
                    f"  round {r + 1} {key:<20} cpu {cpu:7.2f} s  wall {wall:7.2f} s  "
                    f"{rss:6.0f} MB",
                    file=sys.stderr,
                    flush=True,
                )
    cpu = {k: statistics.median(v[1] for v in runs_) for k, runs_ in results.items()}
    wall = {k: statistics.median(v[0] for v in runs_) for k, runs_ in results.items()}
    rss = {k: max(v[2] for v in runs_) for k, runs_ in results.items()}
    lines = [
        START,
        "## The fast path beside DuckDB (bench/peers.py)",
        "",
        f"`make bench-peers`: {size} rows, CPU seconds (user + system, workers included), median "
        f"of {args.rounds} interleaved rounds; peak RSS the largest of the rounds. DuckDB is "
        "`read_ndjson` + SQL on one thread (bench/duckdb_sql.py); the figures of each pair were "
        "checked to agree first. Wall seconds (medians) are shown for reference only: they "
        "swing with the machine's load, and calibcli reads a large file with two processes "
        "where two CPUs are free.",
        "",
        f"Machine: {machine()}.",
        "",
        "| command | calibcli CPU | DuckDB CPU | ratio | target | met | calibcli wall | "
        "DuckDB wall | calibcli peak RSS |",
        "|---|---:|---:|---:|---:|:---:|---:|---:|---:|",
    ]
    for command, limit in TARGETS.items():
        r = cpu[command] / cpu[f"duckdb {command}"]
        lines.append(
            f"| `{command}` | {cpu[command]:.2f} s | {cpu[f'duckdb {command}']:.2f} s | "
            f"{r:.2f}x | <= {limit:.2f}x | {'yes' if r <= limit else '**no**'} | "
            f"{wall[command]:.2f} s | {wall[f'duckdb {command}']:.2f} s | {rss[command]:.0f} MB |"
        )
    naive = cpu["naive calibration"] / cpu["calibrate"]
    worst = max(rss[c] for c in TARGETS)
    lines += [
        "",
        f"The naive loop (bench/naive.py: `json.loads` per line, then numpy) took "
        f"{cpu['naive calibration']:.2f} s of CPU: {naive:.1f}x `calibrate`'s (target >= "
        f"{NAIVE_TARGET}x: {'met' if naive >= NAIVE_TARGET else '**not met**'}). Peak RSS of "
        f"the three commands at most {worst:.0f} MB (target <= {RSS_TARGET:.0f} MB: "
        f"{'met' if worst <= RSS_TARGET else '**not met**'}).",
        "",
        END,
    ]
    section = "\n".join(lines)
    write_section(args.out, section + "\n", START, END)
    print(section)


if __name__ == "__main__":
    main()
