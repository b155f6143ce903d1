"""calibcli.compare of two sides read with different options that compute their confidences
(lm-eval's mc_norm, inspect-ai's inspect_confidence) fails every gate check closed, with a
reason naming both sides' values: the differences would be the option's as well as the
model's. ``calibcli compare`` reads both sides with one set of options and refuses summary
files, so summaries written with different options never reach its gate either."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from harness import refused, run

import calibcli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TRIVIA = FIXTURES / "lm_eval" / "samples_toy_mc_trivia_2026-11-29T18-50-52.260809.jsonl"
LOG = FIXTURES / "inspect_ai" / "toy_arithmetic.json"
B = 200
# a gate every reading of the toy runs meets: Brier rises by at most 1 on the estimate, on
# any number of populated bins
GATE = {"max_increase": {"brier": 1.0}, "gate_on": "estimate", "min_populated_bins": 1}
CLI_GATE = ("--max-increase", "brier=1", "--gate-on", "estimate", "--min-populated-bins", "1")
OPTIONS = "BASE and NEW were read with different options that compute their confidences"


def reasons(result) -> list[str]:
    return [check["reason"] for check in json.loads(result.to_json())["gate"]["checks"]]


def lm_eval_run(tmp_path: Path) -> str:
    """A folder holding the toy lm-eval multiple-choice run alone."""
    shutil.copy(TRIVIA, tmp_path)
    return str(tmp_path)


@pytest.mark.parametrize("unpaired", [False, True])
def test_mc_norm_read_otherwise_fails_closed_naming_both_values(tmp_path, unpaired):
    folder = lm_eval_run(tmp_path)
    base = calibcli.read_predictions(folder)
    new = calibcli.read_predictions(folder, mc_norm="chars")
    # the premise: the option changes the figures of the same run
    assert not np.array_equal(base.confidence, new.confidence)
    result = calibcli.compare(base, new, bootstrap=B, unpaired=unpaired, **GATE)
    assert result.passed is False
    said = reasons(result)
    assert said and all(r.startswith(OPTIONS) for r in said)
    assert all("mc_norm='none' on BASE, 'chars' on NEW" in r for r in said)
    assert all("\n" not in r for r in said)


@pytest.mark.parametrize("norm", ["none", "chars"])
def test_mc_norm_read_alike_passes_as_the_command_does(tmp_path, norm):
    folder = lm_eval_run(tmp_path)
    read = calibcli.read_predictions
    result = calibcli.compare(
        read(folder, mc_norm=norm), read(folder, mc_norm=norm), bootstrap=B, **GATE
    )
    args = ["compare", folder, folder, "--json", "-q", "--bootstrap", str(B), *CLI_GATE]
    command = run([*args, "--mc-norm", norm])
    assert command.exit_code == 0, command.stderr
    assert result.passed is True
    report, mine = json.loads(command.stdout), json.loads(result.to_json())
    assert report["gate"] == mine["gate"]


@pytest.mark.parametrize(
    ("mine", "theirs", "shown"),
    [
        ("first-token", "mean-token", "'first-token' on BASE, 'mean-token' on NEW"),
        # auto takes every sample of the toy log (no answer letters) by its whole completion
        ("auto", "first-token", "'sequence' on BASE, 'first-token' on NEW"),
    ],
)
def test_inspect_confidence_read_otherwise_fails_closed(mine, theirs, shown):
    read = calibcli.read_predictions
    base = read(str(LOG), scorer="match", inspect_confidence=mine)
    new = read(str(LOG), scorer="match", inspect_confidence=theirs)
    assert not np.array_equal(base.confidence, new.confidence)
    result = calibcli.compare(base, new, bootstrap=B, **GATE)
    assert result.passed is False
    said = reasons(result)
    assert said and all(r.startswith(OPTIONS) and f"inspect_confidence={shown}" in r for r in said)


def test_inspect_confidence_read_alike_passes():
    read = calibcli.read_predictions
    base = read(str(LOG), scorer="match", inspect_confidence="first-token")
    new = read(str(LOG), scorer="match", inspect_confidence="first-token")
    assert calibcli.compare(base, new, bootstrap=B, **GATE).passed is True


def test_an_option_of_a_format_neither_side_holds_changes_nothing(tmp_path):
    rows = [
        {"id": f"q{i}", "confidence": (i % 9 + 0.5) / 10, "correct": i % 3 == 0} for i in range(60)
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    base = calibcli.read_predictions(str(path), id_field="id")
    new = calibcli.read_predictions(str(path), id_field="id", mc_norm="chars")
    result = calibcli.compare(base, new, bootstrap=B, **GATE)
    assert result.passed is True
    assert not [w for w in json.loads(result.to_json())["warnings"] if "another way" in w]


def test_the_command_refuses_summaries_written_with_other_options(tmp_path):
    folder = lm_eval_run(tmp_path / "run")
    for name, norm in (("a.summary", "none"), ("b.summary", "chars")):
        made = run(["summarize", folder, "-o", tmp_path / name, "-q", "--mc-norm", norm])
        assert made.exit_code == 0, made.stderr
    line = refused(
        "compare", tmp_path / "a.summary", tmp_path / "b.summary", "--json", "-q", *CLI_GATE
    )
    assert "summary file holds sums, not rows" in line
