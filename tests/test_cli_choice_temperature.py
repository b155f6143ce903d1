"""Temperature scaling over lm-eval multiple-choice rows: `calibcli fit --method temperature`
on lm-eval samples scales every choice's loglikelihood (softmax(l / T)), not the top choice's
confidence.

References, computed here from the committed harness samples: each row's choice loglikelihoods
parsed from ``filtered_resps`` (the first half for a task with ``acc_mutual_info``), its gold
index from ``target`` (a digit string, or the text of one continuation), its correctness from
the row's ``acc``; T from scipy's bounded scalar minimiser over log T of the mean NLL of the gold
choice; ECE by a plain loop over 10 equal-width bins; platt by scikit-learn's
``_SigmoidCalibration``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from harness import run
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp
from sklearn.calibration import _SigmoidCalibration

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
T_MIN, T_MAX = 1e-4, 1e4  # the documented search range of the temperature
EPS = 1e-12  # the clip of c before logit(c)
TOL = 1e-6


def fixture(task):
    (path,) = sorted(FIXTURES.glob(f"samples_{task}_*.jsonl"))
    return path


SCIENCE = fixture("toy_mc_science")
TRIVIA = fixture("toy_mc_trivia")
FILES = [SCIENCE, TRIVIA]


# --------------------------------------------------------------------------- parsing


def gold_index(row, n):
    """The gold choice: ``target`` as an index, or the continuation whose text equals it."""
    target = row["target"]
    if isinstance(target, str) and target.strip().isdigit():
        return int(target.strip())
    texts = [row["arguments"][f"gen_args_{i}"]["arg_1"].strip() for i in range(n)]
    assert texts.count(target.strip()) == 1, (row["doc_id"], target, texts)
    return texts.index(target.strip())


def mc_rows(path):
    """(loglikelihoods, gold, correct) of each row of a samples file, in file order."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        resps = row["filtered_resps"]
        n = len(resps) // 2 if "acc_mutual_info" in row else len(resps)
        lls = [float(r[0]) for r in resps[:n]]
        gold = gold_index(row, n)
        assert 0 <= gold < n
        out.append((lls, gold, bool(row["acc"])))
    return out


@pytest.fixture(scope="module")
def rows():
    """{task: rows} of the two committed multiple-choice fixtures."""
    return {"toy_mc_science": mc_rows(SCIENCE), "toy_mc_trivia": mc_rows(TRIVIA)}


def all_rows(rows):
    return rows["toy_mc_science"] + rows["toy_mc_trivia"]  # the command-line order


def padded(part):
    """(N, max choices) loglikelihoods padded with -inf, gold indices, correctness."""
    width = max(len(lls) for lls, _, _ in part)
    values = np.full((len(part), width), -np.inf)
    for i, (lls, _, _) in enumerate(part):
        values[i, : len(lls)] = lls
    gold = np.array([g for _, g, _ in part])
    correct = np.array([y for _, _, y in part])
    return values, gold, correct


# --------------------------------------------------------------------------- references


def mean_nll(part, t):
    values, gold, _ = padded(part)
    scaled = values / t
    return float(np.mean(logsumexp(scaled, axis=1) - scaled[np.arange(len(part)), gold]))


def ref_temperature(part):
    """T minimising the mean gold NLL under softmax(l / T), scipy on log T in [T_MIN, T_MAX];
    an optimum at the upper bound (the NLL still falling there) is the bound itself."""
    res = minimize_scalar(
        lambda log_t: mean_nll(part, math.exp(log_t)),
        bounds=(math.log(T_MIN), math.log(T_MAX)),
        method="bounded",
        options={"xatol": 1e-12},
    )
    t = math.exp(res.x)
    if t > T_MAX * (1 - 1e-4):
        assert mean_nll(part, T_MAX) < mean_nll(part, T_MAX / 2), "not a boundary optimum"
        return T_MAX
    return t


def tempered_confidences(part, t):
    """max_j softmax(l / T)_j of each row."""
    values, _, _ = padded(part)
    scaled = values / t
    return np.exp(np.max(scaled, axis=1) - logsumexp(scaled, axis=1))


