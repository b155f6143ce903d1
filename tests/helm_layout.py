"""HELM run folders as HELM writes them, for the tests of the models and scenarios they name.

``helm-run`` writes each run to ``benchmark_output/runs/<suite>/<run spec name>/``: the folder is
named for the run spec (``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2``,
each ``/`` of the model written ``_``), and holds ``run_spec.json`` (the spec: its ``name`` and
``adapter_spec``, whose ``model`` is ``openai/gpt2``), ``per_instance_stats.json`` (a JSON array
of ``PerInstanceStats``, one per instance and train trial, its instances numbered ``id0``... in
every scenario) and ``stats.json``. The figures the tests expect are computed here with numpy
from the values written, never by calibcli."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

SUITE = ("benchmark_output", "runs", "v1")


def stat(name, value, split="test"):
    """A HELM ``Stat`` of one request: count 1, its value as sum, min, max and mean."""
    return {
        "name": {"name": name, "split": split},
        "count": 1,
        "sum": value,
        "sum_squared": value * value,
        "min": value,
        "max": value,
        "mean": value,
    }


def choice_entry(i, confidence, right, trial=0):
    """A multiple-choice ``PerInstanceStats``: ``max_prob`` and ``exact_match`` among the
    statistics HELM writes beside them."""
    stats = [
        stat("num_references", 4),
        stat("num_train_trials", 1),
        stat("max_prob", confidence),
        stat("exact_match", int(right)),
        stat("quasi_exact_match", int(right)),
    ]
    return {"instance_id": f"id{i}", "train_trial_index": trial, "stats": stats}


def text_entry(i, logprob, tokens, nbytes):
    """A language-modelling ``PerInstanceStats``: ``logprob``, ``num_perplexity_tokens`` and
    ``num_bytes`` of one document scored in one window."""
    stats = [
        stat("num_references", 0),
        stat("num_train_trials", 1),
        stat("logprob", logprob),
        stat("num_perplexity_tokens", tokens),
        stat("num_bytes", nbytes),
    ]
    return {"instance_id": f"id{i}", "train_trial_index": 0, "stats": stats}


def choice_rows(n, seed, shift=0.0):
    """(confidences, outcomes) of ``n`` instances from ``default_rng(seed)``: each answer right
    with probability its confidence less ``shift`` (0: calibrated; more: overconfident)."""
    rng = np.random.default_rng(seed)
    confidence = rng.uniform(0.3, 1.0, n)
    right = rng.uniform(0.0, 1.0, n) < confidence - shift
    return confidence, right


def write_run(root, name, entries, model=None, spec=True, method="multiple_choice_joint"):
    """Write a run folder ``name`` under ``root``'s suite: its ``per_instance_stats.json``, and
    with ``spec`` its ``run_spec.json`` (``adapter_spec``: ``model``, ``method``) and
    ``stats.json``. Returns the statistics file's path, as a string."""
    folder = Path(root, *SUITE, name)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "per_instance_stats.json"
    path.write_text(json.dumps(entries, indent=2), encoding="utf-8")
    if spec:
        adapter = {"method": method, "max_train_instances": 5}
        if model is not None:
            adapter.update(model=model, model_deployment=model)
        run_spec = {
            "name": name,
            "scenario_spec": {"class_name": "helm.benchmark.scenarios.Scenario", "args": {}},
            "adapter_spec": adapter,
            "metric_specs": [],
        }
        (folder / "run_spec.json").write_text(json.dumps(run_spec, indent=2), encoding="utf-8")
        (folder / "stats.json").write_text("[]", encoding="utf-8")
    return str(path)


def choice_run(root, name, confidence, right, model=None, spec=True, trials=1):
    """A multiple-choice run of these instances (each written once per train trial)."""
    entries = [
        choice_entry(i, float(c), bool(y), t)
        for t in range(trials)
        for i, (c, y) in enumerate(zip(confidence, right, strict=True))
    ]
    return write_run(root, name, entries, model, spec)


def ece(confidence, right, bins=10):
    """ECE over ``bins`` equal-width bins, left-closed (1.0 in the last), in numpy."""
    confidence = np.asarray(confidence, float)
    right = np.asarray(right, float)
    k = np.minimum((confidence * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        held = k == b
        if held.any():
            total += held.sum() * abs(confidence[held].mean() - right[held].mean())
    return total / len(confidence)
