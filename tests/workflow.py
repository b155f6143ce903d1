"""Running GitHub Actions steps here, for the tests of action.yml and the README's recipes.

GitHub is not reachable from the test machines, so the steps run locally the way the runner
runs them: a ``run:`` script through ``bash --noprofile --norc -eo pipefail`` (the runner's
default shell on Linux) in the workspace, with ``env:`` of the job and the step, a fresh
GITHUB_OUTPUT and GITHUB_STEP_SUMMARY file per step (outputs become
``steps.ID.outputs.NAME``, summaries are appended to the job's), and ``if:`` deciding whether
a step runs after a failure. ``uses:`` of this repository's action runs its composite steps
with the ``with:`` inputs; any other ``uses:`` (checkout, setup-python, artifacts) is handed to
a callback, where the test does what that action would have done.

Only the expressions the recipes use are known (inputs, step outputs, github.action_path,
github.token, ``a || 'b'``, ``x != ''``, always()/success()/failure()); any other is an error,
so a recipe cannot silently go untested.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
STEP_OUTPUT = re.compile(r"^steps\.([\w-]+)\.outputs\.([\w-]+)$")
COMPARISON = re.compile(r"^(.+?)\s*(==|!=)\s*'(.*)'$")


@dataclass
class Step:
    """What one step did."""

    name: str
    id: str | None
    ran: bool
    code: int = 0
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def commands(self) -> list[str]:
        """The workflow commands (``::error ...``) the step printed, on either stream."""
        text = self.stdout + "\n" + self.stderr
        return [line for line in text.splitlines() if line.startswith("::")]


@dataclass
class Context:
    """The state expressions read: inputs, earlier steps' outputs, the job's verdict so far."""

    inputs: dict[str, str] = field(default_factory=dict)
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    action_path: str = str(ROOT)
    event_name: str = "pull_request"
    failed: bool = False

    def value(self, expr: str) -> str:
        expr = expr.strip()
        if " || " in expr:
            for part in expr.split(" || "):
                found = self.value(part)
                if found:
                    return found
            return ""
        if expr.startswith("'") and expr.endswith("'"):
            return expr[1:-1]
        if expr.startswith("inputs."):
            return self.inputs[expr.removeprefix("inputs.")]
        if expr == "github.action_path":
            return self.action_path
        if expr == "github.event_name":
            return self.event_name
        if expr == "github.token":
            return "github-token-for-tests"
        match = STEP_OUTPUT.match(expr)
        if match:
            return self.steps.get(match.group(1), {}).get(match.group(2), "")
        raise ValueError(f"the test runner does not know the expression ${{{{ {expr} }}}}")

    def substitute(self, text: str) -> str:
        return EXPRESSION.sub(lambda m: self.value(m.group(1)), text)

    def condition(self, condition: str | None) -> bool:
        if condition is None:
            return not self.failed
        expr = condition.strip()
        if expr.startswith("${{"):
            expr = EXPRESSION.fullmatch(expr).group(1)
        if expr == "always()":
            return True
        if expr == "failure()":
            return self.failed
        if expr == "success()":
            return not self.failed
        match = COMPARISON.match(expr)
        if match:
            equal = self.value(match.group(1)) == match.group(3)
            return not self.failed and (equal if match.group(2) == "==" else not equal)
        raise ValueError(f"the test runner does not know the condition {condition!r}")


# A handler for `uses:` steps of other actions: (the step's `uses`, its `with:` substituted,
# the workspace) -> that action's outputs.
UsesHandler = Callable[[str, dict[str, str], Path], dict[str, str]]


class Runner:
    """Runs steps in one workspace with a base environment (PATH, the fake runner folders)."""

    def __init__(self, workspace: Path, env: dict[str, str], uses: UsesHandler, action: str):
        self.workspace = workspace
        self.env = env
        self.uses = uses
        self.action = action  # how workflows name this repository's action: OWNER/calibcli
        self.job_summary = ""
        self._count = 0

    def _files(self) -> tuple[Path, Path]:
        self._count += 1
        folder = Path(self.env["RUNNER_TEMP"]) / "_runner_files"
        folder.mkdir(parents=True, exist_ok=True)
        output = folder / f"output_{self._count}"
        summary = folder / f"step_summary_{self._count}"
        output.write_text("")
        summary.write_text("")
        return output, summary

    def run_script(self, script: str, env: dict[str, str]) -> Step:
        """One ``run:`` script, as the runner runs it; its outputs and summary collected."""
        output, summary = self._files()
        script_file = output.with_name(f"script_{self._count}.sh")
        script_file.write_text(script)
        full_env = {
            **self.env,
            **env,
            "GITHUB_ACTIONS": "true",
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_WORKSPACE": str(self.workspace),
        }
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
            cwd=self.workspace,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        self.job_summary += summary.read_text()
        return Step("", None, True, done.returncode, done.stdout, done.stderr, read_outputs(output))

    def run_steps(
        self, steps: list[dict[str, Any]], context: Context, env: dict[str, str]
    ) -> list[Step]:
        """Steps in order; after a failure only those whose ``if:`` allows it run."""
        results = []
        for raw in steps:
            name = raw.get("name") or raw.get("uses") or raw.get("run", "").split("\n")[0]
            if not context.condition(raw.get("if")):
                results.append(Step(name, raw.get("id"), False))
                continue
            step_env = {
                **env,
                **{k: context.substitute(str(v)) for k, v in raw.get("env", {}).items()},
            }
            if "run" in raw:
                step = self.run_script(context.substitute(raw["run"]), step_env)
            else:
                with_ = {k: context.substitute(text(v)) for k, v in raw.get("with", {}).items()}
                step = self.run_uses(raw["uses"], with_, step_env)
            step.name, step.id = name, raw.get("id")
            if step.id:
                context.steps[step.id] = step.outputs
            context.failed = context.failed or step.code != 0
            results.append(step)
        return results

    def run_uses(self, uses: str, with_: dict[str, str], env: dict[str, str]) -> Step:
        if uses.split("@")[0] == self.action:
            return self.run_action(with_, env)
        return Step(uses, None, True, outputs=self.uses(uses, with_, self.workspace))

    def run_action(self, with_: dict[str, str], env: dict[str, str]) -> Step:
        """This repository's composite action with the given inputs."""
        action = load_action()
        inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
        unknown = set(with_) - set(inputs)
        if unknown:
            raise ValueError(f"action.yml has no input {sorted(unknown)}")
        inputs.update(with_)
        missing = [n for n, s in action["inputs"].items() if s.get("required") and not inputs[n]]
        if missing:
            raise ValueError(f"required action inputs missing: {missing}")
        context = Context(inputs=inputs)
        inner = self.run_steps(action["runs"]["steps"], context, env)
        outputs = {
            name: context.substitute(spec["value"]) for name, spec in action["outputs"].items()
        }
        code = next((s.code for s in inner if s.code != 0), 0)
        return Step(
            "",
            None,
            True,
            code,
            "".join(s.stdout for s in inner),
            "".join(s.stderr for s in inner),
            outputs,
        )

    def run_job(self, job: dict[str, Any], event_name: str = "pull_request") -> list[Step]:
        env = {k: text(v) for k, v in job.get("env", {}).items()}
        return self.run_steps(job["steps"], Context(event_name=event_name), env)


