"""Reports without the CLI: strict JSON, atomic writes, gate checks and warnings."""

from __future__ import annotations

import json
import math
import os
import stat

import pytest

from calibcli.cli import staging as output
from calibcli.io import PerplexityData
from calibcli.reports import calibrate as calibrate_reports
from calibcli.reports import perplexity as perplexity_reports
from calibcli.reports import report
from calibcli.reports.gate import Gate, evaluate

# --------------------------------------------------------------------------- JSON and files


def test_non_finite_numbers_become_null_and_are_explained():
    body = {"a": 1.0, "b": math.inf, "c": [1.0, math.nan], "d": {"e": -math.inf}}
    done = report.finish(body, [], [])
    text = done.to_json()
    assert json.loads(text)["b"] is None
    assert json.loads(text)["c"] == [1.0, None]
    assert json.loads(text)["d"] == {"e": None}
    assert done.warnings == [
        "3 value(s) are not finite numbers and were written as null: b, c[1], d.e"
    ]
    assert "NaN" not in text and "Infinity" not in text


def test_explained_nulls_get_no_generic_warning():
    note = report.Note("nll_infinite", "nll is infinite", explains=("nll",))
    done = report.finish({"nll": math.inf, "ci": {"nll": [1.0, math.inf]}}, [note], [])
    assert done.warnings == ["nll is infinite"]
    assert done.body == {"nll": None, "ci": {"nll": [1.0, None]}, "warnings": ["nll is infinite"]}


def test_a_note_explains_the_nulls_nested_in_its_figure_only():
    # compare writes each figure as an object: figures.nll.{base,new,difference,interval}
    note = report.Note("infinite", "nll is infinite on NEW", explains=("nll",))
    body = {
        "figures": {
            "nll": {"new": math.inf, "difference": math.inf, "interval": [0.1, math.inf]},
            "auroc": {"new": math.nan, "difference": math.nan},
        }
    }
    done = report.finish(body, [note], [])
    assert done.warnings == [
        "nll is infinite on NEW",
        "2 value(s) are not finite numbers and were written as null: figures.auroc.new, "
        "figures.auroc.difference",
    ]


def test_many_unexplained_nulls_are_one_line_naming_ten():
    body = {f"v{i:02d}": math.nan for i in range(23)}
    done = report.finish(body, [], [])
    named = ", ".join(f"v{i:02d}" for i in range(10))
    assert done.warnings == [
        f"23 value(s) are not finite numbers and were written as null: {named} and 13 more"
    ]


def test_floats_keep_full_precision():
    x = 0.1 + 0.2
    text = report.finish({"x": x}, [], []).to_json()
    assert json.loads(text)["x"] == x
    assert "0.30000000000000004" in text


def test_numpy_values_become_python_numbers():
    np = pytest.importorskip("numpy")
    body = {"i": np.int64(3), "f": np.float64(0.5), "a": np.array([1.0, np.inf])}
    done = report.finish(body, [], [])
    assert done.body["i"] == 3 and type(done.body["i"]) is int
    assert type(done.body["f"]) is float
    assert done.body["a"] == [1.0, None]


def write_atomic(path, text):
    """One output staged and put in place, as the commands write a report."""
    staged = output.Staged()
    staged.add(path, text, "report")
    staged.commit()


def test_write_atomic_replaces_and_keeps_mode(tmp_path):
    target = tmp_path / "r.json"
    write_atomic(target, "one\n")
    assert target.read_text() == "one\n"
    os.chmod(target, 0o640)
    write_atomic(target, "two\n")
    assert target.read_text() == "two\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_write_atomic_leaves_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text("old\n")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(output.OutputError, match="No space left on device"):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_new_report_file_gets_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "r.json", "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == 0o644


# --------------------------------------------------------------------------- gates


def _section(**values):
    return values


def _evaluate(pooled, groups, gate, level=None):
    """The gate's verdict as (body, failures), sections given as (figures, closed) pairs."""
    as_section = lambda pair: report.Section(pair[0], closed=pair[1])  # noqa: E731
    sections = None if groups is None else {k: as_section(v) for k, v in groups.items()}
    verdict = evaluate(gate, as_section(pooled), sections, level=level)
    return verdict.body, verdict.failures


