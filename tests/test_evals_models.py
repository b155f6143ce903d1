"""OpenAI evals record logs name their model once, in their spec's ``completion_fns``, and
calibcli reads it there as it reads an inspect-ai log's ``eval.model``: two models' logs pooled
fail every gate closed, two models' logs of one eval are not re-runs of one another, ``--by
model`` groups by it, and a calibrator fitted on one model's log is held against another's rows.
A log without its ``final_report`` (a run that did not end) is read with a warning.

The logs are written here in the layout oaieval's LocalRecorder writes (openai/evals,
``evals/record.py``): ``{"spec": ...}`` first, then the events, then ``{"final_report": ...}``.
Expected figures are computed here with numpy from the logged logprobs."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run, write_jsonl

LETTERS = "ABCD"
MIXED = "the rows are several models' (see the warning); read one model's files at a time"
POOLED_ADVICE = (
    "as their runs name them: the figures mix the models, and a gate on them fails; read one "
    "model's files at a time (calibcli compare sets two side by side)"
)


def evals_log(model, run_id, n, seed, eval_name="mmlu-anatomy", *, fns=None, final=True):
    """The events of an oaieval log of ``n`` multiple-choice samples: each sampling event logs
    the answer token's top_logprobs, each match event its verdict."""
    rng = np.random.default_rng(seed)
    spec = {
        "completion_fns": [model] if fns is None else fns,
        "eval_name": f"{eval_name}.val.v0",
        "base_eval": eval_name,
        "split": "val",
        "run_config": {"command": "oaieval"},
        "created_by": "",
        "run_id": run_id,
        "created_at": "2024-06-01 12:00:00.000000",
    }
    events = [{"spec": spec}]
    right = 0
    for i in range(n):
        sid, gold = f"{eval_name}.val.{i}", LETTERS[i % 4]
        p = float(rng.uniform(0.3, 0.99))
        correct = bool(rng.random() < p)
        answer = gold if correct else LETTERS[(i + 1) % 4]
        right += correct
        tops = [{"token": answer, "logprob": math.log(p)}] + [
            {"token": o, "logprob": math.log((1 - p) / 3)} for o in LETTERS if o != answer
        ]
        content = [{"token": answer, "logprob": math.log(p), "top_logprobs": tops}]
        base = {"run_id": run_id, "sample_id": sid, "created_by": "", "created_at": "x"}
        events.append(
            {
                **base,
                "event_id": 2 * i,
                "type": "sampling",
                "data": {"prompt": "Q", "sampled": [answer], "logprobs": {"content": content}},
            }
        )
        events.append(
            {
                **base,
                "event_id": 2 * i + 1,
                "type": "match",
                "data": {"correct": correct, "expected": gold, "picked": answer, "sampled": answer},
            }
        )
    if final:
        events.append({"final_report": {"accuracy": right / n}})
    return events


def truth(events):
    """(confidences, outcomes) of a log's match events: the answer token's probability
    renormalised over the options its top_logprobs list, computed with numpy."""
    sampling = {e["sample_id"]: e["data"] for e in events if e.get("type") == "sampling"}
    conf, right = [], []
    for e in events:
        if e.get("type") != "match":
            continue
        (token,) = sampling[e["sample_id"]]["logprobs"]["content"]
        tops = np.array([t["logprob"] for t in token["top_logprobs"]])
        conf.append(np.exp(token["logprob"]) / np.exp(tops).sum())
        right.append(e["data"]["correct"])
    return np.array(conf), np.array(right, dtype=float)


def body(result, code):
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def said(report):
    """The report's warnings but the one about thin bins (the logs here are small)."""
    return [w for w in report["warnings"] if not w.startswith("the median populated bin")]


def closed(report):
    return [(c["metric"], c.get("group")) for c in report["gate"]["checks"] if c.get("reason")]


def pooled_warning(named):
    shown = ", ".join(f"{model!r} ({name})" for model, name in sorted(named))
    return f"rows of {len(named)} models are pooled: {shown}, {POOLED_ADVICE}"


