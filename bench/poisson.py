"""CPU time per replicate of the Poisson bootstrap against the multinomial one.

Times, in this process (``time.process_time``, so other jobs on the machine count only through
cache and memory contention), at ``--rows`` rows of uniform confidences with outcomes drawn at
a miscalibrated rate, 10 uniform bins:

* the weights alone (``replicate_weights`` over every row key);
* ``PoissonState.from_rows``: the mergeable state (binned scalars and NLL);
* ``poisson_intervals``: every scalar, AUROC and smooth ECE included;
* ``bootstrap_intervals``: the multinomial engine, every scalar.

Each case runs S and 2·S replicates; the difference divided by S is the CPU time per replicate
(the one-off setup, sorting the rows and building the engine, cancels), the rest the setup.

    python bench/poisson.py                    # 1M rows, 25 and 50 replicates, best of 3
    python bench/poisson.py --rows 200000 --samples 10 --repeat 1
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from calibcli.metrics.bootstrap import bootstrap_intervals
from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.poisson import PoissonState, poisson_intervals, replicate_weights


def least_cpu(run: Callable[[int], object], samples: int, repeat: int) -> float:
    """Least CPU seconds of ``repeat`` runs of ``samples`` replicates."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run(samples)
        best = min(best, time.process_time() - start)
    return best


def per_replicate(
    run: Callable[[int], object], samples: int, repeat: int
) -> tuple[float, float, float]:
    """ms: (per replicate, setup) from the runs of S and 2·S replicates, and the run of 2·S
    replicates over 2·S (setup included, so an upper bound of the cost per replicate)."""
    once, twice = least_cpu(run, samples, repeat), least_cpu(run, 2 * samples, repeat)
    slope = (twice - once) / samples
    return 1e3 * slope, 1e3 * (once - samples * slope), 1e3 * twice / (2 * samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=25, help="S: runs of S and 2·S")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the least counts")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    conf = rng.random(args.rows)
    columns = PredictionColumns.from_arrays(conf, rng.random(args.rows) < conf**1.5)
    keys = rng.integers(0, 1 << 64, args.rows, dtype=np.uint64, endpoint=False)
    n_right = columns.conf_correct.shape[0]
    right_keys, wrong_keys = keys[:n_right], keys[n_right:]
    samples, repeat = args.samples, args.repeat

    def weights(samples: int) -> None:
        for r in range(samples):
            replicate_weights(keys, 0, r)

    def state(samples: int) -> None:
        PoissonState.from_rows(
            columns.conf_correct,
            columns.conf_wrong,
            right_keys,
            wrong_keys,
            bins=10,
            samples=samples,
            seed=0,
        )

    def single_pass(samples: int) -> None:
        poisson_intervals(columns, right_keys, wrong_keys, samples=samples, seed=0)

    def multinomial(samples: int) -> None:
        bootstrap_intervals(columns, samples=samples, seed=0)

    print(
        f"{args.rows:,} rows, CPU ms (least of {repeat} runs of {samples} and {2 * samples} "
        "replicates; per replicate = the difference / samples)"
    )
    print(f"  {'':36s} {'per replicate':>14s} {'setup':>8s} {'all / 2·S':>10s}")
    for name, run in (
        ("replicate_weights", weights),
        ("PoissonState.from_rows", state),
        ("poisson_intervals (every scalar)", single_pass),
        ("bootstrap_intervals (multinomial)", multinomial),
    ):
        slope, setup, amortised = per_replicate(run, samples, repeat)
        print(f"  {name:36s} {slope:14.1f} {setup:8.0f} {amortised:10.1f}")


if __name__ == "__main__":
    main()
