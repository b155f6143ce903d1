"""compare's figures of each side are calibrate's figures of that side, to the last digit, and
do not depend on the order of the rows: the per-bin sums are exact on both routes (a float sum
in row order moved ECE and Brier in the last digit when BASE's lines were shuffled, so a
--max-increase gate at the boundary could pass for one order and fail for another)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run

FIGURES = ("ece", "brier", "mce", "rmsce", "ece_1bin", "accuracy", "mean_confidence", "nll")


def write(path, ids, conf, correct, order):
    with open(path, "w") as f:
        for i in order:
            row = {"id": ids[i], "confidence": float(conf[i]), "correct": bool(correct[i])}
            f.write(json.dumps(row) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("digits")
    rng = np.random.default_rng(1)
    n = 300
    ids = [f"q{i}" for i in range(n)]
    base = rng.uniform(0.3, 1, n)
    right = rng.uniform(size=n) < base
    new = np.clip(base + rng.normal(0, 0.1, n), 0, 1)
    order = rng.permutation(n)
    return {
        "base": write(tmp / "b.jsonl", ids, base, right, range(n)),
        "shuffled": write(tmp / "b_shuffled.jsonl", ids, base, right, order),
        "reversed": write(tmp / "b_reversed.jsonl", ids, base, right, range(n - 1, -1, -1)),
        "new": write(tmp / "n.jsonl", ids, new, right, range(n)),
        "rows": (base, right, new),
    }


def body(*args):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def hand_ece(conf, right, bins=10):
    """Σ_k |Σ confidence − Σ correct| / N over uniform bins [k/10, (k+1)/10), the last closed."""
    k = np.minimum((conf * bins).astype(int), bins - 1)
    total = sum(
        abs(math.fsum(conf[k == b]) - math.fsum(right[k == b].astype(float))) for b in range(bins)
    )
    return total / conf.shape[0]


@pytest.mark.parametrize("route", ["base", "shuffled", "reversed"])
def test_each_side_s_figures_are_calibrate_s(files, route):
    compared = body("compare", files[route], files["new"], "--bootstrap", "200")["figures"]
    for side, path in (("base", files[route]), ("new", files["new"])):
        alone = body("calibrate", path)
        for name in FIGURES:
            assert compared[name][side] == alone[name], (side, name)
    base, right, _ = files["rows"]
    assert compared["ece"]["base"] == pytest.approx(hand_ece(base, right), rel=1e-14)


def test_the_figures_and_the_difference_do_not_depend_on_line_order(files):
    figures = [
        body("compare", files[route], files["new"], "--bootstrap", "200")["figures"]
        for route in ("base", "shuffled", "reversed")
    ]
    assert figures[0] == figures[1] == figures[2]


def test_a_gate_at_the_difference_gives_one_verdict_whatever_the_order(files):
    difference = body("compare", files["base"], files["new"], "--bootstrap", "200")["figures"]
    limit = repr(difference["ece"]["difference"])
    common = ["compare", "--gate-on", "estimate", "--bootstrap", "200", "-q"]
    codes = {
        run([*common, files[route], files["new"], "--max-increase", f"ece={limit}"]).exit_code
        for route in ("base", "shuffled", "reversed")
    }
    assert codes == {0}
