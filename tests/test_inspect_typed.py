"""inspect-ai ``.json`` logs read through typed structs (calibcli.formats.inspect_typed,
calibcli.io.inspect_rows): the values, groups, ids and errors of the samples the structs take
and of those they leave to the dict path. Expected figures are computed here from the raw
samples."""

from __future__ import annotations

import copy
import json
import math

import msgspec
import pytest
from harness import run

from calibcli.formats.inspect_typed import calibration_values, sample_type
from calibcli.io.documents import iter_document

LETTERS = "ABCD"


def sample(i: int, pick: int, target: int, lp: float, **extra) -> dict:
    tokens = [
        {"token": "ANSWER", "logprob": -0.01, "top_logprobs": [{"token": "x", "logprob": -9.0}]},
        {"token": ":", "logprob": -0.02},
        {"token": " ", "logprob": -0.03},
        {"token": LETTERS[pick], "logprob": lp, "bytes": [65 + pick]},
    ]
    row = {
        "id": i,
        "epoch": 1,
        "input": "question " * 10,
        "choices": ["one", "two", "three", "four"],
        "messages": [{"role": "user", "content": "q"}],
        "output": {"choices": [{"message": {"content": "x"}, "logprobs": {"content": tokens}}]},
        "scores": {"choice": {"value": "C" if pick == target else "I", "answer": "x"}},
        "metadata": {"subject": f"s{i % 3}"},
    }
    row.update(extra)
    return row


def samples(n: int) -> list[dict]:
    return [sample(i + 1, i % 4, (i * 7) % 4, -((i % 9) + 1) / 10) for i in range(n)]


def write_log(path, rows) -> str:
    log = {"version": 2, "status": "success", "eval": {"task": "t"}, "samples": rows}
    path.write_text(json.dumps(log, indent=2))
    return str(path)


def decoded(row: dict, extra: tuple[str, ...] = ()):
    return msgspec.json.decode(json.dumps(row).encode(), type=sample_type(extra))


def test_values_are_the_answer_tokens_probability_and_the_score():
    row = sample(1, 2, 2, -0.4)
    answer = (math.exp(-0.4), True, "answer-token")
    assert calibration_values(decoded(row), None, "auto") == answer
    assert calibration_values(decoded(row), "choice", "answer-token") == answer
    seq = math.exp(math.fsum([-0.01, -0.02, -0.03, -0.4]))
    assert calibration_values(decoded(row), None, "sequence") == (seq, True, "sequence")
    first = (math.exp(-0.01), True, "first-token")
    assert calibration_values(decoded(row), None, "first-token") == first
    mean = math.exp(math.fsum([-0.01, -0.02, -0.03, -0.4]) / 4)
    assert calibration_values(decoded(row), None, "mean-token") == (mean, True, "mean-token")
    wrong = sample(1, 2, 1, -0.4, choices=None)  # no options: the whole completion
    assert calibration_values(decoded(wrong), None, "auto") == (seq, False, "sequence")


@pytest.mark.parametrize(
    ("value", "correct"),
    [
        ("C", True),
        ("I", False),
        ("N", False),
        (True, True),
        (False, False),
        (1, True),
        (0.0, False),
    ],
)
def test_binary_score_values(value, correct):
    row = sample(1, 0, 0, -0.5)
    row["scores"]["choice"]["value"] = value
    got = calibration_values(decoded(row), None, "auto")
    assert got == (math.exp(-0.5), correct, "answer-token")


def edit(change):
    row = sample(1, 0, 0, -0.5)
    change(row)
    return row


LEFT_TO_THE_DICT_PATH = {
    "error": lambda r: r.update(error={"message": "boom"}),
    "partial": lambda r: r["scores"]["choice"].update(value="P"),
    "half": lambda r: r["scores"]["choice"].update(value=0.5),
    "null value": lambda r: r["scores"]["choice"].update(value=None),
    "several values": lambda r: r["scores"]["choice"].update(value={"a": "C"}),
    "two scorers": lambda r: r["scores"].update(other={"value": "C"}),
    "no scores": lambda r: r.update(scores={}),
    "no output": lambda r: r.update(output=None),
    "no logprobs": lambda r: r["output"]["choices"][0].update(logprobs=None),
    "empty content": lambda r: r["output"]["choices"][0]["logprobs"].update(content=[]),
    "positive logprob": lambda r: r["output"]["choices"][0]["logprobs"]["content"][1].update(
        logprob=0.25
    ),
}


@pytest.mark.parametrize("change", LEFT_TO_THE_DICT_PATH.values(), ids=LEFT_TO_THE_DICT_PATH)
def test_samples_the_typed_path_leaves_to_the_row_function(change):
    assert calibration_values(decoded(edit(change)), None, "auto") is None


REFUSED = {
    "null logprob": lambda r: r["output"]["choices"][0]["logprobs"]["content"][1].update(
        logprob=None
    ),
    "text logprob": lambda r: r["output"]["choices"][0]["logprobs"]["content"][1].update(
        logprob="-1"
    ),
    "boolean logprob": lambda r: r["output"]["choices"][0]["logprobs"]["content"][1].update(
        logprob=False
    ),
    "token not an object": lambda r: r["output"]["choices"][0]["logprobs"]["content"].append(3),
    "score not an object": lambda r: r["scores"].update(choice="C"),
    "options not a list": lambda r: r.update(choices="ABCD"),
}


