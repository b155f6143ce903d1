"""threshold at its edges: a walk that passes every grid point down to t = 0, --fit groups
the evaluated rows lack, and a target accuracy that rounds to 1 in six digits.

Expected values are computed here from the README's definitions (the grid's formula, the
binomial tail), never read back from the code."""

from __future__ import annotations

import json
import math

import numpy as np
from harness import run, write_jsonl

from calibcli.metrics import PredictionColumns, RiskCoverage, select_threshold, threshold_grid

# the default grid from the README: t = 1 − 10^(−6·j/120), j = 120 down to 0
GRID = 1.0 - 10.0 ** -(6.0 * np.arange(120, -1, -1) / 120)


def _highest_grid_point_at_or_below(c):
    return float(GRID[c >= GRID].max())


def _rows(*parts):
    """For each (confidence, right, wrong), that many right rows then wrong ones."""
    rows = []
    for c, right, wrong in parts:
        rows += [{"confidence": c, "correct": True}] * right
        rows += [{"confidence": c, "correct": False}] * wrong
    return [{"id": i, **r} for i, r in enumerate(rows)]


def _binomial_cdf(k, n, p):
    return math.fsum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


def test_walk_through_every_row_stops_at_the_lowest_confidence_seen():
    """100 rows all at 0.9, 95 right, A = 0.85: every grid point from 0.9 down to 0 accepts the
    same 100 rows and passes; the answer is the grid point 0.9 (1 − 10⁻¹), not 0."""
    curve = RiskCoverage.from_columns(
        PredictionColumns(np.full(95, 0.9), np.full(5, 0.9)),
    )
    chosen = select_threshold(curve, target_accuracy=0.85, delta=0.05, grid=threshold_grid())
    assert _highest_grid_point_at_or_below(0.9) == 1.0 - 0.1
    assert chosen.threshold == 1.0 - 0.1
    assert (chosen.accepted, chosen.errors) == (100, 5)
    assert math.isclose(chosen.p_value, _binomial_cdf(5, 100, 0.15), rel_tol=1e-9)
    # every distinct confidence as a candidate: the answer is a row's confidence already
    whole = select_threshold(curve, target_accuracy=0.85, delta=0.05)
    assert whole.threshold == 0.9


def test_held_out_rows_below_every_fit_confidence_are_not_accepted(tmp_path):
    """The reviewer's case: fit rows all at 0.9 (95% right); held-out rows add ten at 0.3, one
    of them right. The threshold is 0.9, so those ten are not accepted: coverage 100/110."""
    fit = write_jsonl(tmp_path / "fit.jsonl", _rows((0.9, 95, 5)))
    ev = write_jsonl(tmp_path / "ev.jsonl", _rows((0.9, 95, 5), (0.3, 1, 9)))
    args = ["threshold", ev, "--fit", fit, "--target-accuracy", "0.85", "-q", "--json"]
    result = run([*args, "--min-coverage", "0.95"])
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    chosen = body["guaranteed"]
    assert chosen["threshold"] == 0.9
    assert chosen["realised"]["accepted"] == 100
    assert chosen["realised"]["errors"] == 5
    assert body["coverage"] == 100 / 110
    assert not [w for w in body["warnings"] if "lowest confidence" in w]
    assert run([*args, "--min-coverage", "0.9"]).exit_code == 0


