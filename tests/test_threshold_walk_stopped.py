"""When Learn then Test passes no threshold, the warning, the gate's reason (JSON, stderr), the
Markdown summary and the HTML page say where its fixed-sequence walk stopped: the threshold it
tested first, that threshold's rows, wrong answers and p-value, and what may pass instead.

The rows: 4 at confidence 0.9985 (one of them wrong), then 96 right answers at 0.5, 0.501, ...,
0.595. At a target accuracy of 0.3 (α = 0.7) and δ = 0.05 a test needs n rows with
0.3^n <= 0.05, so n >= 3: the grid points above 0.9985 accept no row and are not tested, the
first one at or below it accepts the 4 rows, and P[Binom(4, 0.7) <= 1] = 0.3^4 + 4·0.7·0.3^3 =
0.0837 > 0.05 ends the walk there. Yet every row together is 99 right of 100: the old warning,
"no threshold reaches accuracy 0.3 with confidence 0.95", was false of the rows, and SGR finds
the threshold 0.5.
"""

from __future__ import annotations

import html
import json
from fractions import Fraction
from math import comb

from harness import run, write_jsonl

TOP, BELOW = 0.9985, 0.5
HEAD = "Learn then Test's fixed-sequence test stopped at the first threshold it tested"
TAIL = (
    "and no threshold below it is tested, so no threshold reaches accuracy 0.3 with confidence "
    "0.95 by this test, whatever the rows below it hold; --method sgr, or {hint}, may find one "
    "(each setting tried on the same rows adds up to δ to the risk of a false guarantee)"
)
COARSER = "a coarser --grid whose first threshold accepts more rows"


def _rows():
    rows = [{"confidence": TOP, "correct": i != 0} for i in range(4)]
    return rows + [{"confidence": BELOW + i / 1000, "correct": True} for i in range(96)]


def _grid(size=121):
    """The documented grid: t_i = 1 − 10^(−6·j/(size − 1)), j = size − 1 down to 0."""
    return [1.0 - 10.0 ** -(6 * j / (size - 1)) for j in range(size - 1, -1, -1)]


def _p_value():
    """P[Binom(4, 0.7) <= 1], exactly."""
    a, r = Fraction(7, 10), Fraction(3, 10)
    exact = r**4 + 4 * a * r**3
    assert exact == Fraction(837, 10000)
    return "0.0837"


def _first_tested():
    """The first grid point that accepts the top rows, its 1-based place, and how many above it
    accept none."""
    grid = _grid()
    place = next(i for i, t in enumerate(grid) if t <= TOP)
    assert all(t > TOP for t in grid[:place])  # above every row: nothing accepted, untested
    return grid[place], place


def _expected():
    t, above = _first_tested()
    where = (
        f"{t:.6g} (grid point {above + 1} of 121; the {above} above it accept too few rows to test)"
    )
    rows = "4 of the 100 rows, 1 of them wrong"
    return f"{HEAD}, {where}, which accepts {rows}: p = {_p_value()} > δ = 0.05, " + TAIL.format(
        hint=COARSER
    )


