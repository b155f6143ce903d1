"""An option given without its value (``--max-ece $MAX_ECE`` with the variable empty) or a flag
given one (``--json=true``) is a usage error like a bad value: one line naming the command's
help, exit 2, and under GitHub Actions an ``::error`` annotation and the step outputs of a run
without a report (``passed=false``, every figure ``NaN``), so that an earlier command's
``passed=true`` in the same step does not stand."""

from __future__ import annotations

import pytest
from github_steps import WITHOUT_REPORT, github_env, lines_of
from harness import run, write_jsonl

CALIBRATE_WITHOUT_REPORT = list(WITHOUT_REPORT["calibrate"].items())


@pytest.fixture
def actions(tmp_path):
    return github_env(tmp_path)


@pytest.fixture
def rows(tmp_path):
    # 100 rows at 0.9, half of them right: an ECE of 0.4 by hand
    data = [{"id": i, "confidence": 0.9, "correct": i % 2 == 0} for i in range(100)]
    return write_jsonl(tmp_path / "rows.jsonl", data)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--max-ece"], "Option '--max-ece' requires an argument."),
        (["--max-ece", "0.5", "--json=true"], "Option '--json' does not take a value."),
    ],
)
def test_written_like_a_bad_value(rows, actions, extra, said):
    env, outputs = actions
    result = run(["calibrate", rows, *extra], env=env)
    assert result.exit_code == 2
    message = f"{said} (see 'calibcli calibrate -h')"
    assert result.stderr.splitlines() == [
        f"Error: {message}",
        f"::error title=calibcli::{message}",
    ]
    assert lines_of(outputs) == CALIBRATE_WITHOUT_REPORT


def test_after_a_passing_run_in_the_same_step_passed_is_false(rows, actions):
    env, outputs = actions
    assert run(["calibrate", rows, "-q"], env=env).exit_code == 0
    assert dict(lines_of(outputs))["passed"] == "true"
    assert run(["calibrate", rows, "-q", "--max-ece"], env=env).exit_code == 2
    # the runner keeps each name's last value
    assert dict(lines_of(outputs)) == dict(CALIBRATE_WITHOUT_REPORT)


def test_a_command_without_outputs_writes_none(rows, actions, tmp_path):
    env, outputs = actions
    result = run(["summarize", rows, "-o", tmp_path / "s.cbs", "--annotations"], env=env)
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: Option '--annotations' requires an argument.")
    assert outputs.read_text() == ""


def test_before_any_command_one_line_and_an_annotation(actions):
    env, outputs = actions
    result = run(["--version=1"], env=env)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Error: Option '--version' does not take a value.",
        "::error title=calibcli::Option '--version' does not take a value.",
    ]
    assert outputs.read_text() == ""


def test_bare_calibcli_still_shows_its_help(actions):
    env, outputs = actions
    result = run([], env=env)
    assert result.exit_code == 2
    assert "Usage: " in result.stdout + result.stderr
    assert "::error" not in result.stdout + result.stderr
    assert outputs.read_text() == ""
