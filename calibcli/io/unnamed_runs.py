"""Runs naming no model beside runs naming theirs, in the formats whose ids carry the model.

An inspect-ai sample's, a HELM instance's and an OpenAI evals sample's id carries what its run
says of itself (:func:`~calibcli.io.ids.sample_scope`), its model among it, so that two
models' runs of one task, numbering their rows alike, are no re-runs of each other. A run that
names no model (an inspect-ai log without ``eval.model``, a HELM ``per_instance_stats.json``
copied out of its run folder, an OpenAI evals log whose spec names no ``completion_fns``) keys
its rows without it: beside a run that names its model, a re-run of that run would have other
ids than its rows, and count as more questions. Which run it is cannot be told, so the two are
refused together (:func:`refuse_unnamed_beside_named`), with and without ``--all-runs`` (which
could not pool their rows as re-runs of one question either), as lm-eval's runs whose paths
name no model are (:func:`~calibcli.io.run_models.refuse_unnamed_reruns`)."""

from __future__ import annotations

from collections.abc import Iterable

from calibcli.errors import InputError, shown_name

SCOPED = ("inspect-ai", "helm", "openai-evals")
"""The formats whose rows' own ids carry their run's model."""

_NAMED_BY = {
    "inspect-ai": "an inspect-ai log's eval.model",
    "helm": "a HELM run folder's model= or the adapter_spec.model of the run_spec.json beside it",
    "openai-evals": "an OpenAI evals log's spec's completion_fns",
}


def refuse_unnamed_beside_named(files: Iterable[tuple[str, str | None, str | None]]) -> None:
    """InputError at the first of ``files`` (each its name, format and the model its run
    names, None for none) of a format in :data:`SCOPED` whose run names no model, where a file
    of that format whose run names one is among them (see the module docstring)."""
    named: dict[str, str] = {}
    unnamed: dict[str, str] = {}
    for name, fmt, model in files:
        if fmt in SCOPED:
            (unnamed if model is None else named).setdefault(fmt, name)
    for fmt, name in unnamed.items():
        other = named.get(fmt)
        if other is None:
            continue
        raise InputError(
            name,
            None,
            f"its run names no model ({_NAMED_BY[fmt]}), and {shown_name(other)}'s run names "
            "one: their rows' ids cannot be matched, so a re-run of that run would count each "
            "of its questions twice (with --all-runs too); give each file where its run names "
            "its model, or read the runs apart",
        )


def refuse_unnamed_files(files: Iterable[tuple[str, str | None]]) -> None:
    """:func:`refuse_unnamed_beside_named` of ``files`` (each its name and format), each with
    the model its run names (:func:`~calibcli.io.runs.named_model`)."""
    from calibcli.io.runs import named_model

    refuse_unnamed_beside_named(
        (name, fmt, named_model(name, fmt) if fmt in SCOPED else None)
        for name, fmt in files
        if name != "-"
    )