@pytest.fixture
def two_models(tmp_path):
    """gpt-4's and gpt-3.5-turbo's logs of one eval (the same sample ids), as oaieval names
    them in /tmp/evallogs."""
    logs = {}
    for model, run_id, seed in (("gpt-4", "RUNA", 1), ("gpt-3.5-turbo", "RUNB", 2)):
        events = evals_log(model, run_id, 40, seed)
        logs[model] = (
            write_jsonl(tmp_path / f"{run_id}_{model}_mmlu-anatomy.jsonl", events),
            events,
        )
    return logs


def test_a_folder_of_two_models_logs_fails_every_gate_closed(tmp_path):
    folder = tmp_path / "evallogs"
    folder.mkdir()
    a = evals_log("gpt-4", "240601120000AAAAAAAA", 40, 1, "mmlu-anatomy")
    b = evals_log("gpt-3.5-turbo", "240601130000BBBBBBBB", 40, 2, "mmlu-astronomy")
    write_jsonl(folder / "240601120000AAAAAAAA_gpt-4_mmlu-anatomy.jsonl", a)
    write_jsonl(folder / "240601130000BBBBBBBB_gpt-3.5-turbo_mmlu-astronomy.jsonl", b)
    args = ["calibrate", folder, "--max-ece", "0.9", "--min-rows", "10", "--json"]
    report = body(run(args), 1)
    conf = np.concatenate([truth(a)[0], truth(b)[0]])
    assert report["n"] == 80
    assert report["mean_confidence"] == pytest.approx(conf.mean(), rel=1e-12)
    assert (
        pooled_warning(
            [
                ("gpt-4", "240601120000AAAAAAAA_gpt-4_mmlu-anatomy.jsonl"),
                ("gpt-3.5-turbo", "240601130000BBBBBBBB_gpt-3.5-turbo_mmlu-astronomy.jsonl"),
            ]
        )
        in report["warnings"]
    )
    assert [c["reason"] for c in report["gate"]["checks"]] == [MIXED, MIXED]


@pytest.mark.parametrize("all_runs", [[], ["--all-runs"]])
def test_two_models_logs_of_one_eval_are_not_reruns(two_models, all_runs):
    (a, events_a), (b, events_b) = two_models["gpt-4"], two_models["gpt-3.5-turbo"]
    report = body(run(["calibrate", a, b, "--max-ece", "0.9", "--json", *all_runs]), 1)
    right = np.concatenate([truth(events_a)[1], truth(events_b)[1]])
    assert report["n"] == 80 and report["accuracy"] == pytest.approx(right.mean(), rel=1e-12)
    # pooled as two models' rows, never as re-runs of one model's questions
    assert said(report) == [pooled_warning([("gpt-4", a.name), ("gpt-3.5-turbo", b.name)])]
    assert closed(report) == [("ece", None)]


def test_reruns_of_one_model_are_still_refused(tmp_path):
    first = write_jsonl(tmp_path / "RUNA_gpt-4_e.jsonl", evals_log("gpt-4", "RUNA", 40, 1))
    again = write_jsonl(tmp_path / "RUNC_gpt-4_e.jsonl", evals_log("gpt-4", "RUNC", 40, 3))
    result = run(["calibrate", first, again])
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"Error: {again}:3: the row of id 'mmlu-anatomy.val.0' was read before, at {first}:3: "
    )
    report = body(run(["calibrate", first, again, "--all-runs", "--json"]), 0)
    assert report["n"] == 80
    assert report["warnings"][0].startswith(
        "re-runs are pooled (--all-runs): their rows' ids repeat, so each question is answered "
        "several times"
    )


def test_by_model_groups_by_the_spec(two_models):
    (a, events_a), (b, events_b) = two_models["gpt-4"], two_models["gpt-3.5-turbo"]
    args = ["calibrate", a, b, "--by", "model", "--max-ece", "0.9", "--gate-each", "--json"]
    report = body(run(args), 0)
    assert sorted(report["groups"]) == ["gpt-3.5-turbo", "gpt-4"]
    for model, events in (("gpt-4", events_a), ("gpt-3.5-turbo", events_b)):
        conf, right = truth(events)
        group = report["groups"][model]
        assert group["n"] == 40
        assert group["mean_confidence"] == pytest.approx(conf.mean(), rel=1e-12)
        assert group["accuracy"] == pytest.approx(right.mean(), rel=1e-12)
    gated = [(c.get("group"), c["passed"]) for c in report["gate"]["checks"]]
    assert gated == [(None, False), ("gpt-3.5-turbo", True), ("gpt-4", True)]


