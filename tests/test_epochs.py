"""inspect-ai runs with several epochs: each sample is one row per epoch, and every bootstrap
draws a question's rows together.

The logs are the committed real inspect-ai log as inspect-ai writes a run of two epochs: each
sample twice, epochs 1 and 2 (copies of each other), and ``eval.config.epochs`` 2. Copies make
the expected intervals known without calibcli: drawn by question, two copies of each row weigh
each question as one row does, so the Poisson scheme (weights keyed by question) gives the
one-epoch log's intervals exactly; the multinomial and paired schemes are checked against a
plain loop drawing the questions as their docstrings say, on the labels the command handed
to the bootstrap, whose partition is checked to be the samples'."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from harness import run

import calibcli.metrics as metrics
from calibcli.metrics.bootstrap import replicate_generator
from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.estimators import calibration_estimates

INSPECT = Path(__file__).resolve().parent / "fixtures" / "inspect_ai"
DRAWN = (
    "inspect-ai runs scored each sample several times: epochs.json (2 epochs): the figures "
    "weigh every answer, and the bootstrap draws each question's answers together"
)
REPEATS = (
    "the rows repeat their questions (see the warning), so the upper end of a bootstrap over "
    "rows is too low; gate the estimate"
)
# the samples of the committed log its match scorer marks right ("C")
RIGHT_ON_BASE = {
    s["id"]
    for s in json.loads((INSPECT / "toy_arithmetic.json").read_text())["samples"]
    if s["scores"]["match"]["value"] == "C"
}
KEYS = ("accuracy", "mean_confidence", "ece", "brier", "mce", "rmsce", "nll", "auroc")


def epochs_log(tmp_path, name="epochs.json", flip=(), copies=1, epochs=2):
    """The committed real inspect-ai .json log as a run of two epochs writes it; the samples
    whose id is in ``flip`` scored the other way (a second model's answers). ``copies`` > 1
    asks each of the log's 20 samples that many times under new ids (sample i's copy k has id
    i + 100 k), a task of 20 ``copies`` questions."""
    log = json.loads((INSPECT / "toy_arithmetic.json").read_text())
    log["eval"]["config"]["epochs"] = epochs
    log["eval"]["eval_id"] = f"{name}-{epochs}-{copies}"  # a run of its own, as inspect-ai gives
    samples = []
    for s in log["samples"]:
        if s["id"] in flip:
            match = s["scores"]["match"]
            s["scores"]["match"] = {**match, "value": "I" if match["value"] == "C" else "C"}
    for k in range(copies):
        for s in log["samples"]:
            samples += [{**s, "id": s["id"] + 100 * k, "epoch": e} for e in range(1, epochs + 1)]
    log["samples"] = samples
    path = tmp_path / name
    path.write_text(json.dumps(log))
    return path


def report_of(result):
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def captured(monkeypatch, name):
    """Record the arguments of each call of ``calibcli.metrics.<name>`` (the command's import
    finds the wrapper), calling the real function."""
    real, calls = getattr(metrics, name), []

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(metrics, name, spy)
    return calls


def one_question_per_label(conf, labels, copies=1):
    """Each label names one question (its rows' confidences are one sample's copies), and each
    question one label: the 20 samples, two rows each (``copies``: each sample asked that many
    times under other ids, each its own question)."""
    by_label, by_conf = {}, {}
    for c, label in zip(conf.tolist(), labels.tolist(), strict=True):
        by_label.setdefault(label, set()).add(c)
        by_conf.setdefault(c, set()).add(label)
    assert all(len(v) == 1 for v in by_label.values())
    assert all(len(v) == copies for v in by_conf.values())
    assert sorted(np.unique(labels, return_counts=True)[1].tolist()) == [2] * 20 * copies


def reference(sides, labels, samples, seed, level=0.95):
    """Percentile intervals of each figure (of one side, or NEW − BASE of two) over replicates
    drawing the distinct labels, in increasing order, as replicate r's generator draws them."""
    distinct = sorted(set(labels.tolist()))
    number = {label: i for i, label in enumerate(distinct)}
    of_row = np.array([number[label] for label in labels.tolist()])
    values = {key: [] for key in KEYS}
    for r in range(samples):
        drawn = replicate_generator(seed, r).integers(0, len(distinct), size=len(distinct))
        w = np.bincount(drawn, minlength=len(distinct))[of_row]
        figures = [
            calibration_estimates(
                PredictionColumns.from_arrays(np.repeat(conf, w), np.repeat(corr, w)),
                edges=np.linspace(0.0, 1.0, 11),
            ).scalars()
            for conf, corr in sides
        ]
        for key in KEYS:
            value = figures[-1][key] - (figures[0][key] if len(figures) == 2 else 0.0)
            if not np.isnan(value):
                values[key].append(value)
    return {
        key: np.quantile(np.asarray(v), [(1 - level) / 2, (1 + level) / 2]).tolist()
        for key, v in values.items()
    }


