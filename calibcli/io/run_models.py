"""Whose rows an lm-eval samples file holds, as the checks on them read it.

The several-models check, ``--by model``, the row ids and the re-runs pooled with ``--all-runs``
take an lm-eval run's model one way (:func:`run_model`): what its path names (the model
arguments a file name writes before v0.4.3, else the ``org__name`` folder v0.4.3+ writes a
model's files into), else the ``model_name`` of the run's results file beside it. The path comes
first because a results file's ``model_name`` leaves out the model arguments that make another
model of the same weights (a ``revision``, a ``dtype``, an adapter): two checkpoints of one
model, each run into its own folder, are two models, never re-runs of one. A model is named with
the ``revision`` its model arguments load (``EleutherAI/pythia-160m@step1000``,
:func:`~calibcli.io.run_results.with_revision`): the arguments of a file name before v0.4.3, the
``config.model_args`` of the results file beside a file whose ``org__name`` folder (v0.4.3+
writes every checkpoint of a model into one) or ``model_name`` names the model without it.

Two models' files of one task hold the same doc_ids, so a row's id carries, besides its task and
``doc_id``, the model its path names (:func:`key_model`); a path naming none keys its rows by
task and ``doc_id`` alone, so that a run's copy without its results file keys them as the run
does. A run whose path names no model may be any model's: where it and another run of its task
key their rows apart, their rows are compared before anything is read
(:func:`refuse_unnamed_reruns`): a document in both is refused as a row read twice is, and so
under ``--all-runs``, which could not pool their rows as re-runs of one question."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

from calibcli.errors import InputError, shown_name
from calibcli.io.run_results import results_file, revision_of, run_record, with_revision

RUN_NAME = re.compile(
    r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)"
    r"\.jsonl?(?:\.gz|\.zst|\.xz|\.bz2)?$"
)
DOUBLE_READ = (
    "re-runs of a task, or the same rows in two files, would count twice (pass --all-runs "
    "to pool them on purpose)"
)


def run_model(path: str) -> str | None:
    """The model an lm-eval samples file was run with: its model arguments as its name writes
    them (before v0.4.3), else the ``org__name`` folder v0.4.3+ writes a model's files into,
    else the ``model_name`` of its run's results file; None when none says. The folder's and
    ``model_name``'s with the revision the results file's model arguments load
    (:func:`path_model`, :func:`results_model`)."""
    from calibcli import formats

    args = formats.model_args_from_filename(path)
    if args is not None:
        return args
    found = path_model(path)
    return found if found is not None else results_model(path)


def path_model(path: str) -> str | None:
    """The model an lm-eval samples file's path names, with the revision it was loaded at: the
    ``pretrained`` argument of a file name before v0.4.3 with its ``revision`` argument, or
    the ``org__name`` folder of v0.4.3+ with the ``revision`` of its run's results file's
    model arguments, where that file's ``model_name`` is the folder's model (lm-eval writes
    every revision of a model into the one folder); None for a path naming none."""
    from calibcli import formats

    found = formats.model_from_filename(path)
    if found is None:
        return None
    args = formats.model_args_from_filename(path)
    if args is not None:  # arguments naming no model are the model's name, revision and all
        return found if found == args else with_revision(found, revision_of(args, named=True))
    match = RUN_NAME.match(PurePath(path).name)
    record = None if match is None else run_record(results_file(path, match["stamp"]))
    if record is None or record.named is None:
        return found
    if _SANITIZED.sub("__", record.named) != PurePath(path).parent.name:
        return found  # another model's results file: its revision is not this folder's model's
    return with_revision(found, record.revision)


# the characters lm-eval writes as "__" in the folder it names after a model
_SANITIZED = re.compile(r"[\"<>:/|\\?*\[\]]+")


def results_model(path: str) -> str | None:
    """The ``model_name`` of the results file of an lm-eval samples file's run (with the
    revision its model arguments load), or None."""
    match = RUN_NAME.match(PurePath(path).name)
    if match is None:
        return None
    found = run_record(results_file(path, match["stamp"]))
    return None if found is None else found.model


def group_model(path: str) -> str | None:
    """The model ``--by model`` groups an lm-eval file's rows under: the ``pretrained``
    argument (with its revision and adapters) of a file name before v0.4.3
    (:func:`path_model`), else :func:`run_model`'s (the ``org__name`` folder, else the
    results file's ``model_name``, each with the revision)."""
    from calibcli import formats

    if formats.model_args_from_filename(path) is not None:
        return path_model(path)
    return run_model(path)


def key_model(path: str) -> str | None:
    """The model an lm-eval file's row ids carry (:func:`calibcli.io.ids.identifier`): the
    model its path names, with its revision (:func:`path_model`: the ``pretrained`` argument of
    a name before v0.4.3, an ``org__name`` folder); None for a path naming none."""
    return path_model(path)


