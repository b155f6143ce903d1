"""What the results file of an lm-eval run records of a task's configuration that changes how
its samples read: the ``target_delimiter`` the harness puts between the context and each choice.

Length normalisation (``--mc-norm chars|bytes``) divides each choice's loglikelihood by the
length of the choice's text, which the samples file logs only as the continuation,
``target_delimiter + choice``. The delimiter is " " unless the task's configuration sets another
(``""`` for tasks whose choices carry their own leading space); the run's
``results_<timestamp>.json`` beside the samples file records it under ``configs[task]``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import PurePath
from typing import Any

from calibcli.errors import shown_name
from calibcli.io.compression import open_path, read_errors
from calibcli.io.runs import RESULTS_BYTES, RUN_NAME, results_file, results_version

#: The harness's default ``target_delimiter``, taken when no results file records the task's.
DEFAULT_DELIMITER = " "


def target_delimiter(samples: str) -> str:
    """The ``target_delimiter`` of the task of an lm-eval samples file, as the results file of
    its run (beside it, the same timestamp) records it; :data:`DEFAULT_DELIMITER` when there is
    no such file, or it records no text for the task (and for standard input, and the older
    file names, which carry no timestamp)."""
    recorded = recorded_delimiter(samples)
    return DEFAULT_DELIMITER if recorded is None else recorded


def recorded_delimiter(samples: str) -> str | None:
    """The ``target_delimiter`` the results file of an lm-eval samples file's run records for
    its task, or None where none is recorded (:func:`target_delimiter` then takes the
    default)."""
    match = None if samples == "-" else RUN_NAME.match(PurePath(samples).name)
    if match is None:
        return None
    version = results_version(results_file(samples, match["stamp"]))
    if version is None:
        return None
    return _delimiters(*version).get(match["task"])


def assumed_delimiters(files: Any, mc_norm: str) -> list[str]:
    """A warning for each lm-eval file of ``files`` (pairs of a source read and its format)
    whose choices were length-normalised (``mc_norm`` chars or bytes) less a delimiter no
    results file of its run records: the harness's default is then taken, which a task that
    sets its own (``""``, or a newline) does not use, and each length would be off by it."""
    if mc_norm not in ("chars", "bytes"):
        return []
    return [
        f"{shown_name('<stdin>' if name == '-' else name)}: no results file of its run records "
        f"the task's target_delimiter; --mc-norm {mc_norm} takes the harness's default, a "
        "space, off each choice's text (keep the samples file beside its run's "
        "results_<timestamp>.json)"
        for name, fmt in dict.fromkeys(files)
        if fmt == "lm-eval" and recorded_delimiter(name) is None
    ]


@lru_cache(maxsize=256)
def _delimiters(path: str, _mtime: int, _size: int) -> dict[str, str]:
    # cached by the file's identity: the samples files of one run share it
    import msgspec

    results = msgspec.defstruct("Configs", [("configs", Any, None)])
    try:
        with open_path(path) as f:
            top = msgspec.json.decode(f.read(RESULTS_BYTES + 1), type=results)
    except (*read_errors(), msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return {}
    configs = top.configs if isinstance(top.configs, dict) else {}
    return {
        task: config["target_delimiter"]
        for task, config in configs.items()
        if isinstance(config, dict) and isinstance(config.get("target_delimiter"), str)
    }