def assert_intervals(got, expected):
    for key in KEYS:
        assert got[key] == pytest.approx(expected[key], rel=1e-9, abs=1e-12), key


# --------------------------------------------------------------------------- calibrate


def test_calibrate_draws_each_sample_s_epochs_together(tmp_path, monkeypatch):
    calls = captured(monkeypatch, "bootstrap_intervals")
    args = ["calibrate", epochs_log(tmp_path), "--scorer", "match", "--ci", "0.95"]
    result = run([*args, "--bootstrap", "200", "--seed", "3", "--json"])
    assert result.exit_code == 0, result.stderr
    report = report_of(result)
    assert report["n"] == 40  # 20 samples, 2 epochs each
    assert DRAWN in report["warnings"]
    ((columns,), kwargs) = calls[0][0], calls[0][1]
    right, wrong = kwargs["clusters"]
    conf = np.concatenate([columns.conf_correct, columns.conf_wrong])
    labels = np.concatenate([right, wrong])
    one_question_per_label(conf, labels)
    correct = np.arange(conf.shape[0]) < columns.conf_correct.shape[0]
    expected = reference([(conf, correct)], labels, 200, 3)
    assert_intervals(report["ci"], expected)


def test_an_upper_end_gate_reads_the_intervals_drawn_by_question(tmp_path):
    log = epochs_log(tmp_path, copies=2)  # 40 questions, 80 rows
    args = ["calibrate", log, "--scorer", "match", "--gate-on", "upper"]
    passed = run([*args, "--max-brier", "0.99", "--bootstrap", "200", "--json"])
    assert passed.exit_code == 0, passed.stderr
    check = report_of(passed)["gate"]["checks"][0]
    assert check["passed"] is True and "reason" not in check


def test_poisson_weights_keyed_by_question_give_the_one_epoch_intervals(tmp_path):
    # a run of one epoch keys its rows as before, and two copies of a row weigh its question
    # twice: every figure is the same under doubled weights but the debiased RMSCE (whose
    # correction counts rows) and the smooth ECE, which relplot itself moves in the sixth digit
    # when every row is doubled (relplot.smECE of the log's rows: 0.147975512, doubled
    # 0.147975884)
    args = ["--scorer", "match", "--ci", "0.95", "--bootstrap-scheme", "poisson", "--json"]
    once = report_of(run(["calibrate", INSPECT / "toy_arithmetic.json", *args]))
    twice = report_of(run(["calibrate", epochs_log(tmp_path), *args]))
    for key, (lo, hi) in once["ci"].items():
        close = 1e-5 if key == "smece" else 1e-9
        if key == "rmsce_debiased":
            continue
        if lo is None:
            assert twice["ci"][key] == [None, None], key
        else:
            assert twice["ci"][key] == pytest.approx([lo, hi], rel=close, abs=1e-12), key


def test_a_one_epoch_log_draws_as_before(tmp_path, monkeypatch):
    calls = captured(monkeypatch, "bootstrap_intervals")
    result = run(["calibrate", INSPECT / "toy_arithmetic.json", "--scorer", "match", "--ci", "0.9"])
    assert result.exit_code == 0, result.stderr
    assert calls[0][1]["clusters"] is None  # no keys are kept: the rows are drawn one by one
    assert "several times" not in result.stderr


def test_cross_fitting_holds_each_sample_s_epochs_out_together(tmp_path, monkeypatch):
    calls = captured(monkeypatch, "cross_fit")
    log = epochs_log(tmp_path)
    result = run(["calibrate", log, "--scorer", "match", "--recalibrate", "histogram", "--json"])
    assert result.exit_code == 0, result.stderr
    ((conf, _correct), kwargs) = calls[0][0], calls[0][1]
    one_question_per_label(conf, np.asarray(kwargs["clusters"]))


def test_one_epoch_is_not_said():
    result = run(["calibrate", INSPECT / "toy_arithmetic.eval", "--scorer", "match", "--json"])
    assert not [w for w in report_of(result)["warnings"] if "several times" in w]


# --------------------------------------------------------------------------- threshold


def test_a_threshold_chosen_on_one_epoch_reads_the_epochs_rows(tmp_path):
    args = ["threshold", epochs_log(tmp_path), "--fit", INSPECT / "toy_arithmetic.json"]
    result = run([*args, "--scorer", "match", "--target-accuracy", "0.4", "--min-coverage", "0.1"])
    assert result.exit_code == 0, result.stderr


