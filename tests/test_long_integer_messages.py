"""An integer too long to read (more than 4,300 digits) in a field a format reads is named as
such in that format's message, never by an internal type name; a HELM file whose
train_trial_index is such an integer no longer stops with a traceback; an API response's model
given as a number is a model all the same."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from harness import run

from calibcli.io.response_models import row_model

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LONG = "9" * 5000
DIGITS = getattr(sys, "get_int_max_str_digits", lambda: 0)()
needs_limit = pytest.mark.skipif(
    not 0 < DIGITS < 5000, reason="this Python converts an integer of 5,000 digits"
)
TOO_LONG = f"is an integer of 5,000 digits, more than the {DIGITS:,} calibcli reads"


@needs_limit
def test_an_lm_eval_score_too_long_to_read_is_named_as_such(tmp_path):
    source = next((FIXTURES / "lm_eval").glob("samples_toy_mc_trivia_*.jsonl"))
    first, *rest = source.read_text().splitlines()
    row = json.loads(first)
    row["acc"] = 0
    text = json.dumps(row).replace('"acc": 0', f'"acc": {LONG}')
    path = tmp_path / source.name
    path.write_text("\n".join([text, *rest]) + "\n")
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {path}:1: 'acc' {TOO_LONG}, expected 0 or 1"
    assert "LongInteger" not in result.stderr


@needs_limit
def test_a_helm_trial_index_too_long_to_read_is_no_traceback(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(FIXTURES / "helm" / "mmlu", folder)
    stats = folder / "per_instance_stats.json"
    text = stats.read_text()
    assert '"train_trial_index": 0' in text
    stats.write_text(text.replace('"train_trial_index": 0', f'"train_trial_index": {LONG}', 1))
    result = run(["calibrate", stats, "-q", "--json"])
    assert result.exit_code in (0, 2), result.stderr
    assert "Traceback" not in result.stderr


def test_a_model_named_by_a_number_is_a_model():
    assert row_model({"id": "x", "object": "chat.completion", "model": 5}) == "5"
    assert row_model({"custom_id": "a", "response": {"body": {"model": 2.5}}}) == "2.5"
    assert row_model({"model": "gpt-x"}) == "gpt-x"
    for none in (None, "", True, [1], {"a": 1}):
        assert row_model({"model": none}) is None


@needs_limit
def test_an_lm_eval_response_too_long_to_read_is_named_by_its_place(tmp_path):
    source = next((FIXTURES / "lm_eval").glob("samples_toy_mc_trivia_*.jsonl"))
    first, *rest = source.read_text().splitlines()
    row = json.loads(first)
    row["filtered_resps"][1][0] = 0.25
    text = json.dumps(row).replace("0.25", LONG, 1)
    assert json.dumps(row).count("0.25") == 1
    path = tmp_path / source.name
    path.write_text("\n".join([text, *rest]) + "\n")
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {path}:1: filtered_resps.1.0 {TOO_LONG}"
