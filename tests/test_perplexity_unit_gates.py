"""Gates on the figures per byte and per word: ``--max-bits-per-byte`` and
``--max-word-perplexity``, for runs that score text by bytes or words (lm-eval's wikitext
rows carry no token counts, so ``--max-perplexity`` can only fail closed on them). The
references are lm-eval's own results file for its samples, and hand sums (bits per byte =
total NLL / ln 2 / total bytes; word perplexity = exp(total NLL / total words)). A gate on a
figure the input cannot give fails closed, naming why."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from harness import run, write_jsonl

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
WIKITEXT = next(LM_EVAL.glob("samples_toy_wikitext_*.jsonl"))
RESULTS = json.loads(next(LM_EVAL.glob("results_*.json")).read_text())["results"]["toy_wikitext"]
BPB, WORD_PPL = RESULTS["bits_per_byte,none"], RESULTS["word_perplexity,none"]


def gate(*args):
    result = run(["perplexity", *map(str, args), "--json"])
    assert "Traceback" not in result.stderr, result.stderr
    return result.exit_code, json.loads(result.stdout), result.stderr


def test_lm_eval_s_own_figures_are_the_ones_gated():
    code, report, _ = gate(WIKITEXT, "--max-bits-per-byte", 2)
    assert code == 0
    assert report["bits_per_byte"] == pytest.approx(BPB, rel=1e-12)
    assert report["word_perplexity"] == pytest.approx(WORD_PPL, rel=1e-12)
    checks = {c["metric"]: c for c in report["gate"]["checks"]}
    assert checks["bits_per_byte"]["passed"] is True


@pytest.mark.parametrize(
    "option, limit, passed",
    [
        ("--max-bits-per-byte", BPB * (1 + 1e-9), True),
        ("--max-bits-per-byte", BPB * (1 - 1e-9), False),
        ("--max-word-perplexity", WORD_PPL * (1 + 1e-9), True),
        ("--max-word-perplexity", WORD_PPL * (1 - 1e-9), False),
    ],
)
def test_either_side_of_lm_eval_s_figure(option, limit, passed):
    code, report, stderr = gate(WIKITEXT, option, repr(limit))
    assert code == (0 if passed else 1), stderr
    assert report["gate"]["passed"] is passed


def test_native_rows_by_hand(tmp_path):
    rows = [{"nll": 2.0 + i % 3, "tokens": 4, "bytes": 16, "words": 3} for i in range(50)]
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    total = sum(2.0 + i % 3 for i in range(50))
    bpb, word = total / math.log(2) / (50 * 16), math.exp(total / (50 * 3))
    code, report, _ = gate(path, "--max-bits-per-byte", repr(bpb), "--max-word-perplexity", word)
    assert code == 0 and report["bits_per_byte"] == pytest.approx(bpb, rel=1e-15)
    code, _, stderr = gate(path, "--max-bits-per-byte", repr(bpb * 0.999))
    assert code == 1
    assert "exceeds --max-bits-per-byte" in stderr


@pytest.mark.parametrize(
    "option, field, reason",
    [
        ("--max-bits-per-byte", "bytes", "the input carries no byte counts"),
        ("--max-word-perplexity", "words", "the input carries no word counts"),
    ],
)
def test_a_gate_on_units_the_rows_do_not_count_fails_closed(tmp_path, option, field, reason):
    path = write_jsonl(tmp_path / "rows.jsonl", [{"nll": 2.0, "tokens": 4}] * 40)
    code, report, stderr = gate(path, option, "1e9")
    assert code == 1
    (check,) = report["gate"]["checks"]
    assert check["passed"] is False and check["reason"] == reason
    assert reason in stderr


def test_zero_bytes_fail_closed(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [{"nll": 0.0, "tokens": 0, "bytes": 0}] * 40)
    code, _, stderr = gate(path, "--max-bits-per-byte", "1e9")
    assert code == 1
    assert "zero bytes in the input" in stderr


def test_each_group_is_gated_with_gate_each(tmp_path):
    rows = [{"nll": 1.0, "tokens": 2, "bytes": 8, "task": "a"}] * 20 + [
        {"nll": 4.0, "tokens": 2, "bytes": 8, "task": "b"}
    ] * 20
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    # a: 20 / ln 2 / 160 = 0.1803; b: 80 / ln 2 / 160 = 0.7213; pooled 0.4508
    code, report, _ = gate(path, "--by", "task", "--gate-each", "--max-bits-per-byte", "0.5")
    assert code == 1
    failed = [(c.get("group"), c["metric"]) for c in report["gate"]["checks"] if not c["passed"]]
    assert failed == [("b", "bits_per_byte")]


def test_a_summary_gates_as_its_rows_do(tmp_path):
    summary = tmp_path / "wikitext.cbs"
    assert run(["summarize", str(WIKITEXT), "-o", str(summary)]).exit_code == 0
    for limit, expected in ((BPB * (1 + 1e-9), 0), (BPB * (1 - 1e-9), 1)):
        code, report, _ = gate(summary, "--max-bits-per-byte", repr(limit))
        assert code == expected
        assert report["bits_per_byte"] == pytest.approx(BPB, rel=1e-12)
