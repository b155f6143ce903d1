"""An lm-eval task run once beside another task run twice, each file summarized apart with
--all-runs and the summaries merged with --all-runs: the merged summary records each task's own
runs, as a summary of the whole folder does, so that --gate-each judges the task run once by its
own rows (one a question) and the task run twice by its questions (two rows each).

Counted by hand from the fixtures: toy_mc_science holds 48 rows (48 documents), toy_mc_trivia 40
rows (40 documents) per run, so the two trivia runs hold 80 rows of 40 questions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import run

FIXTURES = Path(__file__).parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
LATER = "2026-11-30T10-00-00.000000"
SCIENCE = f"samples_toy_mc_science_{STAMP}.jsonl"
TRIVIA = f"samples_toy_mc_trivia_{STAMP}.jsonl"
TRIVIA_AGAIN = f"samples_toy_mc_trivia_{LATER}.jsonl"
GATE = ["--by", "task", "--gate-each"]


def _rerun(source: Path, target: Path) -> None:
    """A re-run of ``source``: the same documents, every log-likelihood scaled by 0.8."""
    with source.open() as read, target.open("w") as written:
        for line in read:
            row = json.loads(line)
            row["resps"] = [[[repr(float(r[0][0]) * 0.8), r[0][1]]] for r in row["resps"]]
            row["filtered_resps"] = [[repr(float(r[0]) * 0.8), r[1]] for r in row["filtered_resps"]]
            written.write(json.dumps(row) + "\n")


def _documents(path: Path) -> tuple[int, int]:
    """(rows, distinct doc_ids) of an lm-eval samples file, by a plain loop."""
    ids = [json.loads(line)["doc_id"] for line in path.read_text().splitlines() if line.strip()]
    return len(ids), len(set(ids))


@pytest.fixture()
def routes(tmp_path, monkeypatch):
    """The folder of the three runs, its whole summary, and the merge of each file's summary."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "org__modelA"
    folder.mkdir()
    shutil.copy(FIXTURES / SCIENCE, folder / SCIENCE)
    shutil.copy(FIXTURES / TRIVIA, folder / TRIVIA)
    _rerun(FIXTURES / TRIVIA, folder / TRIVIA_AGAIN)
    assert _documents(folder / SCIENCE) == (48, 48)
    assert _documents(folder / TRIVIA) == _documents(folder / TRIVIA_AGAIN) == (40, 40)
    parts = []
    for name in (SCIENCE, TRIVIA, TRIVIA_AGAIN):
        part = f"{Path(name).stem}.cbs"
        result = run(["summarize", str(folder / name), "--by", "task", "--all-runs", "-o", part])
        assert result.exit_code == 0, result.stderr
        parts.append(part)
    result = run(["summarize", str(folder), "--by", "task", "--all-runs", "-o", "whole.cbs"])
    assert result.exit_code == 0, result.stderr
    result = run(["merge", *parts, "--all-runs", "-q", "-o", "merged.cbs"])
    assert result.exit_code == 0, result.stderr
    return {
        "files": [str(folder), "--all-runs"],
        "whole": ["whole.cbs"],
        "merged": ["merged.cbs"],
        "merged, --all-runs": ["merged.cbs", "--all-runs"],
    }


def _floors(inputs: list[str], minimum: int, code: int) -> tuple[dict, dict]:
    result = run(["calibrate", *inputs, *GATE, "--min-rows", str(minimum), "--json"])
    assert result.exit_code == code, (inputs, result.stderr)
    body = json.loads(result.stdout)
    checks = {c.get("group"): c for c in body["gate"]["checks"] if c["metric"] == "n"}
    return checks, body


@pytest.mark.parametrize("route", ["files", "whole", "merged", "merged, --all-runs"])
def test_each_task_is_judged_by_its_own_runs(routes, route):
    checks, body = _floors(routes[route], 45, code=1)
    science, trivia = checks["toy_mc_science"], checks["toy_mc_trivia"]
    # the task run once: 48 rows, one a question, meet 45
    assert (science["value"], science.get("questions", 48), science["passed"]) == (48, 48, True)
    # the task run twice: 80 rows of 40 questions fail 45, closed
    assert (trivia["value"], trivia["questions"], trivia["passed"]) == (80, 40, False)
    assert "reason" not in science
    said = " ".join(body["warnings"])
    assert SCIENCE not in said
    assert f"{TRIVIA} (2 runs)" in said


@pytest.mark.parametrize("route", ["files", "whole", "merged", "merged, --all-runs"])
def test_the_task_run_twice_meets_its_questions_and_the_pooled_rows_stay_closed(routes, route):
    checks, _ = _floors(routes[route], 40, code=0)
    assert checks["toy_mc_trivia"]["passed"] and checks["toy_mc_science"]["passed"]
    # the 128 pooled rows hold 88 questions at most (48 + 40): a floor above that fails closed
    checks, _ = _floors(routes[route], 100, code=1)
    assert (checks[None]["value"], checks[None]["passed"]) == (128, False)
    assert checks[None]["questions"] <= 88
    assert not checks["toy_mc_science"]["passed"] and not checks["toy_mc_trivia"]["passed"]


def test_the_merged_summary_records_each_tasks_runs(routes):
    from calibcli.io import load_summary

    runs = {Path(s.name).name: s.epochs for s in load_summary("merged.cbs").sources}
    assert runs == {SCIENCE: None, TRIVIA: 2, TRIVIA_AGAIN: 2}
