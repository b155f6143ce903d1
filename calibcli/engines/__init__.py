"""What the Spark and Dask integrations share, engine-free: the function each task runs (a
partition's record batches or a file's byte range -> a part), the merge of two tasks' results,
and the summary the driver ends with (:class:`~calibcli.engines.result.EngineSummary`).

The engine only schedules these functions and moves their bytes: every figure's arithmetic is
calibcli's own, inside a task or on the driver. A task's result is a :class:`TaskResult`,
which carries either a part (a summary in :mod:`calibcli.summaries.encoding`'s bytes) or the
input's problems, so bad values anywhere add up into one error on the driver. Nothing in
calibcli's core imports this package; :mod:`calibcli.spark` and :mod:`calibcli.dask` do.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "EngineSummary": "calibcli.engines.result",
    "finish": "calibcli.engines.result",
    "TaskResult": "calibcli.engines.tasks",
    "FileJob": "calibcli.engines.tasks",
    "file_jobs": "calibcli.engines.tasks",
    "file_task": "calibcli.engines.tasks",
    "file_group_task": "calibcli.engines.tasks",
    "job_groups": "calibcli.engines.tasks",
    "frame_spec": "calibcli.engines.tasks",
    "frame_task": "calibcli.engines.tasks",
    "empty_task": "calibcli.engines.tasks",
    "merge_tasks": "calibcli.engines.tasks",
    "merge_all": "calibcli.engines.tasks",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calibcli.engines' has no attribute {name!r}")