def model_runs(runs: dict[tuple[str, str], list[tuple[str, str]]]) -> dict[tuple, list]:
    """``runs`` (each folder and task with its files, each (timestamp, path)) as the re-runs of
    one model: the runs of a task in one folder are one model's where they name at most one
    model (:func:`run_model`; a run naming none may be its), else each model's are its own, and
    each run naming none its own too (whose re-run it is cannot be told: in a folder naming no
    model its rows are keyed as theirs, and refused as read twice). Keyed by (folder, task, ...)."""
    split: dict[tuple, list] = {}
    for key, found in runs.items():
        models = {f: run_model(f) for _, f in found} if len(found) > 1 else {}
        if len(set(models.values()) - {None}) < 2:
            split[key] = found
            continue
        for stamp, f in found:
            own = (models[f],) if models[f] is not None else (None, f)
            split.setdefault((*key, *own), []).append((stamp, f))
    return split


def rerun_task(path: str) -> tuple[str, str | None]:
    """What the ids of an lm-eval file's rows name besides their ``doc_id``: the task and
    :func:`key_model`. The files of one such pair hold the same questions."""
    from calibcli import formats

    return formats.task_from_filename(path), key_model(path)


def unnamed_tasks(paths: Iterable[str]) -> frozenset[str]:
    """The tasks of the lm-eval samples files among ``paths`` of which a run names no model
    (:func:`run_model`), when another file of the task is among them: such a run's rows may be
    any model's."""
    from calibcli import formats

    runs: dict[str, list[str | None]] = {}
    for path in dict.fromkeys(p for p in paths if p != "-" and samples_named(p)):
        runs.setdefault(formats.task_from_filename(path), []).append(run_model(path))
    return frozenset(t for t, models in runs.items() if len(models) > 1 and None in models)


def rerun_keys(paths: Iterable[str]) -> dict[str, tuple[str, str | None]]:
    """Each lm-eval file among ``paths`` read together with the run it is of, its task and
    model (:func:`group_model`), the model None for a task one of whose runs names none
    (:func:`unnamed_tasks`): files of one key are runs of one task by one model."""
    from calibcli import formats

    found = [p for p in paths if p != "-"]
    unnamed = unnamed_tasks(found)
    keys = {}
    for p in found:
        task = formats.task_from_filename(p)
        keys[p] = (task, None if task in unnamed else group_model(p))
    return keys


def samples_named(path: str) -> bool:
    """Whether a file is named as lm-eval names its samples files (any version)."""
    from calibcli import formats

    name = PurePath(path).name
    return RUN_NAME.match(name) is not None or formats.model_args_from_filename(path) is not None


def refuse_unnamed_reruns(paths: Iterable[str], pooled: bool = False) -> None:
    """InputError at the first row of an lm-eval samples file among ``paths`` (each read, or
    named, as one: a samples file renamed is a run naming no model) that shares its
    task and ``doc_id`` with a row of an earlier file whose rows its ids keep apart
    (:func:`key_model`) though the two runs may be one model's (:func:`run_model`: the same,
    or either naming none): re-runs of a task, refused as a row read twice is. With
    ``pooled`` (``--all-runs``) too: their rows, keyed apart, would count as other questions
    than the earlier run's, not as re-runs of them. A renamed file's task is only its name's
    stem, so it is also compared with the runs of other tasks that may be its model's: a row
    holding the ``doc_id`` and the document (its ``doc`` or ``doc_hash``) of an earlier row is
    a re-run under another name, refused alike. Each file's rows are scanned only where such
    a pair is among ``paths``."""
    from calibcli import formats
    from calibcli.io.ids import id_key, show_id

    files: dict[str, tuple[str, str | None, str | None]] = {}
    named: dict[str, bool] = {}
    seen: set[str] = set()  # a file given twice is refused as that, not here
    for path in dict.fromkeys(p for p in paths if p != "-"):
        where = os.path.realpath(path)
        if where not in seen:
            seen.add(where)
            files[path] = (formats.task_from_filename(path), key_model(path), run_model(path))
            named[path] = samples_named(path)
    # each file's earlier partners, each with whether their rows are matched by document
    pairs: dict[str, list[tuple[str, bool]]] = {}
    for path, found in files.items():
        earlier = []
        for e in pairs:
            if _may_be_one(files[e], found):
                earlier.append((e, False))
            elif _renamed_pair(files[e], found, not (named[e] and named[path])):
                earlier.append((e, True))
        pairs[path] = earlier
    if not any(pairs.values()):
        return
    partnered = {e for earlier in pairs.values() for e, _ in earlier}
    docs: dict[str, tuple[dict[Any, int], dict[Any, int]]] = {}
    for path, earlier in pairs.items():
        if not earlier and path not in partnered:
            continue
        docs[path] = by_id, by_doc = {}, {}
        partner = earlier[0][0] if earlier else _later_partner(pairs, path)
        for line, doc, held in _doc_ids(path, partner):
            key = id_key(doc)
            by_id.setdefault(key, line)
            for ident in held:
                by_doc.setdefault((key, ident), line)
            for other, by_document in earlier:
                if by_document:  # the same document: its doc, or its doc_hash, alike
                    found = (docs[other][1].get((key, ident)) for ident in held)
                    before = next((b for b in found if b is not None), None)
                else:
                    before = docs[other][0].get(key)
                if before is None:
                    continue
                at = f"{shown_name(other)}:{before}"
                if by_document:
                    said = (
                        f"the document of doc_id {show_id(key)} was read before, at {at}, a run "
                        f"of task {files[other][0]}: {_RENAMED}"
                    )
                    raise InputError(path, line, said)
                shown = show_id(("task", files[path][0], *key))
                said = f"the row of id {shown} was read before, at {at}: "
                raise InputError(path, line, said + (_APART if pooled else DOUBLE_READ))


