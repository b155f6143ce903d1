"""What an lm-eval run's results file (``results_<timestamp>.json`` beside its samples files)
records of the run: the documents of each task (``n-samples``), the ``--limit`` and the model;
and whether a file is one (:func:`results_only`), which holds no rows to read."""

from __future__ import annotations

import codecs
import os
import re
import stat
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from calibcli.io.compression import SUFFIXES, open_path, read_errors
from calibcli.io.inspect_log import whole_count

RESULTS_BYTES = 64 << 20  # a results file larger than this is not read for its counts


@dataclass(frozen=True)
class _Run:
    """What a results file records of its run: the (original, effective) documents of each
    task, the ``--limit`` it was run with (None when not given or not a number) and the model
    (None when it names none: ``model_name`` with the ``revision`` its model arguments load,
    :func:`with_revision`); ``named``: the ``model_name`` as written, ``revision``: that one."""

    counts: dict[str, tuple[int, int]]
    limit: Any
    model: str | None
    named: str | None = None
    revision: str | None = None


def results_file(samples: str, stamp: str) -> str:
    """The results file of the run that wrote a samples file, beside it: ``results_<stamp>.json``
    (or that name compressed, as a folder of compressed files holds it); else, of the other
    ``<stem>_<stamp>.json`` files there (compressed or not; lm-eval's ``--output_path
    out/res.json`` writes ``out/res_<stamp>.json``), the first by name that is a results file
    (:func:`results_only`; samples files' names are passed over, so are files over
    ``RESULTS_BYTES``); ``results_<stamp>.json`` when there is none."""
    folder = os.path.dirname(samples)
    plain = os.path.join(folder, f"results_{stamp}.json")
    for suffix in ("", *SUFFIXES):
        if os.path.isfile(plain + suffix):
            return plain + suffix
    for name in _stamped(folder or ".").get(stamp, ()):
        version = results_version(os.path.join(folder, name))
        if version is not None and _results_named(*version):
            return os.path.join(folder, name)
    return plain


_STAMPED = re.compile(
    r"^(?P<stem>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.json"
    rf"(?:{'|'.join(re.escape(s) for s in SUFFIXES)})?$"
)
_SETTLED_NS = 2_000_000_000  # a folder changed this recently is listed again at each look


def _stamped(folder: str) -> dict[str, tuple[str, ...]]:
    """The names in ``folder`` of files that may be a run's results file, by the timestamp
    they end with, in name order: ``<stem>_<stamp>.json`` (compressed or not) but for samples
    files (``samples_<task>_<stamp>``). Cached by the folder's identity and modification
    time: the samples files of a folder of runs are each looked at by several checks; a
    folder changed within ``_SETTLED_NS`` (whose time may not have moved yet) is not."""
    try:
        found = os.stat(folder)
    except OSError:
        return {}
    if time.time_ns() - found.st_mtime_ns < _SETTLED_NS:
        return _listed.__wrapped__(folder, found.st_mtime_ns)
    return _listed(os.path.realpath(folder), found.st_mtime_ns)


@lru_cache(maxsize=64)
def _listed(folder: str, _mtime: int) -> dict[str, tuple[str, ...]]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return {}
    stamped: dict[str, list[str]] = {}
    for name in names:
        match = _STAMPED.match(name)
        if match is not None and not match["stem"].startswith("samples_"):
            stamped.setdefault(match["stamp"], []).append(name)
    return {stamp: tuple(found) for stamp, found in stamped.items()}


@lru_cache(maxsize=256)
def _results_named(path: str, _mtime: int, _size: int) -> bool:
    # cached by the file's identity, as the records are (:func:`_record_of`)
    return results_only(path)


