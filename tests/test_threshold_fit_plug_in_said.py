"""threshold --fit says where the plug-in threshold reaches the target: on the fit rows, with no
guarantee, and what it does on the evaluated rows, below the target or not; the HTML page, the
terminal and the Markdown summary say the same.

The fit rows: 8 right and 2 wrong at confidence 0.9, 10 wrong at 0.4. Accepting the rows at 0.9
gives accuracy 8/10 = 0.8, the target; adding those at 0.4 gives 8/20: the plug-in threshold is
0.9. The evaluated rows above 0.9 (at 0.95 and 0.92) are what it accepts there."""

from __future__ import annotations

import json

from harness import run, write_jsonl

FIT = (
    [{"confidence": 0.9, "correct": True}] * 8
    + [{"confidence": 0.9, "correct": False}] * 2
    + [{"confidence": 0.4, "correct": False}] * 10
)
LOW = [{"confidence": 0.3, "correct": i % 2 == 0} for i in range(10)]
ON_FIT = "the plug-in threshold reaches the target accuracy on the fit rows, with no guarantee"


def evaluated(right, wrong):
    """``right`` right answers at 0.95 and ``wrong`` wrong ones at 0.92, then 10 at 0.3."""
    rows = [{"confidence": 0.95, "correct": True}] * right
    return rows + [{"confidence": 0.92, "correct": False}] * wrong + LOW


def chosen(tmp_path, rows, *fit):
    main = write_jsonl(tmp_path / "eval.jsonl", rows)
    out, html, summary = tmp_path / "r.json", tmp_path / "page.html", tmp_path / "s.md"
    args = ["threshold", main, *fit, "--target-accuracy", "0.8", "-o", out]
    result = run([*args, "--html", html, "--summary", summary])
    assert result.exit_code == 0, result.stderr
    texts = (result.stdout, html.read_text(), summary.read_text())
    return json.loads(out.read_text()), *(" ".join(t.split()) for t in texts)


def test_a_plug_in_threshold_short_of_the_target_on_the_evaluated_rows(tmp_path):
    fit = write_jsonl(tmp_path / "fit.jsonl", FIT)
    body, terminal, page, summary = chosen(tmp_path, evaluated(6, 4), "--fit", fit)
    assert body["plug_in"]["threshold"] == 0.9
    said = "it accepts 10 of the evaluated rows with accuracy 0.6000 (6 right)"
    said += ", below the target 0.8"
    assert f"; {ON_FIT}: {said}.</p>" in page
    assert "on these rows" not in page
    assert f"The {ON_FIT[4:]}: {said}." in terminal
    assert f"The {ON_FIT[4:]}: {said}." in summary


def test_a_plug_in_threshold_that_holds_on_the_evaluated_rows(tmp_path):
    fit = write_jsonl(tmp_path / "fit.jsonl", FIT)
    _, terminal, page, summary = chosen(tmp_path, evaluated(9, 1), "--fit", fit)
    said = "it accepts 10 of the evaluated rows with accuracy 0.9000 (9 right)."
    assert f"; {ON_FIT}: {said}</p>" in page
    for shown in (terminal, summary):
        assert f"The {ON_FIT[4:]}: {said}" in shown
        assert "below the target" not in shown.split("warning")[0]


def test_a_plug_in_threshold_accepting_no_evaluated_row(tmp_path):
    fit = write_jsonl(tmp_path / "fit.jsonl", FIT)
    _, terminal, page, summary = chosen(tmp_path, LOW, "--fit", fit)
    said = "it accepts none of the evaluated rows."
    assert f"; {ON_FIT}: {said}</p>" in page
    assert f"The {ON_FIT[4:]}: {said}" in terminal
    assert f"The {ON_FIT[4:]}: {said}" in summary


def test_without_fit_the_plug_in_reaches_the_target_on_these_rows(tmp_path):
    _, terminal, page, summary = chosen(tmp_path, FIT)
    assert "; the plug-in threshold reaches that accuracy on these rows, with no guarantee." in page
    assert "fit rows" not in terminal + summary


def test_no_plug_in_threshold_at_all(tmp_path):
    # no set of the highest confidences is right 8 times in 10
    rows = [{"confidence": 0.5 + i / 100, "correct": i % 2 == 0} for i in range(20)]
    _, _, page, _ = chosen(tmp_path, rows)
    assert "; no threshold reaches that accuracy on these rows.</p>" in page
