"""``make bench-apply``: ``calibcli apply``'s rows per CPU second, this tree beside an earlier
commit (by default the last one before apply rewrote rows block by block).

The earlier commit is checked out into a temporary git worktree; both trees run as
``python -m calibcli`` with their own folder first on PYTHONPATH, under this interpreter. Each
case is run first once per tree and the two outputs must be the same rows (the same bytes, but
for the last digits of confidences a smooth map computes, within 1e-12 relative); then the rounds
alternate the trees (the old one first in even rounds) and the median CPU seconds (user +
system, from ``os.wait4``) give the rows per second: on a shared machine wall time swings with
the neighbours' load, CPU time much less.

It writes its section of BENCHMARKS.md between ``<!-- apply:start -->`` and
``<!-- apply:end -->`` and prints it.

    python bench/apply.py                      # 500k rows, 3 rounds
    python bench/apply.py --rows 100k --rounds 1 --out /tmp/apply.md
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

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from run import label, parse_size, run_once  # noqa: E402
from sections import write_section  # noqa: E402

START, END = "<!-- apply:start -->", "<!-- apply:end -->"
BEFORE = "c35bd48"
"""The last commit whose apply rewrote rows one by one."""


def rows_file(path: Path, rows: int, seed: int = 0) -> Path:
    """Rows as a harness writes them (json.dumps spacing), in 57 subjects."""
    rng = np.random.default_rng(seed)
    conf = rng.beta(4.0, 1.5, rows)
    correct = rng.random(rows) < conf * 0.9
    subject = rng.integers(0, 57, rows)
    with open(path, "w") as f:
        for start in range(0, rows, 100_000):
            stop = min(start + 100_000, rows)
            f.write(
                "".join(
                    f'{{"id": "q{i:07d}", "subject": "mmlu_{k:02d}", "confidence": {c!r}, '
                    f'"correct": {"true" if y else "false"}}}\n'
                    for i, c, y, k in zip(
                        range(start, stop),
                        conf[start:stop].tolist(),
                        correct[start:stop].tolist(),
                        subject[start:stop].tolist(),
                        strict=True,
                    )
                )
            )
    return path


def output(argv: list[str], env: dict[str, str]) -> bytes:
    return subprocess.run(argv, capture_output=True, env=env, check=True).stdout


def same_rows(before: bytes, after: bytes) -> int:
    """The lines whose confidences differ in their last digits between the two trees' outputs
    (the smooth maps go through ``exp`` and ``log``, whose formulation changed since the earlier
    commit); SystemExit when any line differs otherwise, or a confidence by more than 1e-12
    relative."""
    if before == after:
        return 0
    old, new = before.splitlines(), after.splitlines()
    if len(old) != len(new):
        raise SystemExit(f"the two trees wrote {len(old):,} and {len(new):,} lines")
    differ = 0
    for i, (a, b) in enumerate(zip(old, new, strict=True)):
        if a == b:
            continue
        x, y = json.loads(a), json.loads(b)
        cx, cy = x.pop("confidence"), y.pop("confidence")
        if x != y or not math.isclose(cx, cy, rel_tol=1e-12, abs_tol=0.0):
            raise SystemExit(f"line {i + 1}: the two trees wrote other rows: {a!r} and {b!r}")
        differ += 1
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=BEFORE, help="the earlier commit")
    parser.add_argument("--rows", default="500k")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "BENCHMARKS.md")
    args = parser.parse_args()
    rows = parse_size(args.rows)
    # each tree's modules are compiled once and read from their bytecode after, as a user's
    # are: a caller's PYTHONDONTWRITEBYTECODE would charge every run the newer tree's larger
    # compile
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONHASHSEED"] = "0"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # ``python -m`` puts the working directory first on sys.path: run from one that holds
        # no calibcli, so that PYTHONPATH picks the tree
        os.chdir(folder)
        data = rows_file(folder / "rows.jsonl", rows)
        # fitted on other rows: apply refuses the rows a calibrator was fitted on
        fitting = rows_file(folder / "fit.jsonl", min(rows, 100_000), seed=1)
        calibrators = {}
        for name, extra in (("platt", []), ("platt --by", ["--by", "subject"])):
            path = folder / f"{name.replace(' --', '-')}.json"
            fit = [sys.executable, "-m", "calibcli", "fit", str(fitting), "--method", "platt"]
            subprocess.run(
                [*fit, *extra, "-o", str(path), "--quiet"],
                env=dict(env, PYTHONPATH=str(ROOT)),
                check=True,
                capture_output=True,
            )
            calibrators[name] = (path, extra)
        old_tree = folder / "old"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(old_tree), args.ref],
            check=True,
        )
        try:
            trees = {"before": old_tree, "after": ROOT}
            cpu: dict[tuple[str, str], list[float]] = {}
            digits: dict[str, int] = {}  # the lines whose confidences differ in the last digits
            for case, (path, extra) in calibrators.items():
                argv = [sys.executable, "-m", "calibcli", "apply", str(path), str(data), *extra]
                argv.append("--quiet")
                wrote = {t: output(argv, dict(env, PYTHONPATH=str(p))) for t, p in trees.items()}
                digits[case] = same_rows(wrote["before"], wrote["after"])
                del wrote
                for r in range(args.rounds):
                    order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
                    for t in order:
                        _, seconds, _ = run_once(argv, dict(env, PYTHONPATH=str(trees[t])))
                        cpu.setdefault((case, t), []).append(seconds)
                        print(
                            f"  round {r + 1} {case:<11} {t:<6} cpu {seconds:7.2f} s",
                            file=sys.stderr,
                            flush=True,
                        )
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old_tree)],
                check=False,
            )
    lines = [
        START,
        "## `calibcli apply` rows per CPU second (bench/apply.py)",
        "",
        f"{label(rows)} rows (`json.dumps` spacing, 57 subjects), a platt calibrator; CPU "
        f"seconds (user + system) of the whole process, median of {args.rounds} interleaved "
        f"rounds; before = `{args.ref}` (rows rewritten one by one). Both trees wrote the same "
        "rows: every byte but the last digits of some confidences, within 1e-12 relative (the "
        "platt map's formulation changed since; lines differing so: "
        + ", ".join(f"{case} {n:,}" for case, n in digits.items())
        + ").",
        "",
        "| case | before | after | before rows/s | after rows/s | speed-up |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case in calibrators:
        before = statistics.median(cpu[(case, "before")])
        after = statistics.median(cpu[(case, "after")])
        lines.append(
            f"| `apply` ({case}) | {before:.2f} s | {after:.2f} s | {rows / before:,.0f} | "
            f"{rows / after:,.0f} | {before / after:.2f}x |"
        )
    lines += ["", END]
    section = "\n".join(lines)
    write_section(args.out, section + "\n", START, END)
    print(section)
    print(json.dumps({k[0] + "/" + k[1]: v for k, v in cpu.items()}), file=sys.stderr)


if __name__ == "__main__":
    main()
