"""Perplexity rows that repeat their questions: an inspect-ai run of several epochs, a HELM run
of several train trials. The report says so, and --min-rows / --min-tokens count each question
once, as calibrate's --min-rows does; without question keys the questions are a lower bound,
each run's rows over its epochs rounded up. And ``summarize --kind auto`` takes an inspect-ai
log whose samples score their prompts (a perplexity eval's) for perplexity rows.

The expected counts are worked by hand from the inputs built here: the committed
``toy_perplexity.json`` log holds 3 samples scoring 3 + 2 + 4 = 9 prompt tokens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run, write_jsonl

HERE = Path(__file__).resolve().parent
TOY = HERE / "fixtures" / "inspect_ai_schema" / "toy_perplexity.json"
TOY_MC = HERE / "fixtures" / "inspect_ai_schema" / "toy_mc.json"
THREE_OF_SIX = (
    "the 6 rows repeat their questions (see the warning) and hold as few as 3, fewer than 4; "
    "each question counts once"
)


def epochs_log(tmp_path, epochs=2, name="ep.json"):
    """The toy log run ``epochs`` times: each sample once per epoch, as inspect-ai logs it."""
    log = json.loads(TOY.read_text())
    log["eval"]["config"]["epochs"] = epochs
    log["samples"] = [{**s, "epoch": e} for e in range(1, epochs + 1) for s in log["samples"]]
    path = tmp_path / name
    path.write_text(json.dumps(log))
    return path


def helm_file(tmp_path, trials=2):
    """A HELM language-modelling run's per_instance_stats.json: 3 instances of 40, 50 and 60
    perplexity tokens, one entry per (instance, train trial)."""

    def stat(name, value):
        return {"name": {"name": name, "split": "test"}, "count": 1, "sum": value}

    entries = [
        {
            "instance_id": f"id{i}",
            "train_trial_index": t,
            "stats": [
                stat("logprob", -100.0 - i),
                stat("num_perplexity_tokens", tokens),
                stat("num_bytes", 4 * tokens),
            ],
        }
        for t in range(trials)
        for i, tokens in enumerate((40, 50, 60))
    ]
    folder = tmp_path / "helm"
    folder.mkdir()
    path = folder / "per_instance_stats.json"
    path.write_text(json.dumps(entries))
    return path


def report(args, code):
    result = run(["perplexity", *map(str, args), "--json"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result


def failure(body):
    (check,) = [c for c in body["gate"]["checks"] if not c["passed"]]
    return check["metric"], check["reason"]


def test_epochs_warned_and_min_rows_counts_questions(tmp_path):
    log = epochs_log(tmp_path)
    body, result = report([log, "--min-rows", 4], 1)
    assert body["sequences"] == 6 and body["total_tokens"] == 18
    (warning,) = body["warnings"]
    assert warning.startswith("inspect-ai runs scored each sample several times: ep.json (2 ")
    assert "every scored sequence" in warning and "each question once" in warning
    assert failure(body) == ("sequences", THREE_OF_SIX)
    assert f"{THREE_OF_SIX}; cannot support --min-rows 4" in result.stderr
    body, _ = report([log, "--min-rows", 3], 0)  # 3 questions reach a floor of 3
    assert body["gate"]["passed"]


def test_helm_trials_warned_and_counted(tmp_path):
    path = helm_file(tmp_path)
    body, _ = report([path, "--min-rows", 4], 1)
    assert body["sequences"] == 6 and body["total_tokens"] == 300
    (warning,) = body["warnings"]
    assert warning.startswith("HELM runs scored each instance several times: ")
    assert "(2 train trials)" in warning
    assert failure(body) == ("sequences", THREE_OF_SIX)
    # 300 tokens, each instance's twice: as few as 150 are distinct questions'
    body, _ = report([path, "--min-tokens", 151], 1)
    metric, reason = failure(body)
    assert metric == "total_tokens"
    assert "the 300 tokens are of rows that repeat their questions" in reason
    assert "as few as 150 tokens of distinct questions, fewer than 151" in reason
    report([path, "--min-tokens", 150], 0)


def test_min_tokens_counts_each_question_once(tmp_path):
    log = epochs_log(tmp_path)
    body, _ = report([log, "--min-tokens", 10], 1)  # 18 tokens, as few as 9 distinct
    assert failure(body)[0] == "total_tokens"
    assert "as few as 9 tokens of distinct questions, fewer than 10" in failure(body)[1]
    report([log, "--min-tokens", 9], 0)


@pytest.mark.parametrize("log_kept", [True, False])
def test_summary_file_route(tmp_path, log_kept):
    """A summary of the log gates as the log does, also where the log is no longer there (the
    summary records its epochs)."""
    log = epochs_log(tmp_path)
    cbs = tmp_path / "s.cbs"
    made = run(["summarize", "--kind", "perplexity", log, "-o", cbs, "-q"])
    assert made.exit_code == 0, made.stderr
    if not log_kept:
        log.unlink()
    body, _ = report([cbs, "--min-rows", 4], 1)
    assert len(body["warnings"]) == 1 and "(2 epochs)" in body["warnings"][0]
    assert failure(body) == ("sequences", THREE_OF_SIX)


def test_bound_per_run(tmp_path):
    """Each run's rows over its own epochs: 6 rows of 2 epochs and 5 rows of one hold at least
    3 + 5 = 8 questions (the most epochs over all 11 rows would give only 6)."""
    log = epochs_log(tmp_path)
    native = write_jsonl(tmp_path / "n.jsonl", [{"nll": 1.0, "tokens": 2, "bytes": 8}] * 5)
    body, _ = report([log, native, "--min-rows", 9], 1)
    assert body["sequences"] == 11
    assert (
        "the 11 rows repeat their questions (see the warning) and hold as few as 8, "
        in (failure(body)[1])
    )
    report([log, native, "--min-rows", 8], 0)


def test_gate_each_group(tmp_path):
    """--by id: each sample's group holds its 2 epochs' rows, one question."""
    log = epochs_log(tmp_path)
    body, _ = report([log, "--by", "id", "--gate-each", "--min-rows", 2], 1)
    failed = [c for c in body["gate"]["checks"] if not c["passed"]]
    assert [c.get("group") for c in failed] == ["1", "2", "3"]
    assert "hold as few as 1, fewer than 2" in failed[0]["reason"]
    pooled = [c for c in body["gate"]["checks"] if "group" not in c]
    assert pooled[0]["passed"]  # 6 rows, at least 3 questions


def test_one_epoch_unchanged(tmp_path):
    body, _ = report([TOY, "--min-rows", 3, "--min-tokens", 9], 0)
    assert body["warnings"] == [] and body["sequences"] == 3


def test_summarize_auto_takes_a_perplexity_log(tmp_path):
    out = tmp_path / "x.cbs"
    result = run(["summarize", TOY, "-o", out])
    assert result.exit_code == 0, result.stderr
    assert "3 perplexity rows" in result.stderr
    body, _ = report([out], 0)
    assert body["sequences"] == 3 and body["total_tokens"] == 9


def test_summarize_auto_keeps_calibration_logs(tmp_path):
    result = run(["summarize", TOY_MC, "-o", tmp_path / "mc.cbs"])
    assert result.exit_code == 0, result.stderr
    assert "calibration rows" in result.stderr
    # prompt logprobs beside a binary score: a calibration log, read as one
    log = json.loads(TOY.read_text())
    for sample in log["samples"]:
        sample["scores"] = {"match": {"value": "C"}}
    path = tmp_path / "binary.json"
    path.write_text(json.dumps(log))
    result = run(["summarize", path, "-o", tmp_path / "b.cbs"])
    assert "perplexity rows" not in result.stderr