# --------------------------------------------------------------------------- summary files


def summary_away(tmp_path, *options, copies=1):
    """A summary of the epochs log, read where the log is not."""
    log = epochs_log(tmp_path, copies=copies)
    out = tmp_path / "away" / "epochs.cbs"
    out.parent.mkdir()
    made = run(["summarize", log, "--scorer", "match", *options, "-o", out])
    assert made.exit_code == 0, made.stderr
    log.unlink()
    return out


def test_a_summary_s_rows_without_keys_close_an_upper_gate_away_from_the_log(tmp_path):
    summary = summary_away(tmp_path, copies=2)
    args = ["calibrate", summary, "--gate-on", "upper", "--max-brier", "0.99", "--json"]
    result = run([*args, "--bootstrap", "200"])
    assert result.exit_code == 1
    report = report_of(result)
    assert [c.get("reason") for c in report["gate"]["checks"]] == [REPEATS]
    said = [w for w in report["warnings"] if "several times" in w]
    assert said == [
        "inspect-ai runs scored each sample several times: epochs.json (2 epochs): the rows "
        "repeat each question, so a bootstrap over rows gives intervals too narrow, and a gate "
        "on their upper end fails; gate the estimate"
    ]


def test_a_summary_s_poisson_sums_are_drawn_by_question_away_from_the_log(tmp_path):
    summary = summary_away(tmp_path, "--bootstrap-samples", "200", copies=2)
    args = ["calibrate", summary, "--gate-on", "upper", "--max-brier", "0.99", "--json"]
    sums = run([*args, "--bootstrap-scheme", "poisson"])
    assert sums.exit_code == 0, sums.stderr
    assert [w for w in report_of(sums)["warnings"] if "several times" in w] == [
        "inspect-ai runs scored each sample several times: epochs.json (2 epochs): the figures "
        "weigh every answer; the summary's Poisson sums draw each question's answers together, "
        "but its rows do not, so a gate on an interval's upper end needs --bootstrap-scheme "
        "poisson"
    ]
    rows = run([*args, "--bootstrap", "200"])  # the multinomial scheme over its rows
    assert rows.exit_code == 1
    assert [c.get("reason") for c in report_of(rows)["gate"]["checks"]] == [REPEATS]


def test_a_summary_records_its_runs_model_and_epochs(tmp_path):
    summary = summary_away(tmp_path)
    from calibcli.summaries.encoding import from_bytes

    (source,) = from_bytes(summary.read_bytes()).sources
    assert (source.model, source.epochs) == ("mockllm/model", 2)


# --------------------------------------------------------------------------- compare


def test_compare_draws_each_sample_s_epochs_together(tmp_path, monkeypatch):
    calls = captured(monkeypatch, "paired_bootstrap")
    base = epochs_log(tmp_path, "base.json", copies=2)
    new = epochs_log(tmp_path, "new.json", flip={3, 6, 9, 12}, copies=2)
    args = ["compare", base, new, "--scorer", "match", "--bootstrap", "200", "--seed", "5"]
    result = run([*args, "--max-increase", "brier=0.5", "--json"])
    assert result.exit_code in (0, 1), result.stderr
    report = report_of(result)
    assert report["matched"] == 80
    assert "reason" not in report["gate"]["checks"][0]  # the gate reads the interval
    assert (
        "the matched rows repeat their questions (an inspect-ai sample's epochs, a HELM "
        "instance's train trials): the intervals draw each question's rows together, McNemar's "
        "test is Durkalski et al.'s for clustered pairs and DeLong's takes Obuchowski's "
        "covariance for clustered rows"
    ) in report["warnings"]
    # McNemar by question: each sample's two copies lean one way, so the statistic is the
    # chi-square of one row per sample, (b - c)^2 / (b + c) over the flipped samples
    flipped = {3, 6, 9, 12}  # and their copies 103, 106, ...
    b_q = 2 * sum(1 for q in flipped if q in RIGHT_ON_BASE)
    c_q = 2 * len(flipped) - b_q
    assert report["mcnemar"]["clustered"] == {
        "test": "durkalski",
        "questions": 40,
        "statistic": pytest.approx((b_q - c_q) ** 2 / (b_q + c_q)),
    }
    (b, n), kwargs = calls[0][0], calls[0][1]
    labels = np.asarray(kwargs["clusters"])
    one_question_per_label(b[0], labels, copies=2)
    expected = reference([b, n], labels, 200, 5)
    got = {key: report["figures"][key]["interval"] for key in KEYS}
    assert_intervals(got, expected)