def test_gate_estimate_pass_fail_and_closed():
    gate = Gate({"ece": 0.05, "brier": 0.2, "mce": 0.3})
    section = _section(ece=0.04, brier=0.25, mce=0.1)
    closed = {"mce": "only 2 of 10 bins are populated (minimum 3)"}
    body, failures = _evaluate((section, closed), None, gate)
    assert body["passed"] is False and body["bound"] == "estimate"
    assert [c["passed"] for c in body["checks"]] == [True, False, False]
    assert body["checks"][0] == {"metric": "ece", "threshold": 0.05, "value": 0.04, "passed": True}
    assert body["checks"][2]["reason"].startswith("only 2 of 10")
    assert "reason" not in body["checks"][1]
    assert failures == [
        "brier = 0.25 exceeds --max-brier 0.2",
        "mce: only 2 of 10 bins are populated (minimum 3); cannot support --max-mce 0.3",
    ]


def test_gate_value_equal_to_threshold_passes():
    body, failures = _evaluate(({"ece": 0.05}, {}), None, Gate({"ece": 0.05}))
    assert body["passed"] and not failures


def test_gate_upper_uses_the_interval_and_records_both():
    gate = Gate({"ece": 0.05}, bound="upper")
    section = {"ece": 0.03, "ci": {"ece": [0.01, 0.07]}}
    body, failures = _evaluate((section, {}), None, gate, level=0.95)
    check = body["checks"][0]
    assert body["bound"] == "upper"
    assert check == {
        "metric": "ece",
        "threshold": 0.05,
        "estimate": 0.03,
        "upper": 0.07,
        "value": 0.07,
        "passed": False,
    }
    assert failures == ["ece = 0.07 (upper end of the 0.95 interval) exceeds --max-ece 0.05"]


def test_gate_each_names_failing_groups():
    gate = Gate({"ece": 0.05}, each=True)
    groups = {"a": ({"ece": 0.01}, {}), "b": ({"ece": 0.09}, {}), "c": ({"ece": 0.02}, {})}
    body, failures = _evaluate(({"ece": 0.03}, {}), groups, gate)
    assert body["passed"] is False
    assert body["failed_groups"] == ["b"]
    assert [c.get("group") for c in body["checks"]] == [None, "a", "b", "c"]
    assert failures == ["ece in group 'b' = 0.09 exceeds --max-ece 0.05"]


def test_gate_groups_ignored_without_each():
    gate = Gate({"ece": 0.05})
    groups = {"b": ({"ece": 0.09}, {})}
    body, _ = _evaluate(({"ece": 0.03}, {}), groups, gate)
    assert body["passed"] and "failed_groups" not in body and len(body["checks"]) == 1


def test_undefined_value_fails_closed():
    body, _ = _evaluate(({"smece": math.nan}, {}), None, Gate({"smece": 1}))
    assert body["checks"][0]["passed"] is False
    assert "undefined" in body["checks"][0]["reason"]


# --------------------------------------------------------------------------- perplexity report


def test_perplexity_report_from_data():
    data = PerplexityData(sequences=2, total_nll=6.0, total_tokens=4, total_bytes=8)
    done = perplexity_reports.perplexity_report(data, Gate({}))
    assert done.body["perplexity"] == math.exp(1.5)
    assert done.body["bits_per_byte"] == 0.75 / math.log(2)
    assert "word_perplexity" not in done.body
    assert done.passed and done.warnings == []


def test_perplexity_report_without_tokens():
    data = PerplexityData(
        sequences=2, total_nll=6.0, total_tokens=None, total_bytes=8, total_words=2, fmt="lm-eval"
    )
    done = perplexity_reports.perplexity_report(data, Gate({"perplexity": 10.0}))
    body = done.body
    assert body["format"] == "lm-eval"
    assert body["total_tokens"] is None and body["perplexity"] is None
    assert body["word_perplexity"] == math.exp(3.0)
    assert any("token perplexity is unavailable" in w for w in done.warnings)
    assert not any("not finite" in w for w in done.warnings)
    assert done.failures == [
        "perplexity: the input carries no token counts; cannot support --max-perplexity 10"
    ]


