"""Perplexity rows pooled with --all-runs whose ids repeat across the inputs are re-runs of the
same questions: the figures stay those of every row, a warning says so, and --min-rows /
--min-tokens count each question once, its tokens once (exactly, from the rows' ids, where the
files are read and from a summary file of them, which keeps their question keys).

The expected counts are worked from the committed sample file with a plain json loop: 200
documents of distinct ids, whose tokens are summed here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run, write_jsonl

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data" / "perplexity.jsonl"
OPENING = (
    "re-runs are pooled (--all-runs): their rows' ids repeat, so each question is answered "
    "several times: "
)
TAIL = "so --min-rows and --min-tokens count each question once"


def sample_rows() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]


ROWS = sample_rows()
DOCS = len(ROWS)
TOKENS = sum(r["tokens"] for r in ROWS)


def report(args, code):
    result = run(["perplexity", *map(str, args), "--json"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result


def failures(body) -> dict[str, str]:
    return {c["metric"]: c["reason"] for c in body["gate"]["checks"] if not c["passed"]}


def copies(tmp_path, n=2) -> list[Path]:
    paths = [tmp_path / f"run{i}.jsonl" for i in range(n)]
    for p in paths:
        p.write_bytes(SAMPLE.read_bytes())
    return paths


POOLED = ["--id-field", "id", "--all-runs"]


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_a_file_given_twice_counts_each_question_once(tmp_path, workers):
    assert (DOCS, TOKENS) == (200, 53_965) and len({r["id"] for r in ROWS}) == DOCS
    a, b = copies(tmp_path)
    body, result = report([a, b, *POOLED, *workers, "--min-tokens", 80_000], 1)
    assert body["sequences"] == 2 * DOCS and body["total_tokens"] == 2 * TOKENS
    (warning,) = body["warnings"]
    assert warning.startswith(
        f"{OPENING}run0.jsonl and run1.jsonl (2 rows a question among them): "
    )
    assert warning.endswith(TAIL)
    assert failures(body) == {
        "total_tokens": (
            f"the {2 * TOKENS:,} tokens are of rows that repeat their questions (see the "
            f"warning) and hold {TOKENS:,} tokens of distinct questions, fewer than 80,000; "
            "each question's tokens count once"
        )
    }
    assert "cannot support --min-tokens 80000" in result.stderr
    body, _ = report([a, b, *POOLED, *workers, "--min-rows", 300], 1)
    assert failures(body) == {
        "sequences": (
            f"the {2 * DOCS} rows repeat their questions (see the warning) and hold {DOCS}, "
            "fewer than 300; each question counts once"
        )
    }
    body, _ = report([a, b, *POOLED, *workers, "--min-tokens", 50_000, "--min-rows", DOCS], 0)
    assert body["gate"]["passed"]
    # the floors at the distinct figures and one above
    report([a, b, *POOLED, *workers, "--min-tokens", TOKENS], 0)
    report([a, b, *POOLED, *workers, "--min-tokens", TOKENS + 1], 1)
    report([a, b, *POOLED, *workers, "--min-rows", DOCS + 1], 1)


def test_disjoint_ids_count_every_row(tmp_path):
    half = DOCS // 2
    x = write_jsonl(tmp_path / "x.jsonl", ROWS[:half])
    y = write_jsonl(tmp_path / "y.jsonl", ROWS[half:])
    whole = write_jsonl(tmp_path / "whole.jsonl", ROWS)
    pooled = run(["perplexity", x, y, *POOLED, "--json", "--min-rows", DOCS])
    alone = run(["perplexity", whole, "--json", "--min-rows", DOCS])
    assert pooled.exit_code == alone.exit_code == 0, pooled.stderr
    assert pooled.stdout == alone.stdout  # byte for byte
    body = json.loads(pooled.stdout)
    assert body["warnings"] == [] and body["sequences"] == DOCS
    assert body["total_tokens"] == TOKENS


def test_a_file_repeating_some_ids(tmp_path):
    """Two halves of the sample and a third file repeating the first 50 documents: 250 rows of
    200 questions, the repeated documents' tokens counted once."""
    half, some = DOCS // 2, 50
    x = write_jsonl(tmp_path / "x.jsonl", ROWS[:half])
    y = write_jsonl(tmp_path / "y.jsonl", ROWS[half:])
    z = write_jsonl(tmp_path / "z.jsonl", ROWS[:some])
    rows = DOCS + some
    tokens = TOKENS + sum(r["tokens"] for r in ROWS[:some])
    body, _ = report([x, y, z, *POOLED, "--min-rows", DOCS + 1, "--min-tokens", TOKENS + 1], 1)
    assert body["sequences"] == rows and body["total_tokens"] == tokens
    (warning,) = body["warnings"]
    # y repeats none of the ids, but a question holds 2 rows of the pooled files
    assert warning.startswith(f"{OPENING}x.jsonl, y.jsonl and z.jsonl (2 rows a question among")
    assert failures(body) == {
        "sequences": (
            f"the {rows} rows repeat their questions (see the warning) and hold {DOCS}, fewer "
            f"than {DOCS + 1}; each question counts once"
        ),
        "total_tokens": (
            f"the {tokens:,} tokens are of rows that repeat their questions (see the warning) "
            f"and hold {TOKENS:,} tokens of distinct questions, fewer than {TOKENS + 1:,}; "
            "each question's tokens count once"
        ),
    }
    report([x, y, z, *POOLED, "--min-rows", DOCS, "--min-tokens", TOKENS], 0)


