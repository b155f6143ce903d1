"""`calibcli fit`, and `calibrate` / `reliability` with --calibrator or --recalibrate.

Every number is checked against an independent reference, never against calibcli's own code:
scikit-learn's ``_SigmoidCalibration`` on the logits (platt), ``IsotonicRegression`` (isotonic),
unpenalised ``LogisticRegression`` on [ln c, -ln(1 - c)] (beta), scipy's bounded scalar
minimiser on log T (temperature), a plain-Python loop for the histogram map, and the exact
references of tests/reference.py for the figures (ECE, Brier, accuracy, mean confidence, bin
counts).

Data: sample_data/overconfident.jsonl split into halves, the first 1000 lines to fit on and the
last 1000 to score.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from harness import run, write_jsonl
from reference import bin_index, counts, figures
from scipy.optimize import minimize_scalar
from sklearn.calibration import _SigmoidCalibration
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data"
EPS = 1e-12  # the clip of c before ln c, ln(1 - c) (calibcli.metrics.recalibration's contract)
TOL = 1e-6
METHOD_NAMES = ("temperature", "platt", "isotonic", "histogram", "beta")


# --------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def halves(tmp_path_factory):
    """(fit path, score path) holding the first and the last 1000 lines of overconfident."""
    lines = (SAMPLE / "overconfident.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 2000
    root = tmp_path_factory.mktemp("halves")
    fit_path, score_path = root / "fit.jsonl", root / "score.jsonl"
    fit_path.write_text("".join(lines[:1000]), encoding="utf-8")
    score_path.write_text("".join(lines[1000:]), encoding="utf-8")
    return fit_path, score_path


def rows_of(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def columns(rows):
    c = np.array([float(r["confidence"]) for r in rows])
    y = np.array([bool(r["correct"]) for r in rows])
    return c, y


def strict_json(text):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


# --------------------------------------------------------------------------- reference maps


def ref_logit(c):
    c = np.clip(np.asarray(c, dtype=np.float64), EPS, 1 - EPS)
    return np.log(c) - np.log(1 - c)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-np.asarray(x, dtype=np.float64)))


def ref_temperature(c, y):
    """T minimising the mean NLL of σ(z / T), searched by scipy on log T."""
    z = ref_logit(c)
    s = np.where(y, 1.0, -1.0)

    def nll(log_t):
        return float(np.mean(np.logaddexp(0.0, -s * z / math.exp(log_t))))

    res = minimize_scalar(
        nll, bounds=(math.log(1e-4), math.log(1e4)), method="bounded", options={"xatol": 1e-12}
    )
    t = math.exp(res.x)
    return {"temperature": t}, lambda c: sigmoid(ref_logit(c) / t)


def ref_platt(c, y):
    """scikit-learn's P = 1 / (1 + exp(A f + B)) on f = logit(c): a = -A, b = -B."""
    sk = _SigmoidCalibration().fit(ref_logit(c), y.astype(np.float64))
    a, b = -float(sk.a_), -float(sk.b_)
    return {"a": a, "b": b}, lambda c: sigmoid(a * ref_logit(c) + b)


def ref_isotonic(c, y):
    ir = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")
    ir.fit(c, y.astype(np.float64))
    return None, lambda c: ir.predict(np.asarray(c, dtype=np.float64))


def ref_histogram(c, y, bins=10):
    right, count = [0] * bins, [0] * bins
    for ci, yi in zip(c.tolist(), y.tolist(), strict=True):
        k = bin_index(ci, bins)
        count[k] += 1
        right[k] += int(yi)
    acc = [right[k] / count[k] if count[k] else None for k in range(bins)]

    def apply(conf):
        out = []
        for ci in np.asarray(conf, dtype=np.float64).tolist():
            a = acc[bin_index(ci, bins)]
            out.append(ci if a is None else a)
        return np.array(out)

    return {"accuracy": acc}, apply


def ref_beta(c, y):
    cc = np.clip(c, EPS, 1 - EPS)
    features = np.column_stack([np.log(cc), -np.log(1 - cc)])
    lr = LogisticRegression(C=np.inf, tol=1e-14, max_iter=100_000).fit(features, y)
    a, b = (float(v) for v in lr.coef_[0])
    m = float(lr.intercept_[0])
    assert a > 0 and b > 0, "the data must give an unconstrained beta fit"

    def apply(conf):
        k = np.clip(np.asarray(conf, dtype=np.float64), EPS, 1 - EPS)
        return sigmoid(a * np.log(k) - b * np.log(1 - k) + m)

    return {"a": a, "b": b, "intercept": m}, apply


