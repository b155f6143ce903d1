"""action.yml: its shell steps run as the runner would run them (tests/workflow.py), with the
inputs substituted, in a scratch workspace with fake GITHUB_* files.

The installing step runs once a session, for real (conftest.action_temp): a venv in the
runner's temp folder with calibcli installed from this checkout, the way the action installs
itself before any release.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from github_steps import WITHOUT_REPORT
from workflow import ROOT, Context, Runner, load_action, runner_env, setup_python

SAMPLE = ROOT / "sample_data"
pytestmark = pytest.mark.packaging


@pytest.fixture
def runner_temp(action_temp):
    """The runner temp folder where the action's own install step installed calibcli
    (conftest.action_temp, once a session); later uses of the action find it there."""
    return action_temp


def test_install_step_put_calibcli_in_a_venv_of_its_own(action_temp, built):
    (venv,) = [p for p in action_temp.iterdir() if p.name.startswith("calibcli-")]
    from importlib.metadata import version

    done = subprocess.run([venv / "bin" / "calibcli", "--version"], capture_output=True, text=True)
    assert done.stdout == f"calibcli {version('calibcli')}\n"
    # a second use in the job finds it and says where it is
    runner = Runner(action_temp, runner_env(action_temp), setup_python, "")
    steps = load_action()["runs"]["steps"]
    done = runner.run_steps(steps[:2], Context(inputs={"python-version": ""}), built.pip_settings())
    assert [s.ran for s in done] == [False, True]
    assert done[1].outputs == {"bin": str(venv / "bin")}


@pytest.fixture
def workspace(tmp_path):
    """A checked-out repository with an evaluation's predictions in eval/."""
    (tmp_path / "eval").mkdir()
    shutil.copy(SAMPLE / "well_calibrated.jsonl", tmp_path / "eval" / "base.jsonl")
    shutil.copy(SAMPLE / "overconfident.jsonl", tmp_path / "eval" / "new.jsonl")
    return tmp_path


def use_action(workspace, runner_temp, **inputs):
    runner = Runner(workspace, runner_env(runner_temp), setup_python, "calibcli-dev/calibcli")
    step = runner.run_action(inputs, {"PIP_NO_INDEX": "1"})  # installed already: no index needed
    return step, runner.job_summary


def test_action_is_composite_and_installs_from_its_own_checkout():
    action = load_action()
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"command", "files", "args", "baseline", "python-version"}
    install = action["runs"]["steps"][1]
    assert install["env"]["CALIBCLI_SOURCE"] == "${{ github.action_path }}"
    text = (ROOT / "action.yml").read_text()
    assert "upload-artifact" not in text  # it uploads nothing
    for step in action["runs"]["steps"]:  # inputs reach scripts only through env: no injection
        assert "${{" not in step.get("run", "")


def test_gate_passes(workspace, runner_temp):
    step, summary = use_action(
        workspace, runner_temp, files="eval/base.jsonl", args="--max-ece 0.05 --gate-on upper"
    )
    assert step.code == 0, step.stderr
    assert step.commands == []
    assert step.outputs["passed"] == "true" and step.outputs["command"] == "calibrate"
    assert float(step.outputs["ece"]) < 0.05
    assert step.outputs["n"] == "2000" and step.outputs["perplexity"] == ""
    assert summary.startswith("### calibcli calibrate: `eval/base.jsonl` — gate passed")


def test_gate_fails_with_exit_1_an_annotation_and_outputs(workspace, runner_temp):
    step, summary = use_action(
        workspace,
        runner_temp,
        files="eval/new.jsonl",
        args="--max-ece 0.05 -o calibration.json",
        **{"python-version": ""},  # the runner's python3 (setup-python skipped)
    )
    assert step.code == 1
    assert step.commands == ["::error title=calibcli gate::ece = 0.264856 exceeds --max-ece 0.05"]
    assert "gate failed: ece = 0.264856 exceeds --max-ece 0.05" in step.stderr.splitlines()
    assert step.outputs["passed"] == "false"
    assert float(step.outputs["ece"]) == pytest.approx(0.2648556572535375, abs=1e-12)
    assert "gate FAILED" in summary
    assert (workspace / "calibration.json").exists()  # written in the workspace, kept on failure


def test_bad_input_is_exit_2_annotated_at_its_line(workspace, runner_temp):
    (workspace / "eval" / "bad.jsonl").write_text(
        '{"confidence": 0.4, "correct": false}\n{"confidence": 0.9, "correct": "yes"}\n'
    )
    step, summary = use_action(workspace, runner_temp, files="eval/bad.jsonl")
    assert step.code == 2
    (annotation,) = step.commands
    assert annotation.startswith("::error file=eval/bad.jsonl,line=2::")
    assert summary == "" and step.outputs["passed"] == "false" and step.outputs["ece"] == "NaN"


