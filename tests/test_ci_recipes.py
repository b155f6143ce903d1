"""The README's GitHub Actions recipes, run as written.

Every ```yaml block of the README is either a workflow or a list of steps. Each runs in a
scratch workspace (tests/workflow.py) with the runner's files faked, once with predictions that
pass its gate and once with predictions that fail it. What cannot run here stands in for
itself: the checkout is the prepared workspace; upload-artifact checks its paths exist;
download-artifact hands over the baseline; ``pipx``, ``pip`` and ``gh`` are shims that check
their arguments (the repository's URL, a calibcli checkout, main's run) and put this venv's
calibcli on PATH. This repository's Action runs its real steps.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from harness import make_rows, write_jsonl
from workflow import ROOT, Runner, runner_env

from calibcli.cli import github

SAMPLE = ROOT / "sample_data"
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```yaml\n(.*?)^```", README, re.S | re.M)
REPOSITORY = "calibcli-dev/calibcli"
MAIN_RUN = "4242"  # the id gh reports for main's latest run
CALIBCLI = Path(sys.executable).parent / "calibcli"

pytestmark = pytest.mark.packaging  # the Action's steps install calibcli (once a session)


def shims(folder: Path) -> Path:
    """pipx, pip and gh as a workflow calls them; each installs by linking this venv's calibcli
    into ``folder`` (on PATH) once it has checked what it was asked for."""
    folder.mkdir()
    link = f'ln -sf "{CALIBCLI}" "{folder}/calibcli"'
    scripts = {
        "pipx": f"""
            [ "$1" = install ] || exit 64
            [[ "$2" =~ ^git\\+https://github\\.com/{REPOSITORY}(@[A-Za-z0-9._-]+)?$ ]] || {{
                echo "pipx shim: not this repository: $2" >&2; exit 1; }}
            {link}""",
        "pip": f"""
            [ "$1" = install ] || exit 64
            source="${{2%\\[*}}"
            grep -q '^name = "calibcli"$' "$source/pyproject.toml" || {{
                echo "pip shim: $source is not a calibcli checkout" >&2; exit 1; }}
            {link}""",
        "gh": f"""
            expected="run list --repo example-org/evals --workflow calibration.yml --branch main"
            expected="$expected --status success --limit 1 --json databaseId --jq .[0].databaseId"
            [ "$*" = "$expected" ] || {{ echo "gh shim: unexpected gh $*" >&2; exit 1; }}
            [ -n "$GH_TOKEN" ] || {{ echo "gh shim: no GH_TOKEN" >&2; exit 1; }}
            echo {MAIN_RUN}""",
    }
    for name, body in scripts.items():
        path = folder / name
        path.write_text("#!/usr/bin/env bash\nset -eu\n" + body.strip() + "\n")
        path.chmod(0o755)
    return folder


class Uses:
    """What the other actions of the recipes do, here."""

    def __init__(self, baseline: Path):
        self.baseline = baseline
        self.uploaded: dict[str, list[str]] = {}

    def __call__(self, uses, with_, workspace):
        name = uses.split("@")[0]
        if name in ("actions/checkout", "actions/setup-python"):
            return {}
        if name == "actions/upload-artifact":
            paths = [p for p in with_["path"].split("\n") if p.strip()]
            missing = [p for p in paths if not (workspace / p.strip()).exists()]
            assert missing == [], f"artifact {with_['name']}: nothing at {missing}"
            self.uploaded[with_["name"]] = paths
            return {}
        if name == "actions/download-artifact":
            assert with_["name"] == "predictions" and with_["run-id"] == MAIN_RUN
            assert with_["github-token"]
            (workspace / with_["path"]).mkdir(parents=True, exist_ok=True)
            shutil.copy(self.baseline, workspace / with_["path"] / "preds.jsonl")
            return {"download-path": str(workspace / with_["path"])}
        raise AssertionError(f"the recipes' test does not know {uses}")


def kind(block: str) -> str:
    if "compare" in block:
        return "compare"
    return "threshold" if "calibcli threshold" in block else "calibrate"


def predictions(tmp_path: Path, which: str, good: bool) -> Path:
    """Predictions that pass (good) or fail the recipe's gate."""
    if which == "threshold" and not good:  # fewer than a quarter of answers reach 80%
        return write_jsonl(tmp_path / "weak.jsonl", make_rows(2000, seed=5, skew=4.0))
    return SAMPLE / ("well_calibrated.jsonl" if good else "overconfident.jsonl")