def ece_loop(conf, correct, bins=10):
    """sum_k (n_k / N) |mean confidence_k - accuracy_k| over bins [k/M, (k+1)/M)."""
    total = [0.0] * bins
    right = [0] * bins
    for c, y in zip(conf, correct, strict=True):
        k = 0
        while k < bins - 1 and c >= (k + 1) / bins:
            k += 1
        total[k] += c
        right[k] += int(y)
    return math.fsum(abs(total[k] - right[k]) for k in range(bins)) / len(conf)


def strict_json(text):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def fit_json(*extra):
    result = run(["fit", *FILES, "-q", "--json", *extra])
    assert result.exit_code == 0, result.stderr
    return strict_json(result.stdout)


# --------------------------------------------------------------------------- tests


def test_the_fixtures_hold_both_gold_conventions(rows):
    """Science logs the gold index as a digit string, trivia the answer text with twice as many
    responses as choices; every row's gold is found and accuracy is neither 0 nor 1."""
    science = json.loads(SCIENCE.read_text(encoding="utf-8").splitlines()[0])
    trivia = json.loads(TRIVIA.read_text(encoding="utf-8").splitlines()[0])
    assert science["target"].isdigit() and "acc_mutual_info" not in science
    assert not trivia["target"].isdigit() and "acc_mutual_info" in trivia
    assert len(trivia["filtered_resps"]) == 6
    assert len(rows["toy_mc_science"]) == 48 and len(rows["toy_mc_trivia"]) == 40
    assert {len(lls) for lls, _, _ in rows["toy_mc_trivia"]} == {3}
    correct = [y for _, _, y in all_rows(rows)]
    assert 0 < sum(correct) < len(correct)


