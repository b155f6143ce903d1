"""Under GitHub Actions, a run that ends without a report (bad input or usage, exit 2; a crash)
still writes its step outputs: ``passed=false`` and every figure ``NaN``, the keys a report
writes. Left empty, GitHub's expressions would read them as 0: after a `continue-on-error`
step, `outputs.ece < 0.05` and `outputs.passed != 'false'` would both pass."""

from __future__ import annotations

import signal

import pytest
from github_steps import WITHOUT_REPORT, github_env, lines_of
from harness import run, write_jsonl

from calibcli.cli.commands import calibrate as calibrate_command

BAD_CALIBRATION = '{"confidence": 1.5, "correct": true}\n'
BAD_PERPLEXITY = '{"nll": 2.0}\n'  # no token count


@pytest.fixture
def actions(tmp_path):
    return github_env(tmp_path)


def bad_file(tmp_path, text=BAD_CALIBRATION):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    return path


def good_file(tmp_path):
    rows = [{"id": i, "confidence": 0.9, "correct": i % 2 == 0} for i in range(100)]
    return write_jsonl(tmp_path / "good.jsonl", rows)


@pytest.mark.parametrize(
    "command", ["calibrate", "reliability", "perplexity", "threshold", "compare", "fit"]
)
def test_bad_input_writes_passed_false_and_undefined_figures(tmp_path, actions, command):
    env, outputs = actions
    bad = bad_file(tmp_path, BAD_PERPLEXITY if command == "perplexity" else BAD_CALIBRATION)
    args = {
        "calibrate": ["calibrate", bad, "--max-ece", "0.05"],
        "reliability": ["reliability", bad],
        "perplexity": ["perplexity", bad, "--max-perplexity", "30"],
        "threshold": ["threshold", bad, "--target-accuracy", "0.8"],
        "compare": ["compare", good_file(tmp_path), bad],
        "fit": ["fit", bad, "--method", "platt", "-o", tmp_path / "cal.json"],
    }[command]
    result = run([*args, "-q"], env=env)
    assert result.exit_code == 2, result.stderr
    assert lines_of(outputs) == list(WITHOUT_REPORT[command].items())


def test_a_bad_option_value_found_while_parsing_writes_them_too(tmp_path, actions):
    env, outputs = actions
    result = run(["calibrate", good_file(tmp_path), "--max-ece", "0,05"], env=env)
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: Invalid value for '--max-ece'")
    assert lines_of(outputs) == list(WITHOUT_REPORT["calibrate"].items())


def test_a_usage_error_inside_the_command_writes_them_once(tmp_path, actions):
    env, outputs = actions
    result = run(["calibrate", good_file(tmp_path), "--by", ""], env=env)
    assert result.exit_code == 2
    assert "a field name cannot be empty" in result.stderr
    assert lines_of(outputs) == list(WITHOUT_REPORT["calibrate"].items())


def test_a_crash_writes_them_too(tmp_path, actions, monkeypatch):
    env, outputs = actions

    def crash(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(calibrate_command, "emit", crash)
    with pytest.raises(RuntimeError, match="a bug"):
        run(["calibrate", good_file(tmp_path)], env=env)
    assert lines_of(outputs) == list(WITHOUT_REPORT["calibrate"].items())


def test_ctrl_c_writes_them_too(tmp_path, actions, monkeypatch):
    env, outputs = actions

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(calibrate_command, "emit", interrupted)
    previous = signal.getsignal(signal.SIGINT)
    try:
        result = run(["calibrate", good_file(tmp_path)], env=env)
    finally:  # an interrupted run leaves its handler in place, as the process would exit
        signal.signal(signal.SIGINT, previous)
    assert result.exit_code == 130
    assert lines_of(outputs) == list(WITHOUT_REPORT["calibrate"].items())


def test_a_later_failed_run_overrides_every_figure_of_an_earlier_one(tmp_path, actions):
    """Two commands in one step append to the same file, and GitHub keeps each name's last
    value: a failed perplexity run after one with byte counts leaves no bits_per_byte of it."""
    env, outputs = actions
    good = write_jsonl(tmp_path / "ppl.jsonl", [{"nll": 2.0, "tokens": 4, "bytes": 10}])
    assert run(["perplexity", good, "-q"], env=env).exit_code == 0
    assert dict(lines_of(outputs))["bits_per_byte"] != "NaN"
    bad = bad_file(tmp_path, BAD_PERPLEXITY)
    assert run(["perplexity", bad, "-q"], env=env).exit_code == 2
    assert dict(lines_of(outputs)) == WITHOUT_REPORT["perplexity"]


def test_a_report_writes_its_outputs_once(tmp_path, actions):
    env, outputs = actions
    result = run(["calibrate", good_file(tmp_path), "--max-ece", "0.05", "-q"], env=env)
    assert result.exit_code == 1  # ECE 0.4: every answer at 0.9, half of them right
    written = lines_of(outputs)
    assert [name for name, _ in written] == list(WITHOUT_REPORT["calibrate"])
    assert float(dict(written)["ece"]) == pytest.approx(0.4, abs=1e-12)
    assert dict(written)["passed"] == "false"


def test_no_outputs_where_none_are_asked_for(tmp_path, actions):
    """--annotations none turns the outputs off; apply writes none, with or without a report;
    outside Actions nothing is written."""
    env, outputs = actions
    bad = bad_file(tmp_path)
    assert run(["calibrate", bad, "--annotations", "none"], env=env).exit_code == 2
    assert run(["apply", tmp_path / "none.json", bad], env=env).exit_code == 2
    outside = {k: v for k, v in env.items() if k != "GITHUB_ACTIONS"}
    assert run(["calibrate", bad, "--max-ece", "0.05"], env=outside).exit_code == 2
    assert outputs.read_text() == ""
