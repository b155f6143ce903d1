"""``calibcli compare``'s reading and matching beside ``calibrate`` reading the same two files,
and compare's peak memory per matched pair (``make bench-compare``).

Two files of the same questions (ids ``q00000000``..., the second in another order, different
confidences) are written once. Whole processes are timed in interleaved rounds and the median
CPU seconds (user + system, from ``os.wait4``) compared, as bench/paths.py does:

* ``calibrate``'s reading: ``read_calibration([A, B], workers=1)`` in a fresh process;
* compare's reading and matching as the command does it: ``read_key_columns`` of BASE, its ids'
  ``IdIndex``, and ``read_matched`` of NEW, in a fresh process (with ``--ref``, the earlier
  commit's ``read_keyed`` and ``match`` too);
* the whole ``calibcli compare A B --json --bootstrap 200 --workers 1``: its peak RSS divided by
  the matched pairs, and with ``--slope-rows`` the same at a larger size, whose difference over
  the added pairs is the memory a pair costs (the interpreter's fixed part left out). With
  ``--ref`` the earlier commit runs it too, and the two reports must be byte-identical.

The result replaces the section between ``<!-- compare:start -->`` and ``<!-- compare:end -->``
of BENCHMARKS.md (appended when missing).

    python bench/compare.py                       # 1M rows per file, 3 rounds
    python bench/compare.py --rows 500k --ref main
    python bench/compare.py --rows 200k --slope-rows 2M --rounds 1 --ref main
"""

from __future__ import annotations

import argparse
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

from run import label, parse_size, run_once  # noqa: E402
from sections import write_section  # noqa: E402

START, END = "<!-- compare:start -->", "<!-- compare:end -->"

CALIBRATE_READ = """
import sys
from calibcli.io import read_calibration
read_calibration(sys.argv[1:3], workers=1)
"""
COMPARE_READ = """
import sys
from dataclasses import replace
from calibcli.io import IdIndex, read_key_columns, read_matched
base = read_key_columns([sys.argv[1]], id_field=None)
index = IdIndex(base.ids)
base = replace(base, ids=None)
matched, _ = read_matched(base, index, [sys.argv[2]], id_field=None)
assert matched.base[0].shape[0] == int(sys.argv[3])
"""
COMPARE_READ_BEFORE = """
import sys
from calibcli.io import read_keyed
from calibcli.summaries import match
sides = [read_keyed([f], id_field=None) for f in sys.argv[1:3]]
assert match(*sides).base[0].shape[0] == int(sys.argv[3])
"""


def write_side(path: Path, rows: int, seed: int, shuffled: bool) -> None:
    """Rows of one model on questions q0..q{rows-1}; ``shuffled`` writes them in another order."""
    rng = np.random.default_rng(seed)
    conf = rng.beta(4.0, 1.5, rows)
    correct = rng.random(rows) < conf * 0.9
    order = rng.permutation(rows) if shuffled else np.arange(rows)
    conf, correct = conf.tolist(), correct.tolist()  # Python floats write their shortest repr
    with open(path, "w") as f:
        for start in range(0, rows, 100_000):
            f.write(
                "".join(
                    f'{{"id": "q{i:08d}", "confidence": {conf[i]!r}, '
                    f'"correct": {"true" if correct[i] else "false"}}}\n'
                    for i in order[start : start + 100_000].tolist()
                )
            )


