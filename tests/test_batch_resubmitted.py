"""An OpenAI Batch API job submitted again is not pooled by accident.

A Batch output line names its request by ``custom_id``, which OpenAI requires unique within a
batch; the line's own ``id`` (``batch_req_…``) and its response's ids are new each time a batch
runs. So the output of a batch submitted again, read beside the first's or appended to it,
repeats every custom_id under new ids with answers sampled again: without ``--id-field`` such
a request read twice is refused (exit 2, one line naming both places) on every route, as
``--id-field custom_id`` refuses it; ``--all-runs`` pools the lines on purpose and
``--id-field id`` reads batches that number their requests alike (shards of one job). Two
models' batches of one input answer the same requests without any line read twice, and
compare matches Batch lines by custom_id.

The lines are built here. Each answers "A", its top logprobs A at p and B at 1 - p, so that
its confidence over the options A..D is p and its one generated token's NLL is -log p; the
expected figures are worked from those numbers, never taken from calibcli's output.
"""

from __future__ import annotations

import json
import math

import pytest
from harness import refused, run

import calibcli
from calibcli.errors import InputError

MODEL = "gpt-4o-2024-08-06"
OTHER = "gpt-4o-mini-2024-07-18"
TWICE = (
    "a batch submitted again, or the same lines in two files, would count twice (pass "
    "--all-runs to pool re-runs on purpose; batches that number their requests alike, such as "
    "the shards of one job, are read with --id-field id)"
)
GOLDS = ["A", "A", "A", "B"]  # the answer is always A: right on the first three requests


def line(custom_id: str, p: float, gold: str, *, run: int = 1, model: str = MODEL) -> dict:
    """The output line of request ``custom_id`` of the ``run``-th batch: its ids are the
    run's own, its answer A at probability ``p``."""
    top = [
        {"token": "A", "logprob": math.log(p), "bytes": [65]},
        {"token": "B", "logprob": math.log(1 - p), "bytes": [66]},
    ]
    token = {"token": "A", "logprob": math.log(p), "bytes": [65], "top_logprobs": top}
    body = {
        "id": f"chatcmpl-{run}-{custom_id}",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "A"},
                "logprobs": {"content": [token]},
                "finish_reason": "stop",
            }
        ],
    }
    response = {"status_code": 200, "request_id": f"req-{run}-{custom_id}", "body": body}
    return {
        "id": f"batch_req_{run}_{custom_id}",
        "custom_id": custom_id,
        "response": response,
        "error": None,
        "gold": gold,
    }


