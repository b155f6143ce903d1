"""`calibcli calibrate`: every estimator, intervals, gates and warnings, against plain Python."""

from __future__ import annotations

import json

import pytest
from harness import columns, make_rows, run, write_jsonl
from reference import estimates, wilson

TOL = {"rel": 1e-12, "abs": 1e-15}


def calibrate_json(args, input=None, code=0):
    result = run(["calibrate", *args, "--json"], input=input)
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result


@pytest.fixture(scope="module")
def rows():
    return make_rows(400)


@pytest.fixture
def preds(tmp_path, rows):
    return write_jsonl(tmp_path / "preds.jsonl", rows)


# --------------------------------------------------------------------------- the estimates


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_every_estimator_matches_plain_python(preds, rows, source):
    args, stdin = ([preds], None) if source == "file" else (["-"], preds.read_text())
    report, result = calibrate_json(args, input=stdin)
    ref = estimates(*columns(rows))
    assert report["schema_version"] == 1 and report["command"] == "calibrate"
    assert report["format"] == "jsonl"
    assert report["n"] == 400 and report["bins"] == 10 and report["bins_used"] == 10
    assert report["strategy"] == "uniform"
    assert report["populated_bins"] == ref["populated_bins"] == 10
    for key in (
        "accuracy",
        "mean_confidence",
        "ece",
        "brier",
        "mce",
        "rmsce",
        "rmsce_debiased",
        "ece_1bin",
        "nll",
        "auroc",
    ):
        assert report[key] == pytest.approx(ref[key], **TOL), key
    for key, value in ref["decomposition"].items():
        assert report["brier_decomposition"][key] == pytest.approx(value, rel=1e-10, abs=1e-15)
    assert report["warnings"] == [] and result.stderr == ""
    assert "ci" not in report and "gate" not in report


def test_smece_matches_relplot(preds, rows):
    relplot = pytest.importorskip("relplot")
    np = pytest.importorskip("numpy")
    report, _ = calibrate_json([preds])
    f = np.array([r["confidence"] for r in rows])
    y = np.array([r["correct"] for r in rows], dtype=float)
    assert report["smece"] == pytest.approx(float(relplot.smECE(f, y)), abs=1e-6)
    assert report["smece_bandwidth"] > 0


def test_reliability_bins_in_calibrate_report(preds, rows):
    report, _ = calibrate_json([preds])
    ref = estimates(*columns(rows))
    rel = report["reliability"]
    assert rel["bin_lower"] == [k / 10 for k in range(10)]
    assert rel["bin_upper"] == [k / 10 for k in range(1, 11)]
    for i, (cbar, obar, k) in enumerate(ref["per_bin"]):
        assert rel["count"][i] == k
        assert rel["confidence"][i] == pytest.approx(cbar, **TOL)
        assert rel["accuracy"][i] == pytest.approx(obar, **TOL)
        lo, hi = wilson(round(obar * k), k)
        assert rel["accuracy_ci"][i] == pytest.approx([lo, hi], rel=1e-12)


def test_report_key_order(preds):
    report, _ = calibrate_json([preds])
    assert list(report) == [
        "schema_version",
        "command",
        "format",
        "n",
        "bins",
        "strategy",
        "bins_used",
        "accuracy",
        "mean_confidence",
        "ece",
        "populated_bins",
        "brier",
        "mce",
        "rmsce",
        "rmsce_debiased",
        "smece",
        "smece_bandwidth",
        "ece_1bin",
        "nll",
        "auroc",
        "brier_decomposition",
        "reliability",
        "warnings",
    ]


@pytest.mark.parametrize("bins", [1, 3, 15])
def test_bins_option(preds, rows, bins):
    report, _ = calibrate_json([preds, "--bins", str(bins)])
    ref = estimates(*columns(rows), bins)
    assert report["bins"] == bins and len(report["reliability"]["count"]) == bins
    assert report["ece"] == pytest.approx(ref["ece"], **TOL)
    assert report["rmsce_debiased"] == pytest.approx(ref["rmsce_debiased"], **TOL)


