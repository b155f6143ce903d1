"""``--id-field`` given beside summary files whose rows have no ids is refused: the check it asks
for (no row counted twice) cannot be made on them, and was skipped without a word, so rows of
two overlapping files counted twice and met --min-rows.

a.jsonl holds ids q0 .. q99 and b.jsonl q50 .. q149: 50 ids are in both, 200 rows in all.
"""

from __future__ import annotations

import pytest
from harness import run, write_jsonl


@pytest.fixture
def files(tmp_path):
    def rows(lo, hi):
        return [
            {
                "id": f"q{i}",
                "confidence": 0.5 + i / 400,
                "correct": i % 2 == 0,
                "nll": 1.0 + i,
                "tokens": 3,
            }
            for i in range(lo, hi)
        ]

    return write_jsonl(tmp_path / "a.jsonl", rows(0, 100)), write_jsonl(
        tmp_path / "b.jsonl", rows(50, 150)
    )


def summarize(tmp_path, path, command="summarize", *extra):
    out = tmp_path / (path.stem + "".join(extra).replace("-", "") + ".cbs")
    args = [command, path, "--kind", "calibration", "-o", out, "-q", *extra]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    return out


def refusal(path):
    return (
        f"Error: {path}: its rows were read without --id-field, so their ids are not known: "
        "--id-field id cannot check them for repeats (summarize the inputs with --id-field id, "
        "or drop it)"
    )


def test_summaries_without_ids_read_with_id_field_are_refused(tmp_path, files):
    a, b = files
    sa, sb = summarize(tmp_path, a), summarize(tmp_path, b)
    for args in ([sa, sb], [a, sb]):
        result = run(["calibrate", *args, "--id-field", "id", "--min-rows", "150", "-q"])
        assert result.exit_code == 2
        assert result.stderr.strip() == refusal(args[-1] if args[0] == a else sa)


def test_perplexity_summaries_too(tmp_path, files):
    a, _ = files
    pa = tmp_path / "pa.cbs"
    assert run(["summarize", a, "--kind", "perplexity", "-o", pa, "-q"]).exit_code == 0
    result = run(["perplexity", pa, "--id-field", "id", "-q"])
    assert result.exit_code == 2
    assert result.stderr.strip() == refusal(pa)


def test_summaries_with_ids_find_the_repeated_rows(tmp_path, files):
    a, b = files
    sa = summarize(tmp_path, a, "summarize", "--id-field", "id")
    sb = summarize(tmp_path, b, "summarize", "--id-field", "id")
    result = run(["calibrate", sa, sb, "--id-field", "id", "-q"])
    assert result.exit_code == 2
    assert "a row is in two of the parts (the same id)" in result.stderr
    # without --id-field the summaries' own ids still find them
    assert run(["calibrate", sa, sb, "-q"]).exit_code == 2
