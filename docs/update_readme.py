"""Run every command shown in README.md and paste its real output under it.

In a fenced block opened with ```console, a line starting with ``$ `` is a command (a trailing
``\\`` continues it on the next line); the lines after it, up to the next command or the end of
the block, are its output: standard output, then standard error. A command must exit 0 unless
its line ends with ``# exit N``. Commands run in reading order through ``sh`` from one
directory that mirrors the repository through symlinks (so ``-o`` and ``--plot`` files do not
land in the checkout, and a later command can read what an earlier one wrote), with
the running interpreter's bin directory first on PATH and an 80-column, colourless terminal.

    python docs/update_readme.py          # rewrite README.md in place
    python docs/update_readme.py --check  # exit 1 if README.md is stale

tests/test_readme.py uses the same functions to fail when the README is out of date.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EXIT_COMMENT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")


@dataclass(frozen=True)
class Command:
    line: int  # 1-based line of the "$ " line in README.md
    last: int  # 0-based index of the command's last line (continuations included)
    command: str  # the shell command, without "$ " and the exit comment
    code: int  # the exit code the README promises
    output_end: int  # 0-based index one past the command's output lines


def console_commands(text: str) -> list[Command]:
    """Every command of every ```console block, with where its shown output ends."""
    lines = text.splitlines()
    found: list[Command] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        i += 1
        while i < len(lines) and not lines[i].strip().startswith("```"):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            start, parts = i, [lines[i][2:]]
            while parts[-1].endswith("\\") and i + 1 < len(lines):
                parts[-1] = parts[-1][:-1].rstrip()
                i += 1
                parts.append(lines[i].strip())
            last = i
            i += 1
            while (
                i < len(lines) and not lines[i].startswith("$ ") and not lines[i].startswith("```")
            ):
                i += 1
            command = " ".join(parts)
            match = EXIT_COMMENT.search(command)
            code = int(match.group(1)) if match else 0
            if match:
                command = command[: match.start()]
            found.append(Command(start + 1, last, command.strip(), code, i))
        i += 1
    return found


def mirror_of_repository(target: Path) -> Path:
    for entry in ROOT.iterdir():
        if entry.name not in {".git", ".venv"}:
            (target / entry.name).symlink_to(entry)
    return target


def run(command: str, cwd: Path) -> tuple[int, list[str]]:
    """Run one README command; (exit code, output lines: stdout then stderr, right-stripped)."""
    env = {k: v for k, v in os.environ.items() if k not in {"NO_COLOR", "FORCE_COLOR"}}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        COLUMNS="80",
        TERM="dumb",
        PYTHONIOENCODING="utf-8",
    )
    result = subprocess.run(
        command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    text = result.stdout + result.stderr
    out = [line.rstrip() for line in text.splitlines()]
    while out and not out[-1]:
        out.pop()
    return result.returncode, out


def refreshed(text: str, cwd: Path) -> tuple[str, list[str]]:
    """README text with every command's output replaced by a fresh run; and the problems."""
    lines = text.splitlines()
    problems = []
    commands = console_commands(text)
    # run in reading order (a later command may read what an earlier one wrote), then paste
    # from the end so earlier line numbers stay valid
    results = [run(cmd.command, cwd) for cmd in commands]
    for cmd, (code, out) in reversed(list(zip(commands, results, strict=True))):
        if code != cmd.code:
            problems.append(
                f"README.md:{cmd.line}: `{cmd.command}` exited {code}, README says {cmd.code}"
            )
        lines[cmd.last + 1 : cmd.output_end] = out
    return "\n".join(lines) + "\n", problems


def main(argv: list[str]) -> int:
    check = "--check" in argv
    text = README.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as tmp:
        new, problems = refreshed(text, mirror_of_repository(Path(tmp)))
    for problem in problems:
        print(problem, file=sys.stderr)
    if check:
        stale = new != text
        if stale:
            print("README.md output is stale: run python docs/update_readme.py", file=sys.stderr)
        return 1 if stale or problems else 0
    README.write_text(new, encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
