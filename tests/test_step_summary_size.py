"""The Markdown summary stays under GitHub's size limit for a step's job summary.

GitHub refuses a step's summary over 1 MiB whole (verdict and failing checks included), so a
summary of a gate over many groups is cut: heading and verdict first, the failing checks before
the passing ones, and a last line that says how many rows were left out and where they are.
"""

from __future__ import annotations

import json
import re

import pytest
from harness import run

from calibcli.render import markdown, markdown_summary

GITHUB_LIMIT = 1024 * 1024  # bytes GitHub takes in one step's summary
ROW = re.compile(r"^\| ece \((g\d+)\) \| ")


def check(group, passed):
    value = 0.05 if passed else 0.25
    return {"metric": "ece", "group": group, "threshold": 0.1, "value": value, "passed": passed}


def gate_body(n_groups, failing, warnings=()):
    checks = [{"metric": "ece", "threshold": 0.1, "value": 0.08, "passed": True}]
    checks += [check(f"g{i:06d}", i not in failing) for i in range(n_groups)]
    return {
        "command": "calibrate",
        "gate": {"passed": not failing, "bound": "point", "checks": checks},
        "warnings": list(warnings),
    }


def rows_of(text):
    """(group, passed) of each group row of the gate table, in the order shown."""
    found = []
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            found.append((match.group(1), line.endswith("| yes |")))
    return found


def pooled_shown(text):
    """Whether the pooled rows' check (the row without a group) is in the table."""
    return any(line.startswith("| ece | ") for line in text.splitlines())


def test_many_groups_stay_under_the_limit_with_every_failing_row_first():
    failing = set(range(17, 60_000, 37))  # 1,621 failing groups spread through 60,000
    body = gate_body(60_000, failing, ["fewer than 3 bins are populated"])
    text = markdown_summary(body, ["preds.jsonl"])
    size = len(text.encode("utf-8"))
    assert size <= 1_000_000 < GITHUB_LIMIT
    assert text.startswith("### calibcli calibrate: `preds.jsonl` — gate FAILED\n")
    shown = rows_of(text)
    failing_names = [f"g{i:06d}" for i in sorted(failing)]
    assert [g for g, passed in shown if not passed] == failing_names  # all, in report order
    first_passing = next(k for k, (_, passed) in enumerate(shown) if passed)
    assert all(passed for _, passed in shown[first_passing:])  # failing before passing
    assert len(shown) < 60_000  # the table was cut
    assert "> warning: fewer than 3 bins are populated" in text
    left = 60_001 - len(shown) - pooled_shown(text)
    last = text.rstrip("\n").splitlines()[-1]
    assert f"{left:,} of 60,001 gate rows left out (0 failing)" in last
    assert "-o/--json" in last


def test_more_failing_rows_than_fit_keep_failing_ones_only():
    failing = set(range(0, 40_000, 2))  # 20,000 failing rows with a long reason each
    body = gate_body(40_000, failing)
    for c in body["gate"]["checks"]:
        if not c["passed"]:
            c["reason"] = "only 2 of 10 bins are populated (minimum 3) " + "x" * 40
    text = markdown_summary(body, ["preds.jsonl"])
    assert len(text.encode("utf-8")) <= 1_000_000
    assert text.splitlines()[0].endswith("— gate FAILED")
    shown = rows_of(text)
    assert shown and not any(passed for _, passed in shown)
    assert [g for g, _ in shown] == [f"g{i:06d}" for i in sorted(failing)][: len(shown)]
    left_failing = 20_000 - len(shown)
    assert left_failing > 0
    last = text.rstrip("\n").splitlines()[-1]
    assert f"{40_001 - len(shown):,} of 40,001 gate rows left out ({left_failing:,} failing)" in (
        last
    )


def test_many_files_in_the_heading_are_counted_not_listed():
    sources = [f"shard-{i:06d}.jsonl" for i in range(80_000)]  # 1.9 MB of names
    text = markdown_summary(gate_body(3, {1}), sources)
    heading = text.splitlines()[0]
    assert len(text.encode("utf-8")) <= 1_000_000
    assert heading.startswith("### calibcli calibrate: `shard-000000.jsonl`, ")
    assert heading.endswith(" more — gate FAILED")
    named = heading.count("`shard-")
    assert heading.endswith(f" and {80_000 - named:,} more — gate FAILED")
    assert [g for g, passed in rows_of(text) if not passed] == ["g000001"]


