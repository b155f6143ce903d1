"""A group named as a table's own row ("(pooled)", "all (pooled)") is shown quoted in the
terminal's group and gate tables, so it is not read as the pooled row."""

from __future__ import annotations

import json

from harness import run


def test_groups_named_like_the_pooled_row_are_quoted(tmp_path):
    rows = []
    for name, right in (("(pooled)", 0), ("all (pooled)", 1), ("good", 1)):
        rows += [{"confidence": 0.9, "correct": bool(right), "g": name} for _ in range(40)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run(["calibrate", path, "--by", "g", "--gate-each", "--max-ece", "0.5", "-q"])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    # the group table: each group once, quoted where it spells an own row, then the pooled row
    assert sum(line.startswith("'(pooled)'") for line in lines) == 1
    assert sum(line.startswith("'all (pooled)'") for line in lines) == 1
    assert sum(line.startswith("all (pooled) ") for line in lines) == 1
    # the gate table: the pooled check bare, the group's quoted
    gate = [line for line in lines if line.startswith("ece ")]
    assert any(" (pooled) " in line and "'(pooled)'" not in line for line in gate)
    assert any(line.split()[1] == "'(pooled)'" for line in gate)