def test_the_warning_and_the_gate_say_where_the_walk_stopped(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", _rows())
    summary, page = tmp_path / "summary.md", tmp_path / "page.html"
    args = ["threshold", path, "--target-accuracy", "0.3", "--min-coverage", "0.5", "-q"]
    result = run([*args, "--json", "--summary", summary, "--html", page])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["guaranteed"]["threshold"] is None and body["guaranteed"]["tests_run"] == 1
    said = _expected()
    assert said in body["warnings"]
    assert not any(w.startswith("no threshold reaches") for w in body["warnings"])
    assert body["gate"]["checks"][0]["reason"] == said
    assert f"warning: {said}" in result.stderr.splitlines()
    assert f"gate failed: coverage: {said}; cannot support --min-coverage 0.5" in result.stderr
    markdown = summary.read_text(encoding="utf-8")
    assert f"> warning: {said.replace('>', chr(92) + '>')}" in markdown
    assert said in html.unescape(page.read_text(encoding="utf-8"))
    # the terminal table run says the same
    table = run(args)
    assert f"warning: {said}" in table.stderr.splitlines()


def test_sgr_finds_the_threshold_the_walk_never_reached(tmp_path):
    """What the message suggests: SGR bisects the 97 distinct confidences in ⌈log2 97⌉ = 7
    steps at 0.05/7 each, the first at the 49th (52 rows, 1 wrong), and every step passes down
    to the lowest confidence: 100 rows, 1 wrong."""
    path = write_jsonl(tmp_path / "rows.jsonl", _rows())
    args = ["threshold", path, "--target-accuracy", "0.3", "--method", "sgr", "--json", "-q"]
    result = run([*args, "--min-coverage", "0.5"])
    assert result.exit_code == 0
    chosen = json.loads(result.stdout)["guaranteed"]
    assert (chosen["threshold"], chosen["accepted"], chosen["errors"]) == (BELOW, 100, 1)


def test_a_threshold_chosen_on_fit_rows_names_them(tmp_path):
    """With --fit the walk runs on the fit rows, and the message says so."""
    fit = write_jsonl(tmp_path / "fit.jsonl", _rows())
    evaluated = write_jsonl(tmp_path / "eval.jsonl", _rows()[4:])
    args = ["threshold", evaluated, "--fit", fit, "--target-accuracy", "0.3", "--json", "-q"]
    body = json.loads(run(args).stdout)
    said = _expected().replace("4 of the 100 rows", "4 of the 100 fit rows")
    assert said != _expected() and said in body["warnings"]


def test_every_distinct_confidence_names_the_confidence_tested(tmp_path):
    """--grid 0: the first candidate is the highest confidence, 0.9985, which accepts 4 rows."""
    path = write_jsonl(tmp_path / "rows.jsonl", _rows())
    args = ["threshold", path, "--target-accuracy", "0.3", "--grid", "0", "--json", "-q"]
    body = json.loads(run(args).stdout)
    said = (
        f"{HEAD}, the confidence 0.9985, which accepts 4 of the 100 rows, 1 of them wrong: "
        f"p = {_p_value()} > δ = 0.05, " + TAIL.format(hint="the default grid")
    )
    assert said in body["warnings"]


def test_groups_list_where_each_walk_stopped(tmp_path):
    """Two groups whose walks stop alike: one warning names each group's threshold, rows,
    wrong answers and p-value."""
    rows = [{**r, "g": g} for g in ("a", "b") for r in _rows()]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    args = ["threshold", path, "--by", "g", "--target-accuracy", "0.3", "--json", "-q"]
    body = json.loads(run(args).stdout)
    t, _ = _first_tested()
    each = f"{t:.6g}: 4 of the 100 rows, 1 of them wrong, p = {_p_value()}"
    general = f"{HEAD} (shown with its rows, wrong answers and p-value > δ = 0.05), "
    said = f"2 groups, a ({each}), b ({each}): {general}" + TAIL.format(hint=COARSER)
    assert said in body["warnings"]


def test_sgr_says_its_tests_failed(tmp_path):
    """Ten rows at 0.9 with five wrong and ten at 0.5 with two: two distinct confidences, so SGR
    runs one test at δ, at the top point: P[Binom(10, 0.3) <= 5] > 0.05."""
    rows = [{"confidence": 0.9, "correct": i >= 5} for i in range(10)]
    rows += [{"confidence": 0.5, "correct": i >= 2} for i in range(10)]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    args = ["threshold", path, "--target-accuracy", "0.7", "--method", "sgr", "--json", "-q"]
    body = json.loads(run(args).stdout)
    a, r = Fraction(3, 10), Fraction(7, 10)
    p = sum(comb(10, k) * a**k * r ** (10 - k) for k in range(6))
    said = (
        f"SGR's bisection passed none of its tests (1, each at level 0.05: δ = 0.05 shared "
        f"among its steps; the smallest p-value {float(p):.3g}), so no threshold reaches "
        "accuracy 0.7 with confidence 0.95 by this test"
    )
    assert said in body["warnings"]


def test_the_choice_says_where_the_walk_stopped():
    """The metric carries the candidate whose failed test ended the walk, and how many above it
    went untested; none when every candidate accepts too few rows."""
    import numpy as np

    from calibcli.metrics import PredictionColumns, RiskCoverage, select_threshold

    conf = np.array([r["confidence"] for r in _rows()])
    right = np.array([r["correct"] for r in _rows()])
    curve = RiskCoverage.from_columns(PredictionColumns(conf[right], conf[~right]))
    grid = np.array(_grid())
    chosen = select_threshold(curve, target_accuracy=0.3, grid=grid)
    t, above = _first_tested()
    assert chosen.threshold is None and chosen.tests_run == 1
    assert (chosen.stopped_at, chosen.skipped) == (t, above)
    # 100 rows cannot show accuracy 0.99 at δ = 1e-10: 0.99^100 > 1e-10, no test is run
    none = select_threshold(curve, target_accuracy=0.99, delta=1e-10, grid=grid)
    assert (none.stopped_at, none.skipped, none.tests_run) == (None, 121, 0)
