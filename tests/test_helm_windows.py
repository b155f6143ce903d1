"""HELM language-modelling runs whose documents are longer than the model's context.

HELM's ``LanguageModelingAdapter`` (``adaptation/adapters/language_modeling_adapter.py``)
splits such a document into windows, one request each, all of the instance; its
``LanguageModelingMetric`` (``metrics/language_modeling_metrics.py``) writes one
``PerInstanceStats`` per request, in request order, with the instance's id and
``train_trial_index`` 0, and the runner writes them as they are. HELM's perplexity and bits per
byte pool every window (``compute_perplexity_metrics``: e ** (-sum logprob / sum tokens),
-sum logprob / sum bytes / ln 2). The entries here are built by hand in that shape: each
statistic a ``Stat`` after one ``add`` (``metrics/statistic.py``), named with the split as
``add_context`` names it, the statistics those of ``compute_request_state_metrics`` then
``compute_language_modeling_metrics`` (``metrics/basic_metrics.py``). The expected figures are
hand sums of the values below (binary fractions, so every sum is exact)."""

from __future__ import annotations

import json
import math

import pytest
from harness import run
from helm_requests import stat as helm_stat

# (instance, logprob, num_perplexity_tokens, num_bytes) of each window, in the order HELM writes
WINDOWS = [
    ("id0", -4000.5, 2048, 9000),
    ("id0", -1000.25, 500, 2100),
    ("id1", -3900.75, 2048, 8800),
    ("id1", -4100.125, 2048, 8900),
    ("id1", -40.0, 17, 70),
    ("id2", -300.5, 100, 450),
]
NLL = 4000.5 + 1000.25 + 3900.75 + 4100.125 + 40.0 + 300.5  # 13342.125
TOKENS = 2048 + 500 + 2048 + 2048 + 17 + 100  # 6761
BYTES = 9000 + 2100 + 8800 + 8900 + 70 + 450  # 29320
DOCUMENTS = 3


def stat(name, value, perturbation=None):
    """A HELM ``Stat`` of the test split (:func:`helm_requests.stat`)."""
    return helm_stat(name, value, perturbation=perturbation)


def window(instance, logprob, tokens, nbytes, trial=0, perturbation=None, extra=()):
    """One ``PerInstanceStats`` of ``LanguageModelingMetric``: the request's bookkeeping, then
    its language-modelling statistics (``extra``: further (name, value) statistics)."""
    values = [
        ("num_references", 0),
        ("num_train_trials", 1),
        ("num_prompt_tokens", tokens + 1),
        ("num_completion_tokens", tokens + 1),
        ("num_output_tokens", 0),
        ("training_co2_cost", None),
        ("training_energy_cost", None),
        ("inference_runtime", 0.5),
        ("batch_size", 1),
        ("finish_reason_length", 1),
        ("finish_reason_stop", 0),
        ("finish_reason_endoftext", 0),
        ("finish_reason_unknown", 0),
        ("num_train_instances", 0),
        ("prompt_truncated", 0),
        *extra,
        ("logprob", logprob),
        ("num_perplexity_tokens", tokens),
        ("num_bytes", nbytes),
    ]
    entry = {"instance_id": instance, "train_trial_index": trial}
    if perturbation is not None:
        entry["perturbation"] = perturbation
    entry["stats"] = [stat(name, value, perturbation) for name, value in values]
    return entry