def test_files_are_globbed_and_args_are_never_run_as_shell(workspace, runner_temp):
    step, _ = use_action(workspace, runner_temp, command="reliability", files="eval/*.jsonl")
    assert step.code == 0, step.stderr
    assert step.outputs["n"] == "4000"  # both files, pooled
    step, _ = use_action(
        workspace, runner_temp, files="eval/base.jsonl", args="--max-ece $(touch pwned)"
    )
    assert step.code == 2
    assert not (workspace / "pwned").exists()


def test_a_pattern_names_the_files_calibcli_reads_for_it(workspace, runner_temp):
    # `**` reaches every depth and an existing name with brackets is that file, as calibcli
    # reads a quoted pattern: 2,000 rows at each of three depths (the sample files, each of
    # 2,000 rows); 2,000 in preds[1].jsonl
    # beside the 3 rows of preds1.jsonl, which its brackets also match as a glob
    runs = workspace / "runs"
    (runs / "a" / "deep").mkdir(parents=True)
    at = (runs / "top.jsonl", runs / "a" / "mid.jsonl", runs / "a" / "deep" / "d.jsonl")
    for name, path in zip(("well_calibrated", "overconfident", "underconfident"), at, strict=True):
        shutil.copy(SAMPLE / f"{name}.jsonl", path)
    step, _ = use_action(workspace, runner_temp, command="reliability", files="runs/**/*.jsonl")
    assert step.code == 0, step.stderr
    assert step.outputs["n"] == "6000"
    shutil.copy(SAMPLE / "well_calibrated.jsonl", workspace / "preds[1].jsonl")
    (workspace / "preds1.jsonl").write_text('{"confidence": 0.5, "correct": true}\n' * 3)
    step, _ = use_action(workspace, runner_temp, command="reliability", files="preds[1].jsonl")
    assert step.code == 0, step.stderr
    assert step.outputs["n"] == "2000"


def test_compare_against_a_baseline(workspace, runner_temp):
    step, summary = use_action(
        workspace,
        runner_temp,
        command="compare",
        baseline="eval/base.jsonl",
        files="eval/new.jsonl",
        args="--max-increase ece=0.01 --bootstrap 200",
    )
    assert step.code == 1
    assert step.commands[0].startswith("::error title=calibcli gate::ece_increase = ")
    assert step.outputs["matched"] == "2000" and step.outputs["passed"] == "false"
    assert float(step.outputs["ece_difference"]) > 0.2
    assert summary.startswith("### calibcli compare")


COMPARE_WITHOUT_REPORT = WITHOUT_REPORT["compare"]
CALIBRATE_WITHOUT_REPORT = WITHOUT_REPORT["calibrate"]


def written(step):
    """The action's outputs the step set (the others are empty)."""
    return {name: value for name, value in step.outputs.items() if value}


def test_baseline_goes_with_compare_only(workspace, runner_temp):
    step, summary = use_action(workspace, runner_temp, command="compare", files="eval/new.jsonl")
    assert step.code == 2
    assert step.commands == [
        "::error title=calibcli::compare needs the baseline input (BASE) and one file in files "
        "(NEW)"
    ]
    assert written(step) == COMPARE_WITHOUT_REPORT and summary == ""
    step, _ = use_action(
        workspace, runner_temp, command="compare", files="eval/new.jsonl", baseline=" \n"
    )  # an empty variable
    assert step.code == 2 and written(step) == COMPARE_WITHOUT_REPORT
    step, _ = use_action(workspace, runner_temp, files="eval/new.jsonl", baseline="eval/base.jsonl")
    assert step.code == 2
    assert step.commands == ["::error title=calibcli::the baseline input is for command: compare"]
    assert written(step) == CALIBRATE_WITHOUT_REPORT
    step, _ = use_action(
        workspace, runner_temp, command="compare", files="eval/new.jsonl", baseline="eval/*.jsonl"
    )
    assert step.code == 2
    assert step.commands == [
        "::error title=calibcli::the baseline input names 2 files; compare takes one (BASE)"
    ]
    assert written(step) == COMPARE_WITHOUT_REPORT


def test_an_option_without_its_value_in_args_is_annotated_with_outputs(workspace, runner_temp):
    """`args: --max-ece ${{ vars.MAX_ECE }}` with the variable unset."""
    step, _ = use_action(workspace, runner_temp, files="eval/new.jsonl", args="--max-ece ")
    assert step.code == 2
    assert step.commands == [
        "::error title=calibcli::Option '--max-ece' requires an argument. "
        "(see 'calibcli calibrate -h')"
    ]
    assert written(step) == CALIBRATE_WITHOUT_REPORT
