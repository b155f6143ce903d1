"""Building calibcli's distributions and installing them into fresh venvs, for the packaging tests.

One networked step fetches everything into a wheelhouse: calibcli's dependencies with the plot
extra, hatchling (the build backend, for builds from source) and the release group's tools.
Every later install reads the wheelhouse only (``PIP_NO_INDEX``), so each takes seconds and
the tests need the package index (or pip's cache) once per session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Built:
    source: Path  # a copy of the working tree, committed as a git repository of its own
    dist: Path  # the wheel and sdist that `python -m build` made of it
    wheelhouse: Path  # wheels of every dependency, the build backend and the release tools

    @property
    def wheel(self) -> Path:
        (wheel,) = self.dist.glob("calibcli-*.whl")
        return wheel

    @property
    def sdist(self) -> Path:
        (sdist,) = self.dist.glob("calibcli-*.tar.gz")
        return sdist

    def pip_settings(self) -> dict[str, str]:
        """The pip variables of an install that reads the wheelhouse only."""
        # bytecode is compiled on first import instead: compiling numpy and matplotlib at
        # install time is most of an install's time, and no test is about it
        return {
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(self.wheelhouse),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_COMPILE": "1",
        }

    def offline(self) -> dict[str, str]:
        """This environment, with pip reading the wheelhouse only."""
        env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
        return {**env, **self.pip_settings()}


def run(args: list[str | Path], **kwargs) -> subprocess.CompletedProcess:
    """Run a command; on failure, fail with its output (an assertion, so pytest shows it)."""
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=900, **kwargs
    )
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def working_tree_files() -> list[str]:
    """The project's files as a commit would hold them: tracked and new, never ignored."""
    listed = run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT
    ).stdout.splitlines()
    return [name for name in listed if (ROOT / name).is_file()]


def source_repository(target: Path) -> Path:
    """A git repository holding the working tree as one commit (what a clone would give)."""
    for name in working_tree_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)
    git = ["git", "-c", "user.name=calibcli tests", "-c", "user.email=tests@calibcli.invalid"]
    run([*git, "init", "--quiet", "--initial-branch=main"], cwd=target)
    run([*git, "add", "--all"], cwd=target)
    run([*git, "commit", "--quiet", "--message=the working tree"], cwd=target)
    return target


def fresh_venv(path: Path) -> Path:
    """A new venv (its bin folder returned), from the Python running the tests."""
    base = getattr(sys, "_base_executable", sys.executable)
    run([base, "-m", "venv", path])
    return path / "bin"


def build_release(work: Path) -> Built:
    source = source_repository(work / "source")
    wheelhouse = work / "wheelhouse"
    # the one step that needs the index: dependencies, the build backend and the release tools
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--wheel-dir",
            wheelhouse,
            f"{source}[plot]",
            "hatchling",
            "pip>=25.1",  # dependency groups (--group) need it; a new venv has an older one
            "--group",
            f"{source / 'pyproject.toml'}:release",
        ],
        env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
    )
    for stale in wheelhouse.glob("calibcli-*.whl"):  # built by pip wheel; the test builds its own
        stale.unlink()
    built = Built(source, work / "dist", wheelhouse)
    tools = fresh_venv(work / "tools")
    run(
        [tools / "python", "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
        env=built.offline(),
    )
    run(
        [tools / "python", "-m", "pip", "install", "--quiet", "--group",
         f"{source / 'pyproject.toml'}:release"],
        env=built.offline(),
    )  # fmt: skip
    run([tools / "python", "-m", "build", "--outdir", built.dist, source], env=built.offline())
    return built