REFERENCES = {
    "temperature": ref_temperature,
    "platt": ref_platt,
    "isotonic": ref_isotonic,
    "histogram": ref_histogram,
    "beta": ref_beta,
}


# --------------------------------------------------------------------------- reference figures


FIGURES = ("accuracy", "mean_confidence", "brier", "ece")


def assert_figures(section, conf, correct, tol=TOL):
    expected = figures(np.asarray(conf).tolist(), np.asarray(correct).tolist())
    for key in FIGURES:
        assert section[key] == pytest.approx(expected[key], abs=tol), key


# --------------------------------------------------------------------------- fit


def fit_file(tmp_path, data, method, *extra):
    out = tmp_path / f"{method}.json"
    result = run(["fit", data, "--method", method, "-o", out, *extra])
    assert result.exit_code == 0, result.stderr
    return out


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_fit_writes_a_calibrator_matching_the_reference(method, halves, tmp_path):
    fit_path, _ = halves
    out = fit_file(tmp_path, fit_path, method)
    doc = strict_json(out.read_text(encoding="utf-8"))
    assert doc["schema_version"] == 1
    assert doc["kind"] == "calibcli-calibrator"
    assert doc["method"] == method
    assert doc["by"] is None and doc["groups"] == {}
    assert doc["fitted_on"]["n"] == 1000
    assert doc["fitted_on"]["files"] == [str(fit_path)]
    assert doc["fitted_on"]["format"] == "jsonl"

    c, y = columns(rows_of(fit_path))
    params, apply = REFERENCES[method](c, y)
    got = doc["params"]
    if method == "isotonic":
        x, fitted = np.array(got["x"]), np.array(got["y"])
        assert set(got) == {"x", "y"} and len(x) == len(fitted)
        grid = np.concatenate([np.linspace(0.0, 1.0, 2001), c])
        np.testing.assert_allclose(np.interp(grid, x, fitted), apply(grid), rtol=0, atol=TOL)
    elif method == "histogram":
        assert set(got) == {"accuracy"}
        assert len(got["accuracy"]) == 10
        for k, (g, r) in enumerate(zip(got["accuracy"], params["accuracy"], strict=True)):
            assert (g is None) == (r is None), k
            if r is not None:
                assert g == pytest.approx(r, abs=TOL), k
    else:
        assert set(got) == set(params)
        for key, value in params.items():
            assert got[key] == pytest.approx(value, abs=TOL), key


def test_fit_json_prints_the_calibrator_document(halves, tmp_path):
    fit_path, _ = halves
    out = tmp_path / "cal.json"
    result = run(["fit", fit_path, "--method", "platt", "--json", "-o", out])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == out.read_text(encoding="utf-8")
    assert strict_json(result.stdout)["kind"] == "calibcli-calibrator"


def test_fit_by_gives_one_calibrator_per_group(halves):
    fit_path, _ = halves
    result = run(["fit", fit_path, "--method", "platt", "--by", "subject", "--json"])
    assert result.exit_code == 0, result.stderr
    doc = strict_json(result.stdout)
    assert doc["by"] == "subject"

    rows = rows_of(fit_path)
    subjects = sorted({r["subject"] for r in rows})
    assert sorted(doc["groups"]) == subjects and len(subjects) > 1
    for name in subjects:
        group = doc["groups"][name]
        mine = [r for r in rows if r["subject"] == name]
        params, _ = ref_platt(*columns(mine))
        assert group["method"] == "platt"
        assert group["n"] == len(mine)
        for key, value in params.items():
            assert group["params"][key] == pytest.approx(value, abs=TOL), (name, key)
    pooled, _ = ref_platt(*columns(rows))
    for key, value in pooled.items():
        assert doc["params"][key] == pytest.approx(value, abs=TOL), key


# --------------------------------------------------------------------------- calibrate --calibrator


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_calibrate_with_a_calibrator_reports_the_recalibrated_figures(method, halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, method)
    result = run(["calibrate", score_path, "--calibrator", cal, "--json"])
    assert result.exit_code == 0, result.stderr
    report = strict_json(result.stdout)

    _, apply = REFERENCES[method](*columns(rows_of(fit_path)))
    raw, y = columns(rows_of(score_path))
    mapped = apply(raw)
    assert report["n"] == 1000
    assert_figures(report, mapped, y)

    recal = report["recalibration"]
    assert recal["mode"] == "calibrator"
    assert recal["method"] == method
    assert recal["calibrator"] == str(cal)
    assert_figures(recal["before"], raw, y)
    assert_figures(recal["after"], mapped, y)
    for key, value in recal["after"].items():
        assert report[key] == value, key

    plain = strict_json(run(["calibrate", score_path, "--json"]).stdout)
    for key, value in recal["before"].items():
        assert plain[key] == value, key
    assert "in-sample" not in result.stderr


