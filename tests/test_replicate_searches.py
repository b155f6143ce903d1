"""The bootstrap's replicates search their smooth-ECE bandwidths side by side.

Each replicate must get exactly the floats (compared with ``==``) that the one-set bisection
``bandwidth_fixed_point`` gives on its own grid histograms, whatever the other replicates of
its batch are, where a batch ends, and on the finer grids (bandwidths of 10/1024 and below).
"""

from __future__ import annotations

import numpy as np
import pytest

import calibcli.metrics.bootstrap as bootstrap_module
from calibcli.metrics.binning import resolve_edges
from calibcli.metrics.bootstrap import ReplicateEngine, replicate_generator
from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.estimators import SCALAR_KEYS
from calibcli.metrics.paired import paired_bootstrap
from calibcli.metrics.smooth import bandwidth_fixed_point

SMECE = SCALAR_KEYS.index("smece")
BANDWIDTH = SCALAR_KEYS.index("smece_bandwidth")


def columns_of(kind: str, n: int, seed: int) -> PredictionColumns:
    rng = np.random.default_rng(seed)
    conf = rng.random(n)
    if kind == "calibrated":
        correct = rng.random(n) < conf
    elif kind == "overconfident":
        correct = rng.random(n) < conf**2
    elif kind == "ends":
        conf = rng.choice([0.0, 1.0, 0.5, 1e-9], n)
        correct = rng.random(n) < 0.5
    elif kind == "one class":
        correct = np.ones(n, dtype=bool)
    else:
        raise AssertionError(kind)
    return PredictionColumns.from_arrays(conf, correct)


def one_at_a_time(engine: ReplicateEngine, seed: int, start: int, stop: int) -> np.ndarray:
    """(bandwidth, smECE) of each replicate by its own bisection on its atom moments."""
    out = []
    row = np.empty(len(SCALAR_KEYS))
    for r in range(start, stop):
        moments = engine._evaluate(engine._drawer(replicate_generator(seed, r)), row).copy()
        curve = bootstrap_module._SmoothReplicate(engine, moments)
        out.append(bandwidth_fixed_point(curve.error))
    return np.array(out)


CASES = [
    ("calibrated", 1),
    ("calibrated", 2),
    ("overconfident", 7),
    ("calibrated", 300),
    ("overconfident", 3000),
    ("ends", 500),
    ("one class", 400),
    # large and well calibrated: bandwidths below 11/1024 take the finer grids
    ("calibrated", 60_000),
]


@pytest.mark.parametrize(("kind", "n"), CASES)
def test_each_replicate_gets_its_own_search_floats(kind, n):
    columns = columns_of(kind, n, seed=n)
    engine = ReplicateEngine(columns, resolve_edges(columns, 10, "uniform"))
    samples = 12 if n > 10_000 else 40
    got = engine.run(9, 0, samples)
    want = one_at_a_time(engine, 9, 0, samples)
    np.testing.assert_array_equal(got[:, BANDWIDTH], want[:, 0])
    np.testing.assert_array_equal(got[:, SMECE], want[:, 1])
    if n > 10_000:
        assert (want[:, 0] < 11 / 1024).any(), "no replicate reached a finer grid"


def test_batch_bounds_change_no_float(monkeypatch):
    columns = columns_of("overconfident", 800, seed=3)
    engine = ReplicateEngine(columns, resolve_edges(columns, 10, "uniform"))
    whole = engine.run(4, 0, 30)
    for searched in (1, 4, 7):
        monkeypatch.setattr(bootstrap_module, "_SEARCHED", searched)
        np.testing.assert_array_equal(engine.run(4, 0, 30), whole)
    # and a replicate range cut anywhere gives its rows of the whole range
    np.testing.assert_array_equal(engine.run(4, 11, 23), whole[11:23])


def test_a_missing_replicate_leaves_its_row_alone():
    columns = columns_of("calibrated", 200, seed=5)
    engine = ReplicateEngine(columns, resolve_edges(columns, 10, "uniform"))
    counts = engine.draw_counts(replicate_generator(1, 0))
    out = np.full((3, len(SCALAR_KEYS)), -1.0)
    engine.evaluate_each([None, engine.weighing(counts), None], out)
    assert (out[[0, 2]] == -1.0).all()
    np.testing.assert_array_equal(out[1], engine.evaluate(counts))


def test_a_filler_reads_counts_when_made():
    """``weighing`` copies the counts: a caller refilling one array per replicate (as the
    Poisson bootstrap does) gets each replicate's own counts."""
    columns = columns_of("calibrated", 300, seed=6)
    engine = ReplicateEngine(columns, resolve_edges(columns, 10, "uniform"))
    first = engine.draw_counts(replicate_generator(2, 0))
    second = engine.draw_counts(replicate_generator(2, 1))
    buffer = first.copy()
    filler = engine.weighing(buffer)
    buffer[...] = second
    out = np.empty((1, len(SCALAR_KEYS)))
    engine.evaluate_each([filler], out)
    np.testing.assert_array_equal(out[0], engine.evaluate(first))


def test_paired_bootstrap_does_not_depend_on_the_workers():
    base = columns_of("overconfident", 400, seed=8)
    rng = np.random.default_rng(8)
    conf, correct = base.confidences(), base.correct()
    new = np.clip(conf + rng.normal(0.0, 0.05, conf.shape[0]), 0.0, 1.0)
    one = paired_bootstrap((conf, correct), (new, correct), samples=30, seed=2)
    two = paired_bootstrap((conf, correct), (new, correct), samples=30, seed=2, workers=2)
    assert one.intervals == two.intervals


def test_threads_running_bootstraps_at_once_get_their_own_floats():
    """The kernels the searches try are kept across engines, one set per thread: threads
    adding bandwidths to one shared table at once mixed their rows up (or overran it)."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(11)
    engines = []
    for k in range(8):  # data no other test uses, so that the searches try bandwidths anew
        conf = rng.random(300 + 50 * k)
        columns = PredictionColumns.from_arrays(
            conf, rng.random(conf.shape[0]) < conf ** (1 + k / 4)
        )
        engines.append(ReplicateEngine(columns, resolve_edges(columns, 10, "uniform")))
    with ThreadPoolExecutor(8) as pool:
        runs = [pool.submit(engine.run, seed, 0, 30) for seed, engine in enumerate(engines)]
        got = [run.result() for run in runs]
    for seed, (engine, rows) in enumerate(zip(engines, got, strict=True)):
        want = one_at_a_time(engine, seed, 0, 30)
        np.testing.assert_array_equal(rows[:, BANDWIDTH], want[:, 0])
        np.testing.assert_array_equal(rows[:, SMECE], want[:, 1])
