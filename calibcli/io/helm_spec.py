"""Whose run a HELM ``per_instance_stats.json`` holds and what it asked, as its run folder says.

HELM writes a run to ``benchmark_output/runs/<suite>/<run spec name>/``: the folder is named
for the run spec (``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2``, each
``/`` of the name written ``_``, so the model ``openai/gpt2`` reads ``openai_gpt2`` there), and
its ``run_spec.json`` holds the spec itself, its ``name`` and ``adapter_spec.model`` (the model
as HELM names it, ``openai/gpt2``). The statistics themselves name neither, and HELM numbers
every scenario's instances from ``id0``: runs of two models, or of two subjects, hold the same
ids. So a run's model is the folder name's ``model=`` argument as written, else
``run_spec.json``'s ``adapter_spec.model`` spelled so; its scenario the folder's name without the
model (:func:`~calibcli.io.helm_run.helm_scenario`), else ``run_spec.json``'s ``name`` read
the same way. A file copied out of its run folder, with no ``run_spec.json`` beside it, names
neither, as other formats' unnamed runs.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import PurePath

from calibcli.io.content import file_version
from calibcli.io.helm_run import helm_questions, helm_scenario, scenario_named

RUN_SPEC = "run_spec.json"
STATS_NAME = "per_instance_stats.json"
"""The name HELM gives every run's statistics, whatever its model and scenario."""
_MOST_BYTES = 1 << 22  # a run spec is a few KiB: a larger file is not read


def helm_model(path: str) -> str | None:
    """The model the HELM run whose ``per_instance_stats.json`` is at ``path`` ran, spelled as
    HELM names its run folder (``openai_gpt2``, each ``/`` written ``_``): the folder name's
    ``model=`` argument, else ``run_spec.json``'s ``adapter_spec.model`` beside it so spelled
    (a run with and without its run spec is one model; where the two disagree, the folder's,
    which its ids carry too); None for standard input and a run that names none."""
    if path == "-":
        return None
    model = _folder_model(_folder(path))
    if model is None:
        model = _spec_beside(path)[0]
    return None if model is None else model.replace("/", "_")


def helm_task(path: str) -> str | None:
    """The scenario the HELM run at ``path`` asked, as ``--by task`` names it: the run folder's
    name without the model (``mmlu:subject=anatomy,method=multiple_choice_joint``), else
    ``run_spec.json``'s ``name`` read alike; None when neither is named as HELM names a run."""
    if path == "-":
        return None
    found = helm_scenario(path)
    if found is None:
        _, name = _spec_beside(path)
        found = None if name is None else scenario_named(name)
    return found


def helm_scope(path: str) -> str | None:
    """What the ids of a HELM run's instances carry besides the instance, its train trial and
    perturbation: the questions its scenario asks (:func:`helm_task` with the arguments that
    set only how they were put to the model left out,
    :func:`~calibcli.io.helm_run.helm_questions`: a 0-shot and a 5-shot run of one subject are
    re-runs of its questions; two subjects are not) and the model, as the folder name spells
    it (``mmlu:subject=anatomy (openai_gpt2)``), so that a copy of a run, with or without its
    ``run_spec.json``, keeps its ids. None for a run that names neither (its ids are then
    those of every such run)."""
    task, model = helm_task(path), helm_model(path)
    questions = None if task is None else helm_questions(task)
    if model is None:
        return questions
    return f"{questions or '-'} ({model})"


def helm_shown(path: str) -> str:
    """A file as the warnings name it: a HELM ``per_instance_stats.json`` in a folder named as
    HELM names a run with that folder
    (``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2/per_instance_stats
    .json``), since every run's file has that name; any other file by its name."""
    name = PurePath(path).name
    folder = PurePath(path).parent.name
    if name.startswith(STATS_NAME) and scenario_named(folder) is not None:
        return f"{folder}/{name}"
    return name


def _folder(path: str) -> str:
    return os.path.basename(os.path.dirname(os.path.abspath(path)))


def _folder_model(folder: str) -> str | None:
    """The ``model=`` argument of a run folder named as HELM names a run, or None."""
    return folder_argument(folder, "model")


def folder_argument(folder: str, key: str) -> str | None:
    """The ``key=`` argument of a run folder named as HELM names a run (``name:k=v,k=v``),
    when it is given once and not empty; else None."""
    name, colon, arguments = folder.partition(":")
    if not (name and colon):
        return None
    pairs = [a.partition("=") for a in arguments.split(",")]
    if not all(k and sep for k, sep, _ in pairs):
        return None
    found = [value for k, _, value in pairs if k == key]
    return found[0] if len(found) == 1 and found[0] else None


def spec_method(path: str) -> str | None:
    """The ``adapter_spec.method`` of the ``run_spec.json`` beside ``path``, or None."""
    found = file_version(os.path.join(os.path.dirname(os.path.abspath(path)), RUN_SPEC))
    return None if found is None else _read_spec(*found)[2]


def _spec_beside(path: str) -> tuple[str | None, str | None]:
    """(``adapter_spec.model``, ``name``) of the ``run_spec.json`` beside ``path``, each None
    where it is missing, not a non-empty string, or the file cannot be read."""
    found = file_version(os.path.join(os.path.dirname(os.path.abspath(path)), RUN_SPEC))
    return (None, None) if found is None else _read_spec(*found)[:2]


@functools.lru_cache(maxsize=64)
def _read_spec(path: str, _mtime: int, size: int) -> tuple[str | None, str | None, str | None]:
    """(``adapter_spec.model``, ``name``, ``adapter_spec.method``) of one version of a run
    spec, read once: the ids, the pooled check, ``--by`` and the method check each ask."""
    if size > _MOST_BYTES or not os.path.isfile(path):
        return None, None, None
    try:
        with open(path, "rb") as f:
            spec = json.loads(f.read())
    except (OSError, ValueError, RecursionError):
        return None, None, None
    if not isinstance(spec, dict):
        return None, None, None
    adapter = spec.get("adapter_spec")
    adapter = adapter if isinstance(adapter, dict) else {}
    return _named(adapter.get("model")), _named(spec.get("name")), _named(adapter.get("method"))


def _named(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
