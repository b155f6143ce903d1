"""Write a sharded calibration data set: the input of the shard tests and `make bench-shards`.

    python bench/make_shards.py OUT --rows 200000 [--shards 8] [--seed 0]

writes OUT/00.jsonl .. OUT/07.jsonl, rows {"id", "task", "confidence", "correct"} drawn from one
seeded generator and cut into consecutive shards, so the rows do not depend on the number of
shards. Confidences are Beta(5, 2) draws at full precision, except about 3% rounded to two
decimals (ties, as a harness printing rounded scores makes them) and about 1% exactly 0 or 1;
an answer is right with probability confidence ** 1.15 (a slightly overconfident model); five
tasks for --by task. The same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

TASKS = ("arc_easy", "hellaswag", "mmlu", "piqa", "winogrande")


def draw(rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    """The columns of ``rows`` rows (see the module docstring)."""
    rng = np.random.default_rng(seed)
    confidence = rng.beta(5.0, 2.0, rows)
    kind = rng.random(rows)
    rounded = kind < 0.03
    confidence[rounded] = np.round(confidence[rounded], 2)
    extreme = (kind >= 0.03) & (kind < 0.04)
    confidence[extreme] = (rng.random(int(extreme.sum())) < 0.5).astype(np.float64)
    correct = rng.random(rows) < confidence**1.15
    task = rng.integers(0, len(TASKS), rows)
    return {"confidence": confidence, "correct": correct, "task": task}


def write_shards(folder: Path, rows: int, shards: int = 8, seed: int = 0) -> list[Path]:
    """Write the shards into ``folder`` (created if needed); return their paths in order."""
    folder.mkdir(parents=True, exist_ok=True)
    cols = draw(rows, seed)
    bounds = [rows * k // shards for k in range(shards + 1)]
    paths = []
    for k in range(shards):
        path = folder / f"{k:02d}.jsonl"
        lo, hi = bounds[k], bounds[k + 1]
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(
                f'{{"id": {i}, "task": "{TASKS[t]}", "confidence": {c!r}, '
                f'"correct": {"true" if y else "false"}}}\n'
                for i, t, c, y in zip(
                    range(lo, hi),
                    cols["task"][lo:hi].tolist(),
                    cols["confidence"][lo:hi].tolist(),
                    cols["correct"][lo:hi].tolist(),
                    strict=True,
                )
            )
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    write_shards(args.out, args.rows, args.shards, args.seed)


if __name__ == "__main__":
    main()
