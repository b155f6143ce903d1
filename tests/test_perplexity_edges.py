"""perplexity at the edges of its input: counts of the non-native formats beyond what the
exact totals hold, given by lm-eval rolling rows and HELM entries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run

FIXTURES = Path(__file__).resolve().parent / "fixtures"
WIKITEXT = next((FIXTURES / "lm_eval").glob("samples_toy_wikitext_*.jsonl"))
HELM_WIKITEXT = FIXTURES / "helm" / "wikitext" / "per_instance_stats.json"


@pytest.mark.parametrize(
    "count, shown",
    [
        (2**63, "9223372036854775808"),  # past int64
        (2**62 + 1, "4611686018427387905"),  # past the native rows' limit
        ("9" * 30, "9" * 30),  # a digit string, as the harness may log a count
        (1e20, "100000000000000000000"),  # a whole float
    ],
)
def test_lm_eval_rolling_count_beyond_the_limit_is_an_input_error(tmp_path, count, shown):
    rows = [json.loads(line) for line in WIKITEXT.read_text(encoding="utf-8").splitlines()]
    ll = rows[3]["word_perplexity"][0]
    rows[3]["word_perplexity"] = [ll, count]
    path = tmp_path / WIKITEXT.name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = run(["perplexity", path, "--json", "-q", "--max-perplexity", "10"])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"Error: {path}:4: word count {shown} is too large\n"


@pytest.mark.parametrize(
    "statistic, value, message",
    [
        ("num_perplexity_tokens", 1e20, "token count 100000000000000000000 is too large"),
        ("num_bytes", 2**63, "byte count 9223372036854775808 is too large"),
    ],
)
def test_helm_count_beyond_the_limit_is_an_input_error(tmp_path, statistic, value, message):
    entries = json.loads(HELM_WIKITEXT.read_text(encoding="utf-8"))
    (stat,) = [s for s in entries[0]["stats"] if s["name"]["name"] == statistic]
    stat.update(sum=value, count=1)
    path = tmp_path / "per_instance_stats.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    result = run(["perplexity", path, "--json", "-q"])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"Error: {path}:1: {message}\n"
