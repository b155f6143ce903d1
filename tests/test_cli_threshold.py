"""`calibcli threshold`: guaranteed and plug-in automation thresholds, the risk-coverage table,
AURC / E-AURC / selective accuracy, --fit, the --min-coverage gate, --by, --calibrator and the
outputs.

Every figure is checked against a reference written here: the fixed-sequence (Learn then Test)
loop and the SGR bisection over exact binomial tails (math.comb and fractions.Fraction), the
plug-in rule and realised coverage as plain loops, Clopper-Pearson bounds from
scipy.stats.beta.ppf, and AURC / selective accuracy averaged over every ordering of tied rows
(itertools.permutations). Conventions come from calibcli.metrics.selective's docstrings.
"""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy import stats
from test_cli import run, write_jsonl

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
EPS = 1e-12  # the clip of c before logit(c) (calibcli.metrics.recalibration's contract)
CURVE_KEYS = (
    "threshold",
    "highest_rejected",
    "accepted",
    "errors",
    "coverage",
    "accuracy",
    "accuracy_lower_bound",
)
GUARANTEED_KEYS = {
    "threshold",
    "highest_rejected",
    "lowest_accepted",
    "accepted",
    "errors",
    "coverage",
    "accuracy",
    "accuracy_lower_bound",
    "p_value",
    "test_level",
    "tests_run",
    "realised",
}
SAME_ROWS = "chosen and evaluated on the same rows"
# Learn then Test over every distinct confidence, the walk most tests here pin; its default
# grid has its own tests (test_threshold_grid.py) and runs beside it where marked
DISTINCT = ("--grid", "0")


# --------------------------------------------------------------------------- data


def expand(levels):
    """Rows (confidence, correct) from (confidence, rows, wrong answers): ties on purpose."""
    rows = []
    for c, n, wrong in levels:
        rows += [(c, False)] * wrong + [(c, True)] * (n - wrong)
    return rows


# 60 rows on 12 distinct confidences. Cumulative accepted rows from the top:
# 6, 11, 18, 22, 28, 33, 39, 44, 50, 54, 57, 60 with 0, 0, 1, 1, 2, 3, 5, 7, 10, 12, 14, 16 errors.
LEVELS = [
    (0.97, 6, 0),
    (0.93, 5, 0),
    (0.9, 7, 1),
    (0.88, 4, 0),
    (0.85, 6, 1),
    (0.8, 5, 1),
    (0.75, 6, 2),
    (0.7, 5, 2),
    (0.6, 6, 3),
    (0.5, 4, 2),
    (0.4, 3, 2),
    (0.3, 3, 2),
]
ROWS = expand(LEVELS)
# A second group for --by: 40 rows, 12 right at the top, then many errors. Cumulative rows
# 12, 22, 30, 36, 40 with 0, 3, 5, 9, 12 errors.
OTHER = expand([(0.95, 12, 0), (0.9, 10, 3), (0.8, 8, 2), (0.7, 6, 4), (0.2, 4, 3)])


def dump(path, rows, **extra):
    return write_jsonl(path, [{"confidence": c, "correct": y, **extra} for c, y in rows])


def rows_of(path):
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def threshold_json(*args):
    result = run(["threshold", *args, "--json", "-q"])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout), result


# --------------------------------------------------------------------------- references


def curve_of(rows):
    """(t_j, n_j, e_j): distinct confidences descending, rows with c >= t_j, errors among them."""
    ts = sorted({c for c, _ in rows}, reverse=True)
    ns = [sum(1 for c, _ in rows if c >= t) for t in ts]
    es = [sum(1 for c, y in rows if c >= t and not y) for t in ts]
    return ts, ns, es


def grid_points(size=121):
    """Learn then Test's default candidates as documented: t = 1 - 10 ** -(6 * j / (size - 1))
    for j = size - 1 down to 0, highest first."""
    return [1.0 - 10.0 ** -(6 * j / (size - 1)) for j in range(size - 1, -1, -1)]


def binomial_cdf(e, n, alpha):
    """P[Binom(n, alpha) <= e], exact."""
    return sum(math.comb(n, k) * alpha**k * (1 - alpha) ** (n - k) for k in range(e + 1))


def clear_of(p, level):
    """The reference's decision is far from the boundary, so float rounding cannot flip it."""
    return abs(p - level) > Fraction(1, 10**9) * level


def ltt_reference(rows, target, delta, *, exact=True, grid=None):
    """Fixed-sequence testing from the highest threshold down, as the selective docstring says.

    The candidates are ``grid`` (thresholds, highest first) or every distinct confidence.
    alpha is the float 1 - A the tool tests with, taken exactly. Thresholds whose n accepted
    rows cannot reject H0 even with no errors ((1 - alpha)^n > delta) are skipped; each other
    t_j passes when p_j = P[Binom(n_j, alpha) <= e_j] <= delta; the loop stops at the first
    failure and the answer is the last threshold that passed. ``exact=False`` takes the tails
    from scipy.stats.binom in floating point instead (for thousands of rows).
    """
    if grid is None:
        ts, ns, es = curve_of(rows)
    else:
        ts = list(grid)
        ns = [sum(1 for c, _ in rows if c >= t) for t in ts]
        es = [sum(1 for c, y in rows if c >= t and not y) for t in ts]
    if exact:
        alpha, level = Fraction(1.0 - target), Fraction(delta)
        cdf = binomial_cdf
    else:
        alpha, level = 1.0 - target, delta

        def cdf(e, n, alpha):
            return float(stats.binom.cdf(e, n, alpha))

    best, tests, p_values = None, 0, []
    for j, (n, e) in enumerate(zip(ns, es, strict=True)):
        if not tests:  # n grows along the curve: only a leading run is untestable
            untestable = (1 - alpha) ** n
            assert clear_of(untestable, level)
            if untestable > level:
                continue
        p = cdf(e, n, alpha)
        assert clear_of(p, level)
        tests += 1
        p_values.append(p)
        if p > level:
            break
        best = j
    if best is not None and ns[best] == len(rows):
        # below the lowest confidence every candidate accepts every row: the answer is the
        # highest of them, as the selective docstring says, never one lower on no evidence
        best = ns.index(len(rows))
    return _answer(ts, ns, es, best, tests, p_values)


