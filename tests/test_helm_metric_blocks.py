"""A HELM run of several metrics: the runner writes each metric's per-instance entries after the
previous metric's (``runner.py``: ``per_instance_stats.extend(...)``), so one instance and
trial has an entry of each, and HELM reads them as one (its predictions merge them:
``stats_by_trial[key].update``). A boolq run with the generative-harms metrics holds
``BasicGenerationMetric``'s entries then ``ToxicityMetric``'s; a GPQA chain-of-thought run,
then ``GPQAChainOfThoughtMetric``'s; a run spec with both the exact-match and the F1 metric
specs, ``BasicGenerationMetric``'s twice, alike but for the names asked for. calibcli reads one
row per instance and trial; an entry giving a statistic read another value than the first is
the instance read twice, refused. Entries are written by tests/helm_requests.py; the figures
expected are computed here with numpy from the values written."""

from __future__ import annotations

import json

import numpy as np
import pytest
from harness import run
from helm_requests import (
    F1,
    answer_entry,
    chain_of_thought_entry,
    stat,
    toxicity_entry,
    write_run,
)

BOOLQ = "boolq:model=openai_davinci"
GPQA = "gpqa:subset=gpqa_main,use_chain_of_thought=true,model=openai_gpt-4o"


def answers(n, seed):
    """(logprobs, outcomes) of ``n`` answers: each probability uniform in [0.3, 0.99), right
    with that probability."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.3, 0.99, n)
    return np.log(p), rng.uniform(0.0, 1.0, n) < p


def basic_block(logprobs, right, **kw):
    return [
        answer_entry(i, float(lp), bool(y), **kw)
        for i, (lp, y) in enumerate(zip(logprobs, right, strict=True))
    ]


def calibrate(path, code=0):
    result = run(["calibrate", str(path), "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout) if code == 0 else result.stderr


def check(report, logprobs, right):
    """The report reads one row per instance: (exp(logprob), outcome)."""
    confidence = np.exp(logprobs)
    assert report["n"] == len(right) and report["accuracy"] == right.mean()
    assert report["mean_confidence"] == pytest.approx(confidence.mean(), rel=1e-12)
    assert report["brier"] == pytest.approx(np.mean((confidence - right) ** 2), rel=1e-12)


def test_another_metric_s_entries_of_the_instances_are_left_out(tmp_path):
    logprobs, right = answers(50, 6)
    entries = basic_block(logprobs, right) + [toxicity_entry(i) for i in range(50)]
    path = write_run(tmp_path / BOOLQ, entries, method="generation")
    check(calibrate(path), logprobs, right)
    result = run(["calibrate", str(path), "-q"])
    assert result.exit_code == 0 and "HELM" not in result.stderr  # nothing to say of them


def test_a_chain_of_thought_metric_s_entries_are_left_out(tmp_path):
    logprobs, right = answers(40, 8)
    entries = basic_block(logprobs, right) + [
        chain_of_thought_entry(i, y) for i, y in enumerate(right)
    ]
    path = write_run(tmp_path / GPQA, entries, method="generation")
    check(calibrate(path), logprobs, right)
    # compare pairs the instances, one row each
    result = run(["compare", str(path), str(path), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["matched"] == 40


def test_the_basic_metric_twice_is_read_once(tmp_path):
    # get_exact_match_metric_specs() + get_f1_metric_specs(): the same statistics written twice
    logprobs, right = answers(60, 9)
    entries = basic_block(logprobs, right) + basic_block(logprobs, right, names=F1)
    path = write_run(tmp_path / "culturalbank_thin:language=en,model=x", entries)
    check(calibrate(path), logprobs, right)


def test_another_metric_s_entries_first_are_read_alike(tmp_path):
    # a run spec listing another metric before the basic one
    logprobs, right = answers(30, 10)
    entries = [toxicity_entry(i) for i in range(30)] + basic_block(logprobs, right)
    check(calibrate(write_run(tmp_path / BOOLQ, entries)), logprobs, right)


def test_each_train_trial_keeps_its_entries(tmp_path):
    logprobs, right = answers(20, 11)
    other, again = answers(20, 12)
    entries = basic_block(logprobs, right) + basic_block(other, again, trial=1)
    entries += [toxicity_entry(i) for i in range(20)]
    path = write_run(tmp_path / BOOLQ, entries)
    report = calibrate(path)
    assert report["n"] == 40
    confidence = np.exp(np.concatenate([logprobs, other]))
    outcomes = np.concatenate([right, again])
    assert report["brier"] == pytest.approx(np.mean((confidence - outcomes) ** 2), rel=1e-12)


def test_a_statistic_given_another_value_is_refused(tmp_path):
    logprobs, right = answers(10, 13)
    second = basic_block(logprobs, right, names=F1)
    second[3]["stats"] = [
        stat("exact_match", 1 - int(right[3])) if s["name"]["name"] == "exact_match" else s
        for s in second[3]["stats"]
    ]
    path = write_run(tmp_path / BOOLQ, basic_block(logprobs, right) + second, compact=True)
    said = calibrate(path, 2)
    assert f"{path}:15: the row of id 'id3' (trial 0) was read before, at {path}:5" in said


def test_an_instance_without_the_statistics_read_is_named(tmp_path):
    logprobs, right = answers(10, 14)
    entries = basic_block(logprobs, right)[:9] + [toxicity_entry(i) for i in range(10)]
    path = write_run(tmp_path / BOOLQ, entries, compact=True)
    said = calibrate(path, 2)
    # id9's only entry, ToxicityMetric's, on line 20
    assert f"{path}:20: no 'max_prob' statistic (a HELM run of another kind" in said


def test_a_run_of_other_metrics_alone_is_named_as_before(tmp_path):
    path = write_run(tmp_path / BOOLQ, [toxicity_entry(i) for i in range(5)], compact=True)
    said = calibrate(path, 2)
    assert (
        f"{path}:2: no 'max_prob' statistic (a HELM run of another kind: not multiple choice)"
        in (said)
    )
