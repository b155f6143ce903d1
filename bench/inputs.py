"""One set of rows in every input format calibcli reads, each read by ``calibcli calibrate``
(``make bench-inputs``).

The same generated calibration rows (1M by default) are written as JSON Lines, then compressed
as gzip (level 3), Zstandard (level 3), xz (preset 1) and bzip2 (level 9), and as a CSV table
(plain and Zstandard), and as Parquet where pyarrow is installed. Each is read by
``calibcli calibrate --json -q`` with one worker (the CPU cost of the format) and with the
default workers (the wall time a user sees), in interleaved rounds; the figures are the median
CPU and wall seconds, and the largest peak RSS. Before timing, every format's report is checked
to equal the JSON Lines one, key for key.

Every timed command is started by bench/run.py's small launcher process, so its peak RSS is
its own. The result replaces the section between ``<!-- inputs:start -->`` and
``<!-- inputs:end -->`` of BENCHMARKS.md (appended when missing).

    python bench/inputs.py                 # 1M rows, 3 rounds
    python bench/inputs.py --rows 200k --rounds 1
"""

from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import json
import lzma
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from formats import calibcli_at, compile_bytecode  # noqa: E402
from run import calibration_chunk, label, parse_size, run_once  # noqa: E402
from sections import write_section  # noqa: E402

START, END = "<!-- inputs:start -->", "<!-- inputs:end -->"


def _zstd():
    try:
        from compression import zstd  # Python >= 3.14
    except ImportError:
        from backports import zstd
    return zstd


def compressed(src: Path, dst: Path, module, **options) -> Path:
    """``src`` compressed into ``dst`` by a module with the standard ``open`` (gzip, bz2, ...)."""
    with open(src, "rb") as fin, module.open(dst, "wb", **options) as fout:
        shutil.copyfileobj(fin, fout, 1 << 22)
    return dst


def as_csv(src: Path, dst: Path) -> Path:
    with open(src, encoding="utf-8") as fin, open(dst, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["confidence", "correct"])
        for line in fin:
            row = json.loads(line)
            writer.writerow([repr(row["confidence"]), "true" if row["correct"] else "false"])
    return dst


def as_parquet(src: Path, dst: Path) -> Path | None:
    try:
        import pyarrow as pa
        import pyarrow.json as pj
        import pyarrow.parquet as pq
    except ImportError:
        return None
    table = pj.read_json(src)
    pq.write_table(pa.table({n: table[n] for n in ("confidence", "correct")}), dst)
    return dst


def inputs(folder: Path, rows: int) -> dict[str, Path]:
    """Every format's file of the same rows, by the name shown in the table."""
    plain = folder / "rows.jsonl"
    plain.write_bytes(calibration_chunk(rows, extra=False))
    zstd = _zstd()
    files = {
        "JSON Lines": plain,
        "JSON Lines, gzip": compressed(plain, folder / "rows.jsonl.gz", gzip, compresslevel=3),
        "JSON Lines, Zstandard": compressed(plain, folder / "rows.jsonl.zst", zstd, level=3),
        "JSON Lines, xz": compressed(plain, folder / "rows.jsonl.xz", lzma, preset=1),
        "JSON Lines, bzip2": compressed(plain, folder / "rows.jsonl.bz2", bz2),
    }
    table = as_csv(plain, folder / "rows.csv")
    files["CSV"] = table
    files["CSV, Zstandard"] = compressed(table, folder / "rows.csv.zst", zstd, level=3)
    parquet = as_parquet(plain, folder / "rows.parquet")
    if parquet is not None:
        files["Parquet"] = parquet
    return files


def report(argv: list[str], env: dict[str, str]) -> dict:
    done = subprocess.run(argv, capture_output=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr.decode()}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="1M", help="calibration rows (1M)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--data", type=Path, help="folder for the generated inputs")
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md")
    args = parser.parse_args()
    rows = parse_size(args.rows)
    tmp = tempfile.TemporaryDirectory(dir=args.data)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    compile_bytecode(ROOT)
    calibcli = [*calibcli_at(ROOT), "calibrate", "--json", "-q"]
    files = inputs(Path(tmp.name), rows)
    expected = report([*calibcli, str(files["JSON Lines"])], env)
    for name, path in files.items():
        if report([*calibcli, str(path)], env) != expected:
            raise SystemExit(f"{name}: the report differs from the JSON Lines one")
    print(
        f"every format's report equals the JSON Lines one (n = {expected['n']:,})", file=sys.stderr
    )

    runs: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for r in range(args.rounds):
        for name, path in files.items():
            for workers, extra in (("one", ["--workers", "1"]), ("default", [])):
                got = run_once([*calibcli, str(path), *extra], env)
                runs.setdefault((name, workers), []).append(got)
                print(
                    f"  round {r + 1} {name:<22} {workers:<7} wall {got[0]:6.2f} s  "
                    f"cpu {got[1]:6.2f} s  {got[2]:5.0f} MB",
                    file=sys.stderr,
                )

    def cpu(name: str) -> float:
        return statistics.median(run[1] for run in runs[(name, "one")])

    base = cpu("JSON Lines")
    lines = [
        START,
        "## Input formats, compressed or not (`make bench-inputs`)",
        "",
        f"The same {label(rows)} calibration rows in each format calibcli reads, read by "
        "`calibcli calibrate --json -q`: CPU seconds (user + system) with `--workers 1`, wall "
        "seconds with the default workers (two here for an input of 32 MB or more, where it can "
        f"be split or streamed to a worker), the largest peak RSS of either; median of "
        f"{args.rounds} interleaved rounds. Every format's report was checked to equal the JSON "
        "Lines one, key for key. gzip level 3, Zstandard level 3, xz preset 1, bzip2 level 9.",
        "",
        "| input | file (MB) | CPU, 1 worker (s) | × JSON Lines | wall, default (s) "
        "| peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, path in files.items():
        wall = statistics.median(run[0] for run in runs[(name, "default")])
        rss = max(run[2] for key in ("one", "default") for run in runs[(name, key)])
        lines.append(
            f"| {name} | {path.stat().st_size / 1e6:.0f} | {cpu(name):.2f} | "
            f"{cpu(name) / base:.2f} | {wall:.2f} | {rss:.0f} |"
        )
    lines += [
        "",
        "A compressed file cannot be cut by position: with two workers this process "
        "decompresses it and a worker decodes some of its blocks. A CSV table is read record by "
        "record in Python (the `csv` module, one small function per cell), not by the block "
        "decoder of JSON Lines.",
        END,
    ]
    section = "\n".join(lines) + "\n"
    write_section(args.output, section, START, END)
    sys.stdout.write(section)
    tmp.cleanup()


if __name__ == "__main__":
    main()