def test_a_grouped_calibrator_maps_each_group_by_its_own(halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt", "--by", "subject")
    result = run(["calibrate", score_path, "--calibrator", cal, "--by", "subject", "--json"])
    assert result.exit_code == 0, result.stderr
    report = strict_json(result.stdout)

    fit_rows, score_rows = rows_of(fit_path), rows_of(score_path)
    mapped, correct = [], []
    for name in sorted({r["subject"] for r in score_rows}):
        _, apply = ref_platt(*columns([r for r in fit_rows if r["subject"] == name]))
        raw, y = columns([r for r in score_rows if r["subject"] == name])
        assert_figures(report["groups"][name], apply(raw), y)
        mapped.extend(apply(raw).tolist())
        correct.extend(y.tolist())
    assert_figures(report, mapped, correct)
    assert_figures(report["recalibration"]["after"], mapped, correct)


def test_platt_calibrator_removes_most_of_the_overconfidence(halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    report = strict_json(run(["calibrate", score_path, "--calibrator", cal, "--json"]).stdout)
    before, after = report["recalibration"]["before"], report["recalibration"]["after"]
    assert before["ece"] == pytest.approx(0.26, abs=0.02)
    assert after["ece"] < 0.05
    assert report["ece"] == after["ece"]


def test_gates_apply_to_the_figures_after_recalibration(halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    # before ~0.26, after < 0.05: the same limit fails the raw rows and passes the mapped ones
    assert run(["calibrate", score_path, "--max-ece", "0.1"]).exit_code == 1
    passed = run(["calibrate", score_path, "--calibrator", cal, "--max-ece", "0.1", "--json"])
    assert passed.exit_code == 0, passed.stderr
    assert strict_json(passed.stdout)["gate"]["passed"] is True
    failed = run(["calibrate", score_path, "--calibrator", cal, "--max-ece", "0.01", "--json"])
    assert failed.exit_code == 1
    check = strict_json(failed.stdout)["gate"]["checks"][0]
    assert check["metric"] == "ece"
    assert check["value"] == strict_json(failed.stdout)["recalibration"]["after"]["ece"]
    assert "gate failed: ece" in failed.stderr


def test_scoring_the_fitting_rows_warns_in_sample(halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    same = run(["calibrate", fit_path, "--calibrator", cal, "--json"])
    assert same.exit_code == 0, same.stderr
    assert "in-sample" in same.stderr
    assert any("in-sample" in w for w in strict_json(same.stdout)["warnings"])
    other = run(["calibrate", score_path, "--calibrator", cal, "--json"])
    assert other.exit_code == 0, other.stderr
    assert "in-sample" not in other.stderr
    assert strict_json(other.stdout)["warnings"] == []


IN_SAMPLE = (
    "the calibrator was fitted on rows scored here, so the figures after it are in-sample "
    "(score held-out rows)"
)


def in_sample_checks(report):
    return [c for c in report["gate"]["checks"] if c.get("reason") == IN_SAMPLE]


@pytest.mark.parametrize("method", ["histogram", "platt"])
def test_a_gate_on_the_rows_a_calibrator_was_fitted_on_fails_closed(halves, tmp_path, method):
    # histogram binning scored on its own rows at its own bins has an ECE of 0 by construction:
    # a gate on it would pass whatever the model, so it fails closed, whatever the value
    fit_path, _ = halves
    cal = fit_file(tmp_path, fit_path, method)
    args = ["calibrate", fit_path, "--calibrator", cal, "--json"]
    result = run([*args, "--max-ece", "0.5", "--max-brier", "0.9"])
    assert result.exit_code == 1, result.stderr
    report = strict_json(result.stdout)
    assert report["ece"] < 0.5 and report["brier"] < 0.9  # the values would have passed
    assert report["gate"]["passed"] is False
    assert [c["metric"] for c in in_sample_checks(report)] == ["ece", "brier"]
    failures = [line for line in result.stderr.splitlines() if line.startswith("gate failed")]
    assert failures == [
        f"gate failed: ece: {IN_SAMPLE}; cannot support --max-ece 0.5",
        f"gate failed: brier: {IN_SAMPLE}; cannot support --max-brier 0.9",
    ]
    # the figures are still shown, with the warning that says why
    assert any("in-sample" in w for w in report["warnings"])


def test_held_out_rows_and_floors_keep_their_gates(halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    held_out = run(["calibrate", score_path, "--calibrator", cal, "--max-ece", "0.5", "--json"])
    assert held_out.exit_code == 0, held_out.stderr
    assert in_sample_checks(strict_json(held_out.stdout)) == []
    # the number of rows is no figure after the calibrator: --min-rows still reads it
    floor = run(["calibrate", fit_path, "--calibrator", cal, "--min-rows", "1000", "--json"])
    assert floor.exit_code == 0, floor.stderr
    (check,) = strict_json(floor.stdout)["gate"]["checks"]
    assert check == {"metric": "n", "minimum": 1000, "value": 1000, "passed": True}


def test_scoring_a_file_holding_the_fitting_rows_fails_closed(halves, tmp_path):
    # the fitting rows inside a larger file (dev + test concatenated) are found by content
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    both = tmp_path / "both.jsonl"
    both.write_text(score_path.read_text() + fit_path.read_text())
    result = run(["calibrate", both, "--calibrator", cal, "--max-ece", "0.5", "--json"])
    assert result.exit_code == 1
    assert [c["metric"] for c in in_sample_checks(strict_json(result.stdout))] == ["ece"]


def test_a_calibrator_without_a_fingerprint_is_judged_by_its_files(halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    doc = strict_json(cal.read_text())
    del doc["fingerprint"]  # as files written before the fingerprint was recorded
    cal.write_text(json.dumps(doc))
    same = run(["calibrate", fit_path, "--calibrator", cal, "--max-ece", "0.5", "--json"])
    assert same.exit_code == 1
    assert [c["metric"] for c in in_sample_checks(strict_json(same.stdout))] == ["ece"]
    other = run(["calibrate", score_path, "--calibrator", cal, "--max-ece", "0.5"])
    assert other.exit_code == 0, other.stderr


def test_every_group_s_gate_fails_closed_in_sample(halves, tmp_path):
    fit_path, _ = halves
    rows = rows_of(fit_path)
    grouped = write_jsonl(
        tmp_path / "grouped.jsonl", [{**r, "task": "ab"[i % 2]} for i, r in enumerate(rows)]
    )
    cal = fit_file(tmp_path, grouped, "platt", "--by", "task")
    args = ["calibrate", grouped, "--by", "task", "--gate-each", "--max-ece", "0.5", "--json"]
    result = run([*args, "--calibrator", cal])
    assert result.exit_code == 1
    report = strict_json(result.stdout)
    closed = [(c["metric"], c.get("group")) for c in in_sample_checks(report)]
    assert closed == [("ece", None), ("ece", "a"), ("ece", "b")]
    assert report["gate"]["failed_groups"] == ["a", "b"]


def test_cross_fitting_is_out_of_fold_and_keeps_its_gate(halves):
    fit_path, _ = halves
    result = run(["calibrate", fit_path, "--recalibrate", "platt", "--max-ece", "0.5", "--json"])
    assert result.exit_code == 0, result.stderr
    assert in_sample_checks(strict_json(result.stdout)) == []


# --------------------------------------------------------------------------- cross-fitting


def test_recalibrate_cross_fits_out_of_fold(halves):
    path = SAMPLE / "overconfident.jsonl"
    result = run(["calibrate", path, "--recalibrate", "platt", "--folds", "5", "--json"])
    assert result.exit_code == 0, result.stderr
    report = strict_json(result.stdout)
    recal = report["recalibration"]
    assert recal["mode"] == "cross-fitted"
    assert recal["method"] == "platt"
    assert recal["folds"] == 5

    # the fold permutation runs over the right answers' confidences in ascending order, then
    # the wrong answers', whatever order the file holds them in
    c, y = columns(rows_of(path))
    c = np.concatenate([np.sort(c[y]), np.sort(c[~y])])
    y = np.concatenate([y[y], y[~y]])
    n = c.shape[0]
    out = np.empty(n)
    for rows in np.array_split(np.random.default_rng(0).permutation(n), 5):
        train = np.ones(n, dtype=bool)
        train[rows] = False
        _, apply = ref_platt(c[train], y[train])
        out[rows] = apply(c[rows])
    assert_figures(recal["after"], out, y)
    assert_figures(report, out, y)
    assert_figures(recal["before"], c, y)
    assert recal["after"]["ece"] < 0.05 < recal["before"]["ece"]


CROSS_FIT_INTERVALS = (
    "the intervals after --recalibrate resample the cross-fitted confidences with each fold's "
    "map held fixed and leave out the variance of fitting the maps"
)


def test_cross_fitted_intervals_are_named_narrow_and_cannot_gate():
    """The bootstrap after --recalibrate keeps each fold's map fixed, so its intervals miss
    the maps' own variance: --ci says so, and a gate on their upper ends is refused before
    any row is read, while a gate on the estimate runs."""
    path = SAMPLE / "overconfident.jsonl"
    base = ["calibrate", path, "--recalibrate", "platt", "--folds", "3"]
    refused = run([*base, "--max-ece", "0.05", "--gate-on", "upper", "-q"])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr == (
        f"Error: {CROSS_FIT_INTERVALS}: their upper ends cannot gate; gate the estimate, or fit "
        "on other rows (calibcli fit) and gate with --calibrator\n"
    )
    result = run([*base, "--ci", "0.9", "--bootstrap", "200", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    said = f"{CROSS_FIT_INTERVALS}, so they are narrower than they should be"
    assert said in strict_json(result.stdout)["warnings"]
    plain = run([*base, "--max-ece", "0.05", "--json", "-q"])
    assert plain.exit_code == 0, plain.stderr
    assert not any("held fixed" in w for w in strict_json(plain.stdout)["warnings"])


def test_cross_fitting_depends_on_the_rows_not_their_order_or_split(tmp_path):
    """The folds are drawn over the rows in a canonical order, so the file, its lines
    shuffled, its summary and its summary in two parts give the same figures, pooled and per
    --by group."""
    path = SAMPLE / "overconfident.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    random.Random(4).shuffle(lines)
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("".join(lines), encoding="utf-8")
    for by in ([], ["--by", "subject"]):
        whole, one, two = tmp_path / "whole.cbs", tmp_path / "1.cbs", tmp_path / "2.cbs"
        for part, out in ((None, whole), ("1/2", one), ("2/2", two)):
            cut = [] if part is None else ["--part", part]
            made = run(["summarize", shuffled, *by, *cut, "-o", out, "-q"])
            assert made.exit_code == 0, made.stderr
        blocks = []
        for inputs in ([path], [shuffled], [whole], [two, one]):
            args = ["calibrate", *inputs, *by, "--recalibrate", "platt", "--folds", "5", "--json"]
            result = run([*args, "-q"])
            assert result.exit_code == 0, result.stderr
            report = strict_json(result.stdout)
            blocks.append(json.dumps([report["recalibration"], report.get("groups")]))
        assert blocks[1:] == blocks[:1] * 3


@pytest.mark.parametrize(
    "extra",
    [
        ["--folds", "5"],
        ["--calibrator", "CAL", "--recalibrate", "platt"],
    ],
    ids=["folds-without-recalibrate", "calibrator-and-recalibrate"],
)
def test_conflicting_recalibration_options_exit_2(extra, halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    args = [str(cal) if a == "CAL" else a for a in extra]
    result = run(["calibrate", score_path, *args])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


# --------------------------------------------------------------------------- bad calibrator files


def calibrator_text(**changes):
    body = {
        "schema_version": 1,
        "kind": "calibcli-calibrator",
        "method": "platt",
        "params": {"a": 1.5, "b": -2.0},
        "fitted_on": {"n": 10, "files": ["dev.jsonl"], "format": "jsonl"},
        "by": None,
        "groups": {},
    }
    for key, value in changes.items():
        if value is DROP:
            del body[key]
        else:
            body[key] = value
    return json.dumps(body)


DROP = object()

BAD_CALIBRATORS = {
    "not-json": "{this is not json",
    "empty": "",
    "wrong-kind": calibrator_text(kind="calibcli-report"),
    "wrong-schema-version": calibrator_text(schema_version=2),
    "unknown-method": calibrator_text(method="spline"),
    "nan-parameter": calibrator_text().replace('"a": 1.5', '"a": NaN'),
    "negative-temperature": calibrator_text(method="temperature", params={"temperature": -1.0}),
    "zero-temperature": calibrator_text(method="temperature", params={"temperature": 0.0}),
    "missing-params": calibrator_text(params=DROP),
    "missing-param-key": calibrator_text(params={"a": 1.5}),
    "histogram-empty-list": calibrator_text(method="histogram", params={"accuracy": []}),
    "isotonic-unequal-lists": calibrator_text(
        method="isotonic", params={"x": [0.1, 0.5, 0.9], "y": [0.2, 0.6]}
    ),
    "group-of-another-method": calibrator_text(
        by="subject",
        groups={"law": {"method": "temperature", "params": {"temperature": 2.0}, "n": 5}},
    ),
}


@pytest.mark.parametrize("name", list(BAD_CALIBRATORS))
def test_bad_calibrator_files_exit_2_with_one_error_line(name, halves, tmp_path):
    _, score_path = halves
    cal = tmp_path / "cal.json"
    cal.write_text(BAD_CALIBRATORS[name], encoding="utf-8")
    for command in ("calibrate", "reliability"):
        result = run([command, score_path, "--calibrator", cal, "--json"])
        assert result.exit_code == 2, (command, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith("Error: ") and str(cal) in lines[0]
        assert "Traceback" not in result.stderr
        assert result.stdout == ""


def test_missing_calibrator_file_exits_2(halves, tmp_path):
    _, score_path = halves
    result = run(["calibrate", score_path, "--calibrator", tmp_path / "absent.json"])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ") and "Traceback" not in result.stderr


def test_a_hand_written_calibrator_is_applied_exactly(tmp_path):
    """A calibrator written by hand (not by `fit`) maps the rows by its formula."""
    rows = [{"confidence": c, "correct": c > 0.5} for c in (0.1, 0.3, 0.45, 0.6, 0.8, 0.95)]
    data = write_jsonl(tmp_path / "rows.jsonl", rows)
    cal = tmp_path / "cal.json"
    cal.write_text(
        calibrator_text(method="temperature", params={"temperature": 2.0}), encoding="utf-8"
    )
    result = run(["calibrate", data, "--calibrator", cal, "--json"])
    assert result.exit_code == 0, result.stderr
    c, y = columns(rows)
    mapped = [1.0 / (1.0 + math.exp(-math.log(v / (1.0 - v)) / 2.0)) for v in c.tolist()]
    assert_figures(strict_json(result.stdout), mapped, y, tol=1e-12)


# --------------------------------------------------------------------------- reliability


def test_reliability_bins_the_recalibrated_confidences(halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    result = run(["reliability", score_path, "--calibrator", cal, "--json"])
    assert result.exit_code == 0, result.stderr
    report = strict_json(result.stdout)

    _, apply = ref_platt(*columns(rows_of(fit_path)))
    raw, y = columns(rows_of(score_path))
    mapped = apply(raw)
    assert report["reliability"]["count"] == counts(mapped, y, 10)[0]
    assert report["reliability"]["count"] != counts(raw, y, 10)[0]
    for k, accuracy in enumerate(report["reliability"]["accuracy"]):
        members = [bool(yi) for ci, yi in zip(mapped, y, strict=True) if bin_index(ci, 10) == k]
        if members:
            assert accuracy == pytest.approx(sum(members) / len(members), abs=1e-12), k
        else:
            assert accuracy is None, k
    recal = report["recalibration"]
    assert recal["mode"] == "calibrator"
    assert_figures(recal["before"], raw, y)
    assert_figures(recal["after"], mapped, y)


# --------------------------------------------------------------------------- plot


@pytest.mark.parametrize("command", ["calibrate", "reliability"])
def test_plot_with_a_calibrator_draws(command, halves, tmp_path):
    pytest.importorskip("matplotlib")
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    png = tmp_path / "out.png"
    result = run([command, score_path, "--calibrator", cal, "--plot", png])
    assert result.exit_code == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_threshold_s_coverage_gate_fails_closed_in_sample(halves, tmp_path):
    fit_path, score_path = halves
    cal = fit_file(tmp_path, fit_path, "platt")
    gate = ["--target-accuracy", "0.6", "--min-coverage", "0.01", "--json"]
    same = run(["threshold", fit_path, "--calibrator", cal, *gate])
    assert same.exit_code == 1
    (check,) = strict_json(same.stdout)["gate"]["checks"]
    assert check["metric"] == "coverage" and check["reason"] == IN_SAMPLE
    assert f"gate failed: coverage: {IN_SAMPLE}; cannot support --min-coverage 0.01" in (
        same.stderr.splitlines()
    )
    # the calibrator and the threshold both from the dev rows, evaluated on held-out rows
    held_out = run(["threshold", score_path, "--fit", fit_path, "--calibrator", cal, *gate])
    assert held_out.exit_code == 0, held_out.stderr
    assert in_sample_checks(strict_json(held_out.stdout)) == []
