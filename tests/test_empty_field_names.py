"""A field option given an empty name (as an unset shell variable gives it: ``--by "$FIELD"``)
is a usage error naming the option, exit 2, for every command that reads rows: no field is
named ''."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import run

ROWS = Path(__file__).resolve().parents[1] / "sample_data" / "overconfident.jsonl"
COMMANDS = [
    ["calibrate"],
    ["reliability"],
    ["threshold", "--target-accuracy", "0.6"],
    ["fit", "--method", "platt"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    "option", ["--confidence-field", "--correct-field", "--by", "--id-field", "--gold-field"]
)
def test_an_empty_field_name_is_a_usage_error(command, option):
    result = run([*command, ROWS, option, "", "-q"])
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: Invalid value for '{option}': a field name cannot be empty")


@pytest.mark.parametrize(
    "option",
    [
        "--nll-field",
        "--tokens-field",
        "--bytes-field",
        "--words-field",
        "--logprobs-field",
        "--by",
        "--id-field",
    ],
)
@pytest.mark.parametrize("command", ["perplexity", "summarize"])
def test_an_empty_perplexity_field_name_is_a_usage_error(tmp_path, command, option):
    rows = ROWS.parent / "perplexity.jsonl"
    out = ["-o", tmp_path / "s.cbs"] if command == "summarize" else []
    result = run([command, rows, option, "", "-q", *out])
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: Invalid value for '{option}': a field name cannot be empty")
