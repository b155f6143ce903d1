"""HELM ``per_instance_stats.json`` entries as HELM's metrics write them, for the tests of the
kinds of run calibcli reads and of the entries several metrics write for one instance.

Each statistic is a ``Stat`` after one ``add`` (``metrics/statistic.py``), named with the split
as ``add_context`` names it. A request's entry opens with what ``compute_request_state_metrics``
writes (``metrics/basic_metrics.py``: the references, the trials, the efficiency figures, the
finish reason, the truncation), then its metric's own: ``BasicGenerationMetric`` adds the
reference metrics (``max_prob`` = exp of the completion's logprob, then the names asked for,
``evaluate_reference_metrics.py``) when the instance has references, then the language-modelling
statistics of the completion (``compute_language_modeling_metrics``); ``LanguageModelingMetric``
adds those of the text it echoes. The runner writes a metric's entries after the previous
metric's (``runner.py``). The figures the tests expect are computed in the tests from the values
written here."""

from __future__ import annotations

import json
import math
from pathlib import Path


def stat(name, value, split="test", perturbation=None):
    """A HELM ``Stat`` after ``Stat(MetricName(name)).add(value)`` as ``asdict_without_nones``
    writes it (a value of None leaves count 0 and no min, max or mean)."""
    named = {"name": name, "split": split}
    if perturbation is not None:
        named["perturbation"] = perturbation
    if value is None:
        return {"name": named, "count": 0, "sum": 0, "sum_squared": 0}
    return {
        "name": named,
        "count": 1,
        "sum": value,
        "sum_squared": value * value,
        "min": value,
        "max": value,
        "mean": float(value),
        "variance": 0.0,
        "stddev": 0.0,
    }


def request(references, prompt, completion, output):
    """The statistics ``compute_request_state_metrics`` writes of one request: ``prompt``
    tokens sent, ``completion`` tokens returned, ``output`` of them generated."""
    return [
        stat("num_references", references),
        stat("num_train_trials", 1),
        stat("num_prompt_tokens", prompt),
        stat("num_completion_tokens", completion),
        stat("num_output_tokens", output),
        stat("training_co2_cost", None),
        stat("training_energy_cost", None),
        stat("inference_runtime", 0.25),
        stat("batch_size", 1),
        stat("finish_reason_length", 1),
        stat("finish_reason_stop", 0),
        stat("finish_reason_endoftext", 0),
        stat("finish_reason_unknown", 0),
        stat("num_train_instances", 5),
        stat("prompt_truncated", 0),
    ]


EXACT_MATCH = ("exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match")
"""The names ``get_exact_match_metric_specs`` asks ``BasicGenerationMetric`` for."""

F1 = ("exact_match", "quasi_exact_match", "f1_score")
"""The names ``get_f1_metric_specs`` asks ``BasicGenerationMetric`` for."""


def answer_entry(i, logprob, right, names=EXACT_MATCH, trial=0):
    """``BasicGenerationMetric``'s entry of a multiple-choice-joint (or one-token generation)
    request: the answer letter generated with ``logprob``, ``max_prob`` its probability."""
    stats = request(4, 420, 1, 1)
    stats.append(stat("max_prob", math.exp(logprob)))
    stats += [stat(name, int(right)) for name in names]
    stats += [stat("logprob", logprob), stat("num_perplexity_tokens", 1), stat("num_bytes", 2)]
    return {"instance_id": f"id{i}", "train_trial_index": trial, "stats": stats}


def completion_entry(i, logprob, tokens):
    """``BasicGenerationMetric``'s entry of a generation request for an instance without
    references (HELM Instruct's self_instruct): the completion's ``tokens``, all generated."""
    stats = request(0, 40, tokens, tokens)
    stats += [
        stat("logprob", logprob),
        stat("num_perplexity_tokens", tokens),
        stat("num_bytes", 4 * tokens),
    ]
    return {"instance_id": f"id{i}", "train_trial_index": 0, "stats": stats}


def text_entry(i, logprob, tokens, nbytes):
    """``LanguageModelingMetric``'s entry of a document scored in one window: the text echoed
    (one conditioning token before it), nothing generated."""
    stats = request(0, tokens + 1, tokens + 1, 0)
    stats += [
        stat("logprob", logprob),
        stat("num_perplexity_tokens", tokens),
        stat("num_bytes", nbytes),
    ]
    return {"instance_id": f"id{i}", "train_trial_index": 0, "stats": stats}


def toxicity_entry(i):
    """``ToxicityMetric``'s entry (the generative-harms metrics) of an instance."""
    stats = [
        stat("expected_max_toxicity", 0.0625),
        stat("max_toxicity_probability", 0),
        stat("toxic_frac", 0.0),
    ]
    return {"instance_id": f"id{i}", "train_trial_index": 0, "stats": stats}


def chain_of_thought_entry(i, right):
    """``GPQAChainOfThoughtMetric``'s entry of an instance."""
    stats = [stat("chain_of_thought_correctness", int(right))]
    return {"instance_id": f"id{i}", "train_trial_index": 0, "stats": stats}


SIDE_FILES = (
    "scenario.json",
    "scenario_state.json",
    "stats.json",
    "instances.json",
    "display_predictions.json",
    "display_requests.json",
)


def write_run(folder, entries, method=None, side=False, compact=False):
    """A HELM run folder: its ``per_instance_stats.json`` (as HELM writes it, ``indent=2``;
    ``compact``: entry k on line k + 2), with ``method`` its ``run_spec.json`` (the run spec
    named for the folder, its ``adapter_spec.method``), with ``side`` the other files HELM
    writes there. Returns the statistics file's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "per_instance_stats.json"
    if compact:
        path.write_text("[\n" + ",\n".join(json.dumps(e) for e in entries) + "\n]\n")
    else:
        path.write_text(json.dumps(entries, indent=2))
    if method is not None:
        spec = {
            "name": folder.name,
            "scenario_spec": {"class_name": "helm.benchmark.scenarios.Scenario", "args": {}},
            "adapter_spec": {"method": method, "model": "openai/gpt2", "max_train_instances": 5},
            "metric_specs": [],
            "groups": [folder.name.partition(":")[0]],
        }
        (folder / "run_spec.json").write_text(json.dumps(spec, indent=2))
    if side:
        aggregate = [stat("num_instances", len(entries))]
        for name in SIDE_FILES:
            body = aggregate if name == "stats.json" else {"name": name, "requests": []}
            (folder / name).write_text(json.dumps(body, indent=2))
    return path
