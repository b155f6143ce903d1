"""OpenAI choices the content filter stopped (``finish_reason: "content_filter"``) are left out of
perplexity, one warning per file counting them, and never count toward ``--min-rows``; under
calibrate a filtered response's answer token is read when it came before the cut, and a
response cut before its answer is refused naming the filter.

The figures are pinned by hand: every scored response below holds the same three tokens of
logprobs -0.5, -1.0 and -1.5 (one byte each), so a file of k scored responses has 3k tokens and
NLL 3k, a perplexity of e**1 and 3k bytes, whatever the content filter left out."""

from __future__ import annotations

import json
import math

import pytest
from harness import refused, run, write_jsonl

import calibcli.formats as formats

LOGPROBS = (-0.5, -1.0, -1.5)  # NLL 3.0 over 3 tokens: perplexity e
FILTERED = 'stopped by the content filter (finish_reason "content_filter")'


def tokens(values=LOGPROBS, text="t"):
    return [
        {"token": text, "logprob": v, "bytes": list(text.encode()), "top_logprobs": []}
        for v in values
    ]


def choice(content, finish="stop", index=0):
    return {
        "index": index,
        "message": {"role": "assistant", "content": ""},
        "logprobs": {"content": content, "refusal": None},
        "finish_reason": finish,
    }


def completion(i, *choices):
    return {
        "id": f"chatcmpl-{i}",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": list(choices),
    }


def batch_line(i, body, **extra):
    line = {"id": f"batch_req_{i}", "custom_id": f"request-{i}", "error": None}
    line["response"] = {"status_code": 200, "request_id": f"req_{i}", "body": body}
    return {**line, **extra}


def scored(i):
    return batch_line(i, completion(i, choice(tokens())))


def filtered(i, content=()):
    return batch_line(i, completion(i, choice(list(content), "content_filter")))


def said(name, left, of):
    verb = "was" if left == 1 else "were"
    be = "is" if left == 1 else "are"
    return (
        f"{name}: {left} of {of} sequences {verb} {FILTERED} and {be} left out: the filter cut "
        "their text, so their logprobs are not those of the text the model would have written; "
        f"the figures and --min-rows count the {of - left} read"
    )


