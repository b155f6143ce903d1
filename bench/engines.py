"""``make bench-engines``: calibcli on Spark and Dask against one ``calibcli summarize`` process.

Takes 5,000,000 rows in 8 shards of bench/make_shards.py (seed 0) from bench/.data/, where
``make bench-shards`` keeps them (generated there when absent), and a Parquet copy beside them;
then times each path's wall clock and CPU seconds, median of ``--rounds`` after a warm-up
round, the rounds interleaved (s, d, w, s, d, w, ... on Dask; s, f, t, ... on Spark) so that the
load of other processes falls on every path alike. Dask's workers forget, untimed, the newline
counts calibcli.io.reader remembers before each Dask round, so that no round reads with the
offsets of the rounds before it (which a job on new files does not have):

(s) ``calibcli summarize`` of the 8 files in one process, into one part (a whole process, as
    bench/run.py times it): the reference;
(d) Dask files path: ``dask.compute(calibcli.dask.summarize_files(files, blocksize=8 MiB))``
    and ``write``, on a ``LocalCluster`` of 2 worker processes with 1 thread each; (w) the same
    with whole files (one task per file);
(f) Spark files path: ``calibcli.spark.summarize_files(spark, files)`` and ``write``, on a
    ``local[2]`` session;
(t) Spark DataFrame path: ``calibcli.spark.summarize(spark.read.parquet(folder))`` and ``write``:
    the rows reach calibcli as Arrow batches through ``mapInArrow``.

The engines' timings are taken in this process with the session or cluster already up; starting
them is timed apart and left out of the ratios, as a job pays it once. An engine path's CPU is
that of the whole job: this process (the driver, Dask's scheduler) and every process under it
(Dask's nannies and workers; Spark's JVM and its Python workers), idle heartbeats included; (s)'s
is its process's and its workers'. Each ratio is to the (s) rounds interleaved with it. Targets,
on the CPU ratio (what a job costs a shared machine; the wall clock swings with its load):
(d)/(s), (w)/(s) and (f)/(s) <= 1.6, (t)/(s) <= 2.5. Before the rounds, the Dask cluster's CPU
at rest is measured over IDLE_SECONDS: what its heartbeats cost per second a path runs. The part
each engine wrote last is measured by ``calibcli calibrate`` beside (s)'s: every number the same to
1e-12 relative (the engine tests hold them to the stricter rule of tests/engine_checks.py).

It writes its section of BENCHMARKS.md between the ``<!-- engines:start -->`` and
``<!-- engines:end -->`` markers (appended when absent), and prints it.

    python bench/engines.py                          # 5M rows, 3 rounds
    python bench/engines.py --rows 1000000 --rounds 1 --output /tmp/engines.md   # a quick look
    python bench/engines.py --only dask              # (s), (d), (w): printed, not written
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from run import label, machine, run_once
from sections import write_section
from shards import shards

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- engines:start -->", "<!-- engines:end -->"
TARGETS = {"d": 1.6, "w": 1.6, "f": 1.6, "t": 2.5}
IDLE_SECONDS = 10.0
"""How long the Dask cluster is watched at rest, untimed otherwise."""
NAMES = {
    "s": "calibcli summarize, one process",
    "d": "Dask files path (8 MiB ranges)",
    "w": "Dask files path (whole files)",
    "f": "Spark files path (whole files)",
    "t": "Spark DataFrame path (Parquet)",
}


def parquet(files: list[Path]) -> Path:
    """A Parquet copy of the shards, one file each, beside them."""
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    folder = files[0].parent.with_name(files[0].parent.name + "-parquet")
    if not folder.is_dir():
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=folder.parent))
        for f in files:
            pq.write_table(pj.read_json(f), partial / f"{f.stem}.parquet")
        partial.rename(folder)
    return folder


def cli_report(part: Path, env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "calibcli", "calibrate", str(part), "--json", "-q"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    report = json.loads(done.stdout)
    report.pop("per_file", None)  # a DataFrame has no files
    report.pop("sources", None)
    return report


def agree(got: dict, want: dict) -> bool:
    """The same keys and numbers to 1e-12 relative; text (warnings, reasons) is not compared."""
    import math

    if isinstance(want, dict):
        return set(got) == set(want) and all(agree(got[k], want[k]) for k in want)
    if isinstance(want, list):
        return len(got) == len(want) and all(agree(a, b) for a, b in zip(got, want, strict=True))
    if isinstance(want, float) and isinstance(got, float):
        return got == want or math.isclose(got, want, rel_tol=1e-12)
    return isinstance(want, str) or got == want


def tree_cpu() -> float:
    """CPU seconds (user + system) of this process and of every process under it, the
    children they reaped included."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.Error:  # ended meanwhile
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