def test_a_summary_that_fits_is_whole_and_in_report_order():
    body = gate_body(200, {3, 150})
    text = markdown_summary(body, ["preds.jsonl"])
    assert [g for g, _ in rows_of(text)] == [f"g{i:06d}" for i in range(200)]
    assert "left out" not in text
    assert text.endswith("| ece (g000199) | 0.1 | 0.0500 | yes |\n\n")


@pytest.fixture
def actions(tmp_path):
    summary, outputs = tmp_path / "step_summary.md", tmp_path / "github_output"
    summary.write_text("# an earlier step\n")
    outputs.write_text("")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
    }
    return env, summary


def test_gate_each_job_summary_is_cut_failing_groups_first(tmp_path, actions, monkeypatch):
    env, summary = actions
    monkeypatch.setattr(markdown, "SIZE_LIMIT", 40_000)  # 1,500 groups instead of 30,000
    rows = []
    for g in range(1_500):
        few_bins = g % 50 == 7  # one confidence only: one populated bin, the gate fails closed
        for k in range(4):
            c = 0.95 if few_bins else 0.1 + 0.2 * k
            rows.append({"confidence": c, "correct": k % 2 == 0, "task": f"t{g:05d}"})
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = tmp_path / "report.json"
    args = ["calibrate", preds, "--by", "task", "--gate-each", "--max-ece", "0.9", "-q"]
    result = run([*args, "-o", report], env=env)
    assert result.exit_code == 1, result.stderr
    text = summary.read_text()
    assert text.startswith("# an earlier step\n")
    written = text[len("# an earlier step\n") :]
    assert len(written.encode("utf-8")) <= 40_000
    assert written.splitlines()[0] == f"### calibcli calibrate: `{preds}` — gate FAILED"
    failing = [f"t{g:05d}" for g in range(1_500) if g % 50 == 7]
    shown = [line for line in written.splitlines() if line.startswith("| ece (t")]
    assert [line[7:13] for line in shown if line.endswith("| **no** |")] == failing
    first_passing = next(k for k, line in enumerate(shown) if line.endswith("| yes |"))
    assert all(line.endswith("| yes |") for line in shown[first_passing:])
    checks = json.loads(report.read_text())["gate"]["checks"]
    assert len(checks) == 1_501  # the report holds every check
    last = written.rstrip("\n").splitlines()[-1]
    kept = len(shown) + pooled_shown(written)
    assert f"{1_501 - kept:,} of 1,501 gate rows left out (0 failing)" in last


def test_what_the_step_summary_holds_already_counts(tmp_path, actions, monkeypatch):
    """GitHub's limit is the step's whole summary: a command after others in one step (a loop
    over models) writes no more than the room they left, so the file stays under it."""
    env, summary = actions
    monkeypatch.setattr(markdown, "SIZE_LIMIT", 60_000)
    earlier = "| an earlier command's row |\n" * 1_500  # 42,000 bytes
    summary.write_text(earlier)
    rows = [
        {"confidence": 0.1 + 0.2 * k, "correct": k % 2 == 0, "task": f"t{g:05d}"}
        for g in range(1_500)
        for k in range(4)
    ]
    preds = tmp_path / "preds.jsonl"
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["calibrate", preds, "--by", "task", "--gate-each", "--max-ece", "0.9", "-q"]
    assert run(args, env=env).exit_code == 0
    text = summary.read_text()
    assert text.startswith(earlier)
    assert len(text.encode("utf-8")) <= 60_000
    assert " gate rows left out (0 failing)" in text.rstrip("\n").splitlines()[-1]
    # a file full already: the verdict and the first rows are written all the same
    summary.write_text("x" * 59_990 + "\n")
    assert run(args, env=env).exit_code == 0
    written = summary.read_text()[60_000 - 10 + 1 :]
    assert written.splitlines()[0] == f"### calibcli calibrate: `{preds}` — gate passed"
    assert 0 < len(written.encode("utf-8")) <= markdown._LEAST_ROOM
