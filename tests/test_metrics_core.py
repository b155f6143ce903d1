"""Example-based tests of calibcli.metrics.core.

Every expected number comes from a hand computation (often exact, with fractions.Fraction), a
published worked example (perplexity of targets at 1/2 and 1/4; ECE and Brier score of a
well-calibrated and an overconfident model over 5 bins), a plain-Python reference loop
(tests/reference.py) or scikit-learn -- never from the code under test.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import math
import re
import subprocess
import sys
import types
import warnings
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import reference
from sklearn.metrics import brier_score_loss

import calibcli.metrics
from calibcli.metrics.core import (
    BinStats,
    CalibrationReport,
    PerplexityResult,
    PredictionColumns,
    StatsAccumulator,
    bin_edges,
    bin_index,
    brier_decomposition,
    brier_score,
    expected_calibration_error,
    perplexity,
    reliability_diagram,
)

LN2 = math.log(2.0)
METRICS = Path(calibcli.metrics.__file__).parent
EDGE_BINS = (5, 10, 15, 50, 100)
DECOMPOSITION_KEYS = {
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
    "brier",
}


def close(got: float, want: float | Fraction, tol: float = 1e-12) -> bool:
    """Absolute comparison (pytest.approx would silently add a relative tolerance)."""
    return abs(got - float(want)) <= tol


def surprise(p: float) -> float:
    """-ln p, with a zero probability mapped to +inf (never clamped to an epsilon)."""
    return math.inf if p == 0.0 else -math.log(p)


def assert_names_position_and_value(exc: pytest.ExceptionInfo, index: int, value: str) -> None:
    message = str(exc.value)
    assert re.search(rf"\[{index}\]|(index|position|row|sequence) {index}\b", message), message
    assert value in message, message


# --------------------------------------------------------------------------- public surface


def test_public_functions_are_reexported_from_calibcli_metrics():
    for name in (
        "perplexity",
        "PerplexityResult",
        "expected_calibration_error",
        "brier_score",
        "brier_decomposition",
        "reliability_diagram",
        "CalibrationReport",
        "BinStats",
        "StatsAccumulator",
        "PredictionColumns",
        "bin_edges",
        "bin_index",
    ):
        assert getattr(calibcli.metrics, name) is getattr(calibcli.metrics.core, name), name


def test_every_public_name_resolves_even_after_every_module_is_loaded():
    # a submodule named like a public function would replace it on the package once imported
    for module in METRICS.glob("*.py"):
        importlib.import_module(f"calibcli.metrics.{module.stem}")
    for name in (*calibcli.metrics.__all__, "DECOMPOSITION_TERMS", "RECALIBRATION_METHODS"):
        assert not isinstance(getattr(calibcli.metrics, name), types.ModuleType), name


def test_importing_the_package_and_its_registry_loads_no_numpy():
    code = (
        "import sys; from calibcli.metrics import "
        "BIN_STRATEGIES, RECALIBRATION_METHODS, SELECTION_METHODS; "
        "print(sorted(k for k in sys.modules if k == 'numpy' or k.startswith('calibcli')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # calibcli.system (the standard library alone) sets up how numpy will load, before it does
    loaded = ["calibcli", "calibcli.metrics", "calibcli.metrics.methods", "calibcli.system"]
    assert out.stdout.strip() == str(loaded)


def test_metrics_import_nothing_of_calibcli_but_errors():
    for module in METRICS.glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                targets = [node.module or ""]
            else:
                continue
            for target in targets:
                if target.split(".")[0] == "calibcli":
                    assert target.startswith("calibcli.metrics") or target == "calibcli.errors", (
                        module.name,
                        target,
                    )


def test_no_metrics_module_is_over_600_lines():
    for module in METRICS.glob("*.py"):
        assert len(module.read_text(encoding="utf-8").splitlines()) <= 600, module.name


# --------------------------------------------------------------------------- perplexity, worked


def test_two_targets_half_and_quarter():
    # Worked example: targets with probabilities 1/2 and 1/4 -> total ln 8, mean 1.039720770840
    # nats, perplexity 2.828427124746 = 2 ** 1.5.
    nll = [surprise(0.5), surprise(0.25)]
    result = PerplexityResult.from_token_nll(nll, [1, 1])
    assert close(result.total_nll, 2.079441541680)
    assert close(result.total_nll, math.log(8.0))
    assert close(result.mean_nll, 1.039720770840)
    assert close(result.perplexity, 2.828427124746)
    assert close(result.perplexity, 2.0**1.5)
    assert close(1.0 / result.perplexity, 0.353553390593)  # the equivalent constant probability
    assert result.total_tokens == 2
    assert result.sequences == 2
    assert close(result.bits_per_token, 1.5)  # log2(8) / 2
    assert close(perplexity(nll, [1, 1]), 2.828427124746)


def test_two_targets_as_one_sequence():
    result = PerplexityResult.from_token_nll([math.log(8.0)], [2])
    assert close(result.mean_nll, 1.039720770840)
    assert close(result.perplexity, 2.828427124746)
    assert result.sequences == 1
    assert result.total_tokens == 2


def test_document_weighting_is_by_tokens_not_documents():
    # Worked example: document A has one target at p = 1, document B three targets at p = 1/4.
    doc_a, doc_b = surprise(1.0), 3 * surprise(0.25)
    result = PerplexityResult.from_token_nll([doc_a, doc_b], [1, 3])
    assert close(result.mean_nll, 1.039720770840)
    assert close(result.mean_nll, (0.0 + 3.0 * math.log(4.0)) / 4.0)
    assert close(result.perplexity, 2.828427124746)
    assert result.total_tokens == 4
    assert result.sequences == 2
    # The WRONG equal-document mean: average the two per-document means.
    wrong_mean = (doc_a / 1 + doc_b / 3) / 2
    assert close(wrong_mean, 0.693147180560)
    assert close(math.exp(wrong_mean), 2.0)
    assert abs(result.mean_nll - wrong_mean) > 0.3
    assert abs(result.perplexity - 2.0) > 0.8
    # ... and neither is the mean of per-document perplexities.
    mean_of_ppl = (math.exp(doc_a / 1) + math.exp(doc_b / 3)) / 2
    assert abs(perplexity([doc_a, doc_b], [1, 3]) - mean_of_ppl) > 0.1


def test_perfect_model_has_perplexity_one():
    result = PerplexityResult.from_token_nll([surprise(1.0), surprise(1.0)], [1, 1])
    assert result.mean_nll == 0.0
    assert result.perplexity == 1.0
    assert result.bits_per_token == 0.0


def test_uniform_over_five_tokens():
    result = PerplexityResult.from_token_nll([surprise(1.0 / 5.0)] * 5, [1] * 5)
    assert close(result.mean_nll, 1.609437912434)
    assert close(result.mean_nll, math.log(5.0))
    assert close(result.perplexity, 5.000000000000)
    assert close(result.bits_per_token, math.log2(5.0))


def test_two_thousand_halves_do_not_underflow():
    halves = [0.5] * 2000
    assert math.prod(halves) == 0.0  # the raw probability product underflows
    result = PerplexityResult.from_token_nll([surprise(p) for p in halves], [1] * 2000)
    assert math.isfinite(result.total_nll)
    assert close(result.total_nll, 2000 * LN2, tol=1e-9)
    assert close(result.mean_nll, LN2)
    assert close(result.perplexity, 2.0)
    assert close(result.bits_per_token, 1.0)
    one_sequence = PerplexityResult.from_token_nll([2000 * LN2], [2000])
    assert close(one_sequence.perplexity, 2.0)


def test_zero_probability_gives_infinite_perplexity_without_clamping():
    # Worked example: [0.8, 0] -> surprise +inf -> mean NLL +inf -> perplexity +inf, no epsilon.
    nll = [surprise(0.8), surprise(0.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = PerplexityResult.from_token_nll(nll, [1, 1])
        plain = perplexity(nll, [1, 1])
    assert result.total_nll == math.inf
    assert result.mean_nll == math.inf
    assert result.perplexity == math.inf
    assert result.bits_per_token == math.inf
    assert plain == math.inf


def test_q_and_r_distributions_score_the_observed_target():
    # Worked example: observed target B under q = [0.6, 0.3, 0.1] and r = [0.6, 0.2, 0.2]; same
    # argmax.
    q, r = [0.60, 0.30, 0.10], [0.60, 0.20, 0.20]
    q_result = PerplexityResult.from_token_nll([surprise(q[1])], [1])
    r_result = PerplexityResult.from_token_nll([surprise(r[1])], [1])
    assert close(q_result.mean_nll, 1.203972804326)
    assert close(r_result.mean_nll, 1.609437912434)
    assert q_result.mean_nll < r_result.mean_nll
    assert close(q_result.perplexity, 1.0 / 0.3)
    assert close(r_result.perplexity, 5.0)


def test_bits_per_token_is_mean_nll_over_ln2():
    result = PerplexityResult.from_token_nll([1.25, 0.5, 3.0], [2, 1, 4])
    mean = 4.75 / 7
    assert close(result.mean_nll, mean)
    assert close(result.bits_per_token, mean / LN2)
    assert close(result.perplexity, math.exp(mean))


def test_empty_sequence_with_zero_nll_is_valid():
    result = PerplexityResult.from_token_nll([0.0, LN2], [0, 1])
    assert result.sequences == 2
    assert result.total_tokens == 1
    assert close(result.perplexity, 2.0)


@pytest.mark.parametrize(("nll", "tokens"), [([], []), ([0.0], [0]), ([0.0, 0.0], [0, 0])])
def test_zero_tokens_gives_nan_without_warning(nll, tokens):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = perplexity(nll, tokens)
        result = PerplexityResult.from_token_nll(nll, tokens)
    assert type(plain) is float and math.isnan(plain)
    assert math.isnan(result.perplexity)
    assert math.isnan(result.mean_nll)
    assert result.total_tokens == 0
    assert result.sequences == len(nll)
    assert result.total_nll == 0.0


def test_perplexity_accepts_numpy_arrays():
    nll = np.array([LN2, 2 * LN2])
    tokens = np.array([1, 1], dtype=np.int64)
    assert close(perplexity(nll, tokens), 2.828427124746)


def test_huge_mean_nll_overflows_to_infinity_not_an_exception():
    # exp(1000) is not representable; perplexity is then +inf (the same answer as for p = 0).
    assert perplexity([1000.0], [1]) == math.inf


def test_perplexity_result_from_totals():
    result = PerplexityResult.from_totals(math.log(8.0), 2, 2)
    assert close(result.mean_nll, 1.039720770840)
    assert close(result.perplexity, 2.828427124746)
    assert close(result.bits_per_token, 1.5)
    assert result.total_tokens == 2
    assert result.sequences == 2


def test_perplexity_result_types_and_frozen():
    result = PerplexityResult.from_token_nll(np.array([LN2, 2 * LN2]), np.array([1, 1]))
    for name in ("perplexity", "mean_nll", "total_nll", "bits_per_token"):
        assert type(getattr(result, name)) is float, name
    assert type(result.total_tokens) is int
    assert type(result.sequences) is int
    assert type(perplexity([LN2], [1])) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.perplexity = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("nll", "tokens", "index", "value"),
    [
        pytest.param(
            [0.5, 0.25, -0.75], [1, 1, 1], 2, "-0.75", id="negative-nll-log-p-not-negated"
        ),
        pytest.param([0.5, math.nan, 0.25], [1, 1, 1], 1, "nan", id="nan-nll"),
        pytest.param([0.5, 0.25, -math.inf], [1, 1, 1], 2, "inf", id="minus-inf-nll"),
        pytest.param([math.inf, math.nan], [1, 1], 1, "nan", id="nan-after-inf-still-reported"),
        pytest.param([0.5, 0.25, 0.125], [1, -3, 1], 1, "-3", id="negative-tokens"),
        pytest.param([0.5, 0.25, 0.125], [1, 1, 2.5], 2, "2.5", id="non-integer-tokens"),
        pytest.param([0.5, 0.25, 0.125], [1, 1, math.nan], 2, "nan", id="nan-tokens"),
        pytest.param([0.5, 0.75, 0.125], [1, 0, 1], 1, "0.75", id="positive-nll-zero-tokens"),
        pytest.param([0.5, math.inf], [1, 0], 1, "inf", id="inf-nll-zero-tokens"),
        pytest.param(
            [0.5, 0.25], np.array([1, 2**63], np.uint64), 1, str(2**63), id="tokens-past-int64"
        ),
        pytest.param([0.5, 0.25], [1, 1e20], 1, "1e+20", id="float-tokens-past-int64"),
    ],
)
def test_invalid_perplexity_input_names_position_and_value(nll, tokens, index, value):
    with pytest.raises(ValueError) as exc:
        perplexity(nll, tokens)
    assert_names_position_and_value(exc, index, value)
    with pytest.raises(ValueError) as exc:
        PerplexityResult.from_token_nll(nll, tokens)
    assert_names_position_and_value(exc, index, value)


def test_token_total_is_exact_past_int64():
    # five sequences of 2**62 tokens: an int64 sum wraps around to 2**62
    tokens = np.full(5, 2**62, np.int64)
    result = PerplexityResult.from_token_nll([2.0**62] * 5, tokens)
    assert result.total_tokens == 5 * 2**62
    assert result.mean_nll == 1.0 and result.perplexity == math.e


def test_finite_nlls_summing_past_the_largest_double_give_infinite_perplexity():
    result = PerplexityResult.from_token_nll([1e308, 1e308], [1, 1])
    assert result.total_nll == math.inf and result.perplexity == math.inf


def test_perplexity_mismatched_lengths():
    with pytest.raises(ValueError):
        perplexity([0.5, 0.25, 0.125, 1.0], [1, 1, 1])
    with pytest.raises(ValueError):
        PerplexityResult.from_token_nll([0.5], [1, 1])


# --------------------------------------------------------------------------- bin edges


def decimal_text(k: int, bins: int) -> str:
    """k/M written as a decimal, as a person or a JSON dump would write it (0.3, 0.29, ...)."""
    return str(Decimal(k) / Decimal(bins))


@pytest.mark.parametrize("bins", EDGE_BINS)
def test_bin_edges_are_python_fractions(bins):
    edges = bin_edges(bins)
    assert isinstance(edges, np.ndarray)
    assert edges.dtype == np.float64
    assert edges.tolist() == [k / bins for k in range(bins + 1)]


@pytest.mark.parametrize("bins", EDGE_BINS)
def test_every_decimal_edge_lands_in_its_own_bin(bins):
    texts = [decimal_text(k, bins) for k in range(bins)]
    values = [float(t) for t in texts]
    assert values == [k / bins for k in range(bins)]  # the decimal parses to the edge itself
    confidences = np.array(values)
    got = bin_index(confidences, bin_edges(bins))
    assert got.tolist() == list(range(bins))
    assert [reference.bin_index(c, bins) for c in values] == list(range(bins))
    _, _, count = reliability_diagram(confidences, np.zeros(bins, dtype=bool), bins=bins)
    assert count.tolist() == [1] * bins
    stats = BinStats.from_arrays(confidences, np.zeros(bins, dtype=bool), bins=bins)
    assert stats.count.tolist() == [1] * bins


@pytest.mark.parametrize("bins", EDGE_BINS)
def test_values_just_below_an_edge_land_in_the_previous_bin(bins):
    below = np.array([np.nextafter(k / bins, 0.0) for k in range(1, bins + 1)])
    assert bin_index(below, bin_edges(bins)).tolist() == list(range(bins))
    _, _, count = reliability_diagram(below, np.ones(bins, dtype=bool), bins=bins)
    assert count.tolist() == [1] * bins


@pytest.mark.parametrize("bins", EDGE_BINS)
def test_zero_goes_to_first_bin_and_one_to_last(bins):
    got = bin_index(np.array([0.0, 1.0, np.nextafter(1.0, 0.0)]), bin_edges(bins))
    assert got.tolist() == [0, bins - 1, bins - 1]
    assert np.issubdtype(got.dtype, np.integer)


@pytest.mark.parametrize(
    ("text", "bins", "expected"),
    [("0.3", 10, 3), ("0.7", 10, 7), ("0.6", 10, 6), ("0.29", 100, 29), ("0.57", 100, 57),
     ("0.58", 100, 58), ("0.35", 100, 35), ("0.6", 5, 3), ("1.0", 10, 9), ("1", 100, 99),
     ("0.0", 10, 0)],
)  # fmt: skip
def test_named_bin_examples(text, bins, expected):
    assert bin_index(np.array([float(text)]), bin_edges(bins)).tolist() == [expected]
    _, _, count = reliability_diagram([float(text)], [True], bins=bins)
    assert int(np.argmax(count)) == expected


def test_floor_and_linspace_binning_are_wrong_where_ours_is_right():
    # The two tempting shortcuts the binning contract (edges k / M as Python computes them) rules
    # out:
    assert 0.29 * 100 == 28.999999999999996
    assert math.floor(0.29 * 100) == 28
    assert np.linspace(0, 1, 11)[3] == 0.30000000000000004
    assert np.searchsorted(np.linspace(0, 1, 11), 0.3, side="right") - 1 == 2
    below_09 = float(np.nextafter(0.9, 0.0))
    assert math.floor(below_09 * 10) == 9  # floor puts a value below the 0.9 edge into bin 9
    got = bin_index(np.array([0.29]), bin_edges(100)).tolist()
    got += bin_index(np.array([0.3, below_09]), bin_edges(10)).tolist()
    assert got == [29, 3, 8]


@pytest.mark.parametrize("bins", EDGE_BINS)
def test_sweep_of_edges_against_floor_and_linspace(bins):
    on_edge = [k / bins for k in range(bins)]
    below = [float(np.nextafter(k / bins, 0.0)) for k in range(1, bins + 1)]
    values = on_edge + below
    expected = [reference.bin_index(c, bins) for c in values]
    assert expected == list(range(bins)) + list(range(bins))
    assert bin_index(np.array(values), bin_edges(bins)).tolist() == expected
    floor_bins = [min(math.floor(c * bins), bins - 1) for c in values]
    linspace = np.linspace(0.0, 1.0, bins + 1)
    linspace_bins = [
        min(int(np.searchsorted(linspace, c, side="right")) - 1, bins - 1) for c in values
    ]
    floor_wrong = sum(a != b for a, b in zip(floor_bins, expected, strict=True))
    linspace_wrong = sum(a != b for a, b in zip(linspace_bins, expected, strict=True))
    # Measured with Python 3.11 / numpy 2: how many of these values each shortcut mis-bins.
    assert (floor_wrong, linspace_wrong) == {
        5: (0, 1),
        10: (1, 3),
        15: (0, 0),
        50: (9, 3),
        100: (17, 10),
    }[bins]


def test_bin_index_with_arbitrary_increasing_edges():
    edges = np.array([0.0, 0.2, 0.25, 0.9, 1.0])
    confidences = np.array([0.0, 0.1999, 0.2, 0.2499, 0.25, 0.3, 0.9, 0.95, 1.0])
    assert bin_index(confidences, edges).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 3]
    stats = BinStats.from_arrays(confidences, np.zeros(9, dtype=bool), edges=edges)
    assert stats.bins == 4
    assert stats.count.tolist() == [2, 2, 2, 3]


def test_edge_placement_changes_ece():
    # 0.3 belongs to bin 3 and 0.25 to bin 2: two singleton bins, ECE = (0.7 + 0.25) / 2.
    # (With linspace edges both would share bin 2 and ECE would be |0.275 - 0.5| = 0.225.)
    ece, populated = expected_calibration_error([0.3, 0.25], [True, False], bins=10)
    assert populated == 2
    expected = (abs(Fraction(0.3) - 1) + abs(Fraction(0.25) - 0)) / 2
    assert close(ece, expected)
    assert close(ece, 0.475)


# --------------------------------------------------------------------------- degenerate inputs


@pytest.mark.parametrize("bins", [1, 5, 10, 15])
@pytest.mark.parametrize("kind", ["list", "array"])
def test_empty_input(bins, kind):
    if kind == "list":
        confidences, correct = [], []
    else:
        confidences, correct = np.array([], dtype=np.float64), np.array([], dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ece = expected_calibration_error(confidences, correct, bins=bins)
        brier = brier_score(confidences, correct)
        diagram = reliability_diagram(confidences, correct, bins=bins)
        decomposition = brier_decomposition(confidences, correct, bins=bins)
        report = CalibrationReport.from_predictions(confidences, correct, bins=bins)
    assert ece == (0.0, 0)
    assert type(ece[0]) is float and type(ece[1]) is int
    assert brier == 0.0 and type(brier) is float
    assert len(diagram) == 3
    for array in diagram:
        assert isinstance(array, np.ndarray)
        assert array.shape == (bins,)
        assert not array.any()
    assert set(decomposition) >= DECOMPOSITION_KEYS
    for key in DECOMPOSITION_KEYS:
        assert decomposition[key] == 0.0 and type(decomposition[key]) is float, key
    assert report.ece == 0.0 and report.brier == 0.0
    assert report.populated_bins == 0 and report.n == 0 and report.bins == bins
    for array in report.reliability:
        assert array.shape == (bins,) and not array.any()


ALL_WRONG = [0.95, 0.9, 0.75, 0.6, 0.33, 0.3, 0.1, 0.05, 0.0]


@pytest.mark.parametrize("bins", [1, 5, 10, 15, 100])
def test_all_predictions_wrong_ece_is_mean_confidence(bins):
    correct = [False] * len(ALL_WRONG)
    ece, populated = expected_calibration_error(ALL_WRONG, correct, bins=bins)
    assert close(ece, math.fsum(ALL_WRONG) / len(ALL_WRONG))
    assert populated == len({reference.bin_index(c, bins) for c in ALL_WRONG})
    brier = brier_score(ALL_WRONG, correct)
    assert close(brier, math.fsum(c * c for c in ALL_WRONG) / len(ALL_WRONG))
    assert close(brier, brier_score_loss([0] * len(ALL_WRONG), ALL_WRONG, labels=[0, 1]))


@pytest.mark.parametrize("n_correct", [0, 1, 3, 5, 8])
@pytest.mark.parametrize("bins", [1, 10, 15])
def test_perfectly_uncertain_predictor(n_correct, bins):
    correct = [True] * n_correct + [False] * (8 - n_correct)
    confidences = [0.5] * 8
    ece, populated = expected_calibration_error(confidences, correct, bins=bins)
    assert close(ece, abs(Fraction(1, 2) - Fraction(n_correct, 8)))
    assert populated == 1
    assert brier_score(confidences, correct) == 0.25  # exactly
    report = CalibrationReport.from_predictions(confidences, correct, bins=bins)
    assert report.brier == 0.25
    assert close(report.accuracy, n_correct / 8)
    assert report.mean_confidence == 0.5


def test_all_correct_with_high_confidence_is_near_zero():
    confidences = [0.99, 0.995, 0.999, 0.9999, 1.0, 0.98]
    correct = [True] * len(confidences)
    ece, populated = expected_calibration_error(confidences, correct, bins=10)
    assert populated == 1
    gap = math.fsum(1.0 - c for c in confidences) / len(confidences)
    assert close(ece, gap)
    assert ece < 0.01
    brier = brier_score(confidences, correct)
    assert close(brier, math.fsum((1.0 - c) ** 2 for c in confidences) / len(confidences))
    assert brier < 1e-4
    assert expected_calibration_error([1.0, 1.0], [True, True], bins=10) == (0.0, 1)
    assert brier_score([1.0, 1.0], [True, True]) == 0.0


# --------------------------------------------------------------------------- worked ECE, 5 bins

WELL_CALIBRATED = [(0.9, True), (0.9, True), (0.9, False), (0.9, True), (0.9, True),
                   (0.5, True), (0.5, False), (0.5, True), (0.5, False)]  # fmt: skip
OVERCONFIDENT = [(0.95, True), (0.95, True), (0.95, False), (0.95, False),
                 (0.95, True), (0.95, False), (0.95, True), (0.95, False)]  # fmt: skip


def floor_binned_ece(predictions, num_bins=5):
    """The worked example's loop: floor(c * M) binning (right for these two examples, wrong at
    bin edges)."""
    buckets = [[] for _ in range(num_bins)]
    for confidence, correct in predictions:
        buckets[min(int(confidence * num_bins), num_bins - 1)].append((confidence, correct))
    ece = 0.0
    for bucket in buckets:
        if bucket:
            avg_confidence = sum(c for c, _ in bucket) / len(bucket)
            accuracy = sum(1 for _, y in bucket if y) / len(bucket)
            ece += len(bucket) / len(predictions) * abs(avg_confidence - accuracy)
    return ece


def test_worked_example_well_calibrated_five_bins():
    confidences, correct = zip(*WELL_CALIBRATED, strict=True)
    # By hand: five at 0.9 (4 right) in bin [0.8, 1], four at 0.5 (2 right) in bin [0.4, 0.6).
    expected_ece = Fraction(5, 9) * abs(Fraction(9, 10) - Fraction(4, 5)) + Fraction(4, 9) * abs(
        Fraction(1, 2) - Fraction(2, 4)
    )
    assert expected_ece == Fraction(1, 18)
    expected_brier = (4 * Fraction(1, 10) ** 2 + Fraction(9, 10) ** 2 + 4 * Fraction(1, 2) ** 2) / 9
    assert expected_brier == Fraction(37, 180)
    ece, populated = expected_calibration_error(confidences, correct, bins=5)
    assert close(ece, expected_ece)
    assert close(ece, floor_binned_ece(WELL_CALIBRATED))
    assert populated == 2
    assert close(brier_score(confidences, correct), expected_brier)
    mean_confidence, accuracy, count = reliability_diagram(confidences, correct, bins=5)
    assert count.tolist() == [0, 0, 4, 0, 5]
    assert np.allclose(mean_confidence, [0, 0, 0.5, 0, 0.9], rtol=0, atol=1e-12)
    assert np.allclose(accuracy, [0, 0, 0.5, 0, 0.8], rtol=0, atol=1e-12)


def test_worked_example_overconfident_five_bins():
    confidences, correct = zip(*OVERCONFIDENT, strict=True)
    expected_ece = abs(Fraction(19, 20) - Fraction(4, 8))
    expected_brier = (4 * Fraction(1, 20) ** 2 + 4 * Fraction(19, 20) ** 2) / 8
    assert (expected_ece, expected_brier) == (Fraction(9, 20), Fraction(181, 400))
    ece, populated = expected_calibration_error(confidences, correct, bins=5)
    assert close(ece, expected_ece)
    assert close(ece, floor_binned_ece(OVERCONFIDENT))
    assert populated == 1
    assert close(brier_score(confidences, correct), expected_brier)
    # The worked example's conclusion: the overconfident model is worse on both.
    well_c, well_y = zip(*WELL_CALIBRATED, strict=True)
    assert ece > expected_calibration_error(well_c, well_y, bins=5)[0]
    assert brier_score(confidences, correct) > brier_score(well_c, well_y)


# --------------------------------------------------------------------------- cross-checks

RNG_CASES = [(0, 1), (1, 7), (2, 200), (3, 1000)]


def random_predictions(seed: int, n: int):
    rng = np.random.default_rng(seed)
    confidences = rng.uniform(0.0, 1.0, n)
    # Mix in exact edges so the cross-check exercises the boundary rule too.
    confidences[: n // 4] = rng.integers(0, 101, n // 4) / 100
    correct = rng.uniform(0.0, 1.0, n) < confidences
    return confidences, correct


@pytest.mark.parametrize(("seed", "n"), RNG_CASES)
@pytest.mark.parametrize("bins", [1, 5, 10, 15, 50, 100])
def test_against_plain_python_reference(seed, n, bins):
    confidences, correct = random_predictions(seed, n)
    ece, populated = expected_calibration_error(confidences, correct, bins=bins)
    want_ece, want_populated = reference.ece(confidences, correct, bins)
    assert close(ece, want_ece)
    assert populated == want_populated
    mean_confidence, accuracy, count = reliability_diagram(confidences, correct, bins=bins)
    want_mean, want_accuracy, want_count = reference.reliability(confidences, correct, bins)
    assert count.tolist() == want_count
    np.testing.assert_allclose(mean_confidence, want_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(accuracy, want_accuracy, rtol=0, atol=1e-12)
    decomposition = brier_decomposition(confidences, correct, bins=bins)
    for key, want in reference.decomposition_exact(confidences, correct, bins).items():
        assert close(decomposition[key], want), key


@pytest.mark.parametrize(("seed", "n"), RNG_CASES)
def test_brier_against_sklearn(seed, n):
    confidences, correct = random_predictions(seed, n)
    want = brier_score_loss(correct.astype(int), confidences, labels=[0, 1])
    assert close(brier_score(confidences, correct), want)
    assert close(brier_decomposition(confidences, correct)["brier"], want)
    assert close(CalibrationReport.from_predictions(confidences, correct).brier, want)


def test_reference_decomposition_is_exact():
    # Sanity of the reference itself: the identity holds exactly in rational arithmetic.
    confidences, correct = random_predictions(5, 50)
    d = reference.decomposition_exact(confidences, correct, 10)
    assert (
        d["reliability"]
        - d["resolution"]
        + d["uncertainty"]
        + d["within_bin_variance"]
        - d["within_bin_covariance"]
        == d["brier"]
    )


def test_correct_as_bool_or_zero_one_agree():
    confidences = [0.1, 0.35, 0.5, 0.8, 0.95]
    as_bool = [False, True, False, True, True]
    as_int = [0, 1, 0, 1, 1]
    assert expected_calibration_error(confidences, as_bool) == expected_calibration_error(
        confidences, as_int
    )
    assert brier_score(confidences, as_bool) == brier_score(confidences, np.array(as_int))


def test_large_input_does_not_drift():
    # 10^6 rows at c = 0.1, exactly one in ten correct: accuracy 0.1 and mean confidence 0.1.
    # A plain running sum of 10^6 x 0.1 is off by 1.3e-6 (relative 1.3e-11, growing with the row
    # count). Pairwise, compensated or bounded-block summation keeps the relative error below
    # ~1e-12 whatever the row count; that is the bound pinned here.
    n = 1_000_000
    confidences = np.full(n, 0.1)
    correct = np.zeros(n, dtype=bool)
    correct[::10] = True
    stats = BinStats.from_arrays(confidences, correct, bins=10)
    assert stats.count.tolist() == [0, n] + [0] * 8
    assert stats.sum_correct[1] == n // 10
    exact_sum = math.fsum([0.1] * n)
    assert abs(stats.sum_conf[1] - exact_sum) <= 1e-12 * exact_sum
    ece, populated = expected_calibration_error(confidences, correct, bins=10)
    assert populated == 1
    assert ece < 1e-13  # a running sum gives 1.3e-12
    want_brier = (
        Fraction(n // 10) * (Fraction(0.1) - 1) ** 2 + Fraction(n - n // 10) * Fraction(0.1) ** 2
    ) / n
    assert abs(brier_score(confidences, correct) - float(want_brier)) <= 1e-12 * float(want_brier)


def test_accumulator_is_compensated():
    # 10,000 shards of one row at 0.1: a naive running sum reaches 1000.0000000001588.
    one = BinStats.from_arrays([0.1], [True], bins=10)
    accumulator = StatsAccumulator(bins=10)
    for _ in range(10_000):
        accumulator.add(one)
    total = accumulator.result()
    assert total.count[1] == 10_000
    assert total.sum_correct[1] == 10_000
    assert abs(total.sum_conf[1] - math.fsum([0.1] * 10_000)) <= 2.3e-13  # <= 2 ulp of 1000
    assert abs(total.sum_conf_sq[1] - math.fsum([0.1 * 0.1] * 10_000)) <= 2.9e-14  # 2 ulp of 100


# --------------------------------------------------------------------------- BinStats


def test_bin_stats_fields_and_derived_values():
    confidences = np.array([0.05, 0.15, 0.3, 0.3, 0.9, 1.0])
    correct = np.array([False, True, True, False, True, True])
    stats = BinStats.from_arrays(confidences, correct, bins=10)
    assert stats.edges.tolist() == [k / 10 for k in range(11)]
    assert stats.count.dtype == np.int64 and stats.sum_correct.dtype == np.int64
    assert stats.count.tolist() == [1, 1, 0, 2, 0, 0, 0, 0, 0, 2]
    assert stats.sum_correct.tolist() == [0, 1, 0, 1, 0, 0, 0, 0, 0, 2]
    for name in ("sum_conf", "sum_conf_sq", "sum_conf_correct", "sum_sq_error"):
        array = getattr(stats, name)
        assert array.dtype == np.float64 and array.shape == (10,), name
    assert np.allclose(stats.sum_conf[[0, 1, 3, 9]], [0.05, 0.15, 0.6, 1.9], rtol=0, atol=1e-15)
    assert np.allclose(stats.sum_conf_sq[[3, 9]], [0.18, 1.81], rtol=0, atol=1e-15)
    assert np.allclose(stats.sum_conf_correct[[0, 1, 3, 9]], [0, 0.15, 0.3, 1.9], atol=1e-15)
    assert np.allclose(stats.sum_sq_error[[0, 1, 3]], [0.0025, 0.7225, 0.49 + 0.09], atol=1e-15)
    assert stats.bins == 10 and type(stats.bins) is int
    assert stats.n == 6 and type(stats.n) is int
    assert stats.populated_bins == 4 and type(stats.populated_bins) is int
    assert np.allclose(stats.mean_confidence, [0.05, 0.15, 0, 0.3, 0, 0, 0, 0, 0, 0.95], atol=1e-15)
    assert np.allclose(stats.accuracy, [0, 1, 0, 0.5, 0, 0, 0, 0, 0, 1], atol=1e-15)
    want_ece = (0.05 + 0.85 + 2 * 0.2 + 2 * 0.05) / 6
    assert type(stats.ece()) is float and close(stats.ece(), want_ece)
    assert type(stats.brier()) is float
    assert close(stats.brier(), (0.0025 + 0.7225 + 0.49 + 0.09 + 0.01 + 0.0) / 6)
    assert type(stats.total_accuracy) is float and close(stats.total_accuracy, 4 / 6)
    assert type(stats.total_mean_confidence) is float
    assert close(stats.total_mean_confidence, 2.7 / 6)
    assert set(stats.decomposition()) >= DECOMPOSITION_KEYS


def test_bin_stats_empty_and_merge_identity():
    empty = BinStats.empty(10)
    assert empty.n == 0 and empty.bins == 10
    assert empty.count.tolist() == [0] * 10
    assert empty.ece() == 0.0 and empty.brier() == 0.0
    stats = BinStats.from_arrays([0.2, 0.7], [True, False], bins=10)
    for merged in (empty.merge(stats), stats.merge(empty), empty + stats):
        assert merged.count.tolist() == stats.count.tolist()
        assert merged.sum_conf.tolist() == stats.sum_conf.tolist()
        assert merged.sum_sq_error.tolist() == stats.sum_sq_error.tolist()


def test_merge_requires_equal_edges():
    a = BinStats.from_arrays([0.2], [True], bins=10)
    b = BinStats.from_arrays([0.2], [True], bins=5)
    with pytest.raises(ValueError):
        a.merge(b)


def test_frozen_dataclasses():
    report = CalibrationReport.from_predictions([0.2, 0.9], [False, True])
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.ece = 0.0  # type: ignore[misc]
    stats = BinStats.from_arrays([0.2], [True])
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.count = np.zeros(10)  # type: ignore[misc]
    columns = PredictionColumns.from_arrays(np.array([0.2]), np.array([True]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        columns.conf_correct = np.zeros(1)  # type: ignore[misc]


# --------------------------------------------------------------------------- report and types


def test_calibration_report_fields_and_types():
    confidences, correct = random_predictions(11, 300)
    report = CalibrationReport.from_predictions(confidences, correct, bins=15)
    want_ece, want_populated = reference.ece(confidences, correct, 15)
    assert type(report.ece) is float and close(report.ece, want_ece)
    assert type(report.brier) is float
    assert close(report.brier, reference.brier_exact(confidences, correct))
    assert type(report.populated_bins) is int and report.populated_bins == want_populated
    assert type(report.n) is int and report.n == 300
    assert type(report.bins) is int and report.bins == 15
    assert type(report.accuracy) is float
    assert close(report.accuracy, int(correct.sum()) / 300)
    assert type(report.mean_confidence) is float
    assert close(report.mean_confidence, math.fsum(confidences) / 300)
    assert isinstance(report.reliability, tuple) and len(report.reliability) == 3
    want_mean, want_accuracy, want_count = reference.reliability(confidences, correct, 15)
    mean_confidence, accuracy, count = report.reliability
    for array in report.reliability:
        assert isinstance(array, np.ndarray) and array.shape == (15,)
    assert count.tolist() == want_count
    np.testing.assert_allclose(mean_confidence, want_mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(accuracy, want_accuracy, rtol=0, atol=1e-12)
    from_stats = CalibrationReport.from_stats(BinStats.from_arrays(confidences, correct, bins=15))
    assert close(from_stats.ece, want_ece)
    assert close(from_stats.brier, reference.brier_exact(confidences, correct))
    assert from_stats.n == 300 and from_stats.bins == 15
    assert from_stats.populated_bins == want_populated


def test_scalar_results_are_plain_python_types():
    confidences = np.array([0.2, 0.4, 0.9], dtype=np.float64)
    correct = np.array([False, True, True])
    ece, populated = expected_calibration_error(confidences, correct, bins=10)
    assert type(ece) is float and type(populated) is int
    assert type(brier_score(confidences, correct)) is float
    for key, value in brier_decomposition(confidences, correct, bins=10).items():
        assert type(value) is float, key
    mean_confidence, accuracy, count = reliability_diagram(confidences, correct, bins=10)
    assert mean_confidence.dtype == np.float64 and accuracy.dtype == np.float64
    assert np.issubdtype(count.dtype, np.integer)


# --------------------------------------------------------------------------- validation


def calibration_calls():
    return [
        ("ece", lambda c, y, b=10: expected_calibration_error(c, y, bins=b)),
        ("brier", lambda c, y, b=10: brier_score(c, y)),
        ("decomposition", lambda c, y, b=10: brier_decomposition(c, y, bins=b)),
        ("reliability", lambda c, y, b=10: reliability_diagram(c, y, bins=b)),
        ("report", lambda c, y, b=10: CalibrationReport.from_predictions(c, y, bins=b)),
        ("bin_stats", lambda c, y, b=10: BinStats.from_arrays(c, y, bins=b)),
    ]


CALLS = calibration_calls()


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
@pytest.mark.parametrize(
    ("confidences", "correct", "index", "value"),
    [
        pytest.param([0.1, 0.2, 0.3, 1.5], [1, 0, 1, 0], 3, "1.5", id="above-one"),
        pytest.param([0.1, -0.25, 0.3], [1, 0, 1], 1, "-0.25", id="below-zero"),
        pytest.param([0.1, 0.2, math.nan], [1, 0, 1], 2, "nan", id="nan-confidence"),
        pytest.param([0.1, math.inf, 0.3], [1, 0, 1], 1, "inf", id="inf-confidence"),
        pytest.param([0.1, 0.2, -math.inf], [1, 0, 1], 2, "inf", id="minus-inf-confidence"),
        pytest.param([0.1, 0.2, 0.3, 0.4], [1, 0, 2, 1], 2, "2", id="correct-two"),
        pytest.param([0.1, 0.2, 0.3], [1, -1, 0], 1, "-1", id="correct-minus-one"),
        pytest.param([0.1, 0.2, 0.3], [0.0, 1.0, 0.5], 2, "0.5", id="correct-half"),
        pytest.param([0.1, 0.2, 0.3], [0.0, math.nan, 1.0], 1, "nan", id="correct-nan"),
    ],
)
def test_invalid_predictions_name_position_and_value(
    name, call, confidences, correct, index, value
):
    with pytest.raises(ValueError) as exc:
        call(confidences, correct)
    assert_names_position_and_value(exc, index, value)


def test_error_message_reads_as_in_the_api_contract():
    # API.md's example message, verbatim: the value as the user wrote it, not a numpy repr
    # such as "np.float64(1.5)".
    with pytest.raises(ValueError) as exc:
        expected_calibration_error([0.1, 0.2, 0.3, 1.5], [1, 0, 1, 0])
    assert "confidences[3] = 1.5 is outside [0, 1]" in str(exc.value)
    for call in (
        lambda: brier_score([0.1, math.nan], [1, 0]),
        lambda: brier_score([0.1, 0.2], [1, 2]),
        lambda: perplexity([0.5, -0.75], [1, 1]),
        lambda: perplexity([0.5, 0.5], [1, 2.5]),
    ):
        with pytest.raises(ValueError) as exc:
            call()
        assert "np." not in str(exc.value), str(exc.value)


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
def test_mismatched_lengths_raise(name, call):
    with pytest.raises(ValueError):
        call([0.1, 0.2, 0.3, 0.4], [True, False, True])


BINNED = [(name, call) for name, call in CALLS if name != "brier"]


@pytest.mark.parametrize(("name", "call"), BINNED, ids=[name for name, _ in BINNED])
@pytest.mark.parametrize("bins", [0, -1, 2.5])
@pytest.mark.parametrize("rows", [0, 3])
def test_bins_must_be_a_positive_integer(name, call, bins, rows):
    confidences, correct = [0.1, 0.5, 0.9][:rows], [True, False, True][:rows]
    with pytest.raises(ValueError):
        call(confidences, correct, bins)


@pytest.mark.parametrize("bins", [0, -1, 2.5])
def test_bin_edges_and_empty_reject_bad_bins(bins):
    with pytest.raises(ValueError):
        bin_edges(bins)
    with pytest.raises(ValueError):
        BinStats.empty(bins)


def test_numpy_integer_bins_are_accepted():
    ece, populated = expected_calibration_error([0.3, 0.7], [True, False], bins=np.int64(10))
    assert populated == 2 and close(ece, 0.7)
