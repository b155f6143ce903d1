"""--gate-each on a summary made with --by needs no --by of its own: the summary's grouping is
taken, as every setting not given is, and the gate judges each group as it does on the file
read with --by. A file or summary without groups still needs --by."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "overconfident.jsonl"


@pytest.fixture
def grouped(tmp_path):
    out = tmp_path / "by.cbs"
    assert run(["summarize", SAMPLE, "--by", "subject", "-o", out, "-q"]).exit_code == 0
    return out


def subjects():
    return sorted({json.loads(line)["subject"] for line in SAMPLE.read_text().splitlines()})


@pytest.mark.parametrize("limit", ["0.3", "0.5"])
def test_gate_each_on_a_grouped_summary_judges_each_group(grouped, limit):
    args = ["--gate-each", "--max-ece", limit, "--json"]
    summary = run(["calibrate", grouped, *args])
    direct = run(["calibrate", SAMPLE, "--by", "subject", *args])
    assert summary.exit_code == direct.exit_code
    checks = json.loads(summary.stdout)["gate"]["checks"]
    assert sorted(c["group"] for c in checks if c.get("group")) == subjects()
    assert checks == json.loads(direct.stdout)["gate"]["checks"]


def test_threshold_gate_each_on_a_grouped_summary(grouped):
    args = ["--gate-each", "--target-accuracy", "0.5", "--min-coverage", "0.01", "-q"]
    assert run(["threshold", grouped, *args]).exit_code == 0


def test_without_groups_gate_each_still_needs_by(tmp_path):
    plain = tmp_path / "plain.cbs"
    assert run(["summarize", SAMPLE, "-o", plain, "-q"]).exit_code == 0
    for source in (SAMPLE, plain):
        result = run(["calibrate", source, "--gate-each", "--max-ece", "0.5"])
        assert result.exit_code == 2
        assert result.stderr.strip().startswith("Error: --gate-each needs --by FIELD")


def test_a_grouped_summary_in_a_folder_or_a_pattern_is_looked_into(tmp_path, grouped):
    folder = tmp_path / "parts"
    folder.mkdir()
    grouped.rename(folder / "by.cbs")
    for source in (folder, f"{folder}/*.cbs"):
        result = run(["calibrate", source, "--gate-each", "--max-ece", "0.5", "--json"])
        direct = run(["calibrate", SAMPLE, "--by", "subject", "--gate-each", "--max-ece", "0.5"])
        assert result.exit_code == direct.exit_code
        groups = [c.get("group") for c in json.loads(result.stdout)["gate"]["checks"]]
        assert sorted(g for g in groups if g) == subjects()
