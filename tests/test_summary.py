"""--summary PATH appends a Markdown summary of the report (CI job summaries)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from calibcli.cli import app

runner = CliRunner()


def _rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _calibration_file(tmp_path):
    rows = [{"confidence": 0.9, "correct": i % 10 < 6} for i in range(50)]
    rows += [{"confidence": 0.3, "correct": i % 10 < 3} for i in range(50)]
    rows += [{"confidence": 0.6, "correct": i % 10 < 6} for i in range(50)]
    return _rows(tmp_path / "preds.jsonl", rows)


def test_calibrate_summary_shows_the_report_figures_and_the_gate(tmp_path):
    preds = _calibration_file(tmp_path)
    summary = tmp_path / "summary.md"
    result = runner.invoke(
        app, ["calibrate", preds, "--max-ece", "0.05", "--summary", str(summary), "--json"]
    )
    assert result.exit_code == 1
    # by hand: only the 0.9 bin is off, by 0.3, and holds a third of the rows
    text = summary.read_text()
    assert text.startswith(f"### calibcli calibrate: `{preds}` — gate FAILED\n")
    assert "| ECE | 0.1000 |" in text
    assert "| N | 150 |" in text
    assert "| populated bins | 3 of 10 |" in text  # as the table and the HTML page say it
    assert "| ece | 0.05 | 0.1000 | **no** |" in text  # the limit as given


def test_summary_appends_and_keeps_earlier_sections(tmp_path):
    preds = _calibration_file(tmp_path)
    summary = tmp_path / "summary.md"
    summary.write_text("# Evaluation\n\n")
    for command in ("calibrate", "reliability"):
        assert runner.invoke(app, [command, preds, "--summary", str(summary)]).exit_code == 0
    text = summary.read_text()
    assert text.startswith("# Evaluation\n\n### calibcli calibrate:")
    assert "### calibcli reliability:" in text
    assert "gate" not in text  # no thresholds were asked for


def test_perplexity_summary_and_warnings(tmp_path):
    ppl = _rows(tmp_path / "ppl.jsonl", [{"nll": 0.0, "tokens": 0}])
    summary = tmp_path / "summary.md"
    result = runner.invoke(app, ["perplexity", ppl, "--summary", str(summary)])
    assert result.exit_code == 0
    text = summary.read_text()
    assert "| perplexity (per token) | n/a |" in text
    assert "> warning: zero tokens in the input" in text


def test_summary_with_intervals_has_an_interval_column(tmp_path):
    preds = _calibration_file(tmp_path)
    summary = tmp_path / "summary.md"
    args = ["calibrate", preds, "--ci", "0.9", "--bootstrap", "200", "--summary", str(summary)]
    assert runner.invoke(app, args).exit_code == 0
    assert "| metric | value | 0.9 interval |" in summary.read_text()


def test_invalid_input_writes_no_summary(tmp_path):
    bad = _rows(tmp_path / "bad.jsonl", [{"confidence": 1.5, "correct": True}])
    summary = tmp_path / "summary.md"
    result = runner.invoke(app, ["calibrate", bad, "--summary", str(summary)])
    assert result.exit_code == 2
    assert not summary.exists()


def test_unwritable_summary_is_a_usage_error(tmp_path):
    preds = _calibration_file(tmp_path)
    result = runner.invoke(app, ["calibrate", preds, "--summary", str(tmp_path)])
    assert result.exit_code == 2
    assert "cannot write the summary" in result.stderr