def test_quantile_strategy(tmp_path):
    np = pytest.importorskip("numpy")
    calibration = pytest.importorskip("sklearn.calibration")
    rows = make_rows(402, seed=3)  # (N-1)*k/M is never an integer: no edge sits on a data point
    path = write_jsonl(tmp_path / "q.jsonl", rows)
    report, _ = calibrate_json([path, "--strategy", "quantile"])
    conf = np.array([r["confidence"] for r in rows])
    y = np.array([r["correct"] for r in rows], dtype=int)
    edges = [0.0, *np.quantile(conf, [k / 10 for k in range(1, 10)]).tolist(), 1.0]
    ref = estimates(*columns(rows), edges)
    assert report["strategy"] == "quantile" and report["bins_used"] == 10
    assert report["reliability"]["bin_lower"] == pytest.approx(edges[:-1], rel=1e-15)
    assert report["ece"] == pytest.approx(ref["ece"], **TOL)
    assert report["reliability"]["count"] == [k for _, _, k in ref["per_bin"]]
    prob_true, prob_pred = calibration.calibration_curve(y, conf, n_bins=10, strategy="quantile")
    assert report["reliability"]["accuracy"] == pytest.approx(prob_true.tolist(), rel=1e-12)
    assert report["reliability"]["confidence"] == pytest.approx(prob_pred.tolist(), rel=1e-12)


def test_quantile_with_tied_confidences_reports_fewer_bins(tmp_path):
    rows = [{"confidence": c, "correct": i % 2 == 0} for i, c in enumerate([0.2] * 50 + [0.9] * 50)]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    report, _ = calibrate_json([path, "--strategy", "quantile"])
    assert report["bins"] == 10
    assert report["bins_used"] < 10
    assert len(report["reliability"]["count"]) == report["bins_used"]
    assert sum(report["reliability"]["count"]) == 100


def test_field_names(tmp_path, rows):
    renamed = [{"p": r["confidence"], "ok": int(r["correct"])} for r in rows]
    path = write_jsonl(tmp_path / "r.jsonl", renamed)
    report, _ = calibrate_json([path, "--confidence-field", "p", "--correct-field", "ok"])
    assert report["ece"] == pytest.approx(estimates(*columns(rows))["ece"], **TOL)


def test_files_are_pooled(tmp_path, rows):
    a = write_jsonl(tmp_path / "a.jsonl", rows[:150])
    b = write_jsonl(tmp_path / "b.jsonl", rows[150:])
    report, _ = calibrate_json([a, b])
    assert report["n"] == 400
    assert report["ece"] == pytest.approx(estimates(*columns(rows))["ece"], **TOL)


def test_table_shows_every_estimator(preds, rows):
    result = run(["calibrate", preds])
    assert result.exit_code == 0
    ref = estimates(*columns(rows))
    out = result.stdout
    for label in (
        "accuracy",
        "mean confidence",
        "ECE",
        "populated bins",
        "Brier",
        "reliability",
        "resolution",
        "uncertainty",
        "within-bin variance",
        "within-bin covariance",
        "MCE",
        "RMSCE",
        "RMSCE (debiased)",
        "smECE",
        "smECE bandwidth",
        "ECE (1 bin)",
        "NLL",
        "AUROC",
    ):
        assert label in out, label
    for key in ("ece", "brier", "mce", "rmsce", "nll", "auroc", "accuracy"):
        assert f"{ref[key]:.4f}" in out, key
    assert "10 of 10" in out
    assert "CI" not in out
    assert "\x1b[" not in out


# --------------------------------------------------------------------------- intervals


