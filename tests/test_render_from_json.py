"""Every renderer works from a saved report's JSON alone: the tables, the Markdown summary, the
image and the HTML page drawn from ``json.loads(report)`` equal what the command itself wrote.
"""

from __future__ import annotations

import io
import json
import random
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from harness import run, write_jsonl

from calibcli.render import (
    html_report,
    markdown_summary,
    print_report,
    reliability_image,
    reliability_sections,
    report_series,
)
from calibcli.reports import as_shown

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
OVER = str(SAMPLE / "overconfident.jsonl")
WELL = str(SAMPLE / "well_calibrated.jsonl")
PPL = str(SAMPLE / "perplexity.jsonl")


@pytest.fixture(scope="module")
def infinite(tmp_path_factory):
    path = tmp_path_factory.mktemp("inf") / "inf.jsonl"
    return write_jsonl(path, [{"nll": 1e999, "tokens": 3}, {"nll": 2.0, "tokens": 1}])


@pytest.fixture(scope="module")
def second(tmp_path_factory):
    rng = random.Random(3)
    rows = [{"confidence": rng.random(), "correct": rng.random() < 0.6} for _ in range(300)]
    return write_jsonl(tmp_path_factory.mktemp("two") / "b.jsonl", rows)


COMMANDS = {
    "calibrate": ["calibrate", OVER, "--max-ece", "0.05"],
    "calibrate --by": ["calibrate", OVER, "--by", "subject", "--ci", "0.9", "--bootstrap", "200"],
    "calibrate --recalibrate": ["calibrate", OVER, "--recalibrate", "platt"],
    "reliability": ["reliability", OVER],
    "threshold": ["threshold", OVER, "--target-accuracy", "0.8", "--min-coverage", "0.2"],
    "compare": ["compare", WELL, OVER, "--bootstrap", "200"],
    "perplexity": ["perplexity", PPL, "--by", "source"],
}  # fit's product is the calibrator file (its -o and --json), drawn by `calibcli render`


def printed(body: dict) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        print_report(as_shown(body))
    return out.getvalue()


@pytest.mark.parametrize("name", list(COMMANDS))
def test_tables_and_summary_from_the_saved_json(tmp_path, name):
    args = COMMANDS[name]
    report = tmp_path / "report.json"
    summary = tmp_path / "summary.md"
    live = run([*args, "-q", "-o", report, "--summary", summary])
    assert live.exit_code in (0, 1), live.stderr
    body = json.loads(report.read_text())
    assert printed(body) == live.stdout
    files = [a for a in args[1:] if a.endswith(".jsonl")]
    assert markdown_summary(as_shown(body), files) == summary.read_text()


def test_infinite_figures_read_inf_from_the_json(infinite):
    body = json.loads(run(["perplexity", infinite, "--json"]).stdout)
    assert body["perplexity"] is None and body["non_finite"]["perplexity"] == "inf"
    table = printed(body)
    assert table == run(["perplexity", infinite]).stdout
    assert "inf" in table


@pytest.mark.parametrize(
    "args",
    [
        ["calibrate", OVER, "--by", "subject"],
        ["calibrate", OVER, "--recalibrate", "platt"],
        ["reliability", OVER, "SECOND"],
        ["compare", WELL, OVER, "--bootstrap", "200"],
    ],
    ids=["groups", "before-after", "files", "sides"],
)
def test_image_and_html_from_the_saved_json(tmp_path, args, second):
    pytest.importorskip("matplotlib")
    args = [second if a == "SECOND" else a for a in args]
    plot, page, report = tmp_path / "p.svg", tmp_path / "p.html", tmp_path / "r.json"
    live = run([*args, "-q", "--plot", plot, "--html", page, "-o", report])
    assert live.exit_code == 0, live.stderr
    body = json.loads(report.read_text())
    with_ci = args[0] != "calibrate"
    series = report_series(reliability_sections(as_shown(body)), with_ci=with_ci)
    assert reliability_image(series, "svg") == plot.read_bytes()
    files = [a for a in args[1:] if str(a).endswith(".jsonl")]
    assert html_report(body, sources=files) == page.read_text()