def test_a_question_s_tokens_are_its_fewest(tmp_path):
    """Re-runs that disagree on a question's tokens: it counts the fewer (5, not 7), so the
    floor fails closed; 2 questions of 5 + 3 = 8 tokens."""
    first = write_jsonl(tmp_path / "p.jsonl", [{"id": "q", "nll": 9.0, "tokens": 7}])
    second = write_jsonl(
        tmp_path / "r.jsonl",
        [{"id": "q", "nll": 8.0, "tokens": 5}, {"id": "s", "nll": 2.0, "tokens": 3}],
    )
    body, _ = report([first, second, *POOLED, "--min-tokens", 9], 1)
    assert body["total_tokens"] == 15
    assert "and hold 8 tokens of distinct questions, fewer than 9" in failures(body)["total_tokens"]
    report([first, second, *POOLED, "--min-tokens", 8], 0)


def test_a_summary_file_keeps_it(tmp_path):
    """A summary of the pooled files records their repeats on its sources and keeps its rows'
    question keys: its floors count 200 questions and their tokens, as the files read do."""
    a, b = copies(tmp_path)
    cbs = tmp_path / "pooled.cbs"
    made = run(["summarize", "--kind", "perplexity", a, b, *POOLED, "-o", cbs, "-q"])
    assert made.exit_code == 0, made.stderr
    body, _ = report([cbs, "--min-rows", 300], 1)
    (warning,) = body["warnings"]
    assert warning.startswith(OPENING) and warning.endswith(TAIL)
    assert failures(body) == {
        "sequences": (
            f"the {2 * DOCS} rows repeat their questions (see the warning) and hold {DOCS}, "
            f"fewer than 300; each question counts once"
        )
    }
    body, _ = report([cbs, "--min-tokens", TOKENS + 1], 1)
    assert f"hold {TOKENS:,} tokens of distinct" in failures(body)["total_tokens"]
    report([cbs, "--min-rows", DOCS, "--min-tokens", TOKENS], 0)


def test_a_part_of_a_pooled_file(tmp_path):
    """--part reads a range of one file: the ids repeated inside it are found there."""
    doubled = tmp_path / "doubled.jsonl"
    doubled.write_bytes(SAMPLE.read_bytes() * 2)
    cbs = tmp_path / "part.cbs"
    made = run(["summarize", "--kind", "perplexity", doubled, *POOLED, "--part", "1/1", "-o", cbs])
    assert made.exit_code == 0, made.stderr
    body, _ = report([cbs, "--min-rows", DOCS + 1], 1)
    assert body["sequences"] == 2 * DOCS
    assert "hold 200, fewer than 201" in failures(body)["sequences"]