def batch(path, p: float, *, run: int = 1, model: str = MODEL, ids=None, golds=GOLDS):
    """A batch output file of four requests (q0..q3 unless ``ids``), each answered A at
    ``p``."""
    ids = ids or [f"q{i}" for i in range(len(golds))]
    rows = [line(c, p, g, run=run, model=model) for c, g in zip(ids, golds, strict=True)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def body(result) -> dict:
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def twice(path, at: int, first, first_at: int) -> str:
    return (
        f"Error: {path}:{at}: the request of custom_id 'q0' was read before, at {first}:"
        f"{first_at}: {TWICE}"
    )


@pytest.mark.parametrize("command", [["calibrate", "--gold-field", "gold"], ["perplexity"]])
def test_a_batch_submitted_again_is_refused(tmp_path, command):
    first = batch(tmp_path / "first.jsonl", 0.8)
    again = batch(tmp_path / "again.jsonl", 0.6, run=2)
    said = refused(command[0], first, again, *command[1:], "--min-rows", "6")
    assert said == twice(again, 1, first, 1)


def test_appended_to_its_file_it_is_refused(tmp_path):
    first = batch(tmp_path / "first.jsonl", 0.8).read_text(encoding="utf-8")
    both = tmp_path / "both.jsonl"
    both.write_text(first + batch(tmp_path / "again.jsonl", 0.6, run=2).read_text(), "utf-8")
    assert refused("calibrate", both, "--gold-field", "gold") == twice(both, 5, both, 1)
    piped = refused("perplexity", "-", input=both.read_text(encoding="utf-8"))
    assert piped == twice("<stdin>", 5, "<stdin>", 1)


def test_a_request_repeated_after_the_first_is_refused(tmp_path):
    """Not only the first line's request: q1 again on line 4 names line 2."""
    path = batch(tmp_path / "b.jsonl", 0.8, ids=["q0", "q1", "q2", "q1"])
    said = refused("calibrate", path, "--gold-field", "gold")
    assert (
        said
        == f"Error: {path}:4: the request of custom_id 'q1' was read before, at {path}:2: {TWICE}"
    )


def test_all_runs_pools_them_on_purpose(tmp_path):
    first = batch(tmp_path / "first.jsonl", 0.8)
    again = batch(tmp_path / "again.jsonl", 0.6, run=2)
    got = body(run(["calibrate", first, again, "--gold-field", "gold", "--all-runs", "--json"]))
    # three right and one wrong at 0.8, then at 0.6: (3 * 0.04 + 0.64 + 3 * 0.16 + 0.36) / 8
    assert got["n"] == 8
    assert got["brier"] == pytest.approx(1.6 / 8, rel=1e-12)
    sequences = body(run(["perplexity", first, again, "--all-runs", "--json", "-q"]))
    assert sequences["sequences"] == 8 and sequences["total_tokens"] == 8
    assert sequences["total_nll"] == pytest.approx(-4 * (math.log(0.8) + math.log(0.6)))


def test_shards_numbered_alike_are_refused_and_read_by_their_own_ids(tmp_path):
    ids = [f"request-{i}" for i in range(1, 5)]
    one = batch(tmp_path / "shard1.jsonl", 0.8, ids=ids)
    two = batch(tmp_path / "shard2.jsonl", 0.6, run=2, ids=ids)
    said = refused("calibrate", one, two, "--gold-field", "gold")
    assert said == twice(two, 1, one, 1).replace("'q0'", "'request-1'")
    got = body(run(["calibrate", one, two, "--gold-field", "gold", "--id-field", "id", "--json"]))
    assert got["n"] == 8
    assert got["brier"] == pytest.approx(1.6 / 8, rel=1e-12)


def test_two_models_batches_of_one_input_are_not_read_twice(tmp_path):
    mini = batch(tmp_path / "mini.jsonl", 0.8, model=OTHER)
    four = batch(tmp_path / "four.jsonl", 0.6, run=2)
    got = body(run(["calibrate", mini, four, "--gold-field", "gold", "--json", "-q"]))
    assert got["n"] == 8
    assert any(w.startswith("rows of 2 models are pooled") for w in got["warnings"])
    rows = calibcli.read_predictions([str(mini), str(four)], gold_field="gold")
    assert len(rows) == 8


def test_summaries_of_a_batch_and_its_resubmission_do_not_merge(tmp_path):
    parts = []
    for k, p in ((1, 0.8), (2, 0.6)):
        part = tmp_path / f"s{k}.cbs"
        made = run(
            [
                "summarize",
                batch(tmp_path / f"b{k}.jsonl", p, run=k),
                "--gold-field",
                "gold",
                "-o",
                part,
            ]
        )
        assert made.exit_code == 0, made.stderr
        parts.append(part)
    merged = refused("merge", *parts, "-o", tmp_path / "m.cbs")
    assert "a row is in two of the parts" in merged
    assert "a row is in two of the parts" in refused("calibrate", *parts)


def test_read_predictions_refuses_it(tmp_path):
    first = batch(tmp_path / "first.jsonl", 0.8)
    again = batch(tmp_path / "again.jsonl", 0.6, run=2)
    with pytest.raises(InputError) as info:
        calibcli.read_predictions([str(first), str(again)], gold_field="gold")
    assert f"Error: {info.value}" == twice(again, 1, first, 1)
    pooled = calibcli.read_predictions([str(first), str(again)], gold_field="gold", all_runs=True)
    assert len(pooled) == 8


@pytest.mark.parametrize("workers", [1, 2])
def test_a_repeat_in_another_share_of_a_large_file(tmp_path, workers):
    """Hundreds of lines cut into small blocks (and shares of two processes): the request of
    line 10 again on the last line is found wherever each is read."""
    from calibcli.io import read_perplexity

    rows = [line(f"q{i}", 0.8, "A") for i in range(300)] + [line("q9", 0.6, "A", run=2)]
    path = tmp_path / "big.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_perplexity([str(path)], workers=workers, block_size=4096)
    said = str(info.value)
    assert said.startswith(f"{path}:301: ") and said.endswith(f" at {path}:10: {TWICE}")


def test_compare_matches_batch_lines_by_custom_id(tmp_path):
    """Two models' outputs of one batch input: each line's own ids are its run's, and the new
    side's lines come in another order."""
    base = batch(tmp_path / "base.jsonl", 0.8)
    lines = [line(f"q{i}", 0.6, g, run=2, model=OTHER) for i, g in enumerate(GOLDS)][::-1]
    new = tmp_path / "new.jsonl"
    new.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    got = body(run(["compare", base, new, "--gold-field", "gold", "--json", "-q"]))
    assert got["id_field"] == "custom_id"
    assert got["matched"] == 4 and got["unmatched_base"] == got["unmatched_new"] == 0
    brier = got["figures"]["brier"]
    # 0.8: (3 * 0.04 + 0.64) / 4; 0.6: (3 * 0.16 + 0.36) / 4
    assert brier["base"] == pytest.approx(0.19, rel=1e-12)
    assert brier["new"] == pytest.approx(0.21, rel=1e-12)


def test_requests_of_several_choices_are_named_by_their_lines(tmp_path):
    """A request of n = 2 samples gives two sequences: the request read twice is named by its
    lines, and a summary of such lines reads back with one id a request."""
    rows = []
    for k, custom_id in enumerate(["q0", "q1", "q2", "q1"]):
        two = line(custom_id, 0.8, "A", run=k)
        two["response"]["body"]["choices"] *= 2
        rows.append(two)
    path = tmp_path / "n2.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    said = refused("perplexity", path)
    assert said == (
        f"Error: {path}:4: the request of custom_id 'q1' was read before, at {path}:2: {TWICE}"
    )
    three = tmp_path / "n3.jsonl"
    three.write_text("".join(json.dumps(r) + "\n" for r in rows[:3]), encoding="utf-8")
    part = tmp_path / "n3.cbs"
    assert run(["summarize", three, "-o", part, "-q"]).exit_code == 0
    got = body(run(["perplexity", part, "--json", "-q"]))
    assert got["sequences"] == 6 and got["total_tokens"] == 6
    assert got["total_nll"] == pytest.approx(-6 * math.log(0.8))


def test_an_answer_naming_no_model_is_refused(tmp_path):
    """A Batch answer whose response names no model cannot be matched with a re-run of its
    batch that names one: refused, not read as other requests."""
    first = batch(tmp_path / "first.jsonl", 0.8)
    rows = [line(f"q{i}", 0.7, g, run=2) for i, g in enumerate(GOLDS)]
    for row in rows:
        row["response"]["body"]["model"] = None
    again = tmp_path / "again.jsonl"
    again.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = run(["calibrate", str(first), str(again), "--gold-field", "gold"])
    assert result.exit_code == 2
    assert "response names no model" in result.stderr, result.stderr
