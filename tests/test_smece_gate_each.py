"""`calibrate --by FIELD --gate-each --max-smece X` above 1,000 groups: smECE is left out per
group there for speed, but a gate that judges it in every group gets every group's value, each
equal to the authors' relplot.smECE on the group's rows."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import relplot
from harness import run, write_jsonl

GROUPS = 1001  # one more than calibcli.reports.report.SMOOTH_GROUPS


def grouped_rows(seed=4, per_group=6):
    rng = random.Random(seed)
    rows = []
    for g in range(GROUPS):
        for _ in range(per_group):
            c = rng.random()
            rows.append({"confidence": c, "correct": rng.random() < c, "g": f"g{g:04d}"})
    return rows


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    rows = grouped_rows()
    return rows, write_jsonl(tmp_path_factory.mktemp("many") / "rows.jsonl", rows)


def relplot_smece(rows):
    f = np.array([r["confidence"] for r in rows], dtype=np.float64)
    y = np.array([float(r["correct"]) for r in rows])
    return float(relplot.smECE(f, y))


def test_a_per_group_smece_gate_judges_real_values(data):
    rows, path = data
    result = run(
        ["calibrate", path, "--by", "g", "--max-smece", "1", "--gate-each", "-q", "--json"]
    )
    assert result.exit_code == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    checks = [c for c in report["gate"]["checks"] if "group" in c]
    assert len(checks) == GROUPS
    assert all(c["passed"] and "reason" not in c for c in checks)
    assert report["gate"]["failed_groups"] == []
    assert not any("smece is computed per group" in w for w in report["warnings"])
    for name in ("g0000", "g0500", "g1000"):
        part = [r for r in rows if r["g"] == name]
        got = report["groups"][name]["smece"]
        assert got == pytest.approx(relplot_smece(part), abs=1e-6)
        check = next(c for c in checks if c["group"] == name)
        assert check["value"] == got


def test_a_gate_that_fails_names_the_group_by_its_value(data):
    """The group with the largest smECE fails a threshold just below it, with its value."""
    _, path = data
    args = ["calibrate", path, "--by", "g", "--gate-each", "-q", "--json"]
    report = json.loads(run([*args, "--max-smece", "1"]).stdout)
    worst = max(report["groups"], key=lambda g: report["groups"][g]["smece"])
    limit = report["groups"][worst]["smece"] - 1e-9
    failing = sorted(g for g, s in report["groups"].items() if s["smece"] > limit)
    result = run([*args, "--max-smece", repr(limit)])
    assert result.exit_code == 1
    verdict = json.loads(result.stdout)["gate"]
    assert verdict["failed_groups"] == failing
    lines = [line for line in result.stderr.splitlines() if line.startswith("gate failed")]
    assert len(lines) == len(failing) and all("exceeds --max-smece" in line for line in lines)


def test_without_the_gate_smece_stays_pooled_only(data):
    _, path = data
    result = run(
        ["calibrate", path, "--by", "g", "--max-brier", "1", "--gate-each", "-q", "--json"]
    )
    report = json.loads(result.stdout)
    assert report["groups"]["g0000"]["smece"] is None
    assert report["smece"] is not None
