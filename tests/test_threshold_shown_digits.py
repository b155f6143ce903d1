"""A chosen threshold is printed so that the printed number accepts exactly the rows the
threshold accepts: the terminal table (pooled and per group), the Markdown summary and the HTML
page show it apart from the highest confidence below it, and never above the lowest at or
above it. Every expected figure is counted by hand from the rows written here."""

from __future__ import annotations

import json

import numpy as np
import pytest
from harness import run
from test_html import Page

from calibcli.metrics import highest_rejected

# 300 rows each at 0.99, 0.98, 0.9, 0.7 with 96, 70, 60 and 50% right: at a target of 0.9 the
# default grid's guaranteed threshold is 1 - 10**-1.7 = 0.98004737..., accepting the 300 rows at
# 0.99 (accuracy 0.96); at 4 decimals it reads 0.9800, which accepts the 600 rows at 0.99 and
# 0.98 (accuracy 0.83, under the target)
VERB = ((0.99, 288, 12), (0.98, 210, 90), (0.9, 180, 120), (0.7, 150, 150))
LABELS = ("guaranteed threshold", "plug-in threshold (no guarantee)")


def _rows(parts, **extra):
    """Rows: for each (confidence, right, wrong), that many right then wrong answers."""
    rows = []
    for c, right, wrong in parts:
        rows += [{"confidence": c, "correct": True, **extra}] * right
        rows += [{"confidence": c, "correct": False, **extra}] * wrong
    return rows


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _expected(t, confidences):
    """The fewest decimals d >= 4 at which t prints apart from 0, 1 and the highest confidence
    below it, and not above the lowest confidence at or above it, by a plain loop."""
    below = [c for c in confidences if c < t]
    above = [c for c in confidences if c >= t]
    others = [0.0, 1.0, *([max(below)] if below else [])]
    for d in range(4, 18):
        text = f"{t:.{d}f}"
        apart = all(text != f"{v:.{d}f}" for v in others if v != t)
        if apart and (not above or float(text) <= min(above)):
            return text
    raise AssertionError("no decimals print it apart")


def _accepted(confidences, threshold):
    return sum(c >= threshold for c in confidences)


def _terminal(stdout, label):
    """The values a Thresholds table shows beside ``label``."""
    return [line.split()[-1] for line in stdout.splitlines() if line.startswith(label + " ")]


def _run(*args):
    result = run(["threshold", *map(str, args), "--target-accuracy", "0.9"])
    assert result.exit_code == 0, result.stderr
    return result


def test_highest_rejected_is_the_largest_confidence_below():
    rng = np.random.default_rng(3)
    confidences = np.round(rng.random(50), 2)
    thresholds = np.unique(confidences)[::-1]
    for t in [0.0, 1.0, 0.5, 0.505, *confidences.tolist()]:
        below = [c for c in confidences.tolist() if c < t]
        assert highest_rejected(thresholds, t) == (max(below) if below else None)


def test_every_renderer_shows_the_grid_threshold_apart_from_the_rows_below(tmp_path):
    rows = _rows(VERB)
    confidences = [r["confidence"] for r in rows]
    path = _write(tmp_path / "verb.jsonl", rows)
    body = json.loads(_run(path, "--json").stdout)
    chosen = body["guaranteed"]
    t = chosen["threshold"]
    assert t == 1 - 10**-1.7
    for block in (chosen, chosen["realised"]):
        assert block["highest_rejected"] == 0.98 and block["lowest_accepted"] == 0.99
    shown = _expected(t, confidences)
    assert shown == "0.98005"
    assert _accepted(confidences, float(shown)) == chosen["accepted"] == 300
    summary, page = tmp_path / "summary.md", tmp_path / "page.html"
    text = _run(path, "--summary", summary, "--html", page).stdout
    assert _terminal(text, LABELS[0]) == [shown]
    assert f"| {LABELS[0]} | {shown} |" in summary.read_text(encoding="utf-8")
    html = Page(page.read_text(encoding="utf-8"))
    assert html.rows("Chosen thresholds")["guaranteed"][0] == shown
    assert any(f"guaranteed t = {shown}" in d for d in html.texts["desc"])


