"""Which phases after the reading run long, and what showing them costs; writes BENCHMARKS.md.

Candidates, timed in this process in CPU seconds (``time.process_time``, one BLAS thread): the
smooth ECE's bandwidth search on 5M rows (the well calibrated case, whose small bandwidth needs
the most grid passes), threshold's steps on a 5M-row risk-coverage curve of distinct
confidences (the curve, Learn then Test on the default grid and on every point, SGR, plug-in,
AURC, the ~20-row table's bounds, and ``--full``'s bounds of every point, timed on a slice and
scaled), and ``calibcli merge``'s reading and merging of 1,000 parts of 5,000 rows. A phase
over 2 s gets a bar.

Then ``calibcli merge`` of the 1,000 parts as a command, in interleaved rounds: stderr piped (no
hook is installed) and on a pseudo-terminal (the bars drawn), CPU seconds of the process from
``os.wait4``; the merged files must be the same bytes.

    python bench/phases.py [--rows 5000000] [--parts 1000] [--rounds 3] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import pty
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import drain_pty  # noqa: E402
from sections import write_section  # noqa: E402

CALIBCLI = Path(sys.executable).parent / "calibcli"
START, END = "<!-- phases:start -->", "<!-- phases:end -->"


def cpu(fn):
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def metric_phases(rows: int) -> list[tuple[str, float]]:
    from calibcli.metrics import (
        PredictionColumns,
        RiskCoverage,
        aurc,
        curve_lower_bounds,
        display_rows,
        plug_in_threshold,
        select_threshold,
        threshold_grid,
    )
    from calibcli.metrics.smooth import smooth_ece_split

    rng = np.random.default_rng(0)
    c = rng.beta(4.0, 1.5, rows)
    y = rng.random(rows) < c
    out = [("smooth ECE, bandwidth search", cpu(lambda: smooth_ece_split(c[y], c[~y]))[0])]
    y = rng.random(rows) < c * 0.9
    columns = PredictionColumns.from_arrays(c, y)
    seconds, curve = cpu(lambda: RiskCoverage.from_columns(columns))
    out.append(("threshold: risk-coverage curve", seconds))
    a = 0.8
    out += [
        (
            "threshold: LTT, default grid",
            cpu(lambda: select_threshold(curve, target_accuracy=a, grid=threshold_grid()))[0],
        ),
        (
            "threshold: LTT, every point (--grid 0)",
            cpu(lambda: select_threshold(curve, target_accuracy=a))[0],
        ),
        (
            "threshold: SGR",
            cpu(lambda: select_threshold(curve, target_accuracy=a, method="sgr"))[0],
        ),
        ("threshold: plug-in", cpu(lambda: plug_in_threshold(curve, target_accuracy=a))[0]),
        ("threshold: AURC", cpu(lambda: aurc(curve))[0]),
    ]
    table = display_rows(curve, rows=20)
    out.append(
        (
            "threshold: table bounds (~20 rows)",
            cpu(lambda: curve_lower_bounds(curve, table, delta=0.05))[0],
        )
    )
    points = curve.thresholds.shape[0]
    sample = np.linspace(0, points - 1, 20_000).astype(np.intp)
    seconds = cpu(lambda: curve_lower_bounds(curve, sample, delta=0.05))[0]
    out.append(
        (
            f"threshold --full: bounds of all {points:,} points (20,000 timed, scaled)",
            seconds * points / 20_000,
        )
    )
    return out


def make_parts(folder: Path, parts: int, rows: int) -> list[str]:
    from calibcli.cli import main

    rng = np.random.default_rng(1)
    paths = []
    for i in range(parts):
        conf = rng.beta(4.0, 1.5, rows)
        correct = rng.random(rows) < conf * 0.9
        shard = folder / f"s{i:04d}.jsonl"
        shard.write_text(
            "".join(
                f'{{"confidence": {c!r}, "correct": {"true" if y else "false"}}}\n'
                for c, y in zip(conf.tolist(), correct.tolist(), strict=True)
            )
        )
        path = folder / f"p{i:04d}.summary"
        try:
            main(["summarize", str(shard), "-o", str(path), "-q", "--workers", "1"])
        except SystemExit as exc:
            assert exc.code in (0, None), exc.code
        shard.unlink()
        paths.append(str(path))
    return paths


def merge_phases(paths: list[str]) -> list[tuple[str, float]]:
    from calibcli.io import load_summary
    from calibcli.summaries import load_parts, merge_parts

    seconds, loaded = cpu(lambda: load_parts(paths, load_summary))
    merged = cpu(lambda: merge_parts(loaded, paths))[0]
    return [
        (f"merge: reading {len(paths):,} parts", seconds),
        (f"merge: merging {len(paths):,} parts", merged),
    ]


def run_cpu(argv: list[str], terminal: bool) -> float:
    if terminal:
        leader, follower = pty.openpty()
        env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color"}
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=follower, env=env)
        os.close(follower)
        drain_pty(leader)
    else:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, argv
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--parts", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    phases = metric_phases(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = make_parts(folder, args.parts, 5000)
        phases += merge_phases(paths)
        sides = {"piped": False, "terminal": True}
        times: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(args.rounds):
            for side, terminal in sides.items():
                out = folder / f"{side}.summary"
                times[side].append(
                    run_cpu([str(CALIBCLI), "merge", *paths, "-o", str(out)], terminal)
                )
        same = (folder / "piped.summary").read_bytes() == (folder / "terminal.summary").read_bytes()
    assert same, "the merged files differ"
    lines = [
        START,
        "## Long phases and their progress (`make bench-phases`)",
        "",
        f"CPU seconds of each candidate phase after the reading, in one process ({args.rows:,} "
        f"rows of distinct confidences; {args.parts:,} summary files of 5,000 rows). Over 2 s "
        "gets a progress bar on a terminal.",
        "",
        "| phase | CPU s | bar |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {s:.2f} | {'yes' if s > 2 else 'no'} |" for name, s in phases]
    piped, shown = statistics.median(times["piped"]), statistics.median(times["terminal"])
    lines += [
        "",
        f"`calibcli merge` of the {args.parts:,} parts, median of {args.rounds} interleaved "
        f"rounds: {piped:.2f} s CPU piped (no hook installed), {shown:.2f} s with the bars drawn "
        f"on a pseudo-terminal ({shown / piped - 1:+.1%}: rich's import and its redraws, at "
        "most ten a second); the merged files are the same bytes.",
        END,
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(ROOT / "BENCHMARKS.md", text, START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