def test_ci_adds_intervals_to_every_scalar(preds):
    report, _ = calibrate_json([preds, "--ci", "0.9", "--bootstrap", "200", "--seed", "5"])
    assert report["ci_level"] == 0.9
    assert report["bootstrap_samples"] == 200 and report["seed"] == 5
    for key in ("ece", "brier", "mce", "rmsce", "rmsce_debiased", "smece", "ece_1bin", "nll"):
        lo, hi = report["ci"][key]
        assert lo <= hi, key
    assert report["ci"]["auroc"][0] <= report["auroc"] <= report["ci"]["auroc"][1]
    assert "brier_decomposition.reliability" in report["ci"]
    keys = list(report)
    assert keys[keys.index("reliability") + 1 : keys.index("warnings")] == [
        "ci",
        "ci_level",
        "bootstrap_samples",
        "seed",
    ]


def test_ci_is_deterministic_for_a_seed(preds):
    args = ["calibrate", preds, "--ci", "0.95", "--bootstrap", "200", "--json"]
    first = run(args).stdout
    assert run(args).stdout == first
    other = run([*args, "--seed", "1"]).stdout
    assert json.loads(other)["ci"] != json.loads(first)["ci"]


def test_ci_table_has_interval_column(preds):
    result = run(["calibrate", preds, "--ci", "0.95", "--bootstrap", "200"])
    assert result.exit_code == 0
    assert "95% CI" in result.stdout
    report = json.loads(
        run(["calibrate", preds, "--ci", "0.95", "--bootstrap", "200", "--json"]).stdout
    )
    lo, hi = report["ci"]["ece"]
    assert f"[{lo:.4f}, {hi:.4f}]" in result.stdout


# --------------------------------------------------------------------------- gates


@pytest.mark.parametrize("metric", ["ece", "brier", "mce", "rmsce", "smece"])
def test_each_threshold_passes_and_fails(preds, rows, metric):
    report, _ = calibrate_json([preds])
    value = report[metric]
    if metric != "smece":
        assert value == pytest.approx(estimates(*columns(rows))[metric], **TOL)
    ok, _ = calibrate_json([preds, f"--max-{metric}", repr(value * 1.001)])
    assert ok["gate"]["passed"] is True
    assert ok["gate"]["checks"] == [
        {"metric": metric, "threshold": value * 1.001, "value": value, "passed": True}
    ]
    bad, result = calibrate_json([preds, f"--max-{metric}", repr(value * 0.999)], code=1)
    assert bad["gate"]["passed"] is False
    assert result.stderr.startswith(f"gate failed: {metric} = ")
    assert f"exceeds --max-{metric}" in result.stderr


def test_several_thresholds_all_checked(preds, rows):
    ref = estimates(*columns(rows))
    report, result = calibrate_json(
        [preds, "--max-ece", "1", "--max-brier", repr(ref["brier"] / 2), "--max-mce", "1"], code=1
    )
    assert [c["metric"] for c in report["gate"]["checks"]] == ["ece", "brier", "mce"]
    assert [c["passed"] for c in report["gate"]["checks"]] == [True, False, True]
    assert len(result.stderr.splitlines()) == 1


def narrow_rows(n=200):
    """All confidences in [0.9, 1.0): a single populated bin."""
    return make_rows(n, seed=11, low=0.9, high=0.999)


