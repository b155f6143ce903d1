"""``make bench-shards``: 8 shards summarized one by one and merged, against one pass over them.

Generates 5,000,000 rows in 8 shards with bench/make_shards.py (once: they are kept in
bench/.data/, which git ignores), then times whole processes as bench/run.py does (wall clock;
CPU of the process and its workers and peak RSS from ``os.wait4``'s rusage), median of 3 rounds
after a warm-up round, the four steps interleaved within each round:

(a) ``calibcli calibrate`` over the 8 files;
(s) ``calibcli summarize`` of the 8 files in one process, into one part: what the target
    compares with (a);
(b) ``calibcli summarize`` of each shard, one process per shard, one after another: the sum, what
    one machine doing every shard would pay;
(c) ``calibcli merge`` of the 8 parts;
(d) ``calibcli calibrate`` of the merged file.

Every step runs with calibcli's defaults (a shard of ~53 MB is read by two processes, as are the
files of (a)). It reports the ratios (s)/(a) (target <= 2.5) and (b)/(a), the size and distinct
values of each part and of the merged file (target: the 8 parts, tables included, <= 70 MB in
all), how many of the numbers in (d)'s report are bit-identical to (a)'s and the largest relative
difference of the others, and a profile of one shard's ``summarize`` by phase. The commands run
this tree's calibcli (``python -m calibcli`` with the tree first on PYTHONPATH), whatever the
interpreter has installed.

It writes its section of BENCHMARKS.md, between the ``<!-- shards:start -->`` and
``<!-- shards:end -->`` markers (bench/run.py keeps that section when it rewrites the file),
and prints it.

    python bench/shards.py                      # 5M rows, 3 rounds
    python bench/shards.py --rows 1000000 --rounds 1 --output /tmp/shards.md   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from make_shards import write_shards
from run import label, machine, run_once
from sections import write_section

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / ".data"
START, END = "<!-- shards:start -->", "<!-- shards:end -->"
RATIO_TARGET = 2.5
SIZE_TARGET_MB = 70.0


def shards(rows: int, count: int, seed: int) -> list[Path]:
    """The shards, generated into bench/.data once (into a temporary folder renamed when
    complete, so an interrupted run leaves no half-written set behind)."""
    folder = DATA / f"shards-{rows}x{count}-seed{seed}"
    if not folder.is_dir():
        print(f"generating {label(rows)} rows in {count} shards into {folder} ...", file=sys.stderr)
        DATA.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".partial-", dir=DATA))
        write_shards(partial, rows, count, seed)
        partial.rename(folder)
    return sorted(folder.glob("*.jsonl"))


def summary_header(path: Path) -> dict:
    """A summary file's JSON header (the layout calibcli.summaries.encoding documents)."""
    with open(path, "rb") as f:
        length = struct.unpack("<16sIIQ", f.read(32))[3]
        return json.loads(f.read(length))


def distinct_values(header: dict) -> int | None:
    table = header.get("distinct")
    if table is None:
        return None
    shapes = {a["name"]: a["shape"] for a in header["arrays"]}
    return sum(shapes[table[side]["values"]][0] for side in ("right", "wrong"))


def compare_numbers(got, want, out: list[float]) -> None:
    """Every number of ``want`` beside ``got``'s: 0.0 for a bit-identical one, else the relative
    difference."""
    if isinstance(want, dict):
        for key in want:
            compare_numbers(got[key], want[key], out)
    elif isinstance(want, list):
        for a, b in zip(got, want, strict=True):
            compare_numbers(a, b, out)
    elif isinstance(want, (int, float)) and not isinstance(want, bool):
        same = type(got) is type(want) and got == want
        out.append(0.0 if same else abs(got - want) / max(abs(got), abs(want)))