def write(folder, entries, compact=False):
    """``per_instance_stats.json`` in ``folder`` (as HELM writes it, ``indent=2``; ``compact``:
    one entry a line, entry k on line k + 2)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "per_instance_stats.json"
    if compact:
        path.write_text("[\n" + ",\n".join(json.dumps(e) for e in entries) + "\n]\n")
    else:
        path.write_text(json.dumps(entries, indent=2))
    return path


@pytest.fixture
def windows(tmp_path):
    return write(tmp_path / "wikitext_103:model=openai_gpt2", [window(*w) for w in WINDOWS])


def perplexity(*args):
    return run(["perplexity", *map(str, args), "--json", "-q"])


def test_a_document_s_windows_are_its_tokens_pooled_as_helm_pools_them(windows):
    result = perplexity(windows)
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["format"] == "helm"
    assert (body["sequences"], body["total_tokens"], body["total_bytes"]) == (
        DOCUMENTS,
        TOKENS,
        BYTES,
    )
    assert body["total_nll"] == NLL
    assert body["perplexity"] == pytest.approx(math.exp(NLL / TOKENS), rel=1e-15)
    assert body["bits_per_byte"] == pytest.approx(NLL / math.log(2) / BYTES, rel=1e-15)
    assert body["warnings"] == []
    assert "re-run" not in result.stderr


def test_all_runs_reads_them_alike_and_calls_them_no_re_runs(windows):
    result = perplexity(windows, "--all-runs")
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["sequences"], body["total_tokens"], body["total_nll"]) == (DOCUMENTS, TOKENS, NLL)
    assert body["warnings"] == [] and "re-run" not in result.stderr


def test_min_tokens_counts_every_scored_token(windows):
    assert perplexity(windows, "--min-tokens", TOKENS).exit_code == 0
    result = perplexity(windows, "--min-tokens", TOKENS + 1)
    assert result.exit_code == 1
    assert f"total_tokens = {TOKENS} is below --min-tokens {TOKENS + 1}" in result.stderr


def test_min_rows_counts_documents(windows):
    assert perplexity(windows, "--min-rows", DOCUMENTS).exit_code == 0
    result = perplexity(windows, "--min-rows", DOCUMENTS + 1)
    assert result.exit_code == 1
    assert f"sequences = {DOCUMENTS} is below --min-rows {DOCUMENTS + 1}" in result.stderr


def test_an_entry_written_twice_is_a_duplicate(tmp_path):
    # windows score different spans of a document: the same entry twice is a copy
    entries = [window(*w) for w in WINDOWS]
    path = write(tmp_path / "run", [*entries[:2], entries[1], *entries[2:]], compact=True)
    result = perplexity(path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert f"{path}:4: the row of id 'id0' (trial 0) was read before, at {path}:2" in (
        result.stderr
    )


def test_windows_not_one_after_another_are_duplicates(tmp_path):
    # HELM writes a document's windows one after another
    entries = [window(*w) for w in WINDOWS]
    path = write(tmp_path / "run", [entries[0], entries[5], entries[1]], compact=True)
    result = perplexity(path)
    assert result.exit_code == 2
    assert f"{path}:4: the row of id 'id0' (trial 0) was read before, at {path}:2" in (
        result.stderr
    )


def test_windows_in_two_files_are_duplicates(tmp_path):
    entries = [window(*w) for w in WINDOWS]
    first = write(tmp_path / "a", entries[:1], compact=True)
    second = write(tmp_path / "b", entries[1:2], compact=True)
    result = perplexity(first, second)
    assert result.exit_code == 2
    assert "the row of id 'id0' (trial 0) was read before" in result.stderr


def test_entries_scoring_answers_repeated_are_duplicates(tmp_path):
    # a generation run's entry (BasicGenerationMetric) holds the language-modelling statistics
    # and the answer's scores: two of one instance are never windows
    scored = [("exact_match", 1), ("max_prob", 0.75)]
    entries = [window("id0", -4.5, 3, 12, extra=scored), window("id0", -2.25, 2, 9, extra=scored)]
    path = write(tmp_path / "run", entries, compact=True)
    result = run(["calibrate", str(path), "--json", "-q"])
    assert result.exit_code == 2
    assert f"{path}:3: the row of id 'id0' (trial 0) was read before" in result.stderr
    # their logprob scores the answer, not a text: perplexity refuses the first
    result = run(["perplexity", str(path), "--json", "-q"])
    assert result.exit_code == 2
    assert f"{path}:2: 'max_prob' and 'exact_match' beside 'logprob'" in result.stderr


def test_train_trials_stay_re_runs(tmp_path):
    # only trial 0 is written by LanguageModelingMetric: another trial is a re-run, read as today
    entries = [window("id0", -4.5, 3, 12), window("id0", -2.25, 3, 12, trial=1)]
    entries += [window("id1", -1.5, 2, 8), window("id1", -0.5, 2, 8, trial=1)]
    path = write(tmp_path / "run", entries)
    result = perplexity(path)
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["sequences"], body["total_tokens"], body["total_nll"]) == (4, 10, 8.75)
    assert "HELM runs scored each instance several times" in body["warnings"][0]
    assert "(2 train trials)" in body["warnings"][0]


def test_a_bad_window_is_named_at_its_own_line(tmp_path):
    entries = [window(*w) for w in WINDOWS]
    entries[1] = window("id0", 5.0, 500, 2100)
    path = write(tmp_path / "run", entries, compact=True)
    result = perplexity(path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert f"{path}:3: logprob 5.0 is greater than 0, not a log-probability" in result.stderr


def test_a_perturbed_document_s_windows_are_left_out(tmp_path):
    typos = {"name": "typos", "robustness": True, "fairness": False, "prob": 0.1}
    entries = [window(*w) for w in WINDOWS[:2]]
    entries += [window(*w, perturbation=typos) for w in WINDOWS[:2]]
    entries += [window(*w) for w in WINDOWS[2:]]
    result = perplexity(write(tmp_path / "run", entries))
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert (body["sequences"], body["total_tokens"], body["total_nll"]) == (DOCUMENTS, TOKENS, NLL)
    assert "2 perturbed HELM entries left out (typos 2)" in body["warnings"][0]


def test_calibrate_names_the_kind(windows):
    result = run(["calibrate", str(windows)])
    assert result.exit_code == 2
    assert "no 'max_prob' statistic (a HELM run of another kind: read it with `perplexity`)" in (
        result.stderr
    )
