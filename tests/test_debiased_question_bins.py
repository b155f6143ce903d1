"""The debiased RMSCE's fail-closed rules count questions when the rows repeat them.

Its variance term ō(1 − ō)/(n − 1) cannot be estimated in a bin of one question: the rows of
one question scored k times (inspect-ai epochs, HELM train trials, re-runs pooled with
``--all-runs``) are not k answers, and with identical answers (a temperature-0 model) the
term is 0, so nothing is debiased. So a bin counts as its rows over k questions, as the
small-sample warning counts the median bin: a bin carries the term with 2k rows or more, a
gate fails closed when fewer than ``--min-populated-bins`` bins do or when more than a tenth
of the rows lie in the others, and the warning then advises smece alone. One answer a
question is read as before.

References: the bins' counts by numpy (``np.bincount`` of the confidences' bins), or for the
committed inspect-ai log by hand (its 20 samples lie 0, 1, 2, 3, 3, 4, 5, 1, 1, 0 to a bin),
and the rules by a loop over those counts (:func:`verdict`).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from engine_checks import rerun_pair
from harness import run, write_jsonl
from test_epochs import epochs_log
from test_helm_trials import helm_file

import calibcli
from calibcli.engines import file_jobs, file_task, finish, merge_all

# the committed log's 20 samples on 10 uniform bins, by hand
ONE_EPOCH = [0, 1, 2, 3, 3, 4, 5, 1, 1, 0]
GATE = ("--max-rmsce-debiased", "0.5")
INSPECT = ("--scorer", "match", "--json")
ONE_ROW_ADVICE = "prefer smece, and gate with --gate-on upper"
BOTH_ADVICE = "prefer smece or rmsce_debiased"


def verdict(count, repeats, least=3):
    """Which rule closes the gate on bins of ``count`` rows whose questions were scored up to
    ``repeats`` times: "carried" (fewer than ``least`` bins of 2 or more questions), "lone"
    (more than a tenth of the questions in bins of fewer), or None; with the rows of those
    bins."""
    populated = carried = lone = 0
    for rows in count:
        if rows == 0:
            continue
        populated += 1
        if rows / repeats >= 2:  # as few questions as the rows can be
            carried += 1
        else:
            lone += rows
    if carried < least:
        return "carried", lone
    if 10 * (lone / repeats) > sum(count) / repeats:
        return "lone", lone
    return None, lone


def bin_counts(conf, bins=10):
    conf = np.asarray(conf, float)
    return np.bincount(np.minimum((conf * bins).astype(int), bins - 1), minlength=bins).tolist()


def calibrate(args):
    result = run(["calibrate", *map(str, args)])
    return result.exit_code, json.loads(result.stdout), result.stderr


def lone_reason(lone, rows, repeats):
    return (
        f"{lone} of {rows} rows lie in bins of fewer than 2 questions (fewer than {2 * repeats} "
        f"rows: a run scored each question up to {repeats} times), which the debiased RMSCE's "
        "variance term cannot carry (at most a tenth may)"
    )


def small(report):
    (warning,) = [w for w in report["warnings"] if w.startswith("the median populated bin")]
    return warning


def test_one_epoch_fails_closed_on_bins_of_one_row(tmp_path):
    log = epochs_log(tmp_path, epochs=1)
    code, report, _ = calibrate([log, *INSPECT, *GATE])
    assert report["reliability"]["count"] == ONE_EPOCH
    assert verdict(ONE_EPOCH, 1) == ("lone", 3)
    assert code == 1
    (check,) = report["gate"]["checks"]
    assert check["reason"] == (
        "3 of 20 rows lie in bins of one row, which the debiased RMSCE's variance term leaves "
        "out (at most a tenth may)"
    )
    assert BOTH_ADVICE not in small(report)


@pytest.mark.parametrize("epochs", [2, 3])
@pytest.mark.parametrize("by", [(), ("--by", "model", "--gate-each")], ids=["pooled", "each"])
def test_identical_epochs_fail_closed_as_one_epoch_does(tmp_path, epochs, by):
    log = epochs_log(tmp_path, epochs=epochs)  # every epoch answers as the first
    code, report, stderr = calibrate([log, *INSPECT, *GATE, *by])
    count = [epochs * c for c in ONE_EPOCH]
    assert report["reliability"]["count"] == count
    assert verdict(count, epochs) == ("lone", 3 * epochs)
    reason = lone_reason(3 * epochs, 20 * epochs, epochs)
    assert code == 1
    assert report["gate"]["passed"] is False
    assert all(c["reason"] == reason for c in report["gate"]["checks"])
    assert f"gate failed: rmsce_debiased: {reason}; cannot support" in stderr
    warning = small(report)
    assert BOTH_ADVICE not in warning and warning.endswith(ONE_ROW_ADVICE)
    assert (
        f"cannot estimate the variance of bins of fewer than 2 questions, counted as "
        f"{2 * epochs} predictions ({3 * epochs} of {20 * epochs} predictions lie in them, at "
        "most a tenth may)"
    ) in warning


def test_the_reliability_warning_advises_smece_alone(tmp_path):
    log = epochs_log(tmp_path, epochs=3)
    result = run(["reliability", log, *INSPECT])
    assert result.exit_code == 0, result.stderr
    warning = small(json.loads(result.stdout))
    assert BOTH_ADVICE not in warning and warning.endswith(ONE_ROW_ADVICE)
    assert "as few as 2.5 questions" in warning  # the median bin: 7.5 rows over 3


@pytest.mark.parametrize("table", ["never", "auto"])
def test_a_summary_of_the_epochs_fails_closed(tmp_path, table):
    log = epochs_log(tmp_path, epochs=3)
    saved = tmp_path / "ep3.cbs"
    made = run(["summarize", log, "--scorer", "match", "--table", table, "-o", saved, "-q"])
    assert made.exit_code == 0, made.stderr
    code, report, _ = calibrate([saved, "--json", *GATE])
    assert code == 1
    (check,) = report["gate"]["checks"]
    assert check["reason"] == lone_reason(9, 60, 3)
    assert BOTH_ADVICE not in small(report)


def test_an_engine_report_and_the_python_api_fail_closed(tmp_path):
    log = epochs_log(tmp_path, epochs=3)
    jobs = file_jobs([str(log)], "auto", None, scorer="match")
    summary = finish(merge_all([file_task(job) for job in jobs]))
    report = summary.report(limits={"rmsce_debiased": 0.5})
    (check,) = report["gate"]["checks"]
    assert report["gate"]["passed"] is False
    assert check["reason"] == lone_reason(9, 60, 3)
    rows = calibcli.read_predictions(str(log), scorer="match")
    result = calibcli.calibrate(rows, max_rmsce_debiased=0.5)
    assert result.passed is False
    (failure,) = result.failures
    assert lone_reason(9, 60, 3) in failure


def _questions(sizes, singles):
    """Questions at 0.05, 0.15, ...: ``sizes`` of them in each of the first bins (every other
    one right) and ``singles`` bins of one question above them."""
    rows = [
        {"id": f"q{k}-{j}", "confidence": 0.05 + 0.1 * k, "correct": j % 2 == 0}
        for k, size in enumerate(sizes)
        for j in range(size)
    ]
    return rows + [
        {"id": f"s{k}", "confidence": 0.05 + 0.1 * (len(sizes) + k), "correct": k % 2 == 1}
        for k in range(singles)
    ]


def _runs(tmp_path, rows, runs):
    """``runs`` files of the same answers, pooled with --all-runs by their ids."""
    paths = [write_jsonl(tmp_path / f"run{r}.jsonl", rows) for r in range(runs)]
    return [*paths, "--all-runs", "--id-field", "id", "--json"] if runs > 1 else [*paths, "--json"]


@pytest.mark.parametrize(
    ("sizes", "singles"),
    [((9, 9, 9), 3), ((9, 9, 8), 3), ((3, 3, 3), 1), ((3, 3, 2), 1)],
    ids=["tenth", "over", "one-tenth", "one-over"],
)
@pytest.mark.parametrize("runs", [1, 2, 3])
def test_at_most_a_tenth_of_the_questions_may_lie_in_bins_of_one(tmp_path, sizes, singles, runs):
    questions = _questions(sizes, singles)
    code, report, _ = calibrate([*_runs(tmp_path, questions, runs), "--max-rmsce-debiased", "1"])
    count = [runs * c for c in bin_counts([q["confidence"] for q in questions])]
    assert report["reliability"]["count"] == count
    rule, lone = verdict(count, runs)
    assert rule == ("lone" if sum(sizes) + singles in (29, 9) else None)
    assert lone == runs * singles
    (check,) = report["gate"]["checks"]
    warning = small(report)
    if rule is None:
        assert code == 0 and check["passed"] is True and "reason" not in check
        assert BOTH_ADVICE in warning
        return
    assert code == 1 and check["passed"] is False
    rows = runs * len(questions)
    if runs == 1:  # one answer a question: as before
        held = "lies in a bin" if singles == 1 else "lie in bins"
        assert check["reason"] == (
            f"{singles} of {rows} rows {held} of one row, which the debiased RMSCE's variance "
            "term leaves out (at most a tenth may)"
        )
    else:
        assert check["reason"] == lone_reason(lone, rows, runs)
    assert BOTH_ADVICE not in warning and warning.endswith(ONE_ROW_ADVICE)


def test_bins_of_one_question_each_fail_closed(tmp_path):
    # 4 questions in 4 bins, answered twice: 4 bins of 2 rows, none of 2 questions
    questions = _questions((), 4)
    code, report, _ = calibrate([*_runs(tmp_path, questions, 2), "--max-rmsce-debiased", "1"])
    count = report["reliability"]["count"]
    assert count == [2 * c for c in bin_counts([q["confidence"] for q in questions])]
    assert verdict(count, 2) == ("carried", 8)
    assert verdict(count, 1) == (None, 0)  # counted in rows, every bin holds two
    assert code == 1
    (check,) = report["gate"]["checks"]
    assert check["reason"] == (
        "only 0 of 4 populated bins hold 2 or more questions (4 or more rows: a run scored each "
        "question up to 2 times), which the debiased RMSCE's variance term needs (minimum 3)"
    )
    warning = small(report)
    assert BOTH_ADVICE not in warning
    assert "(only 0 of 4 populated bins hold 2 or more, minimum 3): prefer smece" in warning


def test_lm_eval_re_runs_pooled_count_documents(tmp_path):
    older, newer = rerun_pair(tmp_path)
    one = calibrate([newer, "--json", "-q", "--bins", "100", *GATE])[1]["reliability"]["count"]
    code, report, _ = calibrate(
        [older, newer, "--all-runs", "--json", "-q", "--bins", "100", *GATE]
    )
    count = report["reliability"]["count"]
    rows = sum(count)
    assert rows == 2 * sum(one)
    rule, lone = verdict(count, 2)
    assert verdict(count, 1)[0] is None  # counted in rows the gate would read the figure
    assert rule == "lone"
    assert code == 1
    (check,) = report["gate"]["checks"]
    assert check["reason"] == lone_reason(lone, rows, 2)


def test_helm_train_trials_count_instances(tmp_path):
    # 40 instances at 0.25 + 0.75 j / 40 (j = 37 i mod 40: each of 0..39 once), 3 trials each
    conf = [0.25 + 0.75 * ((i * 37) % 40) / 40 for i in range(40)]
    one = bin_counts(conf, 40)
    path = helm_file(tmp_path, 3)
    code, report, _ = calibrate([path, "--json", "--bins", "40", *GATE])
    count = report["reliability"]["count"]
    assert count == [3 * c for c in one]
    assert verdict(count, 1)[0] is None  # counted in rows every bin holds 3 or more
    rule, lone = verdict(count, 3)
    assert rule == "lone" and lone == 3 * one.count(1)
    assert code == 1
    (check,) = report["gate"]["checks"]
    assert check["reason"] == lone_reason(lone, 120, 3)