Timing = dict[str, list[tuple[float, float]]]
"""Per path, (wall s, CPU s) of each round."""


def engine_job(
    job: Callable[[], None], before: Callable[[], None] | None = None
) -> Callable[[], tuple[float, float]]:
    """``job`` timed; ``before``, if given, runs first, untimed."""

    def timed() -> tuple[float, float]:
        if before is not None:
            before()
        c0, t0 = tree_cpu(), time.perf_counter()
        job()
        return time.perf_counter() - t0, tree_cpu() - c0

    return timed


def interleaved(jobs: dict[str, Callable[[], tuple[float, float]]], rounds: int) -> Timing:
    """Each job once to warm up, then ``rounds`` rounds of every job in turn."""
    for job in jobs.values():
        job()
    out: Timing = {key: [] for key in jobs}
    for _ in range(rounds):
        for key, job in jobs.items():
            out[key].append(job())
    return out


def _forget_newlines() -> None:
    """Empty this process's memory of newline counts in files (calibcli.io.reader)."""
    from calibcli.io import reader

    reader._known_newlines.clear()


def dask_times(
    files: list[str], work: Path, rounds: int, reference: Callable
) -> tuple[float, float, Timing]:
    """Starting the cluster (s), its CPU seconds per second at rest (the scheduler's and
    workers' heartbeats and monitors), and the timings."""
    import dask
    from dask.distributed import Client, LocalCluster

    from calibcli.dask import summarize_files

    t0 = time.perf_counter()
    cluster = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )
    client = Client(cluster)
    start = time.perf_counter() - t0
    try:
        client.run(_forget_newlines)  # the workers up and answering
        c0, t0 = tree_cpu(), time.perf_counter()
        time.sleep(IDLE_SECONDS)
        idle = (tree_cpu() - c0) / (time.perf_counter() - t0)

        def job(blocksize: int | None, out: Path) -> None:
            (result,) = dask.compute(summarize_files(files, blocksize=blocksize))
            result.write(out)

        # Dask's workers outlive a job: each round starts from workers that remember no newline
        # counts, as a job on new files does, not from the offsets the rounds before counted.
        def forget() -> None:
            client.run(_forget_newlines)

        jobs = {
            "s": reference,
            "d": engine_job(lambda: job(8 << 20, work / "d.cbs"), forget),
            "w": engine_job(lambda: job(None, work / "w.cbs"), forget),
        }
        return start, idle, interleaved(jobs, rounds)
    finally:
        client.close()
        cluster.close()


def spark_times(
    files: list[str], folder: Path, work: Path, rounds: int, reference: Callable
) -> tuple[float, Timing]:
    from pyspark.sql import SparkSession

    from calibcli.spark import summarize, summarize_files

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    t0 = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("calibcli-bench")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    start = time.perf_counter() - t0
    try:
        jobs = {
            "s": reference,
            "f": engine_job(lambda: summarize_files(spark, files).write(work / "f.cbs")),
            "t": engine_job(
                lambda: summarize(spark.read.parquet(str(folder))).write(work / "t.cbs")
            ),
        }
        return start, interleaved(jobs, rounds)
    finally:
        spark.stop()


def _median(rounds: list[tuple[float, float]], which: int) -> float:
    return statistics.median(r[which] for r in rounds)


def _spread(rounds: list[tuple[float, float]], which: int) -> str:
    values = [r[which] for r in rounds]
    return f"{min(values):.2f}–{max(values):.2f}"


