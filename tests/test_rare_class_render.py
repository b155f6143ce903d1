"""Every renderer shows a rare-class floor with and without BASE's allowance, and a floor that
is not a finite number (compare's NLL with a right answer at confidence 1 turned wrong)."""

from __future__ import annotations

import pytest
from harness import run, write_jsonl


def rows(n=30, confidence=0.95, wrong=0):
    return [{"id": i, "confidence": confidence, "correct": i >= wrong} for i in range(n)]


def rendered(tmp_path, args, code):
    """Run ``args`` with a Markdown summary, then with an HTML page; both exit ``code``."""
    summary, page = tmp_path / "s.md", tmp_path / "p.html"
    result = run([*args, "--min-populated-bins", "1", "--summary", str(summary)])
    assert result.exit_code == code, result.stderr
    again = run([*args, "--min-populated-bins", "1", "--html", str(page)])
    assert again.exit_code == code, again.stderr
    return result.stdout, summary.read_text(), page.read_text()


def test_calibrate_renders_its_floor_everywhere(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", rows())
    args = ["calibrate", path, "--gate-on", "upper", "--max-brier", "0.5", "--max-ece", "0.5"]
    table, summary, page = rendered(tmp_path, args, 0)
    assert "floor" in table and "rare-class floor" in summary and "floor" in page


@pytest.mark.parametrize(("confidence", "code"), [(0.95, 0), (1.0, 1)])
def test_compare_renders_new_s_floor_with_and_without_an_allowance(tmp_path, confidence, code):
    base = write_jsonl(tmp_path / "b.jsonl", rows(200, 0.9, wrong=3))
    new = write_jsonl(tmp_path / "n.jsonl", rows(200, confidence))
    margins = ["--max-increase", "brier=0.5", "--max-increase", "ece=0.9"]
    table, summary, page = rendered(
        tmp_path, ["compare", base, new, *margins, "--max-increase", "nll=5"], code
    )
    assert "rare-class floor" in summary and "allowance" in summary
    assert "floor" in table and "floor" in page
    if confidence == 1.0:  # a right answer at confidence 1 turned wrong: an infinite NLL
        assert "is not a finite number" in summary
