"""How rows were read, as a calibrator file records it beside ``fitted_on``'s fields and as
the rows it is applied to are checked against it: what graded them (inspect-ai's scorer,
OpenAI's gold field), the answer options OpenAI's confidences were renormalised over, and the
models and tasks their runs name."""

from __future__ import annotations

import functools
from typing import Any

CHOICE_FORMATS = ("openai", "openai-evals")
"""The formats whose confidence is an option's probability renormalised over ``--choices``."""


def read_as(summary: Any) -> dict[str, Any]:
    """What a calibrator records of how ``summary``'s rows were read, beyond their fields and
    format, each key only where its rows have it: ``scorer`` (inspect-ai rows: ``--scorer`` as
    given; without it, the one scorer every log's samples were graded by,
    :func:`resolved_scorer`), ``gold_field`` (OpenAI responses), ``choices`` (OpenAI responses
    and evals logs: the options, the default letters when not given), ``models`` and ``tasks``
    (the models and lm-eval tasks their runs name, sorted; where no run names one, none)."""
    settings = summary.settings
    formats = set(getattr(summary, "formats", {}).values()) | {summary.fmt}
    names = run_names(summary.sources)
    scorer = settings.scorer
    if scorer is None and "inspect-ai" in formats:
        scorer = resolved_scorer(
            s.name for s in summary.sources if s.skipped is None and s.format == "inspect-ai"
        )
    return _found(formats, scorer, settings.gold_field, settings.choices, names)


def files_read_as(
    files: Any, *, scorer: str | None, gold_field: str | None, choices: Any
) -> dict[str, Any]:
    """:func:`read_as` of rows read from ``files`` (``(path, format)`` of each file read, as
    the Python API's reader lists them) with these options: what ``calibcli.fit`` of such rows
    records, as the command records it."""
    from calibcli.summaries import Source

    sources = [Source(name, "", fmt, 0) for name, fmt in files]
    formats = {fmt for _, fmt in files}
    if scorer is None and "inspect-ai" in formats:
        scorer = resolved_scorer(name for name, fmt in files if fmt == "inspect-ai")
    return _found(formats, scorer, gold_field, choices, run_names(sources))


def sides_read_as(fit: tuple[dict, Any], evaluated: tuple[dict, Any]) -> dict[str, Any]:
    """How a threshold's two sides were read, for its report to check the one against the
    other: each side's ``(read_as, files)`` (:func:`read_as` of its rows, its inputs as named:
    folders and patterns are looked into) gives what its runs name and how they were graded,
    and the summary files among its inputs, whose rows cannot be read again another way."""
    from calibcli.io.folders import named_files
    from calibcli.io.parts import is_summary_file

    def summaries(paths: Any) -> list[str]:
        return [p for p in named_files(list(paths)) if is_summary_file(p)]

    return {
        "fit": dict(fit[0]),
        "evaluated": dict(evaluated[0]),
        "summaries": {"fit": summaries(fit[1]), "evaluated": summaries(evaluated[1])},
    }


def resolved_scorer(logs: Any) -> str | None:
    """The scorer the inspect-ai ``logs`` (paths) read without ``--scorer`` were graded by:
    the reader then takes each sample's one scorer, so a calibrator records it, and rows graded
    by another are told from them, as where ``--scorer`` names it. None when the logs were
    graded by several, or one of them cannot be read again (standard input, a file that is
    gone): nothing is then compared, as for a calibrator that records none."""
    found = {_log_scorer(path) for path in dict.fromkeys(logs)}
    return found.pop() if len(found) == 1 else None


def _log_scorer(path: str) -> str | None:
    """The one scorer of the first scored sample of an inspect-ai log (a sample of several is
    refused by the reader without ``--scorer``), or None."""
    from calibcli.io.content import file_version

    version = None if path == "-" else file_version(path)
    return None if version is None else _scorer_of(*version)


@functools.lru_cache(maxsize=64)
def _scorer_of(path: str, _mtime: int, _size: int) -> str | None:
    # cached by the file's identity: the record of a fit and the checks of a calibrator's rows
    # each ask for it
    from collections.abc import Mapping

    from calibcli.errors import InputError
    from calibcli.formats import inspect_scorers
    from calibcli.io.compression import read_errors
    from calibcli.io.records import records

    try:
        for _, _, sample, _ in records(path):
            if isinstance(sample, Mapping) and sample.get("scores"):
                names = inspect_scorers(sample)
                return names[0] if len(names) == 1 else None
    except (*read_errors(), InputError, ValueError, RecursionError):
        return None
    return None


def _found(
    formats: set[str], scorer: Any, gold_field: Any, choices: Any, names: tuple[list, list]
) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if "inspect-ai" in formats:
        found["scorer"] = scorer
    if "openai" in formats:
        found["gold_field"] = gold_field
    if formats & set(CHOICE_FORMATS):
        found["choices"] = _options(choices)
    models, tasks = names
    if models:
        found["models"] = models
    if tasks:
        found["tasks"] = tasks
    return found


def _options(choices: Any) -> list[str]:
    """The options of ``--choices`` (comma-joined, as the settings hold them, or a list),
    else the default letters."""
    from calibcli.formats import LETTERS

    if choices is None:
        return list(LETTERS)
    return [c.strip() for c in (choices.split(",") if isinstance(choices, str) else choices)]