def sgr_reference(rows, target, delta):
    """Bisection over the m thresholds for K = max(1, ceil(log2 m)) steps at level delta / K:
    a pass moves to lower thresholds (higher index), a failure to higher ones; the answer is
    the lowest threshold that passed."""
    ts, ns, es = curve_of(rows)
    m = len(ts)
    steps = max(1, (m - 1).bit_length())  # ceil(log2 m) for m >= 1, in integers
    alpha, level = Fraction(1.0 - target), Fraction(delta) / steps
    lo, hi = -1, m
    best, tests, p_values = None, 0, []
    while tests < steps and hi - lo > 1:
        mid = (lo + hi) // 2
        p = binomial_cdf(es[mid], ns[mid], alpha)
        assert clear_of(p, level)
        tests += 1
        p_values.append(p)
        if p <= level:
            lo = mid
            best = mid if best is None else max(best, mid)
        else:
            hi = mid
    out = _answer(ts, ns, es, best, tests, p_values)
    out["steps"] = steps
    return out


def _answer(ts, ns, es, best, tests, p_values):
    if best is None:
        p = min(p_values) if p_values else None
        return {"threshold": None, "accepted": 0, "errors": 0, "tests_run": tests, "p_value": p}
    return {
        "threshold": ts[best],
        "accepted": ns[best],
        "errors": es[best],
        "tests_run": tests,
        "index": best,
    }


def plug_in_reference(rows, target):
    """The lowest threshold whose empirical accuracy (n - e) / n (float quotient) is >= A."""
    ts, ns, es = curve_of(rows)
    passing = [j for j in range(len(ts)) if (ns[j] - es[j]) / ns[j] >= target]
    return ts[passing[-1]] if passing else None


def clopper_pearson_lower(successes, n, level):
    return 0.0 if successes == 0 else float(stats.beta.ppf(level, successes, n - successes + 1))


def realised(rows, threshold):
    """Accepted rows, errors, coverage and accuracy of accepting c >= threshold, and the
    confidences either side of it, by a loop."""
    accepted = errors = 0
    for c, y in rows:
        if c >= threshold:
            accepted += 1
            errors += not y
    return {
        "highest_rejected": max((c for c, _ in rows if c < threshold), default=None),
        "lowest_accepted": min((c for c, _ in rows if c >= threshold), default=None),
        "accepted": accepted,
        "errors": errors,
        "coverage": accepted / len(rows),
        "accuracy": (accepted - errors) / accepted if accepted else None,
    }


def check_guaranteed(got, ref, rows, *, target, test_level, none_p_value=True):
    """The report's guaranteed block against a reference answer on ``rows``. When nothing
    passed, the p-value is the smallest among the tests run (null when none ran)."""
    assert got["threshold"] == ref["threshold"]
    assert got["accepted"] == ref["accepted"] and got["errors"] == ref["errors"]
    assert got["tests_run"] == ref["tests_run"]
    assert got["test_level"] == pytest.approx(test_level, rel=1e-15)
    if ref["threshold"] is None:
        assert got["coverage"] == 0.0 and got["accuracy"] is None
        assert got["accuracy_lower_bound"] is None
        if none_p_value and ref["p_value"] is not None:
            assert got["p_value"] == pytest.approx(float(ref["p_value"]), rel=1e-10)
        elif ref["p_value"] is None:
            assert got["p_value"] is None
        return
    n, e = ref["accepted"], ref["errors"]
    assert got["coverage"] == n / len(rows)
    assert got["accuracy"] == (n - e) / n
    # p-value at the answer and the Clopper-Pearson bound at the test level
    target_alpha = Fraction(1.0 - target)
    assert got["p_value"] == pytest.approx(float(binomial_cdf(e, n, target_alpha)), rel=1e-10)
    assert got["accuracy_lower_bound"] == pytest.approx(
        clopper_pearson_lower(n - e, n, test_level), abs=1e-9
    )


# --------------------------------------------------------------------------- report schema