_APART = (
    "the two runs may be one model's, but one's path names its model and the other's none, so "
    "--all-runs cannot pool their rows as re-runs of one question and would count each as a "
    "question of its own; keep both runs' samples files where lm-eval writes them (the "
    "model's org__ folder, beside the run's results file), or give one of the runs"
)
_RENAMED = (
    "a re-run of that task under another name, whose rows would count as other questions "
    "(a file's task is what its name says); keep the samples files as lm-eval names them "
    "(samples_<task>_<timestamp>.jsonl), or give one of the runs"
)


def _later_partner(pairs: dict[str, list[tuple[str, bool]]], path: str) -> str:
    """The first file paired with ``path`` after it."""
    return next(p for p, earlier in pairs.items() if any(e == path for e, _ in earlier))


def _may_be_one(first: tuple, second: tuple) -> bool:
    """Whether two files' (task, key model, run model) are of one task, their rows keyed
    apart (a path naming no model beside one naming its model), and their runs may be one
    model's (a run naming none may be any model's)."""
    if first[0] != second[0] or first[1] == second[1]:
        return False
    return _models_may_be_one(first[2], second[2])


def _renamed_pair(first: tuple, second: tuple, renamed: bool) -> bool:
    """Whether two files of other tasks by their names, one of them ``renamed`` (not named as
    lm-eval names its samples files), may be runs of one task by one model."""
    return renamed and first[0] != second[0] and _models_may_be_one(first[2], second[2])


def _models_may_be_one(first: str | None, second: str | None) -> bool:
    """Whether two runs may be one model's: the same, or either naming none."""
    return first is None or second is None or first == second


def _doc_ids(path: str, partner: str) -> Iterable[tuple[int, Any, tuple[str, ...]]]:
    """(line, doc_id, document) of each row of an lm-eval samples file that holds a
    ``doc_id``, the document what the row holds of it (:func:`_document`); rows that do not
    parse are left to the reader, which names them. A file that cannot be read (a summary's
    source moved away since) cannot be told apart from ``partner``'s re-run: InputError."""
    from calibcli.io.compression import open_path

    try:
        with open_path(path) as f:
            for line, text in enumerate(f, 1):
                try:
                    row = json.loads(text)
                except (ValueError, RecursionError):
                    continue
                doc = row.get("doc_id") if isinstance(row, dict) else None
                if isinstance(doc, (int, str)) and not isinstance(doc, bool):
                    yield line, doc, _document(row)
    except OSError as e:
        raise InputError(
            path,
            None,
            f"cannot be read ({e.strerror or e}) to tell its rows from those of "
            f"{shown_name(partner)}, a run of its task (one of their paths names its model, the "
            "other's none, so their rows are keyed apart and a re-run would count each question "
            "twice); give the runs' files where they were read",
        ) from None


def _document(row: dict) -> tuple[str, ...]:
    """What tells an lm-eval row's document from another task's: a digest of its ``doc`` and
    the ``doc_hash`` lm-eval writes beside it, each where the row holds it (two rows hold one
    document where either agrees)."""
    found = []
    doc = row.get("doc")
    if doc is not None:
        try:
            text = json.dumps(doc, sort_keys=True, ensure_ascii=False, allow_nan=True)
        except (TypeError, ValueError, RecursionError):
            text = None
        if text is not None:
            digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
            found.append("doc:" + digest.hexdigest())
    known = row.get("doc_hash")
    if isinstance(known, str) and known:
        found.append(f"hash:{known}")
    return tuple(found)
