"""With --gate-each, a group only NEW holds (a task NEW adds) fails the gate closed, as a group
only BASE holds does: the user asked to gate every group, and a group without partners cannot
show it got no worse."""

from __future__ import annotations

import json
import random

from harness import run


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def sides(tmp_path):
    rng = random.Random(9)
    base, new = [], []
    for i in range(2000):
        c, g = rng.uniform(0.5, 0.99), "ab"[i % 2]
        base.append({"id": i, "confidence": c, "correct": rng.random() < c, "g": g})
        new.append({"id": i, "confidence": c, "correct": rng.random() < c, "g": g})
    # a task NEW adds: 90 rows (4.3% of NEW, under the unmatched refusal), all wrong at 0.99
    new += [{"id": i, "confidence": 0.99, "correct": False, "g": "c"} for i in range(2000, 2090)]
    return write(tmp_path / "base.jsonl", base), write(tmp_path / "new.jsonl", new)


def test_a_group_only_new_holds_fails_gate_each_closed(tmp_path):
    base, new = sides(tmp_path)
    gate = ["--by", "g", "--gate-each", "--max-increase", "brier=0.05", "--min-rows", "50"]
    result = run(["compare", base, new, *gate, "--json"])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["gate"]["failed_groups"] == ["c"]
    assert (
        "gate failed: brier_increase in group 'c': no rows to compare; cannot support "
        "--max-increase brier=0.05"
    ) in result.stderr
    assert "gate failed: rows in group 'c' = 0 is below --min-rows 50" in result.stderr


def test_without_gate_each_the_pooled_gate_reads_the_matched_rows(tmp_path):
    base, new = sides(tmp_path)
    result = run(["compare", base, new, "--by", "g", "--max-increase", "brier=0.05", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert sorted(report["groups"]) == ["a", "b"]
    assert "group 'c': only NEW holds it" in "\n".join(report["warnings"])
