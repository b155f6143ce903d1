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


def _helm_with(statistic: str, value: object, tmp_path: Path) -> tuple[Path, list]:
    entries = json.loads(HELM_WIKITEXT.read_text(encoding="utf-8"))
    (stat,) = [s for s in entries[0]["stats"] if s["name"]["name"] == statistic]
    stat.update(sum=value, count=1)
    path = tmp_path / "per_instance_stats.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path, entries


def _helm_sum(entries: list, statistic: str) -> int:
    return sum(s["sum"] for e in entries for s in e["stats"] if s["name"]["name"] == statistic)


@pytest.mark.parametrize(
    "statistic, key", [("num_perplexity_tokens", "total_tokens"), ("num_bytes", "total_bytes")]
)
def test_helm_counts_past_a_double_keep_their_digits(tmp_path, statistic, key):
    # 2**53 + 1 is the first integer a double does not hold: read through a float it loses 1
    path, entries = _helm_with(statistic, 2**53 + 1, tmp_path)
    result = run(["perplexity", path, "--json", "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)[key] == _helm_sum(entries, statistic)
    assert _helm_sum(entries, statistic) % 2 == 1  # the odd total a float cannot carry


def test_helm_integers_past_a_double_are_read_as_native_rows_read_them(tmp_path):
    # a count is refused in one line, as any count past the limit; a log-probability sum is
    # -inf, a zero-probability sequence (an infinite perplexity), as "nll": 1e400 is
    path, _ = _helm_with("num_perplexity_tokens", 10**400, tmp_path)
    result = run(["perplexity", path, "--json", "-q"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: {path}:1: token count 1000")
    assert result.stderr.endswith(" is too large\n") and result.stderr.count("\n") == 1
    path, _ = _helm_with("logprob", -(10**400), tmp_path)
    result = run(["perplexity", path, "--json", "-q"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["perplexity"] is None and body["total_nll"] is None
    assert "perplexity is infinite" in result.stderr
