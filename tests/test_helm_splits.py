"""A HELM run evaluates each split it has (valid and test) and reports each apart: the rows
of a per_instance_stats.json naming several splits are the test split's, the others left out
and counted in a warning; a file of one split is read whole. Expected figures come from the
raw JSON here."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest
from harness import run

HELM = Path(__file__).resolve().parent / "fixtures" / "helm"
MMLU = HELM / "mmlu" / "per_instance_stats.json"
WIKITEXT = HELM / "wikitext" / "per_instance_stats.json"


def _with_split(entry: dict, split: str) -> dict:
    moved = copy.deepcopy(entry)
    for stat in moved["stats"]:
        stat["name"]["split"] = split
    return moved


def _mean(entry: dict, name: str) -> float:
    (found,) = [
        s for s in entry["stats"] if s["name"]["name"] == name and not s["name"].get("perturbation")
    ]
    return found["sum"] / found["count"]


def _split_file(tmp_path: Path, source: Path, splits: list[str]) -> tuple[Path, list[dict]]:
    """The fixture's unperturbed entries, entry i given ``splits[i % len(splits)]``."""
    entries = [e for e in json.loads(source.read_text()) if not e.get("perturbation")]
    moved = [_with_split(e, splits[i % len(splits)]) for i, e in enumerate(entries)]
    path = tmp_path / "per_instance_stats.json"
    path.write_text(json.dumps(moved, indent=2))
    return path, moved


def _report(args: list[str]) -> tuple[dict, str]:
    result = run([*args, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def test_the_test_split_is_read_and_the_others_named(tmp_path):
    path, entries = _split_file(tmp_path, MMLU, ["valid", "test"])
    test = [e for i, e in enumerate(entries) if i % 2 == 1]
    body, err = _report(["calibrate", str(path)])
    conf = [_mean(e, "max_prob") for e in test]
    correct = [_mean(e, "exact_match") for e in test]
    assert body["n"] == len(test) == 3
    assert body["accuracy"] == sum(correct) / 3
    assert body["mean_confidence"] == pytest.approx(math.fsum(conf) / 3, rel=1e-15)
    said = (
        "3 HELM entries of other splits left out ('valid' 3): HELM reports each split apart; "
        "the figures are the 'test' split's"
    )
    assert said in err and any(said in w for w in body["warnings"])


def test_perplexity_reads_the_test_split(tmp_path):
    path, entries = _split_file(tmp_path, WIKITEXT, ["test", "valid", "test"])
    test = [e for i, e in enumerate(entries) if i % 3 != 1]
    body, err = _report(["perplexity", str(path)])
    nll = -math.fsum(_mean(e, "logprob") for e in test)
    tokens = sum(int(_mean(e, "num_perplexity_tokens")) for e in test)
    assert (body["sequences"], body["total_tokens"]) == (len(test), tokens) == (2, tokens)
    assert body["perplexity"] == pytest.approx(math.exp(nll / tokens), rel=1e-15)
    assert "1 HELM entry of other splits left out ('valid' 1)" in err


def test_a_file_of_one_split_is_read_whole(tmp_path):
    path, entries = _split_file(tmp_path, MMLU, ["valid"])
    body, err = _report(["calibrate", str(path)])
    assert body["n"] == len(entries) == 6
    assert "other splits" not in err


def test_several_splits_without_test_are_refused(tmp_path):
    path, _ = _split_file(tmp_path, MMLU, ["valid", "train"])
    result = run(["calibrate", str(path), "--max-ece", "1"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        f"Error: {path}: the HELM entries are of the splits 'train', 'valid', which HELM "
        "reports apart, and none is 'test'; keep one split's entries in a file of its own"
    ]
