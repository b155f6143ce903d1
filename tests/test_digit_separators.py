"""A number given to a gate or a setting that decides one is read without Python's digit
separators: float("0_05") is 5.0, so a slip for 0.05 would loosen a gate a hundredfold and pass
without a word. Such a value is a usage error (exit 2), named."""

from __future__ import annotations

import pytest
from harness import run, write_jsonl


@pytest.fixture
def rows(tmp_path):
    items = [{"id": i, "confidence": (i + 0.5) / 40, "correct": i % 3 != 0} for i in range(40)]
    return write_jsonl(tmp_path / "r.jsonl", items)


@pytest.mark.parametrize(
    ("command", "option", "extra"),
    [
        ("calibrate", "--max-ece", []),
        ("calibrate", "--max-brier", []),
        ("calibrate", "--ci", []),
        ("threshold", "--target-accuracy", []),
        ("threshold", "--delta", ["--target-accuracy", "0.5"]),
        ("threshold", "--min-coverage", ["--target-accuracy", "0.5"]),
    ],
)
def test_a_number_with_a_digit_separator_is_refused(rows, command, option, extra):
    result = run([command, rows, option, "0_05", *extra])
    assert result.exit_code == 2
    assert f"Invalid value for '{option}': '0_05' is not a number" in result.stderr


def test_a_compare_margin_with_a_digit_separator_is_refused(rows):
    result = run(["compare", rows, rows, "--max-increase", "ece=0_05"])
    assert result.exit_code == 2
    assert "--max-increase ece=0_05: the margin must be a finite number >= 0" in result.stderr


def test_plain_numbers_still_read(rows):
    assert run(["calibrate", rows, "--max-ece", "1e0", "-q"]).exit_code == 0  # any ECE <= 1
    assert run(["calibrate", rows, "--max-ece", "0e0", "-q"]).exit_code == 1  # this ECE > 0