def test_json_schema_and_types(tmp_path):
    path = dump(tmp_path / "rows.jsonl", ROWS)
    report, result = threshold_json(path, "--target-accuracy", "0.75", "--delta", "0.1")
    assert result.exit_code == 0
    assert report["schema_version"] == 1
    assert report["command"] == "threshold"
    assert report["n"] == 60
    assert report["target_accuracy"] == 0.75 and report["delta"] == 0.1
    assert report["method"] == "ltt"
    assert set(report["guaranteed"]) == GUARANTEED_KEYS
    plug_keys = {"threshold", "accepted", "errors", "coverage", "accuracy", "realised"}
    plug_keys |= {"highest_rejected", "lowest_accepted"}
    assert set(report["plug_in"]) == plug_keys
    # without --fit the evaluated rows are the rows the thresholds were chosen on
    for block, keys in ((report["guaranteed"], 7), (report["plug_in"], 6)):
        seen = block["realised"]
        assert len(seen) == keys and all(seen[k] == block[k] for k in seen)
    for key in ("coverage", "aurc", "e_aurc"):
        assert isinstance(report[key], float)
    assert set(report["selective_accuracy"]) == {"10", "50", "90"}
    assert set(report["curve"]) == set(CURVE_KEYS)
    lengths = {len(report["curve"][k]) for k in CURVE_KEYS}
    assert len(lengths) == 1
    for block in (report["guaranteed"], report["plug_in"]):
        for key in ("accepted", "errors"):
            assert type(block[key]) is int
    assert type(report["guaranteed"]["tests_run"]) is int
    for key in ("accepted", "errors"):
        assert all(type(v) is int for v in report["curve"][key])
    assert isinstance(report["warnings"], list)
    assert any(SAME_ROWS in w for w in report["warnings"])
    assert SAME_ROWS in result.stderr
    assert "gate" not in report  # no --min-coverage: no gate, exit 0


# --------------------------------------------------------------------------- thresholds

CASES = [
    # (A, delta): chosen so that answers land at the top, in the middle and at the bottom
    (0.8, 0.1),  # LTT skips t_0, passes t_1..t_5 and stops at t_6; SGR finds nothing
    (0.75, 0.1),
    (0.7, 0.05),
    (0.6, 0.05),  # every threshold passes LTT; SGR's last step fails at delta / 4
    (0.9, 0.3),  # nothing passes either
]


@pytest.mark.parametrize(("target", "delta"), CASES)
@pytest.mark.parametrize(("method", "grid"), [("ltt", 0), ("ltt", None), ("sgr", None)])
def test_threshold_matches_reference_loop(tmp_path, target, delta, method, grid):
    path = dump(tmp_path / "rows.jsonl", ROWS)
    args = [path, "--target-accuracy", target, "--delta", delta, "--method", method]
    report, result = threshold_json(*args, *([] if grid is None else ["--grid", grid]))
    assert result.exit_code == 0
    assert report["method"] == method
    if method == "ltt":
        points = grid_points() if grid is None else None
        assert report["grid"] == (121 if grid is None else 0)
        ref, level = ltt_reference(ROWS, target, delta, grid=points), delta
    else:
        ref = sgr_reference(ROWS, target, delta)
        level = delta / ref["steps"]
    got = report["guaranteed"]
    check_guaranteed(got, ref, ROWS, target=target, test_level=level)
    if ref["threshold"] is not None:
        assert got["accuracy_lower_bound"] >= target
    if method == "sgr":
        assert report["grid"] is None
    # the plug-in rule: lowest t with empirical accuracy >= A, no guarantee
    plug = report["plug_in"]
    expected = plug_in_reference(ROWS, target)
    assert plug["threshold"] == expected
    n = sum(1 for c, _ in ROWS if c >= expected)
    e = sum(1 for c, y in ROWS if c >= expected and not y)
    assert (plug["accepted"], plug["errors"]) == (n, e)
    assert plug["coverage"] == n / 60 and plug["accuracy"] == (n - e) / n
    # without a --fit input the gated coverage is the guaranteed threshold's own
    assert report["coverage"] == report["guaranteed"]["coverage"]


def test_reference_cases_are_not_trivial():
    """The hand-made cases exercise skipped, passing and failing thresholds of both methods."""
    ltt = [ltt_reference(ROWS, a, d) for a, d in CASES]
    sgr = [sgr_reference(ROWS, a, d) for a, d in CASES]
    assert [r["threshold"] for r in ltt] == [0.8, 0.75, 0.7, 0.3, None]
    assert [r["threshold"] for r in sgr] == [None, 0.8, 0.75, 0.4, None]
    assert any(r["threshold"] != s["threshold"] for r, s in zip(ltt, sgr, strict=True))
    # (0.8, 0.1): 0.8^n > 0.1 for n = 6, so t_0 is skipped and 6 tests run from t_1
    assert ltt[0]["tests_run"] == 6


def test_ltt_with_no_passing_threshold_reports_the_first_test(tmp_path):
    """Ten rows at 0.9 with five wrong: the first test already fails (0.7^10 <= 0.05, so it is
    testable); no threshold, coverage 0 and the p-value of that test."""
    rows = expand([(0.9, 10, 5), (0.5, 10, 2)])
    path = dump(tmp_path / "rows.jsonl", rows)
    report, result = threshold_json(path, "--target-accuracy", "0.7")
    assert result.exit_code == 0  # no gate asked for
    got = report["guaranteed"]
    assert got["threshold"] is None and got["tests_run"] == 1
    assert (got["accepted"], got["errors"], got["coverage"]) == (0, 0, 0.0)
    assert got["p_value"] == pytest.approx(float(binomial_cdf(5, 10, Fraction(1.0 - 0.7))))
    assert report["coverage"] == 0.0
    assert any("no threshold reaches accuracy 0.7" in w for w in report["warnings"])


def test_ltt_no_pass_p_value_is_that_of_the_test_run(tmp_path):
    """A = 0.8, delta = 0.05: t_0 and t_1 (6 and 11 rows) are untestable (0.8^11 > 0.05), t_2
    (18 rows, 1 error) is the one test run and fails. The p-value reported must be P[Binom(18,
    0.2) <= 1] ~ 0.099 (the smallest among the tests run), not that of the untested t_0."""
    path = dump(tmp_path / "rows.jsonl", ROWS)
    report, _ = threshold_json(path, "--target-accuracy", "0.8", "--delta", "0.05", *DISTINCT)
    ref = ltt_reference(ROWS, 0.8, 0.05)
    assert ref["threshold"] is None and ref["tests_run"] == 1
    got = report["guaranteed"]
    assert got["threshold"] is None and got["tests_run"] == 1
    assert got["p_value"] == pytest.approx(float(ref["p_value"]), rel=1e-10)


