"""summarize --kind perplexity says a --bytes-field or --words-field no row holds, as the
perplexity command says it, and keeps the warning in the summary it writes: bits per byte of
the merged parts would otherwise be missing without a word."""

from __future__ import annotations

import json
import math

import pytest
from harness import run

SAID = "--bytes-field nbytes: no row holds it, so the figures per byte are not given"


def write_rows(path, key):
    path.write_text(
        f'{{"nll": 2.0, "tokens": 3, "{key}": 9}}\n{{"nll": 1.0, "tokens": 2, "{key}": 6}}\n'
    )
    return str(path)


def body(*args):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_a_count_field_no_row_holds_is_said_by_summarize_and_kept(tmp_path):
    rows = write_rows(tmp_path / "ppl.jsonl", "bytes")
    part = str(tmp_path / "ppl.cbs")
    made = run(["summarize", rows, "--kind", "perplexity", "--bytes-field", "nbytes", "-o", part])
    assert made.exit_code == 0, made.stderr
    assert f"warning: {SAID}" in made.stderr
    measured = body("perplexity", part)
    assert SAID in measured["warnings"]
    assert "bits_per_byte" not in measured
    # the command reading the rows itself says the same
    assert SAID in body("perplexity", rows, "--bytes-field", "nbytes")["warnings"]


@pytest.mark.parametrize(("key", "option"), [("bytes", []), ("b", ["--bytes-field", "b"])])
def test_a_field_the_rows_hold_says_nothing(tmp_path, key, option):
    rows = write_rows(tmp_path / "ppl.jsonl", key)
    part = str(tmp_path / "ppl.cbs")
    made = run(["summarize", rows, "--kind", "perplexity", *option, "-o", part])
    assert made.exit_code == 0, made.stderr
    assert "--bytes-field" not in made.stderr
    # 3 nats over 15 bytes: 3 / (15 ln 2) bits per byte
    assert body("perplexity", part)["bits_per_byte"] == pytest.approx(
        3.0 / (15 * math.log(2)), rel=1e-15
    )
