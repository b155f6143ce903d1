"""Brier to the last digit, and the binned figures the same bits on every route.

Brier is (1/N)·Σ (c − y)²; its reference here is the double nearest the exact mean of the
sample files' rows, computed with fractions (each confidence parsed by Python's ``float``,
then taken exactly). Every route gives it: uniform or quantile bins, any number of bins, with
or without ``--ci``, from the file or from its summary. The other point figures of a
quantile-binned report (ECE, MCE, per-bin values, the within-bin terms) are the same bits with
and without ``--ci`` and from the file or its summary.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from harness import run

from calibcli.metrics import BinStats, PredictionColumns, calibration_estimates

SAMPLES = Path(__file__).parent.parent / "sample_data"
FILES = ("overconfident", "underconfident", "well_calibrated")
CI = ("--ci", "0.95", "--bootstrap", "200")  # the point figures do not depend on the resamples


def rows_of(name: str) -> tuple[list[float], list[bool]]:
    conf, correct = [], []
    for line in (SAMPLES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            conf.append(float(row["confidence"]))
            correct.append(bool(row["correct"]))
    return conf, correct


def exact_brier(name: str) -> float:
    """The double nearest (1/N)·Σ (c − y)², the sum taken exactly."""
    conf, correct = rows_of(name)
    total = sum(((Fraction(c) - int(y)) ** 2 for c, y in zip(conf, correct, strict=True)))
    return float(total / len(conf))


def report(args) -> dict:
    result = run(["calibrate", *args, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def summaries(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for name in FILES:
        path = tmp_path_factory.mktemp("summaries") / f"{name}.cbs"
        made = run(["summarize", SAMPLES / f"{name}.jsonl", "-o", path, "-q"])
        assert made.exit_code == 0, made.stderr
        out[name] = path
    return out


def test_the_references_by_hand():
    # the values the reviewer's check named: the exact mean rounds to ...69, not ...685
    assert exact_brier("overconfident") == 0.2878923394841169
    assert exact_brier("underconfident") == 0.21897894513199448
    assert exact_brier("well_calibrated") == 0.2020573510454467


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("bins", ["10", "15"])
@pytest.mark.parametrize("ci", [False, True])
@pytest.mark.parametrize("route", ["file", "summary"])
def test_brier_is_the_exact_mean_on_every_route(summaries, name, strategy, bins, ci, route):
    source = SAMPLES / f"{name}.jsonl" if route == "file" else summaries[name]
    got = report([source, "--strategy", strategy, "--bins", bins, *(CI if ci else ())])
    want = exact_brier(name)
    assert got["brier"] == want
    assert got["brier_decomposition"]["brier"] == want


@pytest.mark.parametrize("name", FILES)
def test_quantile_figures_are_the_same_bits_with_ci_and_from_the_summary(summaries, name):
    args = ["--strategy", "quantile", "--bins", "15"]
    plain = report([SAMPLES / f"{name}.jsonl", *args])
    for source in (SAMPLES / f"{name}.jsonl", summaries[name]):
        for extra in ((), CI):
            got = report([source, *args, *extra])
            for key in ("ece", "mce", "rmsce", "rmsce_debiased", "brier"):
                assert got[key] == plain[key], (source, extra, key)
            assert got["brier_decomposition"] == plain["brier_decomposition"], (source, extra)
            assert got["reliability"] == plain["reliability"], (source, extra)


def test_the_brier_gate_reads_the_same_figure_with_and_without_ci():
    path = SAMPLES / "overconfident.jsonl"
    base = ["calibrate", path, "--strategy", "quantile", "--bins", "15"]
    below = "0.28789233948411685"  # one ulp under the exact Brier: the gate fails either way
    exact = "0.2878923394841169"  # the exact Brier: the gate passes either way
    for extra in ((), CI):
        assert run([*base, "--max-brier", below, *extra]).exit_code == 1, extra
        assert run([*base, "--max-brier", exact, *extra]).exit_code == 0, extra


def test_estimates_do_not_depend_on_the_rows_order():
    conf, correct = rows_of("overconfident")
    c, y = np.array(conf), np.array(correct)
    order = np.random.default_rng(3).permutation(c.shape[0])
    first = calibration_estimates(PredictionColumns.from_arrays(c, y), bins=15, strategy="quantile")
    again = calibration_estimates(
        PredictionColumns.from_arrays(c[order], y[order]), bins=15, strategy="quantile"
    )
    for field in ("sum_conf", "sum_conf_sq", "sum_conf_correct", "sum_sq_error"):
        assert np.array_equal(getattr(first.stats, field), getattr(again.stats, field)), field
    assert first.decomposition == again.decomposition
    assert (first.ece, first.mce) == (again.ece, again.mce)


def test_an_exact_total_gives_brier_one_rounding_and_survives_a_merge():
    # two parts whose exact totals are 1/3 each: 2/3 over N = 2 rows, divided once
    half = BinStats.from_arrays([0.5], [True], 1)
    exact = Fraction(1, 3)
    a = replace(half, sq_error_total=exact)
    merged = a.merge(a)
    assert merged.sq_error_total == Fraction(2, 3)
    assert merged.brier() == 1 / 3  # the double nearest 1/3 (1 / 3 is correctly rounded)
    # without an exact total on one side, the per-bin doubles are used
    assert a.merge(half).sq_error_total is None
