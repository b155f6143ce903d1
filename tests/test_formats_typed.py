"""The typed block paths of lm-eval rows and inspect-ai logs, against references computed here
from the definitions (softmax of the choices' loglikelihoods with an exactly rounded sum, the
rolling pairs' negated loglikelihood), and their hand-over to the row functions."""

from __future__ import annotations

import json
import math
import random

import msgspec
import numpy as np
import pytest
from typer.testing import CliRunner

from calibcli.cli import app
from calibcli.formats import lm_eval_columns as typed
from calibcli.formats.lm_eval import _LOGGED_FLOAT
from calibcli.io.documents import iter_document
from calibcli.io.inspect_log import SAMPLE_FIELDS

CONTINUATIONS = (" a", " bé", " ccc", " dddd€")


def choice_row(i: int, lls: list, acc: float = 1.0, **extra) -> dict:
    return {
        "doc_id": i,
        "arguments": {
            f"gen_args_{k}": {"arg_0": "Q?", "arg_1": CONTINUATIONS[k % 4]} for k in range(len(lls))
        },
        "filtered_resps": [[x if isinstance(x, str) else repr(x), "False"] for x in lls],
        "acc": acc,
        "acc_norm": acc,
        "acc_bytes": acc,
        **extra,
    }


def lines(rows: list) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def reference_confidence(lls: list[float]) -> float:
    top = max(lls)
    return 1.0 / math.fsum(math.exp(x - top) for x in lls)


def test_choice_columns_match_the_softmax_bit_for_bit():
    rng = random.Random(3)
    table = [
        [-rng.expovariate(0.2) * 10 ** rng.randint(-6, 2) for _ in range(rng.randint(2, 7))]
        for _ in range(3000)
    ]
    table[5][1] = -math.inf
    rows = [choice_row(i, lls, float(i % 2)) for i, lls in enumerate(table)]
    decoded = typed.choice_decoder("none").decode_lines(lines(rows))
    conf, correct = typed.choice_columns(decoded, "none")
    want = np.array([reference_confidence(lls) for lls in table])
    assert conf.view(np.int64).tolist() == want.view(np.int64).tolist()
    assert correct.tolist() == [bool(i % 2) for i in range(3000)]


@pytest.mark.parametrize("mc_norm", ["chars", "bytes"])
def test_length_normalised_columns(mc_norm):
    table = [[-1.5, -2.25, -0.75, -9.0], [-3.0, -3.0, -1e-05, -40.0]]
    rows = [choice_row(i, lls) for i, lls in enumerate(table)]
    decoded = typed.choice_decoder(mc_norm).decode_lines(lines(rows))
    conf, _ = typed.choice_columns(decoded, mc_norm)
    texts = [c[1:] for c in CONTINUATIONS]  # less the target delimiter " "
    size = len if mc_norm == "chars" else (lambda t: len(t.encode()))
    want = [
        reference_confidence([x / size(t) for x, t in zip(lls, texts, strict=True)])
        for lls in table
    ]
    assert conf.tolist() == want


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r["filtered_resps"][1].__setitem__(0, "-1_0"),
        lambda r: r["filtered_resps"][1].__setitem__(0, " -1.0"),
        lambda r: r["filtered_resps"][1].__setitem__(0, "01"),
        lambda r: r["filtered_resps"][1].__setitem__(0, "-.5"),
        lambda r: r["filtered_resps"][1].__setitem__(0, "nan"),
        lambda r: r["filtered_resps"][1].__setitem__(0, "0.5"),
        lambda r: r["filtered_resps"][1].__setitem__(0, "-1.0\n-2"),
        lambda r: r.__setitem__("acc", 2),
        lambda r: r.__setitem__("filtered_resps", r["filtered_resps"][:1]),
        lambda r: r.__setitem__("filtered_resps", [["-inf", "False"]] * 4),
    ],
)
def test_rows_the_typed_path_leaves_to_the_row_functions(change):
    rows = [choice_row(i, [-1.0, -2.0, -3.0, -4.0]) for i in range(3)]
    change(rows[1])
    decoded = typed.choice_decoder("none").decode_lines(lines(rows))
    assert typed.choice_columns(decoded, "none") is None