def run_block(block, tmp_path, action_temp, built, *, good, event="pull_request"):
    workspace = tmp_path / "workspace"
    (workspace / "eval").mkdir(parents=True)
    which = kind(block)
    shutil.copy(predictions(tmp_path, which, good), workspace / "eval" / "preds.jsonl")
    (workspace / "tools").mkdir()
    (workspace / "tools" / "calibcli").symlink_to(ROOT)  # "wherever your checkout lives"
    (workspace / "baseline").mkdir()
    shutil.copy(SAMPLE / "well_calibrated.jsonl", workspace / "baseline" / "preds.jsonl")
    bin_dir = shims(tmp_path / "shims")
    installs = "install" in block or f"uses: {REPOSITORY}@" in block
    if not installs:  # a list of steps that takes calibcli as installed
        (bin_dir / "calibcli").symlink_to(CALIBCLI)
    env = {**runner_env(action_temp, [bin_dir]), **built.pip_settings()}
    env["GITHUB_REPOSITORY"] = "example-org/evals"
    uses = Uses(SAMPLE / "well_calibrated.jsonl")
    runner = Runner(workspace, env, uses, REPOSITORY)
    steps = runner.run_job({"steps": raw_steps(block)}, event)
    return steps, runner, uses, workspace


def raw_steps(block):
    """The steps of a block: a list of steps, or a workflow's one job."""
    parsed = yaml.safe_load(block)
    if isinstance(parsed, list):
        return parsed
    ((_, job),) = parsed["jobs"].items()
    return job["steps"]


def failed(steps):
    return [s for s in steps if s.ran and s.code != 0]


@pytest.mark.parametrize("block", BLOCKS, ids=[f"yaml{i}-{kind(b)}" for i, b in enumerate(BLOCKS)])
def test_recipe_passes_on_good_predictions(block, tmp_path, action_temp, built):
    steps, runner, _, _ = run_block(block, tmp_path, action_temp, built, good=True)
    assert failed(steps) == [], [(s.name, s.stdout, s.stderr) for s in failed(steps)]
    assert all(s.ran for s in steps), [s.name for s in steps if not s.ran]
    assert [c for s in steps for c in s.commands if c.startswith("::error")] == []
    which = kind(block)
    assert runner.job_summary.count(f"### calibcli {which}") == 1  # once, never twice
    assert "gate passed" in runner.job_summary
    for step in steps:
        if step.name == "Use the figures":
            assert re.fullmatch(r"ECE 0\.0\d+, gate passed: true\n", step.stdout)


@pytest.mark.parametrize("block", BLOCKS, ids=[f"yaml{i}-{kind(b)}" for i, b in enumerate(BLOCKS)])
def test_recipe_fails_the_job_on_bad_predictions(block, tmp_path, action_temp, built):
    steps, runner, uses, workspace = run_block(block, tmp_path, action_temp, built, good=False)
    (gate,) = failed(steps)
    assert gate.code == 1, gate.stderr
    errors = [c for c in gate.commands if c.startswith("::error")]
    which = kind(block)
    expected = {
        "calibrate": "::error title=calibcli gate::ece = ",
        "compare": "::error title=calibcli gate::ece_increase = ",
        "threshold": "::error title=calibcli gate::coverage = ",
    }[which]
    assert errors and errors[0].startswith(expected)
    assert "gate FAILED" in runner.job_summary
    # after the failure only the steps that ask to (if: always()) run
    for step, raw in list(zip(steps, raw_steps(block), strict=True))[steps.index(gate) + 1 :]:
        assert step.ran == (raw.get("if") == "always()"), step.name
    # what is kept for a failed run is there: `if: always()` steps ran and found their files
    if "upload-artifact" in block and "if: always()" in block:
        assert uses.uploaded
    for name in re.findall(r"-o (\S+\.json)", block) + re.findall(r"--plot (\S+\.png)", block):
        assert (workspace / name).exists(), name


def test_baseline_recipe_on_main_keeps_the_predictions_and_compares_nothing(
    tmp_path, action_temp, built
):
    (block,) = [b for b in BLOCKS if "download-artifact" in b]
    steps, runner, uses, _ = run_block(
        block, tmp_path, action_temp, built, good=False, event="push"
    )
    assert failed(steps) == []
    assert [s.ran for s in steps] == [True, True, False, False, False]
    assert uses.uploaded == {"predictions": ["eval/preds.jsonl"]}
    assert runner.job_summary == ""


def test_readme_names_the_outputs_each_command_writes():
    section = README.split("### What calibcli adds under GitHub Actions", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| (.+) \|$", section, re.M)
    documented = {command: re.findall(r"`(\w+)`", names) for command, names in rows}
    assert documented == {command: list(keys) for command, keys in github.OUTPUTS.items()}


def test_readme_recipes_use_the_action_inputs_it_has():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    for block in BLOCKS:
        for step in raw_steps(block):
            if step.get("uses", "").startswith(f"{REPOSITORY}@"):
                assert set(step["with"]) <= set(action["inputs"])
