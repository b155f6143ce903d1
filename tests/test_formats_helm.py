"""HELM per_instance_stats.json (tests/fixtures/helm/README.md): multiple-choice entries give
(max_prob, exact_match) rows, language-modelling entries (logprob, num_perplexity_tokens,
num_bytes) perplexity rows; expected figures come from the raw JSON here."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from harness import run

HELM = Path(__file__).resolve().parent / "fixtures" / "helm"
MMLU = HELM / "mmlu" / "per_instance_stats.json"
WIKITEXT = HELM / "wikitext" / "per_instance_stats.json"


def stat(entry: dict, name: str) -> float:
    (found,) = [
        s for s in entry["stats"] if s["name"]["name"] == name and not s["name"].get("perturbation")
    ]
    return found["sum"] / found["count"]


def report(args, code=0):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def test_multiple_choice_entries():
    # the unperturbed entries: HELM reports the perturbed copy of id100 apart
    entries = [e for e in json.loads(MMLU.read_text()) if not e.get("perturbation")]
    conf = [stat(e, "max_prob") for e in entries]
    correct = [stat(e, "exact_match") for e in entries]
    body = report(["calibrate", str(MMLU)])
    assert body["format"] == "helm" and body["n"] == len(entries) == 6
    assert body["accuracy"] == sum(correct) / 6
    assert body["mean_confidence"] == pytest.approx(math.fsum(conf) / 6, rel=1e-15)
    brier = math.fsum((c - y) ** 2 for c, y in zip(conf, correct, strict=True)) / 6
    assert body["brier"] == pytest.approx(brier, rel=1e-12)


def test_perturbed_entries_are_left_out_and_said():
    # HELM names a perturbed instance's statistics with its perturbation (add_context), so
    # the copy of id100 under "typos" holds no unperturbed max_prob: it was an error before
    result = run(["calibrate", str(MMLU), "--json"])
    assert result.exit_code == 0, result.stderr
    assert (
        "per_instance_stats.json: 1 perturbed HELM entry left out (typos 1): HELM reports "
        "perturbed instances apart (robustness, fairness); the figures are the unperturbed "
        "instances'"
    ) in result.stderr


def test_language_modelling_entries():
    entries = json.loads(WIKITEXT.read_text())
    nll = -math.fsum(stat(e, "logprob") for e in entries)
    tokens = sum(int(stat(e, "num_perplexity_tokens")) for e in entries)
    nbytes = sum(int(stat(e, "num_bytes")) for e in entries)
    body = report(["perplexity", str(WIKITEXT)])
    assert (body["sequences"], body["total_tokens"], body["total_bytes"]) == (3, tokens, nbytes)
    assert body["total_nll"] == nll
    # HELM's own pooled figure: e ** (-sum logprob / sum num_perplexity_tokens)
    assert body["perplexity"] == pytest.approx(math.e ** (nll / tokens), rel=1e-15)
    assert body["bits_per_byte"] == pytest.approx(nll / nbytes / math.log(2), rel=1e-15)


def test_compare_matches_instances_and_trials(tmp_path):
    entries = json.loads(MMLU.read_text())
    other = tmp_path / "per_instance_stats.json"
    other.write_text(json.dumps(entries[::-1]))
    body = report(["compare", str(MMLU), str(other)])
    assert body["id_field"] == "instance_id + train_trial_index"
    assert body["matched"] == 6  # the perturbed copy of id100 is left out on both sides


def test_the_other_kind_is_named(tmp_path):
    result = run(["calibrate", str(WIKITEXT)])
    assert result.exit_code == 2
    assert "no 'max_prob' statistic (a HELM run of another kind: read it with `perplexity`)" in (
        result.stderr
    )
    entries = json.loads(MMLU.read_text())
    for s in entries[1]["stats"]:
        if s["name"]["name"] == "exact_match" and not s["name"].get("perturbation"):
            s["sum"] = 0.5
    bad = tmp_path / "per_instance_stats.json"
    bad.write_text(json.dumps(entries, indent=2))
    result = run(["calibrate", str(bad)])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert f"{bad}:" in result.stderr and "exact_match 0.5 is not 0 or 1" in result.stderr