def test_too_few_populated_bins_warns_and_fails_binned_gates_closed(tmp_path):
    path = write_jsonl(tmp_path / "narrow.jsonl", narrow_rows())
    report, result = calibrate_json([path])
    assert report["populated_bins"] == 1
    assert report["warnings"] == [
        "only 1 of 10 bins are populated (minimum 3); ECE rests on too few bins"
    ]
    assert result.stderr == (
        "warning: only 1 of 10 bins are populated (minimum 3); ECE rests on too few bins\n"
    )
    for metric in ("ece", "mce", "rmsce"):
        gated, result = calibrate_json([path, f"--max-{metric}", "1"], code=1)
        check = gated["gate"]["checks"][0]
        assert check["passed"] is False
        assert check["reason"] == "only 1 of 10 bins are populated (minimum 3)"
        assert (
            f"gate failed: {metric}: only 1 of 10 bins are populated (minimum 3)" in result.stderr
        )
    # Brier and smooth ECE need no bins: they are judged on their value
    for metric in ("brier", "smece"):
        calibrate_json([path, f"--max-{metric}", "1"], code=0)
    # the minimum is configurable and capped at --bins
    calibrate_json([path, "--max-ece", "1", "--min-populated-bins", "1"], code=0)
    calibrate_json([path, "--max-ece", "1", "--bins", "1"], code=0)
    capped, _ = calibrate_json([path, "--max-ece", "1", "--bins", "2"], code=1)
    assert "minimum 2" in capped["gate"]["checks"][0]["reason"]


def test_min_populated_bins_option(preds):
    report, _ = calibrate_json([preds, "--bins", "5", "--min-populated-bins", "5"])
    assert report["warnings"] == []
    report, _ = calibrate_json([preds, "--bins", "5", "--min-populated-bins", "6"])
    assert report["warnings"] == []  # capped at --bins