def render(
    rows: int,
    count: int,
    rounds: int,
    stages: dict,
    starts: dict,
    checks: dict,
    loads: list,
    idle: float,
) -> str:
    names = {"spark": "Spark session", "dask": "Dask cluster"}
    started = ", ".join(f"{names[key]} {starts[key]:.1f} s" for key in names if key in starts)
    at_rest = (
        "At rest, Dask's cluster (scheduler and two workers) "
        f"spends {idle:.3f} CPU s per second of wall clock, which a Dask path pays for as long "
        "as it runs. "
        if "dask" in starts
        else ""
    )
    lines = [
        START,
        "## calibcli on Spark and Dask (`make bench-engines`)",
        "",
        f"{label(rows)} rows in {count} shards (bench/make_shards.py, seed 0); median of "
        f"{rounds} rounds after a warm-up round, the paths interleaved in each round (summarize, "
        "then each engine path, on Dask then on Spark; Dask's workers forget the newline counts "
        "of earlier rounds before each); "
        f"{machine()}. Engine timings exclude starting the engine ({started}), which a job "
        "pays once. "
        "CPU is user + system of the whole job: driver, scheduler and every worker or executor "
        "process (Spark's JVM included), their idle heartbeats too; summarize's is its process "
        f"and its reading workers'. {at_rest}Each ratio is to the summarize rounds of the same "
        "stage; the targets are on the CPU ratio. "
        f"Load average (1 min) {loads[0]:.1f} at the start, {loads[1]:.1f} at the end: other "
        "processes on the machine share its two cores with every path alike, and widen the "
        "ranges.",
        "",
        "| Path | Wall median s | Wall range s | CPU median s | CPU range s | Wall ratio "
        "| CPU ratio | Target (CPU) | Same figures |",
        "| --- | ---: | --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for stage, timing in stages.items():
        base_wall, base_cpu = _median(timing["s"], 0), _median(timing["s"], 1)
        for key, times in timing.items():
            name = NAMES[key] + (f" ({stage} stage)" if key == "s" else "")
            wall_ratio = _median(times, 0) / base_wall
            cpu_ratio = _median(times, 1) / base_cpu
            target = TARGETS.get(key)
            met = "" if target is None else (" (met)" if cpu_ratio <= target else " (missed)")
            lines.append(
                f"| {name} | {_median(times, 0):.2f} | {_spread(times, 0)} | "
                f"{_median(times, 1):.2f} | {_spread(times, 1)} | {wall_ratio:.2f}× | "
                f"{cpu_ratio:.2f}×{met} | {'' if target is None else f'≤ {target}×'} | "
                f"{checks.get(key, 'reference')} |"
            )
    lines += ["", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--output", help="the file whose section is written (default: BENCHMARKS.md)"
    )
    parser.add_argument(
        "--only",
        choices=("dask", "spark"),
        help="time one engine's paths beside summarize; the section is printed, and written "
        "only to an --output given",
    )
    args = parser.parse_args(argv)
    if args.output is None and args.only is None:
        args.output = str(ROOT / "BENCHMARKS.md")

    env = dict(os.environ, PYTHONPATH=str(ROOT))
    loads = [os.getloadavg()[0]]
    files = shards(args.rows, args.shards, 0)
    names = [str(f) for f in files]
    folder = parquet(files) if args.only != "dask" else None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        one = work / "one.cbs"
        cli = [sys.executable, "-m", "calibcli", "summarize", *names, "-o", str(one), "-q"]

        def reference() -> tuple[float, float]:
            wall, cpu, _ = run_once(cli, env)
            return wall, cpu

        starts: dict[str, float] = {}
        stages: dict[str, Timing] = {}
        idle = float("nan")
        if args.only != "spark":
            starts["dask"], idle, stages["Dask"] = dask_times(names, work, args.rounds, reference)
        if args.only != "dask":
            starts["spark"], stages["Spark"] = spark_times(
                names, folder, work, args.rounds, reference
            )
        want = cli_report(one, env)
        checks = {
            key: "yes" if agree(cli_report(work / f"{key}.cbs", env), want) else "NO"
            for timing in stages.values()
            for key in timing
            if key != "s"
        }
    loads.append(os.getloadavg()[0])
    section = render(args.rows, args.shards, args.rounds, stages, starts, checks, loads, idle)
    if args.output is not None:
        write_section(Path(args.output), section, START, END)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