def test_no_testable_threshold(tmp_path):
    """Five rows cannot support A = 0.9 at delta = 0.05 (0.9^5 > 0.05): nothing is tested."""
    path = dump(tmp_path / "rows.jsonl", expand([(0.99, 5, 0)]))
    report, result = threshold_json(path, "--target-accuracy", "0.9")
    assert result.exit_code == 0
    got = report["guaranteed"]
    assert got["threshold"] is None and got["tests_run"] == 0 and got["p_value"] is None
    assert report["plug_in"]["threshold"] == 0.99  # the plug-in has no such scruple


confidence_grid = st.sampled_from([0.2, 0.35, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 0.95, 1.0])


@given(
    rows=st.lists(st.tuples(confidence_grid, st.booleans()), min_size=1, max_size=40),
    target=st.sampled_from([0.5, 0.6, 0.7, 0.8, 0.9]),
    delta=st.sampled_from([0.05, 0.1, 0.25]),
    method=st.sampled_from(["ltt", "sgr"]),
    grid=st.sampled_from([0, 2, 7, 121]),
)
def test_threshold_property(rows, target, delta, method, grid):
    """Random tied rows through stdin: both methods agree with the reference loops, Learn then
    Test over every distinct confidence and over grids of several sizes."""
    try:
        if method == "ltt":
            points = grid_points(grid) if grid else None
            ref = ltt_reference(rows, target, delta, grid=points)
        else:
            ref = sgr_reference(rows, target, delta)
    except AssertionError:  # pragma: no cover - a decision within 1e-9 of the level
        assume(False)
    text = "".join(json.dumps({"confidence": c, "correct": y}) + "\n" for c, y in rows)
    args = ["threshold", "-", "--target-accuracy", target, "--delta", delta, "--method", method]
    args += ["--grid", grid] if method == "ltt" else []
    result = run([*args, "--json", "-q"], input=text)
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)["guaranteed"]
    assert got["threshold"] == ref["threshold"]
    assert (got["accepted"], got["errors"]) == (ref["accepted"], ref["errors"])
    assert got["tests_run"] == ref["tests_run"]
    if got["threshold"] is not None:
        assert got["accuracy_lower_bound"] >= target


# --------------------------------------------------------------------------- curve and figures


def test_full_curve_counts_and_clopper_pearson(tmp_path):
    path = dump(tmp_path / "rows.jsonl", ROWS)
    delta = 0.1
    report, _ = threshold_json(path, "--target-accuracy", "0.75", "--delta", delta, "--full")
    curve = report["curve"]
    ts, ns, es = curve_of(ROWS)
    assert curve["threshold"] == ts
    assert curve["accepted"] == ns and curve["errors"] == es
    assert curve["coverage"] == [n / 60 for n in ns]
    assert curve["accuracy"] == [(n - e) / n for n, e in zip(ns, es, strict=True)]
    for got, n, e in zip(curve["accuracy_lower_bound"], ns, es, strict=True):
        assert got == pytest.approx(clopper_pearson_lower(n - e, n, delta), abs=1e-9)


def test_clopper_pearson_with_zero_successes(tmp_path):
    """A top group of wrong answers: s = 0 has lower bound 0; all right has delta^(1/n)."""
    rows = expand([(0.9, 3, 3), (0.5, 4, 0)])
    path = dump(tmp_path / "rows.jsonl", rows)
    report, _ = threshold_json(path, "--target-accuracy", "0.5", "--full")
    assert report["curve"]["accuracy_lower_bound"][0] == 0.0
    bound = report["curve"]["accuracy_lower_bound"][1]
    assert bound == pytest.approx(clopper_pearson_lower(4, 7, 0.05), abs=1e-9)
    ones = expand([(0.9, 8, 0)])
    report, _ = threshold_json(dump(tmp_path / "ones.jsonl", ones), "--target-accuracy", "0.5")
    assert report["curve"]["accuracy_lower_bound"] == [pytest.approx(0.05 ** (1 / 8), abs=1e-12)]


def test_clopper_pearson_on_sample_data():
    path = SAMPLE / "well_calibrated.jsonl"
    report, _ = threshold_json(path, "--target-accuracy", "0.8", "--delta", "0.05")
    curve = report["curve"]
    columns = (curve["accuracy_lower_bound"], curve["accepted"], curve["errors"])
    for got, n, e in zip(*columns, strict=True):
        assert got == pytest.approx(clopper_pearson_lower(n - e, n, 0.05), abs=1e-9)
    chosen = report["guaranteed"]
    n, e = chosen["accepted"], chosen["errors"]
    assert chosen["accuracy_lower_bound"] == pytest.approx(
        clopper_pearson_lower(n - e, n, 0.05), abs=1e-9
    )


def orderings(rows):
    """Every order of the rows that sorts them by confidence, descending (ties permuted)."""
    groups = [[r for r in rows if r[0] == t] for t in sorted({c for c, _ in rows}, reverse=True)]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [r for part in parts for r in part]


# 10 rows, groups of 3, 1, 4 and 2 tied rows: 3! * 1! * 4! * 2! = 288 orderings
TINY = expand([(0.9, 3, 1), (0.8, 1, 0), (0.6, 4, 2), (0.3, 2, 1)])


