"""Peak memory per row of ``calibcli threshold`` and ``calibcli fit`` (``make bench-memory``).

Each command runs as its own process on rows of a slightly overconfident predictor whose
confidences are all distinct (the worst case for the risk-coverage curve, which holds a point per
distinct confidence), once on a small input and once on a large one. Peak RSS comes from
``os.wait4``'s rusage of the process (workers included), CPU seconds are user + system. The
figure per row is (peak on the large input − peak on the small one) / large rows: what each
further row costs, the interpreter and the imports left out.

The result replaces the section between ``<!-- memory:start -->`` and ``<!-- memory:end -->`` of
BENCHMARKS.md (appended when missing); nothing else in the file changes.

    python bench/memory.py                  # 5M rows beside 1,000
    python bench/memory.py --rows 1M
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from run import (  # noqa: E402
    calibcli_command,
    calibration_chunk,
    label,
    machine,
    parse_size,
    run_once,
)
from sections import write_section  # noqa: E402

START, END = "<!-- memory:start -->", "<!-- memory:end -->"
TARGETS = {"threshold": 40.0, "fit": 32.0}  # bytes per row
METHODS = ("temperature", "platt", "isotonic", "histogram", "beta")


def commands(calibcli: list[str], path: Path, out: Path) -> list[tuple[str, str, list[str]]]:
    """(name, the command it belongs to, argv) for each measured run on ``path``."""
    argv = [*calibcli, "threshold", str(path), "--target-accuracy", "0.9"]
    runs = [("threshold --target-accuracy 0.9", "threshold", argv)]
    for method in METHODS:
        argv = [*calibcli, "fit", str(path), "--method", method, "-o", str(out)]
        runs.append((f"fit --method {method}", "fit", argv))
    return runs


def sliced_products_here(env: dict[str, str]) -> bool:
    """Whether the fits take their BLAS products a slice of rows at a time on this machine: the
    probe, in a process that loads numpy as the command line does."""
    code = (
        "import os, sys\n"
        "from calibcli.system import same_digits_on_every_cpu\n"
        "same_digits_on_every_cpu()\n"
        "os.environ['OPENBLAS_NUM_THREADS'] = '1'\n"
        "from calibcli.metrics import blas\n"
        "sys.exit(0 if blas.sliced_products() else 1)"
    )
    return subprocess.run([sys.executable, "-c", code], env=env, check=False).returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="5M", help="rows of the large input (default 5M)")
    parser.add_argument("--base", default="1k", help="rows of the small input (default 1k)")
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md")
    args = parser.parse_args(argv)
    rows, base = parse_size(args.rows), parse_size(args.base)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    calibcli = calibcli_command()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        small, large = Path(tmp) / "small.jsonl", Path(tmp) / "large.jsonl"
        small.write_bytes(calibration_chunk(base, extra=False))
        with open(large, "wb") as f:  # all confidences distinct: one seed per million rows
            for seed, start in enumerate(range(0, rows, 1_000_000)):
                f.write(calibration_chunk(min(1_000_000, rows - start), extra=False, seed=seed))
        out = Path(tmp) / "calibrator.json"
        for (name, command, low), (_, _, high) in zip(
            commands(calibcli, small, out), commands(calibcli, large, out), strict=True
        ):
            _, _, rss_small = run_once(low, env)
            _, cpu, rss_large = run_once(high, env)
            per_row = (rss_large - rss_small) * 1024 * 1024 / rows
            results.append((name, command, rss_small, rss_large, per_row, cpu))
            print(
                f"  {name:<34} {rss_small:7.1f} MB -> {rss_large:7.1f} MB  "
                f"{per_row:6.1f} B/row  cpu {cpu:.2f} s",
                file=sys.stderr,
                flush=True,
            )
    sliced = "gave" if sliced_products_here(env) else "did not give"
    lines = [
        START,
        "## Memory per row: threshold and fit",
        "",
        f"`make bench-memory`: each command on {label(rows)} rows with all confidences "
        f"distinct, beside the same command on {label(base)} rows. Bytes per row = (peak RSS "
        f"at {label(rows)} − peak RSS at {label(base)}) / {label(rows)}, peak RSS from "
        "`os.wait4`'s rusage of the process; CPU is user + system of the large run. Targets: "
        f"threshold <= {TARGETS['threshold']:g}, fit <= {TARGETS['fit']:g} bytes/row.",
        "",
        "Every fit keeps the rows' confidences (8 bytes/row): the report applies the fitted "
        "map to them. platt and beta also hold their design matrix's feature columns (n × 1 "
        "or n × 2 doubles) and take the Hessian and gradient products a slice of rows at a "
        "time, by the BLAS calls numpy makes on the whole arrays, where a probe shows numpy's "
        "OpenBLAS gives them bit for bit (one BLAS thread, as the CLI runs); elsewhere they "
        "hold the whole design matrix and its weighted copy (8 + 32 and 8 + 48 bytes/row).",
        "",
        f"Machine: {machine()}; the probe {sliced} the products a slice at a time.",
        "",
        f"| command | peak at {label(base)} | peak at {label(rows)} | bytes/row | target | "
        f"met | CPU at {label(rows)} |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, command, rss_small, rss_large, per_row, cpu in results:
        target = TARGETS[command]
        met = "yes" if per_row <= target else "no"
        lines.append(
            f"| `{name}` | {rss_small:.0f} MB | {rss_large:.0f} MB | {per_row:.1f} | "
            f"<= {target:g} | {met} | {cpu:.1f} s |"
        )
    lines.append(END)
    write_section(args.output, "\n".join(lines) + "\n", START, END)
    print(f"wrote the memory section of {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