def results_version(path: str) -> tuple[str, int, int] | None:
    """(real path, mtime, size) of a results file at ``path``, its contents' cache key; None
    when there is none, or it is not a regular file of at most ``RESULTS_BYTES``."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(found.st_mode) or found.st_size > RESULTS_BYTES:
        return None
    return os.path.realpath(path), found.st_mtime_ns, found.st_size


def results_only(path: str) -> bool:
    """Whether the file at ``path`` holds an lm-eval results file and nothing else: one JSON
    object with ``results`` and ``configs`` and no ``samples`` (compressed or not), as the
    readers tell one. Its figures are aggregates and it holds no rows: a reader skips it
    pretty-printed whatever the format, on one line when the format is detected, and every
    format given refuses it. Not one for a file over ``RESULTS_BYTES`` (once decompressed), nor
    one that cannot be read or decoded (the reader says what is wrong with it)."""
    from calibcli.io.strict_json import loads_text

    if results_version(path) is None:
        return False
    try:
        with open_path(path) as f:
            data = f.read(RESULTS_BYTES + 1)
        if len(data) > RESULTS_BYTES or data.removeprefix(codecs.BOM_UTF8).lstrip()[:1] != b"{":
            return False  # too large to be read for its counts, or no JSON object
        value = loads_text(data.decode("utf-8-sig"))
    except (*read_errors(), ValueError, RecursionError):
        return False
    if not isinstance(value, dict):
        return False
    return "results" in value and "configs" in value and "samples" not in value


def run_record(path: str) -> _Run | None:
    """What the results file at ``path`` records of its run; None without a readable one."""
    version = results_version(path)
    return None if version is None else _record_of(*version)


@lru_cache(maxsize=256)
def _record_of(path: str, _mtime: int, _size: int) -> _Run | None:
    # cached by the file's identity: the samples files of one run (57 for MMLU) share it, and
    # a folder of many runs is looked at file by file by several checks
    import msgspec

    results = msgspec.defstruct(
        "Results",
        [("n_samples", Any, None), ("config", Any, None), ("model_name", Any, None)],
        rename={"n_samples": "n-samples"},
    )
    try:
        with open_path(path) as f:
            top = msgspec.json.decode(f.read(RESULTS_BYTES + 1), type=results)
    except (*read_errors(), msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    config = top.config if isinstance(top.config, dict) else {}
    named = top.model_name if isinstance(top.model_name, str) and top.model_name else None
    revision = revision_of(config.get("model_args"))
    model = None if named is None else with_revision(named, revision)
    if model is None and isinstance(config.get("model_args"), str) and config["model_args"]:
        model = config["model_args"]
    counts: dict[str, tuple[int, int]] = {}
    for task, entry in (top.n_samples if isinstance(top.n_samples, dict) else {}).items():
        if isinstance(entry, dict):
            original, effective = (whole_count(entry.get(k)) for k in ("original", "effective"))
            if original is not None and effective is not None:
                counts[task] = (original, effective)
    limit = config.get("limit")
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        limit = None
    return _Run(counts, limit, model, named, revision)


_REVISION = re.compile(r"^revision(?:=|__)(?P<revision>.+)$")


def revision_of(args: Any, named: bool = False) -> str | None:
    """The ``revision`` (the checkpoint: a branch, tag or commit) lm-eval model arguments load:
    ``revision=R`` of a results file's ``config.model_args`` (a string, or an object), or
    ``revision__R`` of a file name before v0.4.3 (``named``: ``/`` written as ``__``); None
    when they name none."""
    if isinstance(args, dict):
        found = args.get("revision")
        return found if isinstance(found, str) and found else None
    if not isinstance(args, str):
        return None
    for arg in args.split(","):
        match = _REVISION.match(arg.strip())
        if match:
            return match["revision"].replace("__", "/") if named else match["revision"]
    return None


def with_revision(model: str, revision: str | None) -> str:
    """``model`` named with the ``revision`` it was loaded at, ``name@revision`` (the revision
    after the name, before the adapters a name before v0.4.3 adds: ``org/m@step1 + peft a``):
    two checkpoints of one model are two models, never re-runs of one. As it is without a
    revision, at ``main``, or when it carries it already."""
    name, plus, adapters = model.partition(" + ")
    # "main", the hub's default branch, is the model as named without a revision
    if not revision or revision == "main" or name.endswith(f"@{revision}"):
        return model
    return f"{name}@{revision}{plus}{adapters}"
