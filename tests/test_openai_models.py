"""API responses name their model in each row, and calibcli reads it as it reads an lm-eval
run's or an inspect-ai log's model.

A Batch API output line names it in ``response.body.model``, a chat completion (and a vLLM
server response) in ``model`` at its top. Files of two models pooled are said and fail every
gate closed; a batch whose requests went to two models is two models' rows; ``fit`` records the
model in ``fitted_on`` and a calibrator applied to another model's rows is said and fails its
gates closed; ``compare`` of two models' files, its purpose, says nothing. vLLM's
``LLM.generate`` outputs name no model and are read as before. The expected messages and
figures are written here from the rows, never taken from calibcli's output."""

from __future__ import annotations

import json
import math

import pytest
from harness import run

MINI = "gpt-4o-mini-2024-07-18"
FOUR = "gpt-4o-2024-08-06"
MIXED = "the rows are several models' (see the warning); read one model's files at a time"
ADVICE = (
    "as their runs name them: the figures mix the models, and a gate on them fails; read one "
    "model's files at a time (calibcli compare sets two side by side)"
)
OTHER_MODEL = (
    "the calibrator was fitted on another model's rows (see the warning): a map of one "
    "model's confidences says nothing of another's"
)


def chat(model: str, p_a: float, *, at_top: bool = True) -> dict:
    """A chat completion answering A, its top logprobs A at ``p_a`` and B at 1 - ``p_a`` (so
    the confidence, renormalised over A..E, is ``p_a``), naming ``model`` at its top."""
    top = [
        {"token": "A", "logprob": math.log(p_a), "bytes": [65]},
        {"token": "B", "logprob": math.log(1 - p_a), "bytes": [66]},
    ]
    token = {"token": "A", "logprob": math.log(p_a), "bytes": [65], "top_logprobs": top}
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": "A"},
        "logprobs": {"content": [token]},
        "finish_reason": "stop",
    }
    body = {"id": "c", "object": "chat.completion", "choices": [choice]}
    return {**body, "model": model} if at_top else body


def batch_line(i: int, model: str, p_a: float, gold: str) -> dict:
    """A Batch API output line of request ``q<i>``: the completion (of ``model``) in
    ``response.body``, the gold letter beside it."""
    response = {"status_code": 200, "request_id": f"r{i}", "body": chat(model, p_a)}
    return {"id": f"b{i}", "custom_id": f"q{i}", "response": response, "error": None, "gold": gold}


# each file's four questions: confidence 0.8 on A, and A right on the first three
ROWS = [(0.8, "A"), (0.8, "A"), (0.8, "A"), (0.8, "B")]


