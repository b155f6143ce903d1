"""The HTML page shows a figure the report writes as null with an ``inf`` mark (an infinite
perplexity, an infinite NLL) as inf, as the table and the Markdown summary do, not as n/a
(undefined): the page reads the marks the report itself writes."""

from __future__ import annotations

import json
import re

from harness import run, write_jsonl


def _cell(page: str, label: str) -> str:
    found = re.search(re.escape(label) + r"</th><td>([^<]*)", page)
    assert found is not None, label
    return found.group(1)


def test_an_infinite_perplexity_shows_as_inf(tmp_path):
    # a token of probability 0 (logprob -inf): NLL and perplexity are infinite
    rows = write_jsonl(tmp_path / "p.jsonl", [{"logprobs": [-1.0, float("-inf")]}])
    report, page = tmp_path / "r.json", tmp_path / "r.html"
    result = run(["perplexity", rows, "-q", "-o", report])
    assert result.exit_code == 0, result.stderr
    body = json.loads(report.read_text())
    assert body["perplexity"] is None and body["non_finite"]["perplexity"] == "inf"
    # the page made from the JSON report reads its marks
    assert run(["render", report, "--html", page]).exit_code == 0
    assert _cell(page.read_text(), "perplexity (per token)") == "inf"


def test_an_infinite_nll_shows_as_inf(tmp_path):
    # a confidence of exactly 1 on a wrong answer: its log loss is infinite
    rows = [{"confidence": 1.0, "correct": False}, {"confidence": 0.6, "correct": True}]
    page = tmp_path / "c.html"
    result = run(["calibrate", write_jsonl(tmp_path / "c.jsonl", rows), "-q", "--html", page])
    assert result.exit_code == 0, result.stderr
    assert _cell(page.read_text(), "NLL (log loss)") == "inf"