def test_threshold_below_the_lowest_fit_confidence_is_named(tmp_path):
    """Fit rows all at 0.95: the highest grid point at or below it is 1 − 10^(−1.3) ≈ 0.949881.
    Seven held-out rows at 0.9499 lie between the two: accepted, and the warning says so."""
    point = _highest_grid_point_at_or_below(0.95)
    assert point < 0.9499 < 0.95 and math.isclose(point, 1 - 10**-1.3)
    fit = write_jsonl(tmp_path / "fit.jsonl", _rows((0.95, 98, 2)))
    ev = write_jsonl(tmp_path / "ev.jsonl", _rows((0.95, 48, 2), (0.9499, 6, 1), (0.5, 1, 4)))
    args = ["threshold", ev, "--fit", fit, "--target-accuracy", "0.9", "-q", "--json"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["guaranteed"]["threshold"] == point
    assert body["guaranteed"]["realised"]["accepted"] == 57
    said = [w for w in body["warnings"] if "lowest confidence" in w]
    assert said == [
        f"the guaranteed threshold {point:.6g} lies below 0.95, the lowest confidence among "
        "the rows it was chosen on: it accepts 7 of the evaluated rows between the two on no "
        "evidence"
    ]
    # held-out rows none of which lie between the two, and in-sample rows: nothing to say
    ok = write_jsonl(tmp_path / "ok.jsonl", _rows((0.95, 48, 2), (0.9, 1, 1)))
    for chosen_on in (["--fit", fit], []):
        given = [ok if chosen_on else fit, *chosen_on, "--target-accuracy", "0.9"]
        body = json.loads(run(["threshold", *given, "-q", "--json"]).stdout)
        assert body["guaranteed"]["threshold"] == point
        assert not [w for w in body["warnings"] if "lowest confidence" in w]


def _grouped(path, groups):
    rows = []
    for name, (c, right, wrong) in groups.items():
        rows += [{**r, "g": name} for r in _rows((c, right, wrong))]
    return write_jsonl(path, [{**r, "id": i} for i, r in enumerate(rows)])


def test_groups_only_in_the_fit_rows_are_named(tmp_path):
    """Fit groups a, b, d; evaluated groups a, c: 'c' has no threshold (said before), and 'b'
    and 'd', whose rows shaped the pooled threshold, are named with their row counts."""
    fit = _grouped(tmp_path / "fit.jsonl", {"a": (0.9, 40, 2), "b": (0.8, 30, 9), "d": (0.7, 3, 1)})
    ev = _grouped(tmp_path / "ev.jsonl", {"a": (0.9, 40, 2), "c": (0.6, 5, 5)})
    args = ["threshold", ev, "--fit", fit, "--by", "g", "--target-accuracy", "0.75", "-q"]
    body = json.loads(run([*args, "--json"]).stdout)
    assert list(body["groups"]) == ["a", "c"]
    assert [w for w in body["warnings"] if "--fit input's" in w] == [
        "the --fit input's 2 groups 'b' (39 rows), 'd' (4 rows) have no evaluated rows: they "
        "are not reported, but the pooled threshold was chosen on their rows too"
    ]
    only_b = _grouped(tmp_path / "fit_b.jsonl", {"a": (0.9, 40, 2), "b": (0.8, 30, 9)})
    body = json.loads(run([*args[:3], only_b, *args[4:], "--json"]).stdout)
    assert [w for w in body["warnings"] if "--fit input's" in w] == [
        "the --fit input's group 'b' (39 rows) has no evaluated rows: it is not reported, but "
        "the pooled threshold was chosen on its rows too"
    ]
    same = json.loads(run([*args[:3], ev, *args[4:], "--json"]).stdout)
    assert not [w for w in same["warnings"] if "--fit input's" in w]


def test_target_accuracy_is_shown_as_given(tmp_path):
    """0.999999999 is not 1: the warning and the gate's reason show it as given."""
    rows = write_jsonl(tmp_path / "rows.jsonl", _rows((0.99, 50, 0), (0.5, 10, 10)))
    args = ["threshold", rows, "--target-accuracy", "0.999999999", "--delta", "1e-100", "-q"]
    result = run([*args, "--json", "--min-coverage", "0.1"])
    assert result.exit_code == 1
    reason = "no threshold reaches accuracy 0.999999999 with confidence 1 - 1e-100"
    assert reason in json.loads(result.stdout)["warnings"]
    assert f"warning: {reason}" in result.stderr.splitlines()


def test_the_table_s_heading_shows_the_target_as_given(tmp_path):
    """The heading read ``accuracy >= 1`` for a target of 0.999999999 (six significant digits);
    a target that six digits show exactly is shown as before."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "".join(f'{{"confidence": {0.5 + i / 200}, "correct": true}}\n' for i in range(100)),
        encoding="utf-8",
    )
    for target, shown in (("0.999999999", "0.999999999"), ("0.8", "0.8")):
        result = run(["threshold", rows, "--target-accuracy", target, "-q"])
        assert f"Automation threshold: accuracy >= {shown} with probability" in result.stdout
