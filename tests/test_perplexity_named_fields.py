"""A count field named by its option that no row holds is said: a misspelt --bytes-field or
--words-field left bits per byte and word perplexity out without a word. The default names
say nothing when absent (most rows carry no byte counts)."""

from __future__ import annotations

import json

import pytest
from harness import run, write_jsonl

ROWS = [{"nll": 2.0 + i, "tokens": 3 + i, "n_bytes": 10 + i} for i in range(4)]


@pytest.mark.parametrize(
    ("option", "field", "said"),
    [
        (
            "--bytes-field",
            "nbytes",
            "--bytes-field nbytes: no row holds it, so the figures per byte are not given",
        ),
        (
            "--words-field",
            "n_words",
            "--words-field n_words: no row holds it, so the figures per word are not given",
        ),
    ],
)
def test_a_named_field_no_row_holds_is_said(tmp_path, option, field, said):
    path = write_jsonl(tmp_path / "p.jsonl", ROWS)
    result = run(["perplexity", path, option, field, "--json"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert said in body["warnings"] and f"warning: {said}" in result.stderr
    assert body["total_tokens"] == sum(r["tokens"] for r in ROWS)


def test_default_names_and_fields_found_say_nothing(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", ROWS)
    for args in ([], ["--bytes-field", "n_bytes"]):
        body = json.loads(run(["perplexity", path, *args, "--json", "-q"]).stdout)
        assert not [w for w in body["warnings"] if "no row holds it" in w]
    found = json.loads(run(["perplexity", path, "--bytes-field", "n_bytes", "--json"]).stdout)
    assert found["total_bytes"] == sum(r["n_bytes"] for r in ROWS)