@pytest.mark.parametrize("change", REFUSED.values(), ids=REFUSED)
def test_samples_the_structs_refuse(change):
    with pytest.raises(msgspec.ValidationError):
        decoded(edit(change))


def test_a_path_into_a_typed_field_has_no_struct():
    assert sample_type(("scores.choice.value", "scores")) is None
    assert sample_type(("metadata.subject", "metadata")) is not None


def test_the_log_yields_structs_after_the_first_sample(tmp_path):
    rows = samples(4)
    rows[2] = sample(3, 0, 0, -0.5, error="boom")
    path = write_log(tmp_path / "log.json", rows)
    got = list(iter_document(path, slim=lambda first: True, sample_type=sample_type()))
    assert [where for where, _ in got] == [f"samples[{i}] (id {i + 1}, epoch 1)" for i in range(4)]
    assert got[0][1] == rows[0]  # the first sample, whole, decides
    struct, text = got[2][1]
    assert struct.error == "boom" and json.loads(bytes(text)) == rows[2]
    assert got[3][1][0].scores["choice"].value == rows[3]["scores"]["choice"]["value"]


def expected(rows):
    conf = [math.exp(r["output"]["choices"][0]["logprobs"]["content"][3]["logprob"]) for r in rows]
    correct = [r["scores"]["choice"]["value"] == "C" for r in rows]
    return conf, correct


def report(args, code=0):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout) if code == 0 else result.stderr


def test_a_log_gives_the_figures_of_its_samples(tmp_path):
    rows = samples(300)
    conf, correct = expected(rows)
    body = report(["calibrate", write_log(tmp_path / "log.json", rows)])
    assert body["n"] == 300
    assert body["accuracy"] == sum(correct) / 300
    assert body["mean_confidence"] == pytest.approx(math.fsum(conf) / 300, rel=1e-14)
    brier = math.fsum((c - y) ** 2 for c, y in zip(conf, correct, strict=True)) / 300
    assert body["brier"] == pytest.approx(brier, rel=1e-12)


def test_groups_by_a_metadata_field(tmp_path):
    rows = samples(300)
    body = report(["calibrate", write_log(tmp_path / "log.json", rows), "--by", "metadata.subject"])
    groups = body["groups"]
    for k in range(3):
        mine = [r for r in rows if r["metadata"]["subject"] == f"s{k}"]
        conf, correct = expected(mine)
        assert groups[f"s{k}"]["n"] == len(mine)
        assert groups[f"s{k}"]["accuracy"] == sum(correct) / len(mine)
        mean = math.fsum(conf) / len(mine)
        assert groups[f"s{k}"]["mean_confidence"] == pytest.approx(mean, rel=1e-14)


def test_a_bad_sample_after_typed_ones_is_named(tmp_path):
    rows = samples(300)
    rows[250]["scores"]["choice"]["value"] = "P"
    stderr = report(["calibrate", write_log(tmp_path / "log.json", rows)], code=2)
    assert stderr.strip().endswith(
        "log.json:samples[250] (id 251, epoch 1): score 'choice' is a string ('P'): partial "
        "credit, not a binary outcome (calibcli reads 'C'/'I'/'N', true/false or 0/1)"
    )


def test_a_sample_read_twice_is_named_with_its_first_reading(tmp_path):
    rows = samples(300)
    rows[200] = copy.deepcopy(rows[20])
    stderr = report(["calibrate", write_log(tmp_path / "log.json", rows)], code=2)
    assert "log.json:samples[200] (id 21, epoch 1): the row of id 21 (epoch 1) was read" in stderr
    assert "log.json:samples[20] (id 21, epoch 1)" in stderr


def test_an_id_field_of_the_samples(tmp_path):
    rows = samples(50)
    for r in rows:
        r["uid"] = f"u{r['id'] % 49}"  # the 50th repeats the first
    stderr = report(["calibrate", write_log(tmp_path / "log.json", rows), "--id-field", "uid"], 2)
    assert "log.json:samples[49] (id 50, epoch 1): the row of id 'u1' was read before" in stderr


def test_a_remembered_answer_depends_on_the_options_and_every_text():
    row = sample(1, 2, 2, -0.4)  # "ANSWER: C"
    few = sample(2, 2, 2, -0.4, choices=["one", "two"])  # C is past two options
    odd = sample(3, 2, 2, -0.4)
    odd["output"]["choices"][0]["logprobs"]["content"][3]["token"] = 3  # not a text
    seq = math.exp(math.fsum([-0.01, -0.02, -0.03, -0.4]))
    for _ in range(2):
        answer = (math.exp(-0.4), True, "answer-token")
        assert calibration_values(decoded(row), None, "auto") == answer
        assert calibration_values(decoded(few), None, "auto") == (seq, True, "sequence")
        assert calibration_values(decoded(odd), None, "auto") == (seq, True, "sequence")