def test_perplexity_report_logprob_counts_and_sentinels():
    data = PerplexityData(
        sequences=1,
        total_nll=3.0,
        total_tokens=3,
        null_logprobs=1,
        sentinel_logprobs=2,
        fmt="logprobs",
    )
    done = perplexity_reports.perplexity_report(data, Gate({}))
    assert done.body["null_logprobs"] == 1 and done.body["sentinel_logprobs"] == 2
    assert any(w.startswith("2 token logprob(s) are <= -9999") for w in done.warnings)


def test_perplexity_report_groups_and_gate_each():
    groups = {
        "a": PerplexityData(sequences=1, total_nll=2.0, total_tokens=2),
        "b": PerplexityData(sequences=1, total_nll=0.0, total_tokens=0),
    }
    data = PerplexityData(sequences=2, total_nll=2.0, total_tokens=2, groups=groups)
    done = perplexity_reports.perplexity_report(data, Gate({"perplexity": 5.0}, each=True))
    assert list(done.body["groups"]) == ["a", "b"]
    assert done.body["groups"]["a"]["perplexity"] == math.e
    assert done.body["gate"]["failed_groups"] == ["b"]
    assert done.failures == [
        "perplexity in group 'b': zero tokens in the input; cannot support --max-perplexity 5"
    ]
    assert done.warnings == ["group 'b': zero tokens in the input; perplexity is undefined"]
    assert list(done.body)[-2:] == ["warnings", "gate"]


# --------------------------------------------------------------------------- calibrate


def _calibration_data(n, seed, groups=False):
    np = pytest.importorskip("numpy")
    from calibcli.io import CalibrationData
    from calibcli.metrics.core import BinStats, PredictionColumns

    rng = np.random.default_rng(seed)
    conf = np.round(rng.random(n), 3)
    correct = rng.random(n) < conf

    def data(rows):
        return CalibrationData(
            stats=BinStats.from_arrays(conf[rows], correct[rows]),
            columns=PredictionColumns.from_arrays(conf[rows], correct[rows]),
            rows=int(rows.sum()),
        )

    pooled = data(np.ones(n, dtype=bool))
    if not groups:
        return pooled
    half = np.arange(n) % 2 == 0
    return CalibrationData(
        stats=pooled.stats,
        columns=pooled.columns,
        groups={"even": data(half), "odd": data(~half)},
        rows=n,
    )


def _assert_same_figures(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _assert_same_figures(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same_figures(x, y)
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=1e-12, abs=1e-15)
    else:
        assert a == b


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_calibrate_report_reorder_ok_changes_no_figure(strategy):
    plain = calibrate_reports.calibrate_report(
        _calibration_data(5000, 1, groups=True), strategy=strategy
    )
    data = _calibration_data(5000, 1, groups=True)
    fast = calibrate_reports.calibrate_report(data, strategy=strategy, reorder_ok=True)
    _assert_same_figures(plain.body, fast.body)
    for part in (data, *data.groups.values()):  # the caller's columns were sorted in place
        assert (part.columns.conf_wrong[1:] >= part.columns.conf_wrong[:-1]).all()


def test_calibrate_report_never_reorders_for_the_bootstrap():
    np = pytest.importorskip("numpy")
    boot = calibrate_reports.Bootstrap(0.9, samples=20, seed=3)
    plain = calibrate_reports.calibrate_report(_calibration_data(3000, 2), bootstrap=boot)
    data = _calibration_data(3000, 2)
    before = data.columns.conf_correct.copy(), data.columns.conf_wrong.copy()
    fast = calibrate_reports.calibrate_report(data, bootstrap=boot, reorder_ok=True)
    assert fast.body["ci"] == plain.body["ci"]  # resamples follow the row order: identical
    assert np.array_equal(data.columns.conf_correct, before[0])
    assert np.array_equal(data.columns.conf_wrong, before[1])