def test_no_rows_warns_and_fails_every_gate_closed(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    report, result = calibrate_json([path])
    assert report["n"] == 0
    for key in ("ece", "brier", "accuracy", "smece", "nll", "auroc"):
        assert report[key] is None
    assert report["reliability"]["count"] == [0] * 10
    assert report["reliability"]["accuracy"] == [None] * 10
    assert report["warnings"] == ["no rows were read; every estimate is null"]
    assert result.stderr == "warning: no rows were read; every estimate is null\n"
    gated, result = calibrate_json([path, "--max-brier", "1", "--max-smece", "1"], code=1)
    assert [c["reason"] for c in gated["gate"]["checks"]] == ["no rows were read"] * 2
    assert result.stderr.count("gate failed:") == 2


def test_small_sample_warning_is_advisory(tmp_path):
    path = write_jsonl(tmp_path / "small.jsonl", make_rows(60, seed=2))
    report, result = calibrate_json([path, "--max-ece", "1"])
    (warning,) = report["warnings"]
    assert "median populated bin holds" in warning and "fewer than 30" in warning
    assert "smece" in warning and "rmsce_debiased" in warning and "--gate-on upper" in warning
    assert report["gate"]["passed"] is True
    assert result.stderr == f"warning: {warning}\n"


def test_gate_on_upper_fails_a_small_sample_whose_estimate_passes(tmp_path):
    rows = make_rows(120, seed=4, skew=1.0)  # calibrated by construction
    path = write_jsonl(tmp_path / "small.jsonl", rows)
    ece = estimates(*columns(rows))["ece"]
    threshold = repr(ece * 1.05)
    calibrate_json([path, "--max-ece", threshold], code=0)
    report, result = calibrate_json(
        [path, "--max-ece", threshold, "--gate-on", "upper", "--bootstrap", "300"], code=1
    )
    assert report["ci_level"] == 0.95  # implied
    assert report["bootstrap_samples"] == 300
    check = report["gate"]["checks"][0]
    assert report["gate"]["bound"] == "upper"
    assert check["estimate"] == pytest.approx(ece, **TOL)
    assert check["upper"] == report["ci"]["ece"][1] == check["value"]
    assert check["upper"] > float(threshold)
    assert "(upper end of the 0.95 interval)" in result.stderr
    table = run(
        ["calibrate", path, "--max-ece", threshold, "--gate-on", "upper", "--bootstrap", "300"]
    )
    assert table.exit_code == 1
    assert "Gate: FAILED (bound: upper)" in table.stdout
    assert f"{ece:.4f}  {check['upper']:.4f}" in table.stdout  # estimate and upper side by side


def test_gate_on_upper_respects_explicit_ci(preds):
    report, _ = calibrate_json(
        [preds, "--max-ece", "1", "--gate-on", "upper", "--ci", "0.8", "--bootstrap", "200"]
    )
    assert report["ci_level"] == 0.8 and report["gate"]["passed"] is True


def test_infinite_nll_is_null_with_warning(tmp_path, rows):
    bad = [*rows[:50], {"confidence": 1.0, "correct": False}]
    path = write_jsonl(tmp_path / "inf.jsonl", bad)
    report, result = calibrate_json([path])
    assert report["nll"] is None
    assert any(w.startswith("nll is infinite") for w in report["warnings"])
    assert "warning: nll is infinite" in result.stderr
    assert not any("not finite numbers" in w for w in report["warnings"])


def test_undefined_auroc_is_null_with_warning(tmp_path):
    rows = [{"confidence": 0.05 * (i % 20) + 0.01, "correct": True} for i in range(100)]
    path = write_jsonl(tmp_path / "right.jsonl", rows)
    report, _ = calibrate_json([path])
    assert report["auroc"] is None
    assert any(w.startswith("auroc is undefined") for w in report["warnings"])


# --------------------------------------------------------------------------- invalid input

INVALID_CALIBRATION = [
    ('{"confidence": 1.5, "correct": true}', "1.5"),
    ('{"confidence": -0.1, "correct": true}', "-0.1"),
    ('{"confidence": "0.5", "correct": true}', "confidence"),
    ('{"confidence": true, "correct": true}', "confidence"),
    ('{"confidence": null, "correct": true}', "confidence"),
    ('{"confidence": NaN, "correct": true}', "confidence"),
    ('{"confidence": Infinity, "correct": true}', "confidence"),
    ('{"confidence": 0.5, "correct": 2}', "correct"),
    ('{"confidence": 0.5, "correct": "yes"}', "correct"),
    ('{"confidence": 0.5, "correct": 0.5}', "correct"),
    ('{"confidence": 0.5, "correct": null}', "correct"),
    ('{"correct": true}', "confidence"),
    ('{"confidence": 0.5}', "correct"),
    ('"just a string"', "object"),
    ("{broken", ""),
]


@pytest.mark.parametrize(("line", "mentions"), INVALID_CALIBRATION)
@pytest.mark.parametrize("command", ["calibrate", "reliability"])
def test_invalid_rows_exit_2_naming_file_and_line(tmp_path, line, mentions, command):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"confidence": 0.5, "correct": true}\n' * 3 + line + "\n")
    out = tmp_path / "report.json"
    out.write_text("keep me\n")
    result = run([command, path, "-o", out, "--json"])
    assert result.exit_code == 2
    (message,) = result.stderr.splitlines()
    assert message.startswith(f"Error: {path}:4: ")
    assert mentions in message
    assert result.stdout == ""
    assert out.read_text() == "keep me\n"


def test_ci_leaves_every_point_estimate_as_it_is(tmp_path):
    # the bootstrap keeps the rows in their order while the report without it may sort them:
    # each figure, the NLL's last digit included, must not depend on which path ran
    path = write_jsonl(tmp_path / "p.jsonl", make_rows(1000, seed=2))
    plain, _ = calibrate_json([path])
    with_ci, _ = calibrate_json([path, "--ci", "0.9", "--bootstrap", "200"])
    for key, value in plain.items():
        if key not in ("warnings",):
            assert with_ci[key] == value, key


def test_ci_leaves_each_groups_point_estimates_as_they_are(tmp_path):
    rows = [{**row, "task": f"t{i % 7}"} for i, row in enumerate(make_rows(3000, seed=11))]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    plain, _ = calibrate_json([path, "--by", "task"])
    with_ci, _ = calibrate_json([path, "--by", "task", "--ci", "0.9", "--bootstrap", "200"])
    for name, group in plain["groups"].items():
        for key, value in group.items():
            if key != "warnings":
                assert with_ci["groups"][name][key] == value, (name, key)
    assert with_ci["nll"] == plain["nll"]