def test_each_group_shows_its_threshold_apart(tmp_path):
    rows = _rows(VERB, subject="law") + _rows(VERB, subject="math")
    confidences = [r["confidence"] for r in rows if r["subject"] == "law"]
    path = _write(tmp_path / "by.jsonl", rows)
    text = _run(path, "--by", "subject").stdout
    shown = _expected(1 - 10**-1.7, confidences)
    lines = [line for line in text.splitlines() if line.startswith(("law ", "math ", "all "))]
    assert len(lines) == 3 and all(f" {shown} " in line + " " for line in lines)
    assert _accepted(confidences, float(shown)) == 300


def test_with_fit_the_threshold_is_apart_from_both_sets_of_rows(tmp_path):
    """Chosen on the verb rows (highest rejected 0.98), evaluated on rows whose highest
    rejected confidence is 0.980047: printed apart from both, it accepts 300 fit rows and the
    100 evaluated rows at 0.99, not the 100 at 0.980047."""
    fit_rows = _rows(VERB)
    evaluated = _rows(((0.99, 90, 10), (0.980047, 50, 50), (0.5, 50, 50)))
    fit = _write(tmp_path / "fit.jsonl", fit_rows)
    path = _write(tmp_path / "eval.jsonl", evaluated)
    body = json.loads(_run(path, "--fit", fit, "--json").stdout)
    chosen = body["guaranteed"]
    t = chosen["threshold"]
    assert chosen["highest_rejected"] == 0.98
    assert chosen["realised"]["highest_rejected"] == 0.980047
    both = [r["confidence"] for r in fit_rows + evaluated]
    shown = _expected(t, both)
    assert shown == "0.9800474"
    assert _accepted([r["confidence"] for r in fit_rows], float(shown)) == 300
    seen = [r["confidence"] for r in evaluated]
    assert _accepted(seen, float(shown)) == chosen["realised"]["accepted"] == 100
    summary, page = tmp_path / "summary.md", tmp_path / "page.html"
    text = _run(path, "--fit", fit, "--summary", summary, "--html", page).stdout
    assert _terminal(text, LABELS[0]) == [shown]
    assert f"| {LABELS[0]} | {shown} |" in summary.read_text(encoding="utf-8")
    html = Page(page.read_text(encoding="utf-8"))
    assert html.rows("Chosen thresholds")["guaranteed"][0] == shown


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (VERB, ["0.9900", "0.9900"]),  # at a confidence, 4 decimals suffice
        # at the confidence 0.87656, 0.8766 would reject the rows at 0.87656 themselves
        (((0.87656, 100, 0), (0.5, 0, 100)), ["0.87656", "0.87656"]),
    ],
)
def test_a_threshold_at_a_confidence_is_not_rounded_above_it(tmp_path, parts, expected):
    rows = _rows(parts)
    confidences = [r["confidence"] for r in rows]
    path = _write(tmp_path / "rows.jsonl", rows)
    body = json.loads(_run(path, "--grid", "0", "--json").stdout)
    text = _run(path, "--grid", "0").stdout
    got = [_terminal(text, label)[0] for label in LABELS]
    assert got == expected
    for shown, key in zip(got, ("guaranteed", "plug_in"), strict=True):
        assert shown == _expected(body[key]["threshold"], confidences)
        assert _accepted(confidences, float(shown)) == body[key]["accepted"]
    summary = tmp_path / "summary.md"
    _run(path, "--grid", "0", "--summary", summary)
    said = summary.read_text(encoding="utf-8")
    assert all(f"| {label} | {v} |" in said for label, v in zip(LABELS, got, strict=True))
