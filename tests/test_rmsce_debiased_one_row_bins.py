"""A gate on the debiased RMSCE fails closed when too few bins hold 2 or more rows.

A bin of one row cannot carry the estimator's variance term ō(1 − ō)/(n − 1), so its sum leaves
such bins out while N still counts their rows: on bins of one row each the figure is 0.0
whatever the gaps. ``calibrate --max-rmsce-debiased``, the Python API's ``max_rmsce_debiased``,
an engine's ``report(limits={"rmsce_debiased": ...})`` and ``compare --max-increase
rmsce_debiased=`` fail closed when fewer than ``--min-populated-bins`` bins hold 2 or more rows;
the figure itself is unchanged, and the small-sample advice names smece alone on such bins.

References are numpy by hand: with one row a bin, ECE = mean |c − y| and RMSCE =
sqrt(mean (c − y)²) whatever the edges.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from harness import columns, run, write_jsonl

import calibcli
from calibcli.engines import file_jobs, file_task, finish, merge_all


def calibrate(args):
    result = run(["calibrate", *args, "--json"])
    return result.exit_code, json.loads(result.stdout), result.stderr


def one_row_reference(conf, right):
    """ECE and RMSCE of rows one to a bin: mean |c − y| and sqrt(mean (c − y)²)."""
    c, y = np.asarray(conf, float), np.asarray(right, float)
    return float(np.mean(np.abs(c - y))), float(np.sqrt(np.mean((c - y) ** 2)))


def debiased_reference(conf, right, bins):
    """The debiased RMSCE on equal-width bins, by a loop over the bins (numpy)."""
    c, y = np.asarray(conf, float), np.asarray(right, float)
    k = np.minimum((c * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = k == b
        n = int(m.sum())
        if n < 2:
            continue
        acc = y[m].mean()
        total += n / c.size * ((c[m].mean() - acc) ** 2 - acc * (1 - acc) / (n - 1))
    return float(np.sqrt(max(0.0, total)))


# 60 rows at distinct confidences in [0.6, 1), 2 in 5 right: 60 equal-mass bins hold one each
OVER60 = [{"confidence": 0.6 + 0.4 * (i + 0.5) / 60, "correct": i % 5 < 2} for i in range(60)]
# 10 rows, one a bin: right below 0.5, wrong above
SINGLE = [{"confidence": 0.05 + 0.1 * k, "correct": k < 5} for k in range(10)]
# a calibrated group of 300 rows (30 a bin, round(30·c) right at the bin's centre c) and a
# group of 4 wrong answers at 0.65, 0.75, 0.85, 0.95
CALIBRATED = [
    {"confidence": (k + 0.5) / 10, "correct": j < round(30 * (k + 0.5) / 10), "g": "A"}
    for k in range(10)
    for j in range(30)
]
TINY = [{"confidence": c, "correct": False, "g": "tiny"} for c in (0.65, 0.75, 0.85, 0.95)]


def test_sixty_equal_mass_bins_of_one_row_fail_closed(tmp_path):
    path = write_jsonl(tmp_path / "over60.jsonl", OVER60)
    args = [path, "--strategy", "quantile", "--bins", "60", "--max-rmsce-debiased", "0.05"]
    code, report, stderr = calibrate(args)
    assert report["reliability"]["count"] == [1] * 60
    ece, rmsce = one_row_reference(*columns(OVER60))
    assert report["ece"] == pytest.approx(ece, rel=1e-12)
    assert report["rmsce"] == pytest.approx(rmsce, rel=1e-12)
    assert ece > 0.5 and report["rmsce_debiased"] == 0.0  # the figure is as it was
    assert code == 1
    (check,) = report["gate"]["checks"]
    assert check["passed"] is False
    assert check["reason"] == (
        "only 0 of 60 populated bins hold 2 or more rows, which the debiased RMSCE's variance "
        "term needs (minimum 3)"
    )
    assert f"gate failed: rmsce_debiased: {check['reason']}; cannot support" in stderr


def test_ten_rows_one_a_bin_fail_closed(tmp_path):
    path = write_jsonl(tmp_path / "single.jsonl", SINGLE)
    code, report, stderr = calibrate([path, "--max-rmsce-debiased", "0.05"])
    ece, _ = one_row_reference(*columns(SINGLE))
    assert ece == pytest.approx(0.75) and report["ece"] == pytest.approx(ece, rel=1e-12)
    assert code == 1
    assert "only 0 of 10 populated bins hold 2 or more rows" in stderr
    # the small-sample advice names smece alone, and says why
    (warning,) = report["warnings"]
    assert "prefer smece, and gate with --gate-on upper" in warning
    assert "prefer smece or rmsce_debiased" not in warning
    assert "rmsce_debiased leaves out bins of one prediction" in warning
    assert "(only 0 of 10 populated bins hold 2 or more, minimum 3)" in warning


def test_summary_file_without_its_table_fails_closed(tmp_path):
    path = write_jsonl(tmp_path / "single.jsonl", SINGLE)
    summary = tmp_path / "single.cbs"
    made = run(["summarize", path, "--table", "never", "-o", summary, "-q"])
    assert made.exit_code == 0, made.stderr
    code, _, stderr = calibrate([summary, "--max-rmsce-debiased", "0.05"])
    assert code == 1
    assert "rmsce_debiased: only 0 of 10 populated bins hold 2 or more rows" in stderr


@pytest.mark.parametrize(
    "extra",
    [[], ["--strategy", "quantile"], ["--ci", "0.9"], ["--gate-on", "upper"]],
    ids=["batched", "quantile", "ci", "upper"],
)
def test_a_group_of_four_rows_fails_closed_under_gate_each(tmp_path, extra):
    path = write_jsonl(tmp_path / "grp.jsonl", CALIBRATED + TINY)
    args = [path, "--by", "g", "--gate-each", "--max-rmsce-debiased", "0.1", *extra]
    code, report, stderr = calibrate(args)
    tiny = report["groups"]["tiny"]
    assert tiny["ece"] == pytest.approx(0.8, rel=1e-12)  # mean confidence, all wrong
    assert tiny["rmsce_debiased"] == 0.0
    assert code == 1
    checks = {c.get("group"): c for c in report["gate"]["checks"]}
    assert checks["tiny"]["passed"] is False
    assert checks["tiny"]["reason"].startswith("only 0 of 4 populated bins hold 2 or more rows")
    assert "rmsce_debiased in group 'tiny': only 0 of 4 populated bins" in stderr
    if extra in ([], ["--ci", "0.9"]):  # the figure of a group whose bins carry it is kept
        conf, right = columns(CALIBRATED)
        expected = debiased_reference(conf, right, 10)
        assert report["groups"]["A"]["rmsce_debiased"] == pytest.approx(expected, abs=1e-15)
        assert checks["A"]["passed"] is True and "reason" not in checks["A"]
    # the group's warning advises smece alone
    advice = [w for w in report["warnings"] if "median populated bin" in w and "tiny" in w]
    assert advice and all("prefer smece or rmsce_debiased" not in w for w in advice)


def test_as_many_bins_of_two_rows_as_the_minimum_is_enough(tmp_path):
    # 3 bins of 3 rows (0.05, 0.15, 0.25) and 1 of one: 3 bins carry the variance term, and
    # the bin of one holds a tenth of the rows, as many as may
    rows = [{"confidence": 0.05 + 0.1 * k, "correct": j != k} for k in range(3) for j in range(3)]
    rows += [{"confidence": 0.35, "correct": True}]
    path = write_jsonl(tmp_path / "three.jsonl", rows)
    conf, right = columns(rows)
    expected = debiased_reference(conf, right, 10)
    code, report, _ = calibrate([path, "--max-rmsce-debiased", "1"])
    assert code == 0
    assert report["rmsce_debiased"] == pytest.approx(expected, abs=1e-15)
    code, report, stderr = calibrate(
        [path, "--max-rmsce-debiased", "1", "--min-populated-bins", "4"]
    )
    assert code == 1
    assert "only 3 of 4 populated bins hold 2 or more rows" in stderr
    assert "(minimum 4)" in stderr
    # other binned gates read the populated bins alone
    code, _, _ = calibrate([path, "--max-ece", "1", "--min-populated-bins", "4"])
    assert code == 0


def test_the_python_api_and_an_engine_report_fail_closed(tmp_path):
    conf, right = columns(SINGLE)
    result = calibcli.calibrate(conf, right, max_rmsce_debiased=0.05)
    assert not result.passed
    (failure,) = result.failures
    assert "only 0 of 10 populated bins hold 2 or more rows" in failure
    path = write_jsonl(tmp_path / "single.jsonl", SINGLE)
    jobs = file_jobs([str(path)], "auto", None)
    summary = finish(merge_all([file_task(job) for job in jobs]))
    report = summary.report(limits={"rmsce_debiased": 0.05})
    (check,) = report["gate"]["checks"]
    assert report["gate"]["passed"] is False and check["passed"] is False
    assert check["reason"].startswith("only 0 of 10 populated bins hold 2 or more rows")


def _compare_sides(tmp_path):
    base = [
        {"id": i, "confidence": (i + 0.5) / 40, "correct": i < 5 or i % 3 == 0} for i in range(40)
    ]
    new = [{"id": i, "confidence": (i + 0.5) / 40, "correct": i % 2 == 0} for i in range(40)]
    return write_jsonl(tmp_path / "base.jsonl", base), write_jsonl(tmp_path / "new.jsonl", new)


def test_compare_fails_closed_naming_the_side(tmp_path):
    base, new = _compare_sides(tmp_path)
    result = run(
        [
            "compare",
            base,
            new,
            "--bins",
            "40",
            "--max-increase",
            "rmsce_debiased=0.3",
            "--json",
        ]
    )
    report = json.loads(result.stdout)
    assert report["figures"]["rmsce_debiased"]["base"] == 0.0
    assert report["figures"]["rmsce_debiased"]["new"] == 0.0
    assert result.exit_code == 1
    (check,) = report["gate"]["checks"]
    assert check["reason"] == (
        "only 0 of 40 populated bins hold 2 or more rows on BASE, which the debiased RMSCE's "
        "variance term needs (minimum 3)"
    )
    # 10 bins of 4 rows each carry it: the check reads the difference
    carried = run(["compare", base, new, "--max-increase", "rmsce_debiased=0.5", "--json"])
    assert carried.exit_code == 0, carried.stderr
    (check,) = json.loads(carried.stdout)["gate"]["checks"]
    assert check["passed"] is True and "reason" not in check


# 3 bins of 2 rows (0.105, 0.205, 0.305: one right, one wrong) and 50 wrong rows at 0.505 to
# 0.995, one a bin of 100: the 3 bins meet the minimum, but 50 of the 56 rows lie in bins of one
DEB = [
    {"confidence": c, "correct": right} for c in (0.105, 0.205, 0.305) for right in (True, False)
] + [{"confidence": round(0.505 + 0.01 * i, 3), "correct": False} for i in range(50)]
# by hand: the pairs' gaps 0.395, 0.295, 0.195 weigh 2/56, the 50 wrong rows' gaps (their
# confidences, mean 0.75) 1/56 each; each pair's gap² is below its variance term 0.25/1
DEB_ECE = (2 * (0.395 + 0.295 + 0.195) + 50 * 0.75) / 56
DEB_REASON = (
    "50 of 56 rows lie in bins of one row, which the debiased RMSCE's variance term leaves out "
    "(at most a tenth may)"
)
# 3 bins of 2 rows (0.05, 0.15, 0.25) and 7 of one (0.35 to 0.95) on 10 bins: 7 of 13 rows
SEVEN = [{"confidence": 0.05 + 0.1 * k, "correct": k % 2 == 0} for k in range(10)]
SEVEN += [{"confidence": 0.05 + 0.1 * k, "correct": k % 2 == 1} for k in range(3)]


def test_most_rows_in_bins_of_one_fail_closed(tmp_path):
    path = write_jsonl(tmp_path / "deb.jsonl", DEB)
    code, report, stderr = calibrate([path, "--bins", "100", "--max-rmsce-debiased", "0.05"])
    assert abs(DEB_ECE - 0.70125) < 1e-12
    assert report["ece"] == pytest.approx(DEB_ECE, rel=1e-12)
    conf, right = columns(DEB)
    assert debiased_reference(conf, right, 100) == 0.0
    assert report["rmsce_debiased"] == 0.0  # the figure is as it was
    assert code == 1
    (check,) = report["gate"]["checks"]
    assert check["passed"] is False and check["reason"] == DEB_REASON
    assert (
        f"gate failed: rmsce_debiased: {DEB_REASON}; cannot support --max-rmsce-debiased 0.05"
        in stderr
    )
    # the small-sample advice names smece alone, and says why
    (warning,) = report["warnings"]
    assert "prefer smece or rmsce_debiased" not in warning
    assert (
        "rmsce_debiased leaves out bins of one prediction (50 of 56 predictions lie in them, "
        "at most a tenth may): prefer smece, and gate with --gate-on upper"
    ) in warning


def _boundary(sizes, singles):
    """Bins of ``sizes`` rows at 0.05, 0.15, ... (every other row right) and ``singles`` bins
    of one row above them, on 10 bins."""
    rows = [
        {"confidence": 0.05 + 0.1 * k, "correct": j % 2 == 0}
        for k, size in enumerate(sizes)
        for j in range(size)
    ]
    return rows + [
        {"confidence": 0.05 + 0.1 * (len(sizes) + k), "correct": k % 2 == 1} for k in range(singles)
    ]


@pytest.mark.parametrize(
    ("sizes", "singles", "reason"),
    [
        ((9, 9, 9), 3, None),  # 3 of 30 rows: a tenth
        ((9, 9, 8), 3, "3 of 29 rows lie in bins of one row"),
        ((3, 3, 3), 1, None),  # 1 of 10 rows
        ((3, 3, 2), 1, "1 of 9 rows lies in a bin of one row"),
    ],
    ids=["tenth", "over", "one-tenth", "one-over"],
)
def test_at_most_a_tenth_of_the_rows_may_lie_in_bins_of_one(tmp_path, sizes, singles, reason):
    rows = _boundary(sizes, singles)
    assert len(rows) == sum(sizes) + singles
    path = write_jsonl(tmp_path / "edge.jsonl", rows)
    code, report, _ = calibrate([path, "--max-rmsce-debiased", "1"])
    conf, right = columns(rows)
    expected = debiased_reference(conf, right, 10)
    assert report["rmsce_debiased"] == pytest.approx(expected, abs=1e-15)
    (check,) = report["gate"]["checks"]
    (warning,) = report["warnings"]  # the median populated bin holds fewer than 30
    if reason is None:
        assert code == 0 and check["passed"] is True and "reason" not in check
        assert "prefer smece or rmsce_debiased" in warning
    else:
        assert code == 1 and check["passed"] is False
        assert check["reason"] == (
            f"{reason}, which the debiased RMSCE's variance term leaves out (at most a tenth may)"
        )
        assert "prefer smece or rmsce_debiased" not in warning
        assert f"{singles} of {len(rows)} predictions" in warning


@pytest.mark.parametrize("extra", [[], ["--ci", "0.9"]], ids=["batched", "ci"])
def test_a_group_of_most_rows_in_bins_of_one_fails_closed(tmp_path, extra):
    rows = CALIBRATED + [{**row, "g": "deb"} for row in DEB]
    path = write_jsonl(tmp_path / "grp.jsonl", rows)
    args = [path, "--by", "g", "--bins", "100", "--gate-each", "--max-rmsce-debiased", "0.1"]
    code, report, stderr = calibrate([*args, *extra])
    deb = report["groups"]["deb"]
    assert deb["ece"] == pytest.approx(DEB_ECE, rel=1e-12)
    assert deb["rmsce_debiased"] == 0.0
    assert code == 1
    checks = {c.get("group"): c for c in report["gate"]["checks"]}
    assert checks["deb"]["passed"] is False and checks["deb"]["reason"] == DEB_REASON
    assert f"rmsce_debiased in group 'deb': {DEB_REASON}" in stderr
    # 10 bins of 30 rows: no row in a bin of one, and the check reads the figure
    conf, right = columns(CALIBRATED)
    expected = debiased_reference(conf, right, 100)
    assert report["groups"]["A"]["rmsce_debiased"] == pytest.approx(expected, abs=1e-15)
    assert checks["A"]["passed"] is True and "reason" not in checks["A"]
    advice = [w for w in report["warnings"] if "median populated bin" in w and "deb" in w]
    assert advice and all("prefer smece or rmsce_debiased" not in w for w in advice)
    assert any("(50 of 56 predictions lie in them" in w for w in advice)


def test_compare_fails_closed_on_a_side_of_most_rows_in_bins_of_one(tmp_path):
    # BASE: 8 rows at each of 0.15, 0.25, ..., 0.75 (every other one right); NEW: DEB
    base = [
        {"id": i, "confidence": 0.15 + 0.1 * (i // 8), "correct": i % 2 == 0} for i in range(56)
    ]
    new = [{"id": i, **row} for i, row in enumerate(DEB)]
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", new)
    gate = ["--bins", "100", "--max-increase", "rmsce_debiased=0.3", "--json"]
    result = run(["compare", base_path, new_path, *gate])
    report = json.loads(result.stdout)
    figure = report["figures"]["rmsce_debiased"]
    assert figure["base"] == pytest.approx(debiased_reference(*columns(base), 100), abs=1e-15)
    assert figure["new"] == 0.0
    assert result.exit_code == 1
    (check,) = report["gate"]["checks"]
    assert check["passed"] is False
    assert check["reason"] == (
        "50 of 56 rows on NEW lie in bins of one row, which the debiased RMSCE's variance term "
        "leaves out (at most a tenth may)"
    )
    swapped = run(["compare", new_path, base_path, *gate])
    assert swapped.exit_code == 1
    (check,) = json.loads(swapped.stdout)["gate"]["checks"]
    assert check["reason"].startswith("50 of 56 rows on BASE lie in bins of one row")
    # on 10 bins no row of either side lies alone: the check reads the difference
    gate[1] = "10"
    carried = run(["compare", base_path, new_path, *gate])
    (check,) = json.loads(carried.stdout)["gate"]["checks"]
    assert "reason" not in check


def test_most_rows_in_bins_of_one_fail_closed_in_the_api_summaries_and_engines(tmp_path):
    reason = "7 of 13 rows lie in bins of one row"
    conf, right = columns(SEVEN)
    result = calibcli.calibrate(conf, right, max_rmsce_debiased=1.0)
    assert not result.passed
    (failure,) = result.failures
    assert reason in failure
    path = write_jsonl(tmp_path / "seven.jsonl", SEVEN)
    jobs = file_jobs([str(path)], "auto", None)
    summary = finish(merge_all([file_task(job) for job in jobs]))
    report = summary.report(limits={"rmsce_debiased": 1.0})
    (check,) = report["gate"]["checks"]
    assert report["gate"]["passed"] is False and check["passed"] is False
    assert check["reason"].startswith(reason)
    saved = tmp_path / "seven.cbs"
    made = run(["summarize", path, "--table", "never", "-o", saved, "-q"])
    assert made.exit_code == 0, made.stderr
    code, _, stderr = calibrate([saved, "--max-rmsce-debiased", "1"])
    assert code == 1
    assert f"rmsce_debiased: {reason}" in stderr