def test_aurc_and_e_aurc_average_over_tie_orderings(tmp_path):
    total = len(TINY)
    areas = []
    for order in orderings(TINY):
        wrong = 0
        area = Fraction(0)
        for k, (_, y) in enumerate(order, start=1):
            wrong += not y
            area += Fraction(wrong, k)
        areas.append(area / total)
    assert len(areas) == 288
    expected = sum(areas) / len(areas)
    errors = sum(1 for _, y in TINY if not y)
    oracle = sum(Fraction(max(0, k - (total - errors)), k) for k in range(1, total + 1)) / total
    report, _ = threshold_json(dump(tmp_path / "tiny.jsonl", TINY), "--target-accuracy", "0.5")
    assert report["aurc"] == pytest.approx(float(expected), abs=1e-12)
    assert report["e_aurc"] == pytest.approx(float(expected - oracle), abs=1e-12)


def test_selective_accuracy_average_over_tie_orderings(tmp_path):
    """k = the smallest k with k / N >= c (float quotient): 1, 5 and 9 of the 10 rows; the cut
    falls inside a tied group each time, which then counts pro rata."""
    total = len(TINY)
    report, _ = threshold_json(dump(tmp_path / "tiny.jsonl", TINY), "--target-accuracy", "0.5")
    for key, c in (("10", 0.1), ("50", 0.5), ("90", 0.9)):
        k = next(k for k in range(1, total + 1) if k / total >= c)
        accuracies = [Fraction(sum(y for _, y in order[:k]), k) for order in orderings(TINY)]
        expected = sum(accuracies) / len(accuracies)
        assert report["selective_accuracy"][key] == pytest.approx(float(expected), abs=1e-12)
    assert [next(k for k in range(1, 11) if k / 10 >= c) for c in (0.1, 0.5, 0.9)] == [1, 5, 9]


def test_default_table_rows_at_round_coverages(tmp_path):
    """At most 20 rows: for i = 1..20 the first threshold whose coverage reaches i / 20."""
    path = dump(tmp_path / "rows.jsonl", ROWS)
    report, _ = threshold_json(path, "--target-accuracy", "0.75")
    ts, ns, _ = curve_of(ROWS)
    picks = sorted({next(j for j, n in enumerate(ns) if n * 20 >= i * 60) for i in range(1, 21)})
    assert report["curve"]["threshold"] == [ts[j] for j in picks]
    assert len(report["curve"]["threshold"]) <= 20


def test_full_on_sample_data_has_every_distinct_threshold():
    path = SAMPLE / "well_calibrated.jsonl"
    distinct = {r["confidence"] for r in rows_of(path)}
    full, _ = threshold_json(path, "--target-accuracy", "0.8", "--full")
    assert len(full["curve"]["threshold"]) == len(distinct)
    assert full["curve"]["threshold"] == sorted(distinct, reverse=True)
    short, _ = threshold_json(path, "--target-accuracy", "0.8")
    assert 1 <= len(short["curve"]["threshold"]) <= 20


# --------------------------------------------------------------------------- --fit

# Main rows for --fit: the fit rows' answer at A = 0.75, delta = 0.1 is t = 0.75 (39 of 60
# rows there); here c >= 0.75 holds 3 + 4 + 5 = 12 of 30 rows with 3 errors, and 0.74 sits
# just below it.
HELD_OUT = expand([(0.99, 3, 0), (0.8, 4, 1), (0.75, 5, 2), (0.74, 10, 3), (0.5, 8, 4)])


def test_fit_chooses_on_fit_rows_and_realises_on_main(tmp_path):
    fit = dump(tmp_path / "fit.jsonl", ROWS)
    main = dump(tmp_path / "main.jsonl", HELD_OUT)
    args = [main, "--fit", fit, "--target-accuracy", "0.75", "--delta", "0.1", *DISTINCT]
    report, result = threshold_json(*args)
    assert result.exit_code == 0
    ref = ltt_reference(ROWS, 0.75, 0.1)
    got = report["guaranteed"]
    assert got["threshold"] == ref["threshold"] == 0.75
    assert (got["accepted"], got["errors"]) == (ref["accepted"], ref["errors"])  # on fit rows
    assert got["coverage"] == ref["accepted"] / 60
    assert report["fit_n"] == 60 and report["n"] == 30
    seen = dict(got["realised"])
    # the realised bound: Clopper-Pearson at delta on the held-out rows (9 right of 12)
    bound = seen.pop("accuracy_lower_bound")
    assert bound == pytest.approx(clopper_pearson_lower(9, 12, 0.1), rel=1e-9)
    assert seen == realised(HELD_OUT, 0.75)
    assert seen["accepted"] == 12 and seen["errors"] == 3
    plug = report["plug_in"]
    assert plug["threshold"] == plug_in_reference(ROWS, 0.75)
    assert plug["realised"] == realised(HELD_OUT, plug["threshold"])
    assert report["coverage"] == 12 / 30  # the gated coverage is the realised one
    assert report["fit"] == {"files": [str(fit)]}
    # the curve and summary figures are those of the main rows
    assert report["curve"]["accepted"][-1] == 30
    assert not any(SAME_ROWS in w for w in report["warnings"])
    assert SAME_ROWS not in result.stderr


