"""A HELM language-modelling document of thousands of windows (a long book scored in windows of
the model's context), read as one document.

The entries are built as ``test_helm_windows`` builds them (HELM's ``LanguageModelingMetric``
shape). The logprobs are seeded random floats, not binary fractions: the expected NLL is their
exact sum (:class:`fractions.Fraction`) rounded once, which a float sum in window order misses."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest
from harness import run
from test_helm_windows import window, write

from calibcli.io.helm_run import unperturbed

WINDOWS = 2000


def long_document(n=WINDOWS, seed=107):
    """(logprob, num_perplexity_tokens, num_bytes) of each of ``n`` windows of one document."""
    rng = random.Random(seed)
    return [
        (-rng.uniform(1.0, 3000.0), rng.randint(1, 2048), rng.randint(1, 9000)) for _ in range(n)
    ]


def perplexity(path):
    return run(["perplexity", str(path), "--json", "-q"])


def test_the_windows_pool_to_their_exact_sums(tmp_path):
    figures = long_document()
    path = write(tmp_path / "wikitext_103:model=openai_gpt2", [window("id0", *w) for w in figures])
    exact = sum(Fraction(-logprob) for logprob, _, _ in figures)
    in_order = 0.0
    for logprob, _, _ in figures:
        in_order -= logprob
    assert in_order != float(exact)  # the figures tell an exact sum from a float one

    result = perplexity(path)
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    tokens = sum(t for _, t, _ in figures)
    nbytes = sum(b for _, _, b in figures)
    assert (body["sequences"], body["total_tokens"], body["total_bytes"]) == (1, tokens, nbytes)
    assert body["total_nll"] == float(exact)
    assert body["perplexity"] == pytest.approx(math.exp(float(exact) / tokens), rel=1e-12)
    assert body["warnings"] == []


def reordered(entry):
    """The same entry, its keys written in the reverse order (an equal JSON object)."""
    return dict(reversed(entry.items()))


def integral_as_float(entry):
    """The same entry, an integral statistic written as a float (an equal JSON value)."""
    stats = [dict(s) for s in entry["stats"]]
    batch = next(s for s in stats if s["name"]["name"] == "batch_size")
    batch["sum"] = float(batch["sum"])
    return {**entry, "stats": stats}


@pytest.mark.parametrize("copy", [dict, reordered, integral_as_float])
def test_a_copy_of_an_early_window_far_into_the_document_is_a_duplicate(tmp_path, copy):
    entries = [window("id0", *w) for w in long_document()]
    entries[1500] = copy(entries[3])
    path = write(tmp_path / "run", entries, compact=True)  # entry k on line k + 2
    result = perplexity(path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert f"{path}:1502: the row of id 'id0' (trial 0) was read before, at {path}:2" in (
        result.stderr
    )


class Counted(dict):
    """A decoded entry that counts how often it is compared with another."""

    comparisons = 0

    def __eq__(self, other):
        Counted.comparisons += 1
        return dict.__eq__(self, other)

    def __ne__(self, other):
        Counted.comparisons += 1
        return dict.__ne__(self, other)


def test_a_window_is_compared_only_with_the_windows_it_may_copy(monkeypatch):
    # each window is checked for being a copy of an earlier one: against every earlier window,
    # the windows of a document would be compared n * (n - 1) / 2 times
    monkeypatch.setattr(Counted, "comparisons", 0)
    figures = long_document(1000)
    entries = [(k + 2, Counted(window("id0", *w)), 0, 1) for k, w in enumerate(figures)]
    (line, pooled, start, end), *rest = unperturbed(iter(entries), None)
    assert rest == [] and (line, start, end) == (2, 0, 1)
    assert Counted.comparisons < len(entries)
    stats = {s["name"]["name"]: s for s in pooled["stats"]}
    assert stats["logprob"]["count"] == len(entries)
    assert stats["logprob"]["sum"] == float(sum(Fraction(logprob) for logprob, _, _ in figures))