def run_names(sources: Any) -> tuple[list[str], list[str]]:
    """(models, tasks) the runs of ``sources`` name, each sorted and once: an lm-eval run's or
    inspect-ai log's model, the models OpenAI or vLLM server responses name (as the check on
    pooled models reads them), an lm-eval samples file's task (from its name). Sources
    skipped, read from stdin or of other formats name none, and so does an lm-eval run without
    model arguments (``_<task>.jsonl``, the model ``""``) alone; beside a named model it is
    listed as ``""``, since the check on pooled models counts it as a model of its own, and
    the models listed are then two or more (:func:`several_models`)."""
    from calibcli.formats import task_from_filename
    from calibcli.io.response_models import models_named
    from calibcli.io.runs import recorded

    models: set[str] = set()
    tasks: set[str] = set()
    for source in sources:
        if source.skipped is not None or source.name == "-":
            continue
        models.update(models_named(recorded(source).model))
        if source.format == "lm-eval":
            tasks.add(task_from_filename(source.name))
    return sorted(models if len(models) > 1 else models - {""}), sorted(tasks)


def _listed(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names)


def other_choices(
    fitted: dict[str, Any], scored: dict[str, Any], option: str = "--choices "
) -> str | None:
    """Why confidences renormalised over other answer options than those of the rows a
    calibrator was fitted on (``fitted``: its ``fitted_on``; ``scored``: :func:`read_as` of
    the rows scored) cannot take its map, or None: it would score other numbers. ``option``
    spells the setting (the Python API's ``choices=``). The same options in another order are
    the same set to renormalise over: the same numbers."""
    made, given = fitted.get("choices"), scored.get("choices")
    if not isinstance(made, list) or given is None or sorted(made) == sorted(given):
        return None
    return (
        f"the calibrator was fitted on confidences renormalised over {option}{','.join(made)}; "
        f"these rows are read with {option}{','.join(given)}: give {option}{','.join(made)}"
    )


def other_model(fitted: dict[str, Any], scored: dict[str, Any], gated: bool = True) -> str | None:
    """Why the rows scored are another model's than the rows a calibrator was fitted on, as
    their runs name them, or None (rows whose runs name no model, and a file that records
    none, say nothing; so does the model ``""``, an lm-eval run without model arguments, which
    a calibrator file may record). Names are compared as written, as the check on pooled
    models compares them: one model named two ways is two models here. ``gated``: the
    commands' gates on the figures after the map then fail, and the text says so."""
    made = fitted.get("models")
    if not isinstance(made, list):
        return None
    made = [m for m in made if m != ""]
    others = sorted(set(scored.get("models", ())) - set(made) - {""})
    if not made or not others:
        return None
    then = "so every gate on the figures after it fails" if gated else "gate nothing on them"
    return (
        f"the calibrator was fitted on rows of model {_listed(made)}; these rows are of model "
        f"{_listed(others)}, as their runs name them: a map of one model's confidences says "
        f"nothing of another's, {then}; fit a calibrator on this model's rows"
    )


def several_models(
    calibrators: Any, by: str | None = None, groups: Any = None, gated: bool = True
) -> str | None:
    """Why the map a calibrator applies was fitted on several models' rows pooled, or None:
    its ``fitted_on`` lists two or more models, as the check on pooled models counts them (a
    run without model arguments, ``""``, is one of its own). Such a map is none of the models'
    (their rows fail every gate read together, and so do the figures after their map). None
    too when every row scored takes the map of its own ``--by model`` group (``by``, ``groups``:
    how the rows were read and the group names met), each fitted on one model's rows.
    ``gated``: the commands' gates on the figures after the map then fail, and the text says
    so."""
    made = calibrators.fitted_on.get("models")
    if not isinstance(made, list) or len(set(made)) < 2:
        return None
    own = by == calibrators.by == "model" and groups is not None
    if own and all(g in calibrators.groups for g in groups):
        return None
    shown = ", ".join(repr(m) if m else "a run without model arguments" for m in sorted(made))
    then = "so every gate on the figures after it fails" if gated else "gate nothing on them"
    return (
        f"the calibrator was fitted on the rows of {len(set(made))} models pooled: {shown}, as "
        "their runs name them: a map of several models' confidences pooled is none of theirs, "
        f"{then}; fit one calibrator per model (on one model's files, or with --by model)"
    )


def other_task(fitted: dict[str, Any], scored: dict[str, Any]) -> str | None:
    """A warning when the rows scored are of lm-eval tasks the calibrator was not fitted on
    (transfer across tasks is a use, but a stated one), or None."""
    tasks = sorted(set(scored.get("tasks", ())) - set(fitted.get("tasks") or ()))
    if not fitted.get("tasks") or not tasks:
        return None
    return (
        f"the calibrator was fitted on rows of task {_listed(fitted['tasks'])}; it maps rows "
        f"of task {_listed(tasks)} here, and a map may not carry over to another task"
    )


def graded_otherwise(fitted: dict[str, Any], formats: set[str], given: dict[str, Any]) -> list[str]:
    """Warnings for rows graded another way than the rows a calibrator was fitted on: JSON
    Lines rows by another --correct-field, inspect-ai samples by another --scorer, OpenAI
    responses against another --gold-field (``given``: each of ``correct_field``, ``scorer``
    and ``gold_field`` as the rows were read; ``formats``: theirs). The map was asked for by
    name, so it is applied; its figures then judge it against another notion of a right
    answer."""
    compared = (
        ("jsonl", "correct_field", "--correct-field"),
        ("inspect-ai", "scorer", "--scorer"),
        ("openai", "gold_field", "--gold-field"),
    )
    notes = []
    for fmt, key, option in compared:
        recorded, read = fitted.get(key), given.get(key)
        if fmt == "jsonl" and fitted.get("format") not in ("jsonl", "mixed"):
            continue  # a correct field recorded of other formats' rows graded none of them
        if fmt not in formats or not isinstance(recorded, str) or not isinstance(read, str):
            continue
        if recorded != read:
            notes.append(
                f"the calibrator was fitted on rows graded by {option} {recorded}; these rows "
                f"are graded by {option} {read}: its figures judge the map by another notion "
                "of a right answer"
            )
    return notes