def report(args, code):
    result = run(["perplexity", *args, "--json", "-q"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout), result


@pytest.fixture
def ten_and_thirty(tmp_path):
    """10 scored responses and 30 the filter stopped, as the Batch API writes them."""
    rows = [scored(i) for i in range(10)] + [filtered(10 + i) for i in range(30)]
    return write_jsonl(tmp_path / "out.jsonl", rows)


def test_filtered_responses_do_not_meet_min_rows(ten_and_thirty):
    body, result = report([ten_and_thirty, "--min-rows", 40, "--max-perplexity", 2], 1)
    assert body["sequences"] == 10 and body["total_tokens"] == 30
    assert body["total_nll"] == pytest.approx(30.0)
    assert body["perplexity"] == pytest.approx(math.e)
    assert body["total_bytes"] == 30
    assert body["warnings"] == [said(str(ten_and_thirty), 30, 40)]
    checks = {c["metric"]: c for c in body["gate"]["checks"]}
    assert checks["sequences"]["value"] == 10 and checks["sequences"]["passed"] is False
    assert "warning: " + said(str(ten_and_thirty), 30, 40) in result.stderr.splitlines()


def test_the_scored_responses_alone_give_the_figures(ten_and_thirty, tmp_path):
    alone = write_jsonl(tmp_path / "alone.jsonl", [scored(i) for i in range(10)])
    body, _ = report([ten_and_thirty, "--min-rows", 10], 0)
    plain, _ = report([alone, "--min-rows", 10], 0)
    for key in ("sequences", "total_tokens", "total_nll", "perplexity", "total_bytes"):
        assert body[key] == plain[key]
    assert plain["warnings"] == []


def test_one_warning_per_file_each_with_its_count(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [scored(0), filtered(1), scored(2)])
    b = write_jsonl(tmp_path / "b.jsonl", [filtered(3), filtered(4), scored(5), filtered(6)])
    c = write_jsonl(tmp_path / "c.jsonl", [scored(7)])
    body, _ = report([a, b, c], 0)
    assert body["sequences"] == 4 and body["total_tokens"] == 12
    assert body["warnings"] == [said(str(a), 1, 3), said(str(b), 3, 4)]


def test_a_filtered_choice_among_others_leaves_the_others(tmp_path):
    two = completion(0, choice(tokens(), index=0), choice(tokens()[:1], "content_filter", 1))
    path = write_jsonl(tmp_path / "n2.jsonl", [two])
    body, _ = report([path], 0)
    assert (body["sequences"], body["total_tokens"]) == (1, 3)
    assert body["warnings"] == [said(str(path), 1, 2)]


def test_a_cut_list_and_a_missing_one_are_left_out_alike(tmp_path):
    cut = filtered(1, tokens()[:2])  # two tokens before the cut: not the text whole
    bare = batch_line(2, completion(2, {**choice([], "content_filter"), "logprobs": None}))
    path = write_jsonl(tmp_path / "cut.jsonl", [scored(0), cut, bare])
    body, _ = report([path], 0)
    assert (body["sequences"], body["total_tokens"]) == (1, 3)
    assert body["warnings"] == [said(str(path), 2, 3)]


def test_a_byte_count_beside_a_filtered_response_is_left_out_with_it(tmp_path):
    rows = [{**scored(0), "bytes": 3}, {**filtered(1), "bytes": 0}]
    path = write_jsonl(tmp_path / "counted.jsonl", rows)
    body, _ = report([path], 0)
    assert (body["sequences"], body["total_bytes"]) == (1, 3)


def test_the_count_is_the_whole_file_s_when_workers_read_it(tmp_path):
    from calibcli.io import read_perplexity

    # every 7th of 600 responses filtered: 86 of them (0, 7, ..., 595)
    rows = [filtered(i) if i % 7 == 0 else scored(i) for i in range(600)]
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    left = len(range(0, 600, 7))
    for workers in (1, 2):
        summary = read_perplexity([str(path)], workers=workers, block_size=4096)
        assert summary.n == 600 - left
        assert summary.warnings == (said(str(path), left, 600),)


def test_the_count_is_the_whole_file_s_from_its_parts(tmp_path):
    rows = [filtered(i) if i % 5 == 0 else scored(i) for i in range(200)]
    path = write_jsonl(tmp_path / "parts.jsonl", rows)
    parts = []
    for k in (1, 2):
        out = tmp_path / f"p{k}.cbs"
        result = run(["summarize", path, "--part", f"{k}/2", "-o", out, "-q"])
        assert result.exit_code == 0, result.output
        parts.append(out)
    body, _ = report(parts, 0)
    assert body["sequences"] == 160
    assert body["warnings"] == [said(str(path), 40, 200)]


def test_the_count_is_the_whole_file_s_from_an_engine_s_tasks(tmp_path):
    from calibcli.engines import file_jobs, file_task, finish, merge_all

    rows = [filtered(i) if i % 3 == 0 else scored(i) for i in range(300)]
    path = write_jsonl(tmp_path / "spans.jsonl", rows)
    jobs = file_jobs([str(path)], "auto", 10_000)
    assert len(jobs) > 2  # the file is read in byte ranges, each a task of its own
    body = finish(merge_all([file_task(job) for job in jobs]), said=jobs[0].said).report()
    assert body["sequences"] == 200
    assert body["warnings"] == [said(str(path), 100, 300)]


def test_an_echoed_prompt_is_scored_whatever_stopped_its_completion():
    # legacy completion, echo=True, max_tokens=1: 3 prompt positions (the first unscored) and
    # one generated token, cut at usage.prompt_tokens
    body = {
        "id": "cmpl-1",
        "object": "text_completion",
        "choices": [
            {
                "index": 0,
                "text": "abc",
                "logprobs": {"tokens": ["a", "b", "c", "d"], "token_logprobs": [None, -1, -2, -4]},
                "finish_reason": "content_filter",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    (row,) = formats.openai_rows(body)
    assert (row.nll, row.tokens, row.nulls) == (3.0, 2, 1)
    assert formats.content_filtered(body) == 0


def answer(i, letter, lp, tops, finish="stop", before=()):
    token = {"token": letter, "logprob": lp, "bytes": [ord(letter)]}
    token["top_logprobs"] = [{"token": t, "logprob": v} for t, v in tops]
    content = [*before, token]
    return batch_line(i, completion(i, choice(content, finish)), gold="A")


def test_calibrate_reads_a_filtered_response_s_answer_token(tmp_path):
    tops = [("A", math.log(0.6)), ("B", math.log(0.3)), ("C", math.log(0.1))]
    rows = [answer(0, "A", math.log(0.6), tops), answer(1, "A", math.log(0.6), tops)]
    rows[1]["response"]["body"]["choices"][0]["finish_reason"] = "content_filter"
    path = write_jsonl(tmp_path / "mc.jsonl", rows)
    result = run(["calibrate", path, "--gold-field", "gold", "--json", "-q"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    # both answer A at 0.6 / (0.6 + 0.3 + 0.1), both right
    assert body["n"] == 2 and body["accuracy"] == 1.0
    assert body["mean_confidence"] == pytest.approx(0.6)


def test_calibrate_refuses_a_response_the_filter_cut_before_its_answer(tmp_path):
    tops = [("A", math.log(0.6)), ("B", math.log(0.4))]
    rows = [answer(0, "A", math.log(0.6), tops), filtered(1, tokens(text=" I"))]
    rows[1]["gold"] = "A"
    path = write_jsonl(tmp_path / "mc.jsonl", rows)
    line = refused("calibrate", path, "--gold-field", "gold", "-q")
    assert line == (
        f"Error: {path}:2: choices[0] was {FILTERED} before an answer token: the filter cut its "
        "text, so it holds no answer to score (leave the request out, or send it again)"
    )