def test_fit_realised_when_no_threshold(tmp_path):
    fit = dump(tmp_path / "fit.jsonl", expand([(0.9, 10, 5), (0.5, 10, 2)]))
    main = dump(tmp_path / "main.jsonl", HELD_OUT)
    report, _ = threshold_json(main, "--fit", fit, "--target-accuracy", "0.7")
    realised_block = report["guaranteed"]["realised"]
    assert report["guaranteed"]["threshold"] is None
    assert realised_block == {
        "highest_rejected": None,
        "lowest_accepted": None,
        "accepted": 0,
        "errors": 0,
        "coverage": 0.0,
        "accuracy": None,
        "accuracy_lower_bound": None,
    }


def test_fit_rows_missing_for_the_pool_or_a_group_are_named(tmp_path):
    """An empty --fit input, or one without a group's rows, has no threshold to choose there:
    the warning and the closed gate say which, the pooled input or the group."""
    main = tmp_path / "main.jsonl"
    write_jsonl(main, [{"confidence": c, "correct": y, "g": "a"} for c, y in ROWS])
    with main.open("a", encoding="utf-8") as f:
        f.writelines(json.dumps({"confidence": c, "correct": y, "g": "b"}) + "\n" for c, y in OTHER)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    gate = ["--target-accuracy", "0.75", "--min-coverage", "0.1"]
    report, result = threshold_json(main, "--fit", empty, *gate)
    assert result.exit_code == 1
    assert "the --fit input holds no rows: there is no threshold" in report["warnings"]
    assert gate_lines(result) == [
        "gate failed: coverage: the --fit input holds no rows; cannot support --min-coverage 0.1"
    ]
    fit = dump(tmp_path / "fit.jsonl", ROWS, g="a")
    report, result = threshold_json(main, "--fit", fit, *gate, "--by", "g", "--gate-each")
    assert result.exit_code == 1
    assert (
        "group 'b': the --fit input holds no rows of this group: it has no threshold"
        in (report["warnings"])
    )
    assert (
        "gate failed: coverage in group 'b': the --fit input holds no rows of this group; "
        "cannot support --min-coverage 0.1"
    ) in gate_lines(result)


# --------------------------------------------------------------------------- the gate


def gate_lines(result):
    return [line for line in result.stderr.splitlines() if line.startswith("gate failed: ")]


def test_min_coverage_gate_without_fit(tmp_path):
    path = dump(tmp_path / "rows.jsonl", ROWS)
    base = [path, "--target-accuracy", "0.75", "--delta", "0.1", *DISTINCT]
    coverage = ltt_reference(ROWS, 0.75, 0.1)["accepted"] / 60  # 39 / 60 = 0.65
    report, result = threshold_json(*base, "--min-coverage", coverage)
    assert result.exit_code == 0 and report["gate"]["passed"] is True
    assert not gate_lines(result)
    check = report["gate"]["checks"][0]
    assert check["metric"] == "coverage" and check["value"] == coverage
    report, result = threshold_json(*base, "--min-coverage", "0.66")
    assert result.exit_code == 1 and report["gate"]["passed"] is False
    lines = gate_lines(result)
    assert len(lines) == 1 and "coverage = 0.65 is below --min-coverage 0.66" in lines[0]


def test_min_coverage_gate_uses_realised_coverage_with_fit(tmp_path):
    """Chosen on the fit rows with coverage 0.65 there, realised 0.4 on the main rows."""
    fit = dump(tmp_path / "fit.jsonl", ROWS)
    main = dump(tmp_path / "main.jsonl", HELD_OUT)
    base = [main, "--fit", fit, "--target-accuracy", "0.75", "--delta", "0.1", *DISTINCT]
    _, result = threshold_json(*base, "--min-coverage", "0.4")
    assert result.exit_code == 0
    report, result = threshold_json(*base, "--min-coverage", "0.5")
    assert result.exit_code == 1  # 0.65 on the fit rows would have passed
    assert report["gate"]["checks"][0]["value"] == 0.4
    assert len(gate_lines(result)) == 1


def test_gate_fails_closed_without_a_threshold():
    """No threshold of the overconfident model reaches 0.99 with 95% confidence."""
    args = [SAMPLE / "overconfident.jsonl", "--target-accuracy", "0.99", "--min-coverage", "0"]
    report, result = threshold_json(*args)
    assert result.exit_code == 1
    assert report["guaranteed"]["threshold"] is None
    check = report["gate"]["checks"][0]
    assert check["passed"] is False and "no threshold reaches accuracy 0.99" in check["reason"]
    lines = gate_lines(result)
    assert len(lines) == 1 and "no threshold reaches accuracy 0.99" in lines[0]
    assert "--min-coverage 0" in lines[0]


def test_gate_each_needs_by_and_min_coverage(tmp_path):
    path = dump(tmp_path / "rows.jsonl", ROWS, grp="a")
    result = run(["threshold", path, "--target-accuracy", "0.75", "--gate-each"])
    assert result.exit_code == 2 and "--gate-each needs --by" in result.stderr
    args = ["threshold", path, "--target-accuracy", "0.75", "--gate-each", "--by", "grp"]
    result = run(args)
    assert result.exit_code == 2 and "--min-coverage" in result.stderr


# --------------------------------------------------------------------------- --by


