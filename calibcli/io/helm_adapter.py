"""What a HELM run folder says of its run: the adapter method the run put its instances to the
model with, and which of the folder's files hold no per-instance figures.

HELM's runner writes each run to ``runs/<suite>/<run spec name>/``: ``run_spec.json`` (the run
spec; its ``adapter_spec.method`` is how the instances were put to the model), the per-instance
statistics ``per_instance_stats.json`` (what calibcli reads), and beside them the scenario, the
requests and their results, the instances and the aggregate figures (:data:`SIDE_FILES`).

Only a ``language_modeling`` run scores a text: HELM's ``BasicGenerationMetric`` writes the
same ``logprob``, ``num_perplexity_tokens`` and ``num_bytes`` for every generation request
(``compute_language_modeling_metrics``), where they score the model's own output (a completion,
the letter of a multiple-choice answer), not a text given to it. :func:`perplexity_refusal`
says why ``perplexity`` cannot read a run whose folder names another method.
"""

from __future__ import annotations

import os

from calibcli.io.compression import without_suffix

LANGUAGE_MODELING = "language_modeling"
"""HELM's ``ADAPT_LANGUAGE_MODELING``: each instance's text scored as it is, in windows."""

STATS_FILE = "per_instance_stats.json"
"""The file of a HELM run folder that holds one entry of statistics per instance and trial."""

SIDE_FILES = (
    "run_spec.json",
    "scenario.json",
    "scenario_state.json",
    "stats.json",
    "instances.json",
    "predictions.json",
    "display_predictions.json",
    "display_requests.json",
)
"""The files HELM writes into a run folder beside ``per_instance_stats.json`` (the runner:
the run spec, the scenario, the requests and results, the aggregate statistics, the instances;
``helm-summarize``: the predictions and requests shown on its pages). None holds per-instance
statistics."""


def run_method(path: str) -> tuple[str, str] | None:
    """``(method, where it was read)`` of the HELM run whose ``per_instance_stats.json`` is at
    ``path``: the ``adapter_spec.method`` of the ``run_spec.json`` beside it, else the
    ``method`` argument of its run folder's name (``mmlu:subject=anatomy,method=
    multiple_choice_joint,...``). None for standard input, a file of another name, and a run
    whose folder names no method (a run spec that cannot be read names none)."""
    from calibcli.io.helm_spec import folder_argument, spec_method

    if path == "-" or without_suffix(os.path.basename(path)).lower() != STATS_FILE:
        return None
    method = spec_method(path)
    if method is not None:
        return method, "run_spec.json"
    method = folder_argument(os.path.basename(os.path.dirname(os.path.abspath(path))), "method")
    return None if method is None else (method, "the run folder's name")


def perplexity_refusal(path: str) -> str | None:
    """Why ``perplexity`` cannot read the HELM file at ``path``: its run folder names an
    adapter method other than ``language_modeling`` (:func:`run_method`), whose ``logprob``
    scores the model's output, not a text. None when it names that method or none."""
    found = run_method(path)
    if found is None or found[0] == LANGUAGE_MODELING:
        return None
    method, where = found
    other = " (read it with `calibrate`)" if method.startswith("multiple_choice") else ""
    return (
        f"a HELM run of adapter method {method!r} ({where}), not {LANGUAGE_MODELING!r}: its "
        f"'logprob' scores the model's own output (an answer, a completion), not a text, and "
        f"gives no perplexity{other}"
    )


def side_files(folder: str, names: list[str]) -> set[str]:
    """The names among ``names`` (a folder's files) of a HELM run folder's side files
    (:data:`SIDE_FILES`), left out of the folder's input files: empty unless the folder holds
    a ``per_instance_stats.json`` (compressed or not) or a ``run_spec.json``, so a file of one
    of those names in any other folder is read as given."""
    lowered = {name: without_suffix(name).lower() for name in names}
    if not {STATS_FILE, "run_spec.json"} & set(lowered.values()):
        return set()
    return {
        name
        for name, plain in lowered.items()
        if plain in SIDE_FILES and os.path.isfile(os.path.join(folder, name))
    }
