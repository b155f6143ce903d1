"""A figure too large for fixed-point digits to mean anything (a perplexity of exp(700)) is
shown in scientific notation in every rendering: the terminal table, the step summary's
Markdown and the HTML report. The JSON report keeps the double itself."""

from __future__ import annotations

import json
import math

from harness import run, write_jsonl

# exp(1401 / 2) = exp(700.5) = 10 ** (700.5 / ln 10) = 10 ** 304.2233... = 1.6722e+304
ROWS = [{"nll": 1400, "tokens": 1}, {"nll": 1, "tokens": 1}]
SHOWN = "1.6722e+304"


def test_the_json_report_keeps_the_double(tmp_path):
    result = run(["perplexity", write_jsonl(tmp_path / "p.jsonl", ROWS), "--json"])
    assert json.loads(result.stdout)["perplexity"] == math.exp(700.5)
    assert f"{math.exp(700.5):.4e}" == SHOWN


def test_the_terminal_table(tmp_path):
    result = run(["perplexity", write_jsonl(tmp_path / "p.jsonl", ROWS), "-q"])
    assert result.exit_code == 0, result.stderr
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("perplexity")]
    assert line.split()[-1] == SHOWN
    assert max(map(len, result.stdout.splitlines())) < 60
    # figures below the switch keep their fixed decimals
    assert "1401.0000" in result.stdout and "700.5000" in result.stdout


def test_the_step_summary_and_the_html_report(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("")
    html = tmp_path / "report.html"
    path = write_jsonl(tmp_path / "p.jsonl", ROWS)
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    result = run(["perplexity", path, "-q", "-o", tmp_path / "r.json"], env=env)
    assert result.exit_code == 0, result.stderr
    result = run(["render", tmp_path / "r.json", "--html", html, "--annotations", "none"])
    assert result.exit_code == 0, result.stderr
    assert SHOWN in summary.read_text()
    assert str(int(math.exp(700.5)))[:30] not in summary.read_text()
    assert SHOWN in html.read_text()
    assert str(int(math.exp(700.5)))[:30] not in html.read_text()
