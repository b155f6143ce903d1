"""How rows were read, as a calibrator file records it beside ``fitted_on``'s fields and as
the rows it is applied to are checked against it: what graded them (inspect-ai's scorer,
OpenAI's gold field), the answer options OpenAI's confidences were renormalised over, and the
models and tasks their runs name."""

from __future__ import annotations

from typing import Any

CHOICE_FORMATS = ("openai", "openai-evals")
"""The formats whose confidence is an option's probability renormalised over ``--choices``."""


def read_as(summary: Any) -> dict[str, Any]:
    """What a calibrator records of how ``summary``'s rows were read, beyond their fields and
    format, each key only where its rows have it: ``scorer`` (inspect-ai rows; ``--scorer`` as
    given, None for each sample's one scorer), ``gold_field`` (OpenAI responses), ``choices``
    (OpenAI responses and evals logs: the options, the default letters when not given),
    ``models`` and ``tasks`` (the models and lm-eval tasks their runs name, sorted; where no
    run names one, none)."""
    settings = summary.settings
    formats = set(getattr(summary, "formats", {}).values()) | {summary.fmt}
    names = run_names(summary.sources)
    return _found(formats, settings.scorer, settings.gold_field, settings.choices, names)


def files_read_as(
    files: Any, *, scorer: str | None, gold_field: str | None, choices: Any
) -> dict[str, Any]:
    """:func:`read_as` of rows read from ``files`` (``(path, format)`` of each file read, as
    the Python API's reader lists them) with these options: what ``calibcli.fit`` of such rows
    records, as the command records it."""
    from calibcli.summaries import Source

    sources = [Source(name, "", fmt, 0) for name, fmt in files]
    formats = {fmt for _, fmt in files}
    return _found(formats, scorer, gold_field, choices, run_names(sources))


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
    inspect-ai log's model (as the check on pooled models reads it), an lm-eval samples file's
    task (from its name). Sources skipped, read from stdin or of other formats name none."""
    from calibcli.formats import task_from_filename
    from calibcli.io.runs import recorded

    models: set[str] = set()
    tasks: set[str] = set()
    for source in sources:
        if source.skipped is not None or source.name == "-":
            continue
        model = recorded(source).model
        if model is not None:
            models.add(model)
        if source.format == "lm-eval":
            tasks.add(task_from_filename(source.name))
    return sorted(models), sorted(tasks)
