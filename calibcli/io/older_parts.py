"""Which inputs of a run hold older lm-eval runs of a task than another input, and are left
out as an older file is: files and summaries read together (:func:`newest_parts`), summaries
merged (:func:`older_inputs`). Runs of two models are not re-runs of one: each input's runs are
weighed with the model they record, else the one their path and results file give."""

from __future__ import annotations

from typing import Any

from calibcli.errors import InputError


def read_runs(summary: Any) -> list[tuple[str, str | None]]:
    """Each file a summary read rows of (not skipped), once, with the model its run recorded;
    an lm-eval file whose source records none (the files read here) with its run's as its path
    and results file give it (:func:`~calibcli.io.run_models.run_model`)."""
    from calibcli.io.run_models import run_model

    return list(
        dict.fromkeys((s.name, _model(s, run_model)) for s in summary.sources if s.skipped is None)
    )


def _model(source: Any, run_model: Any) -> str | None:
    if source.model is not None or source.name == "-" or source.format != "lm-eval":
        return source.model
    return run_model(source.name)


def newest_parts(runs: Any, parts: Any, all_runs: bool) -> Any:
    """``runs`` (:class:`~calibcli.io.runs.Runs`, the files chosen) followed by the labels of
    the summaries ``parts`` given with them (each (label, summary)) that are kept: all with
    ``all_runs``, else all but those :func:`older_inputs` leaves out, with its warning; and
    :func:`no_rows` of the sources of those kept. ``runs`` itself without ``parts``. A file's
    run's model is taken as a summary records it: runs of two models are not re-runs."""
    if not parts:
        return runs
    from calibcli.io.parts import no_rows
    from calibcli.io.runs import Runs, run_model

    named = [(f, [(f, None if f == "-" else run_model(f))]) for f in runs.files]
    inputs = [*named, *((n, read_runs(p)) for n, p in parts)]
    left, said = (set(), []) if all_runs else older_inputs(inputs)
    kept = [label for i, (label, _) in enumerate(inputs) if i not in left]
    held = [p for i, (_, p) in enumerate(parts, len(runs.files)) if i not in left]
    empty = no_rows([s for p in held for s in p.sources])
    return Runs(kept, [*runs.warnings, *said, *empty])


Named = list[tuple[str, str | None]]


def older_inputs(inputs: list[tuple[str | None, Named]]) -> tuple[set[int], list[str]]:
    """Which ``inputs`` (each a label, None for the files read here, and the files it read,
    each with the model its run recorded: a file, or a summary's sources) to leave out, and the
    warning saying so, as :func:`~calibcli.io.runs.choose_runs` leaves out a task's older runs:
    those every file of which is an lm-eval run of a task that another input holds a newer run
    of, in the same folder (its name as given, from here), of the same model where both runs
    record one. InputError for one holding such a run beside other files, which cannot be left
    out whole. An input's own runs are not weighed against each other: they were chosen when it
    was read, or pooled with --all-runs."""
    from calibcli.io.runs import _run_of, rerun_warning

    runs: dict[tuple[str, str], list[tuple[str, int, str, str | None]]] = {}
    for i, (_, named) in enumerate(inputs):
        for name, model in named:
            run = None if name == "-" else _run_of(name)
            if run is not None:
                runs.setdefault(run[:2], []).append((run[2], i, name, model))
    older: dict[int, list[tuple[str, str, tuple[str, int, str, str | None]]]] = {}
    for (_, task), found in runs.items():
        if len({r[0] for r in found}) < 2:
            continue  # one run of the task (its shards, or --part pieces): none is older
        ranked = sorted(found, key=lambda r: r[0], reverse=True)
        for stamp, i, name, model in found:
            # the newest of another input's runs of the task, of this model where both say
            alike = (r for r in ranked if r[1] != i and (None in (model, r[3]) or r[3] == model))
            newer = next(alike, None)
            if newer is not None and newer[0] > stamp:
                older.setdefault(i, []).append((name, task, newer))
    tasks: list[str] = []
    left_out: list[str] = []
    for i in sorted(older):
        label, named = inputs[i]
        if len(older[i]) < len(named):
            name, task, (_, j, newer, _) = older[i][0]
            raise _older_kept(label, name, task, inputs[j][0], newer)
        tasks += [task for _, task, _ in older[i] if task not in tasks]
        left_out += [name for name, _ in named] if label is None else [label]
    return set(older), [rerun_warning(tasks, left_out)] if tasks else []


def _older_kept(label: str | None, name: str, task: str, other: Any, newer: str) -> InputError:
    """The refusal of an input (``label``, None for the files read here) holding ``name``, an
    older run of ``task`` than ``newer`` (in the input ``other``), beside other files."""
    from pathlib import PurePath

    from calibcli.errors import shown_name

    where = "read here" if other in (None, newer) else f"in {shown_name(other)}"
    runs = (
        f"an older run of task {task!r} than {shown_name(PurePath(newer).name)} ({where}), "
        "beside other files"
    )
    if label is None:
        return InputError(
            name, None, f"{runs} read with it: leave it out, or pass --all-runs to pool the runs"
        )
    return InputError(
        label,
        None,
        f"holds {shown_name(PurePath(name).name)}, {runs}, so it cannot be left out as an older "
        "run is: summarize the newest run alone, or pass --all-runs to pool the runs",
    )