class Steps:
    """The four timed steps, each a list of commands run one after another."""

    def __init__(self, cli: list[str], files: list[Path], work: Path):
        self.parts = [work / f"{f.stem}.cbs" for f in files]
        self.merged = work / "run.cbs"
        quiet = ["--json", "-q"]
        self.commands = {
            "a": [[*cli, "calibrate", *map(str, files), *quiet]],
            "s": [[*cli, "summarize", *map(str, files), "-o", str(work / "one.cbs"), "-q"]],
            "b": [
                [*cli, "summarize", str(f), "-o", str(p), "-q"]
                for f, p in zip(files, self.parts, strict=True)
            ],
            "c": [[*cli, "merge", *map(str, self.parts), "-o", str(self.merged), "-q"]],
            "d": [[*cli, "calibrate", str(self.merged), *quiet]],
        }
        self.wall: dict[str, list[float]] = {k: [] for k in self.commands}
        self.cpu: dict[str, list[float]] = {k: [] for k in self.commands}
        self.rss: dict[str, float] = dict.fromkeys(self.commands, 0.0)

    def round(self, env: dict[str, str], *, record: bool) -> None:
        for key, commands in self.commands.items():
            wall = cpu = 0.0
            for argv in commands:
                w, c, rss = run_once(argv, env)
                wall, cpu = wall + w, cpu + c
                self.rss[key] = max(self.rss[key], rss)
            if record:
                self.wall[key].append(wall)
                self.cpu[key].append(cpu)
            print(f"  ({key}) {wall:8.3f} s wall  {cpu:8.3f} s CPU", file=sys.stderr, flush=True)


PHASES = [
    ("reading the rows (`read_calibration`)", "calibcli/io/__init__.py", "read_calibration"),
    ("the part's row state (`to_part`)", "summaries/parts.py", "to_part"),
    (
        "- of which the distinct table (`DistinctTable.from_rows`)",
        "summaries/distinct.py",
        "from_rows",
    ),
    (
        "- of which NLL and smooth-ECE sums (`RowMoments.of_columns`)",
        "summaries/moments.py",
        "of_columns",
    ),
    ("encoding (`to_bytes`)", "summaries/encoding.py", "to_bytes"),
    ("writing the file (`_write`: a temporary file, fsync, rename)", "commands/parts.py", "_write"),
    ("- of which `os.fsync`", "~", "<built-in method posix.fsync>"),
]
"""Phases of a summarize run, by the function that does each; the lines without "of which"
do not nest, and the rest of the process (imports, typer, start-up) is what they leave."""


def summarize_profile(shard: Path, env: dict[str, str], work: Path) -> tuple[str, float]:
    """A phase table of one shard's ``summarize`` in one process (``--workers 1``) under
    cProfile, and the profiled run's wall time."""
    out = work / "profile.pstats"
    argv = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "calibcli", "summarize"]
    argv += [str(shard), "-o", str(work / "profiled.cbs"), "-q", "--workers", "1"]
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, cwd=work)
    wall = time.perf_counter() - t0
    stats = pstats.Stats(str(out))
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in entries.values())
    rest = total
    lines = [
        "| phase | cumulative (s) | share |",
        "|---|---:|---:|",
    ]
    for name, file, func in PHASES:
        cum = sum(
            v[3]
            for (f, _, fn), v in entries.items()
            if fn == func and f.replace("\\", "/").endswith(file)
        )
        lines.append(f"| {name} | {cum:.3f} | {cum / total:.0%} |")
        if not name.startswith("-"):
            rest -= cum
    lines.append(f"| the rest: imports, typer, start-up | {rest:.3f} | {rest / total:.0%} |")
    top = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)[:8]
    lines += ["", "| function (own time) | calls | own time (s) | share |", "|---|---:|---:|---:|"]
    for (file, line, func), (_, calls, own, _, _) in top:
        where = "built-in" if not line else f"{Path(file).parent.name}/{Path(file).name}:{line}"
        lines.append(f"| `{func}` ({where}) | {calls} | {own:.3f} | {own / total:.0%} |")
    lines.insert(0, f"Profiled process: {total:.2f} s of function time, {wall:.2f} s wall.\n")
    return "\n".join(lines), wall