def test_fit_temperature_on_lm_eval_scales_the_choices(rows, tmp_path):
    out = tmp_path / "cal.json"
    result = run(["fit", *FILES, "--method", "temperature", "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    doc = strict_json(out.read_text(encoding="utf-8"))
    assert doc["method"] == "multiclass_temperature"
    assert set(doc["params"]) == {"temperature"}
    assert doc["fitted_on"]["n"] == 88
    assert doc["fitted_on"]["format"] == "lm-eval"
    assert doc["by"] is None and doc["groups"] == {}
    t = ref_temperature(all_rows(rows))
    assert T_MIN < t < T_MAX
    assert doc["params"]["temperature"] == pytest.approx(t, abs=TOL)


def test_calibrate_with_a_choice_calibrator_reports_tempered_confidences(rows, tmp_path):
    cal = tmp_path / "cal.json"
    assert run(["fit", *FILES, "--method", "temperature", "-o", cal, "-q"]).exit_code == 0
    result = run(["calibrate", *FILES, "--calibrator", cal, "--json"])
    assert result.exit_code == 0, result.stderr
    report = strict_json(result.stdout)
    recal = report["recalibration"]
    assert recal["method"] == "multiclass_temperature" and recal["mode"] == "calibrator"

    part = all_rows(rows)
    _, _, correct = padded(part)
    # the scipy reference temperature: agreement to the fit's tolerance
    conf = tempered_confidences(part, ref_temperature(part))
    assert recal["after"]["mean_confidence"] == pytest.approx(float(np.mean(conf)), abs=TOL)
    assert recal["after"]["accuracy"] == pytest.approx(float(np.mean(correct)), abs=1e-15)
    # the file's temperature: the map and the binning exactly
    t = strict_json(cal.read_text(encoding="utf-8"))["params"]["temperature"]
    conf = tempered_confidences(part, t)
    assert recal["after"]["mean_confidence"] == pytest.approx(float(np.mean(conf)), abs=1e-12)
    assert recal["after"]["ece"] == pytest.approx(ece_loop(conf.tolist(), correct), abs=1e-12)
    assert report["ece"] == recal["after"]["ece"]
    # before: the untempered top choice (T = 1)
    raw = tempered_confidences(part, 1.0)
    assert recal["before"]["mean_confidence"] == pytest.approx(float(np.mean(raw)), abs=1e-12)
    assert recal["before"]["ece"] == pytest.approx(ece_loop(raw.tolist(), correct), abs=1e-12)


def test_a_hand_written_choice_calibrator_is_applied_exactly(rows, tmp_path):
    cal = tmp_path / "cal.json"
    body = {
        "schema_version": 1,
        "kind": "calibcli-calibrator",
        "method": "multiclass_temperature",
        "params": {"temperature": 2.5},
        "fitted_on": {"n": 10, "files": ["other.jsonl"], "format": "lm-eval"},
        "by": None,
        "groups": {},
    }
    cal.write_text(json.dumps(body), encoding="utf-8")
    result = run(["calibrate", *FILES, "--calibrator", cal, "--json"])
    assert result.exit_code == 0, result.stderr
    after = strict_json(result.stdout)["recalibration"]["after"]
    part = all_rows(rows)
    conf = tempered_confidences(part, 2.5)
    _, _, correct = padded(part)
    assert after["mean_confidence"] == pytest.approx(float(np.mean(conf)), abs=1e-12)
    assert after["ece"] == pytest.approx(ece_loop(conf.tolist(), correct), abs=1e-12)


def test_a_choice_calibrator_on_native_rows_exits_2(tmp_path):
    cal = tmp_path / "cal.json"
    assert run(["fit", *FILES, "--method", "temperature", "-o", cal, "-q"]).exit_code == 0
    native = tmp_path / "native.jsonl"
    native.write_text(
        "".join(json.dumps({"confidence": c, "correct": c > 0.5}) + "\n" for c in (0.2, 0.6, 0.9)),
        encoding="utf-8",
    )
    result = run(["calibrate", native, "--calibrator", cal, "--json"])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    assert "Traceback" not in result.stderr


def test_recalibrate_temperature_cross_fits_over_the_choices(rows):
    result = run(["calibrate", *FILES, "--recalibrate", "temperature", "--folds", "4", "--json"])
    assert result.exit_code == 0, result.stderr
    report = strict_json(result.stdout)
    recal = report["recalibration"]
    assert recal["method"] == "multiclass_temperature"
    assert recal["mode"] == "cross-fitted" and recal["folds"] == 4

    part = all_rows(rows)  # rows in file order, the files in command-line order
    n = len(part)
    conf = np.empty(n)
    for held in np.array_split(np.random.default_rng(0).permutation(n), 4):
        train = [part[i] for i in range(n) if i not in set(held.tolist())]
        t = ref_temperature(train)
        conf[held] = tempered_confidences([part[i] for i in held], t)
    _, _, correct = padded(part)
    assert recal["after"]["mean_confidence"] == pytest.approx(float(np.mean(conf)), abs=TOL)
    assert recal["after"]["ece"] == pytest.approx(ece_loop(conf.tolist(), correct), abs=TOL)
    assert report["mean_confidence"] == recal["after"]["mean_confidence"]
    # the out-of-fold figures differ from the in-sample ones
    in_sample = tempered_confidences(part, ref_temperature(part))
    assert abs(float(np.mean(in_sample)) - recal["after"]["mean_confidence"]) > 1e-4


def test_fit_by_task_fits_one_temperature_per_task(rows, tmp_path):
    doc = fit_json("--method", "temperature", "--by", "task")
    assert doc["method"] == "multiclass_temperature" and doc["by"] == "task"
    assert sorted(doc["groups"]) == ["toy_mc_science", "toy_mc_trivia"]
    for task, part in rows.items():
        group = doc["groups"][task]
        assert group["method"] == "multiclass_temperature"
        assert group["n"] == len(part)
        assert group["params"]["temperature"] == pytest.approx(ref_temperature(part), abs=TOL)
    pooled = ref_temperature(all_rows(rows))
    assert doc["params"]["temperature"] == pytest.approx(pooled, abs=TOL)

    # applied with --by task, each task's rows are tempered by the task's own T
    cal = tmp_path / "by.json"
    cal.write_text(json.dumps(doc), encoding="utf-8")
    result = run(["calibrate", *FILES, "--calibrator", cal, "--by", "task", "--json"])
    assert result.exit_code == 0, result.stderr
    report = strict_json(result.stdout)
    pooled_conf = []
    for task, part in rows.items():
        conf = tempered_confidences(part, doc["groups"][task]["params"]["temperature"])
        assert report["groups"][task]["mean_confidence"] == pytest.approx(
            float(np.mean(conf)), abs=1e-12
        ), task
        pooled_conf.extend(conf.tolist())
    assert report["recalibration"]["after"]["mean_confidence"] == pytest.approx(
        math.fsum(pooled_conf) / len(pooled_conf), abs=1e-12
    )


def test_platt_on_lm_eval_maps_the_top_choice_confidence(rows, tmp_path):
    doc = fit_json("--method", "platt")
    assert doc["method"] == "platt"
    part = all_rows(rows)
    conf = tempered_confidences(part, 1.0)
    _, _, correct = padded(part)
    z = np.log(np.clip(conf, EPS, 1 - EPS)) - np.log1p(-np.clip(conf, EPS, 1 - EPS))
    sk = _SigmoidCalibration().fit(z, correct.astype(np.float64))
    a, b = -float(sk.a_), -float(sk.b_)
    assert doc["params"]["a"] == pytest.approx(a, abs=TOL)
    assert doc["params"]["b"] == pytest.approx(b, abs=TOL)

    cal = tmp_path / "platt.json"
    cal.write_text(json.dumps(doc), encoding="utf-8")
    result = run(["calibrate", *FILES, "--calibrator", cal, "--json"])
    assert result.exit_code == 0, result.stderr
    after = strict_json(result.stdout)["recalibration"]["after"]
    pa, pb = doc["params"]["a"], doc["params"]["b"]
    mapped = 1.0 / (1.0 + np.exp(-(pa * z + pb)))
    assert after["mean_confidence"] == pytest.approx(float(np.mean(mapped)), abs=1e-12)
    assert after["ece"] == pytest.approx(ece_loop(mapped.tolist(), correct), abs=1e-12)


# --------------------------------------------------------------------------- unknown gold


def with_row_changed(tmp_path, line_no, **changes):
    """A copy of the science samples (same file name) with row ``line_no`` changed."""
    lines = SCIENCE.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[line_no - 1])
    row.update(changes)
    lines[line_no - 1] = json.dumps(row)
    out = tmp_path / SCIENCE.name
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


@pytest.mark.parametrize(
    "target", ["banana", "7", "Its mass stays the same. (no such choice)"], ids=str
)
def test_a_row_with_unknown_gold_stops_the_temperature_fit(target, tmp_path):
    bad = with_row_changed(tmp_path, 3, target=target, acc=0.0)
    for args in (
        ["fit", bad, TRIVIA, "--method", "temperature", "--json"],
        ["calibrate", bad, TRIVIA, "--recalibrate", "temperature", "--folds", "4", "--json"],
    ):
        result = run(args)
        assert result.exit_code == 2, (args[0], result.stderr)
        lines = result.stderr.splitlines()
        errors = [line for line in lines if line.startswith("Error: ")]
        assert len(errors) == 1, lines
        assert f"{bad}:3:" in errors[0], errors[0]
        assert "Traceback" not in result.stderr
        assert result.stdout == ""
    # the binary maps need no gold: the top choice's correctness is the row's acc
    assert run(["fit", bad, TRIVIA, "--method", "platt", "--json", "-q"]).exit_code == 0


def test_a_row_scored_right_without_a_gold_index_uses_its_top_choice(rows, tmp_path):
    """lm_eval_gold's fallback: a row scored right has its top choice as gold."""
    science = rows["toy_mc_science"]
    line_no = next(i for i, (_, _, y) in enumerate(science) if y) + 1
    patched = with_row_changed(tmp_path, line_no, target="banana")
    result = run(["fit", patched, TRIVIA, "--method", "temperature", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    lls, gold, _ = science[line_no - 1]
    assert gold == lls.index(max(lls))  # its logged target already was the top choice
    t = ref_temperature(all_rows(rows))
    assert strict_json(result.stdout)["params"]["temperature"] == pytest.approx(t, abs=TOL)