def test_by_groups_choose_their_own_thresholds(tmp_path):
    path = tmp_path / "grouped.jsonl"
    rows = [{"confidence": c, "correct": y, "grp": "a"} for c, y in ROWS]
    rows += [{"confidence": c, "correct": y, "grp": "b"} for c, y in OTHER]
    write_jsonl(path, rows)
    base = [path, "--target-accuracy", "0.75", "--delta", "0.1", "--by", "grp", *DISTINCT]
    report, result = threshold_json(*base)
    assert result.exit_code == 0
    pooled = ROWS + OTHER
    for name, part in (("a", ROWS), ("b", OTHER), (None, pooled)):
        section = report if name is None else report["groups"][name]
        ref = ltt_reference(part, 0.75, 0.1)
        assert section["n"] == len(part)
        check_guaranteed(section["guaranteed"], ref, part, target=0.75, test_level=0.1)
        assert section["plug_in"]["threshold"] == plug_in_reference(part, 0.75)
        assert section["curve"]["accepted"][-1] == len(part)
    # the two groups' thresholds differ, so each is its own
    assert report["groups"]["a"]["guaranteed"]["threshold"] == 0.75
    b = ltt_reference(OTHER, 0.75, 0.1)
    assert report["groups"]["b"]["guaranteed"]["threshold"] == b["threshold"] != 0.75

    # --gate-each: the pooled coverage and group a's pass 0.5, group b's does not
    cov_a = 39 / 60
    cov_b = b["accepted"] / 40 if b["threshold"] is not None else 0.0
    cov_pooled = report["coverage"]
    assert cov_a >= 0.5 and cov_pooled >= 0.5 and cov_b < 0.5
    report, result = threshold_json(*base, "--min-coverage", "0.5", "--gate-each")
    assert result.exit_code == 1
    assert report["gate"]["failed_groups"] == ["b"]
    assert len(gate_lines(result)) == 1 and "group 'b'" in gate_lines(result)[0]
    # without --gate-each only the pooled figure is gated
    _, result = threshold_json(*base, "--min-coverage", "0.5")
    assert result.exit_code == 0


# --------------------------------------------------------------------------- sample data


def test_overconfident_model_needs_a_higher_threshold_for_the_same_coverage():
    """overconfident's confidence is 1 - 0.4 (1 - p) with p the well-calibrated one (see
    sample_data/generate.py): a strictly increasing map of the same questions with the same
    outcomes. Both files therefore rank the questions identically, have the same risk-coverage
    counts and pick the same cut: same coverage, but the overconfident threshold is the image
    of the well-calibrated one, which is higher since 1 - 0.4 (1 - p) > p for p < 1."""
    well_rows = rows_of(SAMPLE / "well_calibrated.jsonl")
    over_rows = rows_of(SAMPLE / "overconfident.jsonl")
    assert [r["id"] for r in well_rows] == [r["id"] for r in over_rows]
    assert [r["correct"] for r in well_rows] == [r["correct"] for r in over_rows]
    pairs = sorted(
        (w["confidence"], o["confidence"]) for w, o in zip(well_rows, over_rows, strict=True)
    )
    for (w0, o0), (w1, o1) in itertools.pairwise(pairs):
        assert (w0 < w1) == (o0 < o1) and o0 <= o1  # same order, same ties
    mapping = dict(pairs)

    well, _ = threshold_json(
        SAMPLE / "well_calibrated.jsonl", "--target-accuracy", "0.8", *DISTINCT
    )
    rows = [(r["confidence"], r["correct"]) for r in well_rows]
    ref = ltt_reference(rows, 0.8, 0.05, exact=False)
    assert well["guaranteed"]["threshold"] == ref["threshold"]
    assert well["guaranteed"]["tests_run"] == ref["tests_run"]
    over, _ = threshold_json(SAMPLE / "overconfident.jsonl", "--target-accuracy", "0.8", *DISTINCT)
    w, o = well["guaranteed"], over["guaranteed"]
    assert w["threshold"] is not None and o["threshold"] is not None
    assert o["threshold"] > w["threshold"]
    assert o["threshold"] == mapping[w["threshold"]]
    assert o["coverage"] == w["coverage"] > 0
    assert (o["accepted"], o["errors"]) == (w["accepted"], w["errors"])


# --------------------------------------------------------------------------- option errors


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--target-accuracy", "0"],
        ["--target-accuracy", "1"],
        ["--target-accuracy", "1.5"],
        ["--target-accuracy", "nan"],
        ["--target-accuracy", "0.8", "--delta", "0"],
        ["--target-accuracy", "0.8", "--delta", "1"],
        ["--target-accuracy", "0.8", "--min-coverage", "-0.1"],
        ["--target-accuracy", "0.8", "--min-coverage", "1.5"],
        ["--target-accuracy", "0.8", "--method", "bisect"],
    ],
)
def test_option_errors_exit_2(tmp_path, extra):
    path = dump(tmp_path / "rows.jsonl", ROWS)
    result = run(["threshold", path, *extra])
    assert result.exit_code == 2
    assert result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    option = extra[-2] if extra else "--target-accuracy"
    assert option in errors[0]


# --------------------------------------------------------------------------- table and files


def test_table_output(tmp_path):
    path = dump(tmp_path / "rows.jsonl", ROWS)
    result = run(
        ["threshold", path, "--target-accuracy", "0.75", "--delta", "0.1", "-q", *DISTINCT]
    )
    assert result.exit_code == 0
    out = result.stdout
    assert "guaranteed threshold" in out and "0.7500" in out  # the LTT answer t = 0.75
    assert "plug-in threshold (no guarantee)" in out
    assert "Risk-coverage" in out and "lower bound (90%)" in out
    assert "accuracy (*) against coverage; - target accuracy, | guaranteed threshold" in out
    assert "{" not in out  # a table, not JSON


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = dump(tmp_path / "rows.jsonl", ROWS)
    png = tmp_path / "out.png"
    args = ["threshold", path, "--target-accuracy", "0.75", "--plot", png, "--json", "-q"]
    result = run(args)
    assert result.exit_code == 0
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_summary_appends_markdown(tmp_path):
    path = dump(tmp_path / "rows.jsonl", ROWS)
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    args = [
        "threshold",
        path,
        "--target-accuracy",
        "0.75",
        "--delta",
        "0.1",
        *DISTINCT,
        "--summary",
    ]
    result = run([*args, summary, "--json", "-q"])
    assert result.exit_code == 0
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n")
    rest = text[len("# earlier step\n") :]
    assert "calibcli threshold" in rest
    assert "| guaranteed threshold | 0.7500 |" in rest  # ltt answer t = 0.75
    assert "| coverage | 0.6500 |" in rest  # 39 of 60 rows
    plug = plug_in_reference(ROWS, 0.75)
    assert f"| plug-in threshold (no guarantee) | {plug:.4f} |" in rest


