"""Every command the README shows must run and exit as the README says.

Convention for README.md: in a fenced block opened with ```console, each line that starts with
``$ calibcli`` is a command (a trailing ``\\`` continues it on the next line). It must exit 0,
unless the line ends with a comment ``# exit N``, in which case it must exit N. Commands run
with ``sh`` (so pipes work; a pipeline's status is its last command's, as in an interactive
shell) with .venv/bin first on PATH, from a directory that mirrors the repository root through
symlinks, so files a command writes (``-o report.json``, ``--plot reliability.png``) do not land
in the checkout. Nothing is skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EXIT_COMMENT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")


def console_commands(text: str) -> list[tuple[int, str, int]]:
    """(line number, command, expected exit code) for each ``$ calibcli`` line of console blocks."""
    commands = []
    in_console = False
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            in_console = not in_console and stripped[3:].strip() == "console"
            pending = None
            continue
        if not in_console:
            continue
        if pending is not None:
            start, command = pending
            command = command + " " + stripped
        elif stripped.startswith("$ calibcli"):
            start, command = number, stripped[2:]
        else:
            continue
        if command.endswith("\\"):
            pending = (start, command[:-1].rstrip())
            continue
        pending = None
        match = EXIT_COMMENT.search(command)
        code = int(match.group(1)) if match else 0
        if match:
            command = command[: match.start()]
        commands.append((start, command.strip(), code))
    return commands


def test_parser_reads_the_convention():
    text = (
        "intro\n```console\n$ calibcli calibrate a.jsonl\ntable output\n"
        "$ calibcli calibrate a.jsonl --max-ece 0.01  # exit 1\n"
        "$ calibcli perplexity \\\n    b.jsonl --json\n```\n"
        "```bash\n$ calibcli not-a-console-block\n```\n"
        "$ calibcli outside-any-block\n"
    )
    assert console_commands(text) == [
        (3, "calibcli calibrate a.jsonl", 0),
        (5, "calibcli calibrate a.jsonl --max-ece 0.01", 1),
        (6, "calibcli perplexity b.jsonl --json", 0),
    ]


README_TEXT = README.read_text(encoding="utf-8") if README.exists() else ""
COMMANDS = console_commands(README_TEXT)


def test_readme_shows_commands_once_it_has_a_tour():
    if "60-second tour" in README_TEXT:
        assert COMMANDS, "README.md has a 60-second tour but no ```console $ calibcli commands"


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
    """A directory whose entries are symlinks to the repository's top-level entries."""
    root = tmp_path_factory.mktemp("readme")
    for entry in ROOT.iterdir():
        if entry.name not in {".git", ".venv"}:
            (root / entry.name).symlink_to(entry)
    return root


@pytest.mark.parametrize(
    ("line", "command", "code"), COMMANDS, ids=[f"README.md:{n}" for n, _, _ in COMMANDS]
)
def test_readme_command(mirror, line, command, code):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        command, shell=True, cwd=mirror, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == code, (
        f"README.md:{line}: `{command}` exited {result.returncode}, README says {code}\n"
        f"stderr:\n{result.stderr}"
    )
