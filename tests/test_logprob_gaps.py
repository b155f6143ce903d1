"""Missing token log-probabilities in per-token formats: which nulls are skipped and which are
a missing score (exit 2 naming the position).

Only a prompt's first token goes unscored (it has no context): its null is skipped and counted
in inspect-ai prompt logprobs, OpenAI legacy ``token_logprobs`` (``echo``) and vLLM alike; a
null after it is an error. The plain ``logprobs`` list documents nulls anywhere as skipped.
Expected figures are written out by hand from the literal rows below.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from harness import run, write_jsonl

from calibcli.formats import inspect_prompt_row, openai_rows

PPL = Path(__file__).resolve().parent / "fixtures" / "inspect_ai_schema" / "toy_perplexity.json"


def report(args, code=0):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def refused(args, *parts):
    """Exit 2 with one line on stderr holding each of ``parts``."""
    result = run(args)
    assert result.exit_code == 2, result.stdout
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1
    for part in parts:
        assert part in result.stderr, result.stderr
    return result.stderr


# --------------------------------------------------------------------------- inspect-ai


def token(text, logprob):
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": None}


def inspect_log(tmp_path, contents):
    """The inspect-ai perplexity fixture with each sample's prompt tokens replaced."""
    log = json.loads(PPL.read_text(encoding="utf-8"))
    assert len(log["samples"]) == len(contents)
    for sample, content in zip(log["samples"], contents, strict=True):
        sample["output"]["choices"][0]["prompt_logprobs"] = {"content": content}
    path = tmp_path / "ppl.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


GOOD = [
    [token("The", None), token(" cat", -1.0), token(" sat", -0.5)],
    [token("Hi", None), token("!", -2.0)],
    [token("Rain", None), token(" on", -0.25), token(" the", -0.25)],
]


def test_inspect_leading_nulls_are_skipped_and_counted(tmp_path):
    body = report(["perplexity", inspect_log(tmp_path, GOOD), "--max-perplexity", "100"])
    # scored: -1.0 -0.5 | -2.0 | -0.25 -0.25 -> 5 tokens, NLL 4.0; one leading null per sample;
    # bytes of the scored tokens: " cat" 4 + " sat" 4 + "!" 1 + " on" 3 + " the" 4 = 16
    assert (body["sequences"], body["total_tokens"], body["null_logprobs"]) == (3, 5, 3)
    assert body["total_nll"] == 4.0 and body["total_bytes"] == 16
    assert body["gate"]["passed"] is True


@pytest.mark.parametrize(
    ("sample", "position", "change", "message"),
    [
        (0, 1, {"logprob": None}, "content[1].logprob is null: only the prompt's first token"),
        (2, 2, {"logprob": None}, "content[2].logprob is null"),
        (1, 1, "drop", "content[1] has no logprob"),
        # a missing key at the first position is a missing field, not the unscored first token
        (0, 0, "drop", "content[0] has no logprob"),
    ],
)
def test_inspect_missing_scores_are_refused(tmp_path, sample, position, change, message):
    contents = copy.deepcopy(GOOD)
    if change == "drop":
        del contents[sample][position]["logprob"]
    else:
        contents[sample][position].update(change)
    path = inspect_log(tmp_path, contents)
    # before: skipped, the gate passing on the perplexity of fewer tokens than the prompts hold
    refused(
        ["perplexity", path, "--max-perplexity", "100"],
        f"ppl.json:samples[{sample}] (id {sample + 1}, epoch 1): ",
        f"output.choices[0].prompt_logprobs.content[{position}]",
        message,
    )


def test_inspect_prompt_row_refuses_a_null_after_the_first_token():
    sample = {"output": {"choices": [{"prompt_logprobs": {"content": copy.deepcopy(GOOD[0])}}]}}
    row = inspect_prompt_row(sample)
    assert (row.nll, row.tokens, row.nulls, row.bytes) == (1.5, 2, 1, 8)
    sample["output"]["choices"][0]["prompt_logprobs"]["content"][2]["logprob"] = None
    with pytest.raises(ValueError, match=r"content\[2\]\.logprob is null"):
        inspect_prompt_row(sample)


# --------------------------------------------------------------------------- OpenAI legacy


def completion(token_logprobs):
    tokens = [f"t{i}" for i in range(len(token_logprobs))]
    return {
        "object": "text_completion",
        "choices": [{"text": "", "logprobs": {"tokens": tokens, "token_logprobs": token_logprobs}}],
    }


def test_openai_echo_leading_null_is_skipped_and_counted(tmp_path):
    path = write_jsonl(
        tmp_path / "oa.jsonl", [completion([None, -1.0, -2.0]), completion([-0.5, -0.25])]
    )
    body = report(["perplexity", path])
    # 2 + 2 scored tokens, NLL 3.0 + 0.75; the first row's leading null counted
    assert (body["format"], body["total_tokens"], body["null_logprobs"]) == ("openai", 4, 1)
    assert body["total_nll"] == 3.75


@pytest.mark.parametrize(("values", "position"), [([-1.0, None, -2.0], 1), ([None, -1.0, None], 2)])
def test_openai_null_after_the_first_token_is_refused(tmp_path, values, position):
    path = write_jsonl(tmp_path / "oa.jsonl", [completion([None, -1.0]), completion(values)])
    refused(
        ["perplexity", path, "--max-perplexity", "100"],
        f"oa.jsonl:2: choices[0].logprobs.token_logprobs[{position}] is null",
        "a token's log-probability is missing",
    )
    with pytest.raises(ValueError, match=rf"token_logprobs\[{position}\] is null"):
        openai_rows(completion(values))


# --------------------------------------------------------------------------- plain logprobs


def test_plain_logprobs_list_skips_nulls_anywhere_as_documented(tmp_path):
    # the README's logprobs layout shows a null after scored tokens: it is skipped and counted
    path = write_jsonl(tmp_path / "lp.jsonl", [{"logprobs": [-0.5, None, -0.25]}])
    body = report(["perplexity", path])
    assert (body["format"], body["total_tokens"], body["null_logprobs"]) == ("logprobs", 2, 1)
    assert body["total_nll"] == 0.75


# --------------------------------------------------------------------------- OpenAI chat bytes


def chat(*tokens):
    content = [{"token": t, "logprob": lp, "bytes": b, "top_logprobs": []} for t, lp, b in tokens]
    return {"object": "chat.completion", "choices": [{"logprobs": {"content": content}}]}


def test_openai_chat_bytes_are_totalled(tmp_path):
    path = write_jsonl(
        tmp_path / "chat.jsonl",
        [chat(("a", -0.5, [97]), ("bc", -1.5, [98, 99])), chat(("d", -0.25, [100]))],
    )
    body = report(["perplexity", path])
    # 3 tokens, NLL 2.25, bytes 1 + 2 + 1 = 4
    assert (body["total_tokens"], body["total_nll"], body["total_bytes"]) == (3, 2.25, 4)


@pytest.mark.parametrize("line", [1, 2])
def test_openai_chat_null_bytes_names_the_token(tmp_path, line):
    rows = [chat(("a", -0.5, [97]), ("b", -1.5, [98])), chat(("c", -0.25, [99]))]
    rows[line - 1]["choices"][0]["logprobs"]["content"][0]["bytes"] = None
    path = write_jsonl(tmp_path / "chat.jsonl", rows)
    # before: 'missing field "bytes"' (or 'given here but not on earlier rows') of a field
    # every row holds
    stderr = refused(
        ["perplexity", path],
        f"chat.jsonl:{line}: choices[0].logprobs.content[0].bytes is null",
        "byte count",
    )
    assert "earlier rows" not in stderr