@pytest.mark.parametrize(
    "extra",
    [
        {"acc_mutual_info": 1.0},
        {"word_perplexity": [-1.0, 3]},
        {"arguments": {"gen_args_0": {"arg_0": "Q", "arg_1": {"until": ["\n"]}}}},
        {"filtered_resps": [["-1.0", "maybe"], ["-2.0", "False"]]},
        {"filtered_resps": ["-1.0", "-2.0"]},
        {"acc": "1"},
    ],
)
def test_rows_the_structs_refuse(extra):
    row = {**choice_row(0, [-1.0, -2.0]), **extra}
    with pytest.raises(msgspec.ValidationError):
        typed.choice_decoder("none").decode_lines(lines([row]))


def test_text_checked_as_lm_eval_writes_numbers():
    texts = ["-1.5", "+1", "1.", "-1.", ".5", "-.5", "01", "-01", "0", "-0", "-0.0", "1e5"]
    texts += ["1e+5", "1E5", "-inf", "inf", "nan", "-10.01e-10", "0e0", "1.e5", "00"]
    for text in texts:
        want = bool(_LOGGED_FLOAT.match(text))
        assert typed._as_logged(["-2.5", text, "0"]) is want, text


def test_rolling_columns():
    pairs = [(-161.27238874281215, 41, 237), (0.0, 0, 0), (-5.5, 3, 12)]
    rows = [
        {
            "doc_id": i,
            "word_perplexity": [ll, w],
            "byte_perplexity": [ll, b],
            "bits_per_byte": [ll, b],
        }
        for i, (ll, w, b) in enumerate(pairs)
    ]
    decoded = typed.rolling_decoder().decode_lines(lines(rows))
    nll, tokens, nbytes, words, *zeros = typed.rolling_columns(decoded)
    assert nll.tolist() == [161.27238874281215, 0.0, 5.5]
    assert math.copysign(1.0, nll[1]) == 1.0
    assert tokens.tolist() == [-1, -1, -1]
    assert nbytes.tolist() == [237, 0, 12]
    assert words.tolist() == [41, 0, 3]
    assert all(z.tolist() == [0, 0, 0] for z in zeros)


def test_a_bad_row_in_a_typed_block_is_named_as_before(tmp_path):
    rows = [choice_row(i, [-1.0, -2.0, -3.0, -4.0]) for i in range(1500)]
    rows[700]["filtered_resps"][1][0] = "abc"
    path = tmp_path / "samples_toy_2026-01-01T00-00-00.jsonl"
    path.write_bytes(lines(rows))
    result = CliRunner().invoke(app, ["calibrate", "--json", str(path)])
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        f"{path}:701: filtered_resps[1] loglikelihood is a string ('abc'), not a number as "
        "lm-eval writes one"
    )


def test_a_typed_file_gives_the_reference_figures(tmp_path):
    rng = random.Random(7)
    table = [[-rng.expovariate(0.5) for _ in range(4)] for _ in range(2000)]
    rows = [choice_row(i, lls, float(i % 3 == 0)) for i, lls in enumerate(table)]
    path = tmp_path / "samples_toy_2026-01-01T00-00-00.jsonl"
    path.write_bytes(lines(rows))
    result = CliRunner().invoke(app, ["calibrate", "--json", str(path)])
    report = json.loads(result.stdout)
    conf = [reference_confidence(lls) for lls in table]
    assert report["n"] == 2000
    assert report["mean_confidence"] == pytest.approx(math.fsum(conf) / 2000, rel=1e-12)
    assert report["accuracy"] == pytest.approx(667 / 2000)


def test_inspect_log_samples_as_json_reads_them(tmp_path):
    samples = [
        {
            "id": i,
            "epoch": 1,
            "input": "x" * 50,
            "messages": [{"role": "user", "content": "q"}],
            "output": {"choices": [{"logprobs": {"content": [{"token": "4", "logprob": -0.5}]}}]},
            "scores": {"match": {"value": "C"}},
            "metadata": {"subject": "s"},
        }
        for i in range(5)
    ]
    samples[3] = [1, 2]
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"version": 2, "eval": {"task": "t"}, "samples": samples}, indent=2))
    want = [(f"samples[{i}] (id {i}, epoch 1)", s) for i, s in enumerate(samples)]
    want[3] = ("samples[3] (id None, epoch None)", [1, 2])
    assert list(iter_document(str(path))) == want
    slim = list(iter_document(str(path), slim=lambda first: True))
    assert slim[0] == want[0]  # the first sample, whole, decides
    assert slim[1][1] == {k: v for k, v in samples[1].items() if k in SAMPLE_FIELDS}
    assert slim[3] == want[3]