def test_the_table_and_the_html_name_the_clustered_test(tmp_path):
    base = epochs_log(tmp_path, "base.json")
    new = epochs_log(tmp_path, "new.json", flip={3, 6, 9, 12})
    page = tmp_path / "compare.html"
    result = run(["compare", base, new, "--scorer", "match", "--html", page])
    assert result.exit_code == 0, result.stderr
    name = "McNemar's test for clustered pairs (Durkalski et al. 2003)"
    assert f"accuracy: {name} p = " in result.stdout
    assert "McNemar&#x27;s test for clustered pairs (Durkalski et al. 2003)" in page.read_text()


def test_unpaired_compare_of_epochs_still_closes_an_upper_gate(tmp_path):
    base, new = epochs_log(tmp_path, "base.json"), epochs_log(tmp_path, "new.json")
    args = ["compare", base, new, "--scorer", "match", "--max-increase", "brier=0.5", "--json"]
    upper = run([*args, "--unpaired", "--bootstrap", "200"])
    assert upper.exit_code == 1
    # each side's 20 samples are drawn whole: too few questions for the upper end
    assert [c.get("reason") for c in report_of(upper)["gate"]["checks"]] == [
        "only 20 questions (the bootstrap draws each with all its rows): the upper end of a "
        "bootstrap interval needs at least 30 to show how brier varies"
    ]
    estimate = run([*args, "--unpaired", "--bootstrap", "200", "--gate-on", "estimate"])
    assert estimate.exit_code == 0, estimate.stderr


# --------------------------------------------------------------------------- from Python


def test_the_api_draws_epochs_together_and_closes_what_it_cannot(tmp_path, monkeypatch):
    import calibcli

    rows = calibcli.read_predictions(epochs_log(tmp_path, copies=2), scorer="match")
    assert DRAWN in rows.warnings
    calls = captured(monkeypatch, "bootstrap_intervals")
    upper = {"ci": 0.95, "bootstrap": 200, "gate_on": "upper"}
    report = json.loads(calibcli.calibrate(rows, **upper, max_brier=0.99).to_json())
    assert report["gate"]["passed"] is True
    right, wrong = calls[0][1]["clusters"]
    columns = calls[0][0][0]
    conf = np.concatenate([columns.conf_correct, columns.conf_wrong])
    one_question_per_label(conf, np.concatenate([right, wrong]), copies=2)
    margin = {"max_increase": {"brier": 0.5}, "bootstrap": 200}
    paired = json.loads(calibcli.compare(rows, rows, **margin).to_json())
    assert "reason" not in paired["gate"]["checks"][0]
    unpaired = json.loads(calibcli.compare(rows, rows, **margin, unpaired=True).to_json())
    assert "reason" not in unpaired["gate"]["checks"][0]  # each side's questions drawn whole
    chosen = json.loads(calibcli.threshold(rows, target_accuracy=0.4, min_coverage=0.1).to_json())
    assert chosen["guaranteed"]["one_per_question"] == {"questions": 40, "rows": 80, "seed": 0}


def test_a_log_whose_epochs_are_found_only_after_reading_closes_an_upper_gate(
    tmp_path, monkeypatch
):
    # the rows are keyed by question when the log's head says it repeats them; a .json log
    # whose eval ends past the head is read unkeyed, and the check after reading closes the
    # gate rather than pass it on intervals drawn row by row
    from calibcli.io import inspect_log

    monkeypatch.setattr(inspect_log, "HEAD_BYTES", 64)
    inspect_log.forget_runs()
    log = epochs_log(tmp_path, copies=2)
    args = ["calibrate", log, "--scorer", "match", "--gate-on", "upper"]
    result = run([*args, "--max-brier", "0.99", "--bootstrap", "200", "--json"])
    inspect_log.forget_runs()
    assert result.exit_code == 1
    assert [c.get("reason") for c in report_of(result)["gate"]["checks"]] == [REPEATS]


def test_the_api_s_unpaired_warning_is_the_command_s(tmp_path):
    import calibcli

    log = epochs_log(tmp_path, copies=2)
    rows = calibcli.read_predictions(log, scorer="match")
    api = json.loads(calibcli.compare(rows, rows, unpaired=True, bootstrap=200).to_json())
    args = ["compare", log, log, "--scorer", "match", "--unpaired", "--bootstrap", "200"]
    command = report_of(run([*args, "--json"]))
    said = [w for w in api["warnings"] if "several times" in w]
    assert said == [w for w in command["warnings"] if "several times" in w]
    assert said == [DRAWN]