def test_a_spec_of_several_completion_fns_names_them_joined(tmp_path):
    fns = ["gpt-4", "gpt-3.5-turbo"]  # oaieval gpt-4,gpt-3.5-turbo EVAL
    log = write_jsonl(tmp_path / "log.jsonl", evals_log("x", "RUNA", 20, 1, fns=fns))
    report = body(run(["calibrate", log, "--by", "model", "--json"]), 0)
    assert list(report["groups"]) == ["gpt-4,gpt-3.5-turbo"]
    unnamed = write_jsonl(tmp_path / "unnamed.jsonl", evals_log("x", "RUNB", 20, 1, fns=[]))
    result = run(["calibrate", unnamed, "--by", "model"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {unnamed}:3: the OpenAI evals log's spec names no model (its completion_fns); "
        "use --by FIELD\n"
    )


def test_a_calibrator_of_one_model_is_held_against_another_models_rows(two_models, tmp_path):
    (a, _), (b, _) = two_models["gpt-4"], two_models["gpt-3.5-turbo"]
    made = tmp_path / "cal.json"
    assert run(["fit", a, "-o", made, "--method", "platt", "-q"]).exit_code == 0
    assert json.loads(made.read_text())["fitted_on"]["models"] == ["gpt-4"]
    report = body(run(["calibrate", b, "--calibrator", made, "--max-ece", "0.9", "--json"]), 1)
    assert any(
        w.startswith(
            "the calibrator was fitted on rows of model 'gpt-4'; these rows are of model "
            "'gpt-3.5-turbo', as their runs name them"
        )
        for w in report["warnings"]
    )
    assert closed(report) == [("ece", None)]


def test_concatenated_logs(tmp_path):
    a = evals_log("gpt-4", "RUNA", 20, 1)
    b = evals_log("gpt-3.5-turbo", "RUNB", 20, 2)
    both = write_jsonl(tmp_path / "both.jsonl", a + b)
    result = run(["calibrate", both])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {both}:{len(a) + 1}: a second run spec in the log, of 'gpt-3.5-turbo', after "
        "the spec of 'gpt-4' (line 1): the rows of two models' runs would be read as one "
        "model's; give each run's log as a file of its own\n"
    )
    # two runs of one model in one file: re-runs, refused unless pooled on purpose
    again = write_jsonl(tmp_path / "again.jsonl", a + evals_log("gpt-4", "RUNC", 20, 3))
    assert run(["calibrate", again]).exit_code == 2
    assert body(run(["calibrate", again, "--all-runs", "--json"]), 0)["n"] == 40


def test_a_log_without_its_final_report_is_said_to_be_cut_short(tmp_path):
    events = evals_log("gpt-4", "RUNA", 20, 1, final=False)[:-1]  # the last match lost too
    cut = write_jsonl(tmp_path / "cut.jsonl", events)
    report = body(run(["calibrate", cut, "--json"]), 0)
    assert report["n"] == 19
    assert report["warnings"][0] == (
        f"{cut}: the OpenAI evals log has no final_report: the log's run did not end (it "
        "crashed, was stopped, or is still going); it holds 19 verdicts (and 1 more sample "
        "sampled without its match event): the figures are those of the samples it holds, "
        "which may be a part of those the run planned"
    )
    # the recorder flushes its last events after the final report: such a log is whole
    whole = evals_log("gpt-4", "RUNA", 20, 1)
    flushed = write_jsonl(tmp_path / "flushed.jsonl", [whole[0], whole[-1], *whole[1:-1]])
    assert said(body(run(["calibrate", flushed, "--json"]), 0)) == []
