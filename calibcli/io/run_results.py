"""What an lm-eval run's results file (``results_<timestamp>.json`` beside its samples files)
records of the run: the documents of each task (``n-samples``), the ``--limit`` and the model."""

from __future__ import annotations

import os
import stat
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
    (None when it names none)."""

    counts: dict[str, tuple[int, int]]
    limit: Any
    model: str | None


def results_file(samples: str, stamp: str) -> str:
    """The results file of the run that wrote a samples file: ``results_<stamp>.json`` beside
    it, or that name compressed as a folder of compressed files holds it."""
    plain = os.path.join(os.path.dirname(samples), f"results_{stamp}.json")
    for suffix in ("", *SUFFIXES):
        if os.path.isfile(plain + suffix):
            return plain + suffix
    return plain


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
    model = top.model_name if isinstance(top.model_name, str) and top.model_name else None
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
    return _Run(counts, limit, model)
