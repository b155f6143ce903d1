"""Batch output lines of several choices, saved as one JSON document, keep one place a request.

A Batch line answering with ``n`` choices gives ``n`` perplexity sequences under one request
id. Saved as a JSON array on one line, every choice of every request stands at line 1, so the
place of each request cannot be told from its choices' places: each request keeps the place it
was read at. Its summary then reads back with the figures of the file itself (it was written
with one place per choice and refused as damaged), and a request read twice in such a document
is still refused at its line.

Each request's first choice scores "A" at probability p, its second at q; the expected
perplexity is exp(-mean of the eight log-probabilities), worked here from p and q.
"""

from __future__ import annotations

import copy
import json
import math

import pytest
from harness import refused, run
from test_batch_resubmitted import line

P = [0.8, 0.6, 0.9, 0.7]
Q = [0.5, 0.4, 0.3, 0.2]
EXPECTED = math.exp(-sum(math.log(x) for x in P + Q) / 8)


def requests() -> list[dict]:
    rows = []
    for i, (p, q) in enumerate(zip(P, Q, strict=True)):
        row = line(f"q{i}", p, "A")
        choices = row["response"]["body"]["choices"]
        second = copy.deepcopy(choices[0])
        second["index"] = 1
        token = second["logprobs"]["content"][0]
        token["logprob"] = token["top_logprobs"][0]["logprob"] = math.log(q)
        token["top_logprobs"][1]["logprob"] = math.log(1 - q)
        choices.append(second)
        rows.append(row)
    return rows


def perplexity(path) -> dict:
    result = run(["perplexity", path, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("layout", ["one line", "indented", "json lines"])
def test_a_summary_of_requests_of_several_choices_reads_back(tmp_path, layout):
    rows = requests()
    path = tmp_path / ("batch.jsonl" if layout == "json lines" else "batch.json")
    if layout == "json lines":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(rows, indent=None if layout == "one line" else 2))
    summary = tmp_path / "batch.cbs"
    made = run(["summarize", path, "-o", summary])
    assert made.exit_code == 0, made.stderr
    direct, read_back = perplexity(path), perplexity(summary)
    assert (direct["sequences"], direct["total_tokens"]) == (8, 8)
    assert direct["perplexity"] == pytest.approx(EXPECTED, rel=1e-12)
    for key in ("perplexity", "sequences", "total_tokens", "total_nll"):
        assert read_back[key] == direct[key]


def test_a_request_read_twice_in_a_one_line_document_is_still_refused(tmp_path):
    rows = requests()
    again = copy.deepcopy(rows[2])
    again["id"] = "batch_req_2_q2"  # the batch submitted again: a new line id, the same request
    path = tmp_path / "batch.json"
    path.write_text(json.dumps([*rows, again]))
    for command in (["perplexity", path], ["summarize", path, "-o", tmp_path / "s.cbs"]):
        message = refused(*command)
        assert "batch.json:1: the request of custom_id 'q2' was read before, at " in message
    assert not (tmp_path / "s.cbs").exists()
