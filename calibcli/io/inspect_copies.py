"""Two inspect-ai logs of one run, pooled with ``--all-runs``: a copy of a log (``a (1).json``),
its conversion to the other format (``inspect log convert``, an ``.eval`` beside its
``.json``), or its re-scoring (``inspect score`` copies the log whole, its eval_id with it).
inspect-ai gives each task it runs a new ``eval.eval_id``, a re-run included, so two logs of
one ``eval_id`` hold the same answers, which pooled as re-runs would count twice: they are
refused (:func:`refuse_same_runs`). A log's ``eval_id`` is read with its model, without its
samples (:func:`calibcli.io.inspect_log.log_spec`); sources whose files are not at hand (a
summary file's) are told by their bytes alone."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from calibcli.errors import InputError, shown_name

FORMAT = "inspect-ai"


def log_eval_id(path: str) -> str | None:
    """The ``eval.eval_id`` of an inspect-ai log (``.eval``, or ``.json`` compressed or not),
    read without its samples; None when the log does not say or cannot be read."""
    found = log_run(path)
    return None if found is None else found[0]


def log_run(path: str) -> tuple[str, str, str] | None:
    """What names an inspect-ai log's run: its ``eval.eval_id``, with the ``task`` and
    ``model`` it ran (as written), so that a log edited by hand to another task or model is
    not taken for a copy; None when the log records no eval_id or cannot be read."""
    from calibcli.io.content import file_version

    found = file_version(path)
    return None if found is None else _run_of(*found)


def forget_runs() -> None:
    """Forget the logs' runs read, as after they changed."""
    _run_of.cache_clear()


@functools.lru_cache(maxsize=64)
def _run_of(path: str, mtime: int, size: int) -> tuple[str, str, str] | None:
    from calibcli.io.inspect_log import log_spec

    spec = log_spec(path, mtime, size)
    if not isinstance(spec, Mapping):
        return None
    found = spec.get("eval_id")
    if not (isinstance(found, str) and found):
        return None
    return found, repr(spec.get("task")), repr(spec.get("model"))


def refuse_same_runs(sources: Iterable[Any]) -> None:
    """InputError naming two inspect-ai sources (:class:`~calibcli.summaries.Source`) that
    hold the same bytes, or whose logs record the same ``eval.eval_id`` (of the same task and
    model, :func:`log_run`): one run's log read twice, which ``--all-runs`` would pool as a
    re-run. A source's ``eval_id`` is read from its file when the file at its name is still
    the one read (its content unchanged, or no content recorded); the byte ranges of one file
    are one file."""
    from calibcli.io.content import file_content_id

    by_content: dict[str, str] = {}
    by_run: dict[tuple[str, str, str], str] = {}
    for s in sources:
        if s.format != FORMAT or s.skipped is not None or s.rows <= 0 or s.name == "-":
            continue
        content = file_content_id(s.name)
        if s.content and content != s.content:
            content = ""  # the file named is not the one read: its bytes alone tell
        known = s.content or content
        earlier = by_content.setdefault(known, s.name) if known else s.name
        if earlier != s.name:
            said = log_eval_id(s.name) if content else None
            raise InputError(s.name, None, _same_run_text(earlier, said))
        run = log_run(s.name) if content else None
        earlier = by_run.setdefault(run, s.name) if run else s.name
        if run is not None and earlier != s.name:
            raise InputError(s.name, None, _same_run_text(earlier, run[0], converted=True))


def _same_run_text(earlier: str, eval_id: str | None, converted: bool = False) -> str:
    said = f" (eval_id {eval_id})" if eval_id else ""
    what = (
        f"is a log of the same inspect-ai run as {shown_name(earlier)}{said}: a copy, a "
        "conversion (inspect log convert) or a re-scoring (inspect score) of it"
        if converted
        else f"holds the same bytes as {shown_name(earlier)}{said}: one inspect-ai run's log"
    )
    return (
        f"{what}, not a re-run, which inspect-ai gives an eval_id of its own: --all-runs would "
        "count its answers twice (leave one of them out)"
    )
