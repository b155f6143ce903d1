"""Under GitHub Actions: annotations, the automatic job summary and step outputs.

The session fixture in conftest.py clears every GITHUB_* variable; each test here sets the ones
it needs through the runner's ``env``, as the Actions runner would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from harness import run, write_jsonl

from calibcli.cli import github

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"
ROWS = [{"id": i, "confidence": 0.9, "correct": i % 2 == 0} for i in range(100)]


@pytest.fixture
def actions(tmp_path):
    """The variables a workflow step has, with fresh summary and output files."""
    summary, outputs = tmp_path / "step_summary.md", tmp_path / "github_output"
    summary.write_text("")
    outputs.write_text("")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
    }
    return env, summary, outputs


def commands(stderr):
    return [line for line in stderr.splitlines() if line.startswith("::")]


def outputs_of(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


# --------------------------------------------------------------------------- escaping


def test_workflow_command_escaping_follows_the_runner_rules():
    assert github.escape_data("100% sure\r\nnext") == "100%25 sure%0D%0Anext"
    assert github.escape_property("C:\\a,b%.jsonl") == "C%3A\\a%2Cb%25.jsonl"
    assert github.workflow_command("warning", "a: b, c") == "::warning ::a: b, c"
    assert (
        github.workflow_command("error", "x\ny", file="a,b.jsonl", line=3)
        == "::error file=a%2Cb.jsonl,line=3::x%0Ay"
    )


# --------------------------------------------------------------------------- outside Actions


def test_outside_actions_nothing_changes(tmp_path, actions):
    env, summary, outputs = actions
    del env["GITHUB_ACTIONS"]  # the files exist, but this is not a workflow step
    result = run(["calibrate", SAMPLE / "overconfident.jsonl", "--max-ece", "0.05"], env=env)
    assert result.exit_code == 1
    assert result.stderr == "gate failed: ece = 0.264856 exceeds --max-ece 0.05\n"
    assert summary.read_text() == "" and outputs.read_text() == ""


def test_annotations_none_turns_everything_off(tmp_path, actions):
    env, summary, outputs = actions
    preds = SAMPLE / "overconfident.jsonl"
    result = run(["calibrate", preds, "--max-ece", "0.05", "--annotations", "none"], env=env)
    assert result.exit_code == 1
    assert result.stderr == "gate failed: ece = 0.264856 exceeds --max-ece 0.05\n"
    assert summary.read_text() == "" and outputs.read_text() == ""


def test_annotations_github_outside_actions(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"confidence": 0.5, "correct": true}\n{"confidence": 1.5, "correct": true}\n')
    result = run(["calibrate", bad, "--annotations", "github"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"Error: {bad}:2: confidence 1.5 is outside [0, 1]",
        f"::error file={bad},line=2::confidence 1.5 is outside [0, 1]",
    ]


# --------------------------------------------------------------------------- errors


def test_input_error_points_at_file_and_line(tmp_path, actions):
    env, summary, outputs = actions
    bad = tmp_path / "with, comma: and 100%.jsonl"
    bad.write_text('{"confidence": 0.5, "correct": 3}\n')
    result = run(["calibrate", bad], env=env)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"Error: {bad}:1: ")
    detail = lines[0].split(":1: ", 1)[1]
    escaped = str(bad).replace("%", "%25").replace(":", "%3A").replace(",", "%2C")
    assert lines[1:] == [f"::error file={escaped},line=1::{detail}"]
    assert summary.read_text() == ""  # exit 2 writes no summary
    # and outputs that no expression reads as a pass: empty would read as 0
    assert outputs_of(outputs)["passed"] == "false" and outputs_of(outputs)["ece"] == "NaN"


def test_input_error_on_stdin_has_no_file(actions):
    env, _, _ = actions
    result = run(["calibrate", "-"], input='{"confidence": 7, "correct": true}\n', env=env)
    assert result.exit_code == 2
    assert commands(result.stderr) == ["::error ::<stdin>:1: confidence 7 is outside [0, 1]"]


def test_compare_input_error_is_annotated_too(tmp_path, actions):
    env, _, _ = actions
    good = write_jsonl(tmp_path / "base.jsonl", ROWS)
    bad = tmp_path / "new.jsonl"
    bad.write_text('{"id": 1, "confidence": 0.5, "correct": true}\nnot json\n')
    result = run(["compare", good, bad], env=env)
    assert result.exit_code == 2
    (annotation,) = commands(result.stderr)
    assert annotation.startswith(f"::error file={bad},line=2::")


def test_usage_errors_are_annotated(tmp_path, actions):
    env, _, _ = actions
    preds = write_jsonl(tmp_path / "p.jsonl", ROWS)
    result = run(["calibrate", preds, "--bins", "0"], env=env)
    assert result.exit_code == 2
    message = result.stderr.splitlines()[0].removeprefix("Error: ")
    assert "'--bins'" in message
    assert commands(result.stderr) == [f"::error title=calibcli::{message}"]
    result = run(["calibrate", preds, "--gate-each"], env=env)
    assert result.exit_code == 2
    assert commands(result.stderr) == ["::error title=calibcli::--gate-each needs --by FIELD"]


def test_empty_summary_path_is_a_usage_error_naming_the_option(tmp_path):
    preds = write_jsonl(tmp_path / "p.jsonl", ROWS)
    result = run(["calibrate", preds, "--summary", ""])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("Error: Invalid value for '--summary': the path is empty")
    assert len(result.stderr.splitlines()) == 1


# --------------------------------------------------------------------------- gates and warnings


def test_failed_gate_annotations_summary_and_outputs(tmp_path, actions):
    env, summary, outputs = actions
    result = run(
        ["calibrate", SAMPLE / "overconfident.jsonl", "--max-ece", "0.05", "--max-brier", "1"],
        env=env,
    )
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "gate failed: ece = 0.264856 exceeds --max-ece 0.05",
        "::error title=calibcli gate::ece = 0.264856 exceeds --max-ece 0.05",
    ]
    assert "gate FAILED" in summary.read_text()
    values = outputs_of(outputs)
    assert values.pop("command") == "calibrate"
    assert values.pop("passed") == "false"
    assert values.pop("n") == "2000"
    # 1,111 of the 2,000 answers are right (accuracy 0.5555 in the README tour)
    assert float(values.pop("accuracy")) == 1111 / 2000
    assert float(values.pop("ece")) == pytest.approx(0.2648556572535375, abs=1e-12)
    assert set(values) == {"brier", "smece", "nll", "auroc"}
    assert all(float(v) > 0 for v in values.values())


def test_passing_run_appends_to_the_summary_and_says_passed(tmp_path, actions):
    env, summary, outputs = actions
    summary.write_text("earlier step\n")
    result = run(["calibrate", SAMPLE / "well_calibrated.jsonl", "--max-ece", "0.05"], env=env)
    assert result.exit_code == 0, result.stderr
    assert commands(result.stderr) == []
    text = summary.read_text()
    assert text.startswith("earlier step\n### calibcli calibrate")
    assert outputs_of(outputs)["passed"] == "true"


def test_warnings_are_annotated(tmp_path, actions):
    env, _, _ = actions
    preds = write_jsonl(tmp_path / "p.jsonl", ROWS)  # every confidence in one bin
    result = run(["calibrate", preds], env=env)
    assert result.exit_code == 0
    warnings = [
        line[len("warning: ") :]
        for line in result.stderr.splitlines()
        if line.startswith("warning: ")
    ]
    assert warnings
    assert commands(result.stderr) == [f"::warning ::{w}" for w in warnings]


def test_json_on_stdout_stays_the_product(tmp_path, actions):
    env, _, outputs = actions
    result = run(
        ["calibrate", SAMPLE / "overconfident.jsonl", "--json", "--max-ece", "0.05"], env=env
    )
    assert result.exit_code == 1
    assert json.loads(result.stdout)["gate"]["passed"] is False
    assert outputs_of(outputs)["passed"] == "false"


# --------------------------------------------------------------------------- the summary options


def test_no_summary_and_explicit_summary(tmp_path, actions):
    env, summary, outputs = actions
    preds = SAMPLE / "well_calibrated.jsonl"
    assert run(["calibrate", preds, "--no-summary"], env=env).exit_code == 0
    assert summary.read_text() == ""
    assert outputs_of(outputs)["passed"] == "true"  # outputs are not the summary
    own = tmp_path / "own.md"
    assert run(["calibrate", preds, "--summary", own], env=env).exit_code == 0
    assert summary.read_text() == "" and own.read_text().startswith("### calibcli calibrate")
    both = run(["calibrate", preds, "--summary", own, "--no-summary"], env=env)
    assert both.exit_code == 2
    assert both.stderr.startswith("Error: --no-summary and --summary PATH contradict")


def test_no_summary_is_on_every_command_with_a_summary():
    for command in ("perplexity", "calibrate", "reliability", "threshold", "fit", "compare"):
        text = run([command, "--help"]).stdout
        assert "--annotations" in text and "--no-summary" in text, command
    apply = run(["apply", "--help"]).stdout
    assert "--annotations" in apply and "--no-summary" not in apply


# --------------------------------------------------------------------------- outputs per command


def test_step_outputs_of_each_command(tmp_path, actions):
    env, _, outputs = actions

    def outputs_for(args):
        outputs.write_text("")
        result = run([*args, "-q"], env=env)
        assert result.exit_code in (0, 1), result.stderr
        return outputs_of(outputs)

    ppl = outputs_for(["perplexity", SAMPLE / "perplexity.jsonl"])
    assert set(ppl) == {
        "command",
        "perplexity",
        "bits_per_token",
        "bits_per_byte",
        "tokens",
        "passed",
    }
    assert ppl["tokens"] == "53965"
    rel = outputs_for(["reliability", SAMPLE / "overconfident.jsonl"])
    assert set(rel) == {"command", "n", "accuracy", "ece", "brier", "passed"}
    th = outputs_for(
        [
            "threshold",
            SAMPLE / "overconfident.jsonl",
            "--target-accuracy",
            "0.8",
            "--min-coverage",
            "0.5",
        ]
    )
    assert th["passed"] == "false" and 0 < float(th["coverage"]) < 0.5
    assert 0.5 < float(th["threshold"]) < 1 and float(th["accuracy"]) >= 0.8
    none = outputs_for(["threshold", SAMPLE / "overconfident.jsonl", "--target-accuracy", "0.999"])
    assert none["threshold"] == "NaN"  # no threshold reaches the target: undefined
    cmp = outputs_for(
        [
            "compare",
            SAMPLE / "well_calibrated.jsonl",
            SAMPLE / "overconfident.jsonl",
            "--bootstrap",
            "200",
        ]
    )
    assert cmp["matched"] == "2000" and cmp["passed"] == "true"
    assert float(cmp["accuracy_difference"]) == 0.0  # the same answers, different confidences
    assert float(cmp["ece_difference"]) > 0.2


def test_an_infinite_or_undefined_output_is_a_number_no_comparison_passes(tmp_path, actions):
    """GitHub's expressions read an empty output as 0, so an empty perplexity would pass a
    workflow's own `perplexity < 30`: an infinite figure is written Infinity, an undefined one
    NaN, which compare as numbers (Infinity < 30 and NaN < 30 are false)."""
    env, _, outputs = actions
    infinite = tmp_path / "inf.jsonl"
    infinite.write_text('{"nll": 1e999, "tokens": 3}\n{"nll": 2.0, "tokens": 4}\n')
    result = run(["perplexity", infinite, "-q"], env=env)
    assert result.exit_code == 0, result.stderr
    values = outputs_of(outputs)
    assert values["perplexity"] == values["bits_per_token"] == "Infinity"
    assert values["tokens"] == "7"
    outputs.write_text("")
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(
        '{"confidence": 1.0, "correct": false}\n{"confidence": 0.5, "correct": false}\n'
    )
    result = run(["calibrate", wrong, "-q"], env=env)
    assert result.exit_code == 0, result.stderr
    values = outputs_of(outputs)
    assert values["nll"] == "Infinity"  # a wrong answer at confidence 1
    assert values["auroc"] == "NaN"  # one class: undefined
    assert float(values["ece"]) == 0.75


def test_action_declares_every_output_calibcli_writes():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    written = {"command", "passed"} | {k for keys in github.OUTPUTS.values() for k in keys}
    assert set(action["outputs"]) == written
    for name, output in action["outputs"].items():
        assert output["value"] == f"${{{{ steps.calibcli.outputs.{name} }}}}"


def test_a_path_in_the_workspace_is_annotated_relative_to_it(tmp_path, actions):
    env, _, _ = actions
    (tmp_path / "eval").mkdir()
    bad = tmp_path / "eval" / "preds.jsonl"
    bad.write_text('{"confidence": 0.5}\n')
    result = run(["calibrate", bad], env={**env, "GITHUB_WORKSPACE": str(tmp_path)})
    assert result.exit_code == 2
    (annotation,) = commands(result.stderr)
    assert annotation.startswith("::error file=eval/preds.jsonl,line=1::")
    outside = run(["calibrate", bad], env={**env, "GITHUB_WORKSPACE": str(tmp_path / "other")})
    assert commands(outside.stderr)[0].startswith(f"::error file={bad},line=1::")


def test_unwritable_outputs_file_keeps_the_verdict(tmp_path, actions):
    env, _, _ = actions
    env["GITHUB_OUTPUT"] = str(tmp_path / "missing" / "output")
    result = run(["calibrate", SAMPLE / "overconfident.jsonl", "--max-ece", "0.05", "-q"], env=env)
    assert result.exit_code == 1
    assert f"warning: cannot write the step outputs to {env['GITHUB_OUTPUT']}: " in result.stderr