def fmt(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def render(args, files, steps, sizes, compare, profile, load) -> str:
    a, b, c, d, one = (statistics.median(steps.wall[k]) for k in "abcds")
    ca, cb, cs = (statistics.median(steps.cpu[k]) for k in "abs")
    ratio, cpu_ratio = one / a, cs / ca
    parts_mb = sum(mb for name, _, _, mb in sizes if name != "merged")
    identical = sum(1 for r in compare if r == 0.0)
    rest = [r for r in compare if r != 0.0]
    steps_rows = [
        ("(a) `calibrate` over the 8 files", "a"),
        ("(s) `summarize` of the 8 files in one process, into one part", "s"),
        ("(b) `summarize`, one process per shard, one after another (sum)", "b"),
        ("(c) `merge` of the 8 parts", "c"),
        ("(d) `calibrate` of the merged file", "d"),
    ]
    out = [
        START,
        "## Shards: summarize, merge, measure",
        "",
        f"Written by `make bench-shards` (`{' '.join(['python bench/shards.py', *args.argv])}`); "
        "see bench/shards.py for the method. "
        f"{label(args.rows)} rows in {len(files)} shards of bench/make_shards.py (seed "
        f"{args.seed}, {sum(f.stat().st_size for f in files) / 1e6:.0f} MB); whole processes "
        f"with calibcli's defaults, median of {args.rounds} interleaved rounds after a warm-up "
        "[min, max]; CPU is user + system of the process and its workers.",
        "",
        f"Machine: {machine()}. {load}",
        "",
        "| step | wall (s) | CPU (s) | peak RSS (MB) |",
        "|---|---:|---:|---:|",
    ]
    for name, key in steps_rows:
        out.append(
            f"| {name} | {fmt(steps.wall[key])} | {statistics.median(steps.cpu[key]):.3f} | "
            f"{steps.rss[key]:.0f} |"
        )
    out += [
        "",
        "| target | measured | met |",
        "|---|---|:---:|",
        f"| (s) / (a) <= {RATIO_TARGET:g} | {ratio:.2f}x wall ({one:.2f} s / {a:.2f} s); "
        f"{cpu_ratio:.2f}x CPU ({cs:.2f} s / {ca:.2f} s) | "
        f"{'yes' if ratio <= RATIO_TARGET else '**no**'} |",
        f"| the {len(files)} parts, tables included, <= {SIZE_TARGET_MB:g} MB | "
        f"{parts_mb:.1f} MB | {'yes' if parts_mb <= SIZE_TARGET_MB else '**no**'} |",
        "",
        f"The whole sharded path, (b) + (c) + (d): {b + c + d:.2f} s wall = "
        f"{(b + c + d) / a:.2f}x (a); (b) / (a) = {b / a:.2f}x wall, {cb / ca:.2f}x CPU (each of "
        f"the {len(files)} processes pays calibcli's start-up once).",
        "",
        "| file | rows | distinct confidences | size (MB) |",
        "|---|---:|---:|---:|",
    ]
    for name, rows, distinct, mb in sizes:
        shown = "no table" if distinct is None else f"{distinct:,}"
        out.append(f"| {name} | {rows:,} | {shown} | {mb:.1f} |")
    worst = f"{max(rest):.2e}" if rest else "none differ"
    out += [
        "",
        f"Figures: of the {len(compare)} numbers in `calibrate`'s JSON report, (d) from the merged "
        f"file gives {identical} bit-identical to (a) over the files; the largest relative "
        f"difference of the other {len(rest)}: {worst}.",
        "",
        f"Where one shard's `summarize` spends its time ({files[0].name}, one process, "
        "`--workers 1`, cProfile; cumulative times overlap where phases nest):",
        "",
        profile,
        END,
    ]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"), help="report path")
    args = parser.parse_args(argv)
    args.argv = argv if argv is not None else sys.argv[1:]

    files = shards(args.rows, args.shards, args.seed)
    env = dict(os.environ, PYTHONHASHSEED="0", NO_COLOR="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # time calibcli as installed: bytecode cached
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    cli = [sys.executable, "-m", "calibcli"]
    load_before = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="calibcli-shards-"))
    try:
        steps = Steps(cli, files, work)
        for r in range(args.rounds + 1):
            print("warm-up:" if r == 0 else f"round {r}:", file=sys.stderr, flush=True)
            steps.round(env, record=r > 0)
        sizes = []
        for path in [*steps.parts, steps.merged]:
            header = summary_header(path)
            rows = sum(s["rows"] for s in header["sources"])
            name = "merged" if path == steps.merged else path.name
            sizes.append((name, rows, distinct_values(header), path.stat().st_size / 1e6))
        reports = [
            json.loads(
                subprocess.run(cmd, env=env, capture_output=True, check=True, text=True).stdout
            )
            for cmd in (steps.commands["a"][0], steps.commands["d"][0])
        ]
        compare: list[float] = []
        compare_numbers(reports[1], reports[0], compare)
        print("profile:", file=sys.stderr, flush=True)
        profile, _ = summarize_profile(files[0], env, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = (
        f"Load average (1 min) {load_before:.2f} before the run and {os.getloadavg()[0]:.2f} "
        "after it: the machine is shared, so other work competes for the two cores."
    )
    section = render(args, files, steps, sizes, compare, profile, load)
    write_section(Path(args.output), section, START, END)
    print(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