def tree_of(ref: str, work: Path) -> Path:
    """The earlier commit's calibcli package, unpacked under ``work``."""
    tree = work / "before"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "calibcli"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1M", help="rows per file (default 1M)")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument("--ref", help="an earlier commit to measure beside this tree")
    parser.add_argument(
        "--slope-rows",
        help="also run the whole compare at this larger size: bytes per pair as the slope of "
        "peak RSS between the two sizes (the interpreter's fixed memory left out)",
    )
    parser.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"), help="report path")
    args = parser.parse_args(argv)
    rows = parse_size(args.rows)
    env = dict(os.environ, PYTHONHASHSEED="0", NO_COLOR="1")
    with tempfile.TemporaryDirectory(prefix="calibcli-compare-") as tmp:
        work = Path(tmp)
        # python -c and -m put the working directory first on sys.path: leave the checkout, so
        # that PYTHONPATH chooses which tree runs
        os.chdir(work)
        a, b = work / "a.jsonl", work / "b.jsonl"
        write_side(a, rows, 1, False)
        write_side(b, rows, 2, True)
        trees = {"now": ROOT}
        if args.ref:
            trees["before"] = tree_of(args.ref, work)
        py = sys.executable
        jobs = {"calibrate reading": ([py, "-c", CALIBRATE_READ, a, b], "now")}
        for t in trees:
            script = COMPARE_READ if t == "now" else COMPARE_READ_BEFORE
            jobs[f"compare reading + matching ({t})"] = ([py, "-c", script, a, b, rows], t)
        cpu: dict[str, list[float]] = {name: [] for name in jobs}
        for r in range(args.rounds + 1):
            names = list(jobs) if r % 2 == 0 else list(reversed(jobs))
            for name in names:
                argv_, t = jobs[name]
                _, c, _ = run_once([str(x) for x in argv_], dict(env, PYTHONPATH=str(trees[t])))
                if r:  # round 0 warms the page cache and the bytecode
                    cpu[name].append(c)
                print(f"  {r} {name:<38} cpu {c:7.2f} s", file=sys.stderr)
        whole = {}
        reports = {}
        for t, tree in trees.items():
            cli = [py, "-m", "calibcli", "compare", str(a), str(b), "--json"]
            cli += ["--bootstrap", "200", "--workers", "1"]
            tree_env = dict(env, PYTHONPATH=str(tree))
            whole[t] = run_once(cli, tree_env)
            reports[t] = subprocess.run(cli, capture_output=True, env=tree_env, check=True).stdout
            done = f"cpu {whole[t][1]:.1f} s, {whole[t][2]:.0f} MB"
            print(f"  compare ({t}): {done}", file=sys.stderr)
        slope = {}
        if args.slope_rows:
            big = parse_size(args.slope_rows)
            a2, b2 = work / "a2.jsonl", work / "b2.jsonl"
            write_side(a2, big, 1, False)
            write_side(b2, big, 2, True)
            for t, tree in trees.items():
                cli = [py, "-m", "calibcli", "compare", str(a2), str(b2), "--json"]
                cli += ["--bootstrap", "200", "--workers", "1"]
                _, c, mb = run_once(cli, dict(env, PYTHONPATH=str(tree)))
                slope[t] = (c, mb, (mb - whole[t][2]) * 2**20 / (big - rows))
                done = f"cpu {c:.1f} s, {mb:.0f} MB"
                print(f"  compare ({t}) at {label(big)}: {done}", file=sys.stderr)
    if len(reports) == 2 and reports["now"] != reports["before"]:
        raise SystemExit("the two commits' compare reports differ")
    median = {name: statistics.median(v) for name, v in cpu.items()}
    base = median["calibrate reading"]
    lines = [
        START,
        "## compare: reading and matching, and memory per matched pair",
        "",
        f"`make bench-compare`: two files of {label(rows)} rows each (the same ids, the second "
        "file in another order); median CPU seconds (user + system) of "
        f"{args.rounds} interleaved rounds, each a fresh process.",
        "",
        "| process | CPU s | × calibrate's reading |",
        "|---|---:|---:|",
    ]
    for name, value in median.items():
        lines.append(f"| {name} | {value:.2f} | {value / base:.2f}× |")
    lines += [
        "",
        "| `calibcli compare A B --json --bootstrap 200 --workers 1` | CPU s | peak RSS | "
        "bytes per matched pair |",
        "|---|---:|---:|---:|",
    ]
    for t, (_, c, mb) in whole.items():
        lines.append(f"| {t} | {c:.1f} | {mb:.0f} MB | {mb * 2**20 / rows:.0f} |")
    if slope:
        big = label(parse_size(args.slope_rows))
        lines += [
            "",
            f"| the same at {big} rows per file | CPU s | peak RSS | bytes per matched pair, "
            f"slope {label(rows)} → {big} (target ≤ 80) |",
            "|---|---:|---:|---:|",
        ]
        for t, (c, mb, per_pair) in slope.items():
            lines.append(f"| {t} | {c:.1f} | {mb:.0f} MB | {per_pair:.0f} |")
    if len(reports) == 2:
        lines += ["", "Both commits' reports are byte-identical."]
    lines.append(END)
    write_section(Path(args.output), "\n".join(lines) + "\n", START, END)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