# --------------------------------------------------------------------------- --calibrator


def platt(c, a, b):
    c = min(max(c, EPS), 1 - EPS)
    z = a * (math.log(c) - math.log1p(-c)) + b
    return 1 / (1 + math.exp(-z))


def test_calibrator_thresholds_are_on_recalibrated_confidences(tmp_path):
    """Fit platt on the first 1000 well-calibrated rows, threshold the last 1000 through it."""
    lines = (SAMPLE / "well_calibrated.jsonl").read_text(encoding="utf-8").splitlines(True)
    fit_half, score_half = tmp_path / "fit.jsonl", tmp_path / "score.jsonl"
    fit_half.write_text("".join(lines[:1000]), encoding="utf-8")
    score_half.write_text("".join(lines[1000:]), encoding="utf-8")
    cal = tmp_path / "platt.json"
    result = run(["fit", fit_half, "--method", "platt", "-o", cal, "-q"])
    assert result.exit_code == 0
    params = json.loads(cal.read_text(encoding="utf-8"))["params"]
    a, b = params["a"], params["b"]

    rows = [(r["confidence"], r["correct"]) for r in rows_of(score_half)]
    mapped = [(platt(c, a, b), y) for c, y in rows]
    args = ["--target-accuracy", "0.65", "--delta", "0.2", "--full", *DISTINCT]
    raw, _ = threshold_json(score_half, *args)
    cooked, _ = threshold_json(score_half, *args, "--calibrator", cal)
    assert cooked["n"] == 1000
    expected = sorted({c for c, _ in mapped}, reverse=True)
    assert cooked["curve"]["threshold"] == pytest.approx(expected, rel=1e-12, abs=1e-15)
    # platt with a > 0 keeps the order, so the counts are those of the raw rows
    assert a > 0
    assert cooked["curve"]["accepted"] == raw["curve"]["accepted"]
    g_raw, g_cooked = raw["guaranteed"], cooked["guaranteed"]
    assert g_raw["threshold"] is not None and g_cooked["threshold"] is not None
    assert g_cooked["threshold"] == pytest.approx(platt(g_raw["threshold"], a, b), rel=1e-12)
    assert g_cooked["threshold"] != g_raw["threshold"]
    assert (g_cooked["accepted"], g_cooked["errors"]) == (g_raw["accepted"], g_raw["errors"])
    assert cooked["plug_in"]["threshold"] == pytest.approx(
        platt(plug_in_reference(rows, 0.65), a, b), rel=1e-12
    )
    ref = ltt_reference(mapped, 0.65, 0.2, exact=False)
    assert g_cooked["threshold"] == pytest.approx(ref["threshold"], rel=1e-12)
    assert g_cooked["accepted"] == ref["accepted"] and g_cooked["tests_run"] == ref["tests_run"]


def test_calibrator_threshold_says_it_is_on_the_recalibrated_scale(tmp_path):
    """Platt on overconfident rows lowers every confidence: the threshold chosen on the mapped
    confidences, held against the raw ones, would accept nearly every row at the raw accuracy.
    The report says which scale the threshold is on, in the JSON warnings and the headline."""
    lines = (SAMPLE / "overconfident.jsonl").read_text(encoding="utf-8").splitlines(True)
    fit_half, score_half = tmp_path / "fit.jsonl", tmp_path / "score.jsonl"
    fit_half.write_text("".join(lines[:1000]), encoding="utf-8")
    score_half.write_text("".join(lines[1000:]), encoding="utf-8")
    cal = tmp_path / "platt.json"
    assert run(["fit", fit_half, "--method", "platt", "-o", cal, "-q"]).exit_code == 0
    args = [score_half, "--target-accuracy", "0.7", "--calibrator", cal]
    report, _ = threshold_json(*args)
    t = report["guaranteed"]["threshold"]
    raw = [(r["confidence"], r["correct"]) for r in rows_of(score_half)]
    # the trap: every raw confidence clears the recalibrated threshold, at the raw accuracy
    assert all(c >= t for c, _ in raw) and sum(y for _, y in raw) / len(raw) < 0.7
    scale = [w for w in report["warnings"] if "recalibrated scale" in w]
    assert scale == [
        f"the thresholds are on the recalibrated scale (platt, calibrator {cal}): a row is "
        "accepted when its confidence mapped by the calibrator is >= the threshold; compare "
        "the threshold with mapped confidences (calibcli apply), never with the raw ones"
    ]
    shown = run(["threshold", *args, "-q"])
    assert "rows with recalibrated confidence >= threshold are accepted" in " ".join(
        shown.stdout.split()
    )
    plain, _ = threshold_json(score_half, "--target-accuracy", "0.7")
    assert not any("recalibrated scale" in w for w in plain["warnings"])
