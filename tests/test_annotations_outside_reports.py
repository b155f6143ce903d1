"""Warnings a command says outside its report (summarize, merge, apply, and --plot's note on the
series it draws) are annotated under GitHub Actions as a report's warnings are: a merge missing
a shard's piece said on stderr only left no mark on the pull request. Each annotation is the
warning's text, one ``::warning ::`` line per ``warning:`` line; none outside Actions."""

from __future__ import annotations

import json

import pytest
from harness import run, write_jsonl

ROWS = [{"confidence": 0.05 + 0.9 * i / 59, "correct": i % 3 != 0} for i in range(60)]


def said(stderr):
    return [
        line[len("warning: ") :] for line in stderr.splitlines() if line.startswith("warning: ")
    ]


def annotated(stderr):
    return [
        line[len("::warning ::") :] for line in stderr.splitlines() if line.startswith("::warning")
    ]


@pytest.fixture(params=["flag", "actions"])
def github(request, monkeypatch, tmp_path):
    """Annotations asked for by --annotations github, or found on under Actions."""
    if request.param == "flag":
        return ["--annotations", "github"]
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "step.md"))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "outputs"))
    return []


def test_summarize_annotates_its_warnings(tmp_path, github):
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    result = run(["summarize", rows, empty, "-o", tmp_path / "s.cbs", *github])
    assert result.exit_code == 0, result.stderr
    assert said(result.stderr) == [f"{empty}: holds no rows: the figures are the other files'"]
    assert annotated(result.stderr) == said(result.stderr)


def test_merge_annotates_a_missing_piece(tmp_path, github):
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    parts = []
    for k in (1, 2):  # of 3: the third piece is missing
        out = tmp_path / f"p{k}.cbs"
        made = run(["summarize", rows, "--part", f"{k}/3", "-o", out, "-q"])
        assert made.exit_code == 0, made.stderr
        parts.append(out)
    merged = tmp_path / "m.cbs"
    result = run(["merge", *parts, "-o", merged, *github])
    assert result.exit_code == 0, result.stderr
    warnings = said(result.stderr)
    assert len(warnings) == 1 and warnings[0].startswith(f"{merged}: ")
    assert "2 of its 3 pieces" in warnings[0]
    assert annotated(result.stderr) == warnings


def test_apply_annotates_its_warnings(tmp_path, github):
    rows = write_jsonl(tmp_path / "rows.jsonl", [{**r, "subject": "a"} for r in ROWS])
    calibrator = tmp_path / "cal.json"
    made = run(["fit", rows, "--method", "histogram", "-o", calibrator, "-q"])
    assert made.exit_code == 0, made.stderr
    record = json.loads(calibrator.read_text(encoding="utf-8"))
    record["fitted_on"]["confidence_field"] = "p"  # fitted on another field
    calibrator.write_text(json.dumps(record), encoding="utf-8")
    # rows the calibrator was not fitted on (apply refuses those it was)
    held = [{**r, "confidence": r["confidence"] + 0.01, "subject": "a"} for r in ROWS]
    held = write_jsonl(tmp_path / "held.jsonl", held)
    result = run(["apply", calibrator, held, "--confidence-field", "confidence", *github])
    assert result.exit_code == 0, result.stderr
    warnings = said(result.stderr)
    assert any("the calibrator was fitted on the field 'p'" in w for w in warnings)
    assert annotated(result.stderr) == warnings


def test_the_picture_s_note_is_annotated(tmp_path, github):
    pytest.importorskip("matplotlib")
    rows = write_jsonl(
        tmp_path / "rows.jsonl", [{**r, "g": f"g{i % 9}"} for i, r in enumerate(ROWS * 3)]
    )
    result = run(["calibrate", rows, "--by", "g", "--plot", tmp_path / "p.svg", "-q", *github])
    assert result.exit_code == 0, result.stderr
    note = [w for w in annotated(result.stderr) if w.startswith("--plot draws the 7 series")]
    assert len(note) == 1


def test_nothing_is_annotated_outside_actions(tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    rows = write_jsonl(tmp_path / "rows.jsonl", ROWS)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    result = run(["summarize", rows, empty, "-o", tmp_path / "s.cbs"])
    assert result.exit_code == 0, result.stderr
    assert said(result.stderr) and not annotated(result.stderr)
