"""Every command the README shows runs, exits as the README says, and prints what it shows.

The convention and the runner live in docs/update_readme.py: in a ```console block each ``$ ``
line is a command (``# exit N`` at its end when it must exit N), followed by its real output.
When a change alters the output, `python docs/update_readme.py` refreshes the README.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("update_readme", ROOT / "docs" / "update_readme.py")
update_readme = importlib.util.module_from_spec(_spec)
sys.modules["update_readme"] = update_readme  # dataclasses look their module up there
_spec.loader.exec_module(update_readme)

TEXT = update_readme.README.read_text(encoding="utf-8")
COMMANDS = update_readme.console_commands(TEXT)


def test_parser_reads_the_convention():
    text = (
        "intro\n```console\n$ calibcli calibrate a.jsonl\ntable output\nmore\n"
        "$ calibcli calibrate a.jsonl --max-ece 0.01  # exit 1\n"
        "$ head a.jsonl | calibcli perplexity \\\n    - --json\n{}\n```\n"
        "```bash\n$ calibcli not-a-console-block\n```\n"
        "$ calibcli outside-any-block\n"
    )
    found = [(c.line, c.command, c.code) for c in update_readme.console_commands(text)]
    assert found == [
        (3, "calibcli calibrate a.jsonl", 0),
        (6, "calibcli calibrate a.jsonl --max-ece 0.01", 1),
        (7, "head a.jsonl | calibcli perplexity - --json", 0),
    ]
    lines = text.splitlines()
    first, _, third = update_readme.console_commands(text)
    assert lines[first.last + 1 : first.output_end] == ["table output", "more"]
    assert lines[third.last + 1 : third.output_end] == ["{}"]


def test_readme_has_a_tour_with_commands():
    assert "## 60-second tour" in TEXT
    assert len(COMMANDS) >= 8


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cwd = update_readme.mirror_of_repository(tmp_path_factory.mktemp("readme"))
    return {c.line: update_readme.run(c.command, cwd) for c in COMMANDS}


@pytest.mark.parametrize("cmd", COMMANDS, ids=[f"README.md:{c.line}" for c in COMMANDS])
def test_readme_command(runs, cmd):
    code, out = runs[cmd.line]
    shown = TEXT.splitlines()[cmd.last + 1 : cmd.output_end]
    assert code == cmd.code, f"`{cmd.command}` exited {code}, README says {cmd.code}\n" + "\n".join(
        out
    )
    assert out == shown, "README output is stale: run python docs/update_readme.py"