def batch(path, model: str | list[str], start: int = 0, rows=ROWS):
    """A batch output file of ``rows``, each line of ``model`` (a list: line i of model[i])."""
    models = model if isinstance(model, list) else [model] * len(rows)
    lines = [
        batch_line(start + i, m, p, g)
        for i, (m, (p, g)) in enumerate(zip(models, rows, strict=True))
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def report_of(result):
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def closed(report):
    return [c["metric"] for c in report["gate"]["checks"] if c.get("reason") == MIXED]


def pooled_warning(mini_files: str, four_files: str) -> str:
    return (
        f"rows of 2 models are pooled: {FOUR!r} ({four_files}), {MINI!r} ({mini_files}), {ADVICE}"
    )


def test_two_models_batch_files_pooled_are_said_and_fail_every_gate(tmp_path):
    a = batch(tmp_path / "mini.jsonl", MINI)
    b = batch(tmp_path / "four.jsonl", FOUR, start=10)
    result = run(["calibrate", a, b, "--gold-field", "gold", "--json", "--max-brier", "0.9"])
    assert result.exit_code == 1
    report = report_of(result)
    assert report["n"] == 8
    # Brier: six right at 0.8 -> 0.04 each, two wrong at 0.8 -> 0.64 each: 1.52 / 8
    assert report["brier"] == pytest.approx(0.19)
    warning = pooled_warning("mini.jsonl", "four.jsonl")
    assert warning in report["warnings"]
    assert f"warning: {warning}" in result.stderr.splitlines()
    assert closed(report) == ["brier"]
    # without a gate the figures are shown, the warning with them
    plain = run(["calibrate", a, b, "--gold-field", "gold", "--json"])
    assert plain.exit_code == 0, plain.stderr
    assert warning in report_of(plain)["warnings"]


def test_one_models_two_batch_files_are_not_said(tmp_path):
    a = batch(tmp_path / "a.jsonl", MINI)
    b = batch(tmp_path / "b.jsonl", MINI, start=10)
    result = run(["calibrate", a, b, "--gold-field", "gold", "--json", "--max-brier", "0.9"])
    assert result.exit_code == 0, result.stderr
    assert not [w for w in report_of(result)["warnings"] if "models are pooled" in w]


def test_a_batch_to_two_models_is_two_models_rows(tmp_path):
    mixed = batch(tmp_path / "mixed.jsonl", [MINI, FOUR, MINI, FOUR])
    result = run(["calibrate", mixed, "--gold-field", "gold", "--json", "--max-brier", "0.9"])
    assert result.exit_code == 1
    report = report_of(result)
    assert pooled_warning("mixed.jsonl", "mixed.jsonl") in report["warnings"]
    assert closed(report) == ["brier"]
    # --by model keeps them apart, each line by the model its body names
    args = ["--by", "model", "--gate-each", "--max-brier", "0.9"]
    each = run(["calibrate", mixed, "--gold-field", "gold", "--json", *args])
    assert each.exit_code == 0, each.stderr
    groups = report_of(each)["groups"]
    assert sorted(groups) == [FOUR, MINI]
    # the mini lines are questions 0 and 2 (both right), the 4o lines 1 (right) and 3 (wrong)
    assert groups[MINI]["accuracy"] == 1.0
    assert groups[FOUR]["accuracy"] == 0.5


def test_a_summary_of_a_mixed_batch_read_away_from_it_still_says_it(tmp_path):
    mixed = batch(tmp_path / "mixed.jsonl", [MINI, FOUR, MINI, FOUR])
    part = tmp_path / "mixed.cbs"
    made = run(["summarize", mixed, "--gold-field", "gold", "-o", part])
    assert made.exit_code == 0, made.stderr
    mixed.unlink()
    result = run(["calibrate", part, "--json", "--max-brier", "0.9"])
    assert result.exit_code == 1
    report = report_of(result)
    assert pooled_warning("mixed.jsonl", "mixed.jsonl") in report["warnings"]
    assert closed(report) == ["brier"]


def test_pretty_printed_chat_completions_of_two_models(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({**chat(MINI, 0.8), "gold": "A"}, indent=2), encoding="utf-8")
    b.write_text(json.dumps({**chat(FOUR, 0.8), "gold": "B"}, indent=2), encoding="utf-8")
    result = run(["calibrate", a, b, "--gold-field", "gold", "--json", "--max-brier", "0.9"])
    assert result.exit_code == 1
    report = report_of(result)
    assert pooled_warning("a.json", "b.json") in report["warnings"]
    assert closed(report) == ["brier"]


def test_fit_records_the_model_and_another_models_rows_fail_closed(tmp_path):
    dev = batch(tmp_path / "dev.jsonl", MINI)
    cal = tmp_path / "cal.json"
    fitted = run(["fit", dev, "--gold-field", "gold", "--method", "histogram", "-o", cal])
    assert fitted.exit_code == 0, fitted.stderr
    assert json.loads(cal.read_text())["fitted_on"]["models"] == [MINI]
    gated = ["--gold-field", "gold", "--calibrator", cal, "--max-brier", "0.9", "--json", "-q"]
    # held-out rows: other confidences, so that no check takes them for the fitted ones
    held = [(0.7, "A"), (0.7, "B"), (0.7, "A"), (0.7, "A")]
    other = run(["calibrate", batch(tmp_path / "four.jsonl", FOUR, 10, held), *gated])
    assert other.exit_code == 1
    body = report_of(other)
    assert body["gate"]["checks"][0]["reason"] == OTHER_MODEL
    assert (
        f"the calibrator was fitted on rows of model {MINI!r}; these rows are of model "
        f"{FOUR!r}, as their runs name them: a map of one model's confidences says nothing of "
        "another's, so every gate on the figures after it fails; fit a calibrator on this "
        "model's rows"
    ) in body["warnings"]
    same = run(["calibrate", batch(tmp_path / "held.jsonl", MINI, 10, held), *gated])
    assert same.exit_code == 0, same.stderr
    assert not [w for w in report_of(same)["warnings"] if "of model" in w]


def test_fit_on_a_batch_to_two_models_records_both(tmp_path):
    cal = tmp_path / "cal.json"
    mixed = batch(tmp_path / "mixed.jsonl", [MINI, FOUR, MINI, FOUR])
    fitted = run(["fit", mixed, "--gold-field", "gold", "--method", "histogram", "-o", cal])
    assert fitted.exit_code == 0, fitted.stderr
    assert json.loads(cal.read_text())["fitted_on"]["models"] == [FOUR, MINI]


def test_compare_of_two_models_says_nothing_of_it(tmp_path):
    base = batch(tmp_path / "mini.jsonl", MINI)
    new = batch(tmp_path / "four.jsonl", FOUR)  # the same questions, q0..q3
    args = ["compare", base, new, "--gold-field", "gold", "--max-increase", "brier=0.5"]
    result = run([*args, "--gate-on", "estimate", "--json"])
    assert result.exit_code == 0, result.stderr
    report = report_of(result)
    assert not [w for w in report["warnings"] if "model" in w]
    assert "model" not in result.stderr


def vllm_server(model: str | None, logprob: float) -> dict:
    """A response of vLLM's OpenAI-compatible server with the prompt's logprobs (two tokens,
    the first unscored), naming ``model`` at its top (None: an ``LLM.generate`` output's
    fields, which name none)."""
    scored = {"prompt_token_ids": [1, 2], "prompt_logprobs": [None, {"2": {"logprob": logprob}}]}
    if model is None:
        return {"request_id": "0", **scored}
    choice = {"index": 0, "text": "", **scored}
    return {"id": "cmpl-1", "object": "text_completion", "model": model, "choices": [choice]}


def test_vllm_server_responses_of_two_models_fail_perplexity_gates(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(vllm_server("org/alpha", -1.0)) + "\n", encoding="utf-8")
    b.write_text(json.dumps(vllm_server("org/beta", -3.0)) + "\n", encoding="utf-8")
    result = run(["perplexity", a, b, "--min-rows", "1", "--json"])
    assert result.exit_code == 1
    report = report_of(result)
    assert report["format"] == "vllm"
    assert report["perplexity"] == pytest.approx(math.exp(2.0))  # (1 + 3) nats over 2 tokens
    warning = f"rows of 2 models are pooled: 'org/alpha' (a.jsonl), 'org/beta' (b.jsonl), {ADVICE}"
    assert warning in report["warnings"]
    assert [c["metric"] for c in report["gate"]["checks"] if c.get("reason") == MIXED] == [
        "sequences"
    ]


def test_vllm_generate_outputs_name_no_model(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(vllm_server(None, -1.0)) + "\n", encoding="utf-8")
    b.write_text(json.dumps({**vllm_server(None, -3.0), "request_id": "1"}) + "\n")
    result = run(["perplexity", a, b, "--min-rows", "1", "--json"])
    assert result.exit_code == 0, result.stderr
    assert not [w for w in report_of(result)["warnings"] if "model" in w]
