"""The README's formats table lists every format of the registry, each with the commands that
read it, and no format the registry lacks."""

from __future__ import annotations

import re
from pathlib import Path

from calibcli.formats import NAMES, REGISTRY

README = Path(__file__).resolve().parent.parent / "README.md"


def formats_table() -> list[list[str]]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Input formats\n") :]
    table = section[section.index("| format | layout and versions |") :]
    table = table[: table.index("\n\n")]
    return [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in table.splitlines()[2:]  # past the header and its rule
    ]


def test_every_registry_entry_is_in_the_formats_table():
    rows = formats_table()
    named = {re.match(r"`([^`]+)`", row[0])[1] for row in rows}
    assert named == set(NAMES)
    for row in rows:
        assert len(row) == 4, row  # format, layout and versions, what is read, used by
        assert all(row), row


def test_the_table_says_which_commands_read_each_format():
    used: dict[str, str] = {}
    for row in formats_table():  # the native format has a row per kind of rows
        name = re.match(r"`([^`]+)`", row[0])[1]
        used[name] = used.get(name, "") + " " + row[3]
    for entry in REGISTRY:
        used_by = used[entry.name].strip()
        if "perplexity" in entry.provides:
            assert "perplexity" in used_by or used_by == "all", entry.name
        if "calibration" in entry.provides:
            assert "calibrate" in used_by or used_by == "all", entry.name