def setup_python(uses: str, with_: dict[str, str], workspace: Path) -> dict[str, str]:
    """actions/setup-python as action.yml calls it: a Python beside the job's, by its path."""
    assert uses == "actions/setup-python@v5", uses
    assert with_.get("update-environment") == "false"  # the job's own Python stays as it was
    return {"python-path": getattr(sys, "_base_executable", sys.executable)}


def install_action(runner_temp: Path, env: dict[str, str]) -> Path:
    """Run action.yml's own steps up to its install, once: calibcli in a venv under
    ``runner_temp``, where every later use of the action in the session finds it."""
    runner = Runner(runner_temp, {**runner_env(runner_temp), **env}, setup_python, "")
    steps = load_action()["runs"]["steps"]
    install = next(i for i, s in enumerate(steps) if s.get("id") == "install")
    done = runner.run_steps(steps[: install + 1], Context(inputs={"python-version": "3.12"}), {})
    assert all(s.ran and s.code == 0 for s in done), done[-1].stderr
    return runner_temp


def text(value: Any) -> str:
    """A YAML value as the runner hands it on: every value is a string, booleans lower case."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load_action() -> dict[str, Any]:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def read_outputs(path: Path) -> dict[str, str]:
    """``name=value`` lines, and ``name<<DELIMITER`` blocks, of a GITHUB_OUTPUT file."""
    outputs: dict[str, str] = {}
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        name, value = line.split("=", 1)
        outputs[name] = value
        i += 1
    return outputs


def runner_env(runner_temp: Path, path_first: list[Path] = ()) -> dict[str, str]:
    """The base environment of the steps: this machine's, without any GITHUB_* variable, with
    a runner temp folder and ``path_first`` folders ahead on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.pop("VIRTUAL_ENV", None)
    env["RUNNER_TEMP"] = str(runner_temp)
    env["PATH"] = os.pathsep.join([*map(str, path_first), env.get("PATH", "")])
    return env
