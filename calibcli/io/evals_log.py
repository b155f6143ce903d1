"""OpenAI evals record logs, as ``oaieval``'s LocalRecorder writes them: JSON Lines whose first
line is the run's spec, ``{"spec": {...}}`` (its ``completion_fns``, ``eval_name``, ``run_id``),
then one event a line (``sampling``, ``match``, ...), and ``{"final_report": ...}`` once the
run has ended (the recorder flushes buffered events after it, so events may follow it).

The rows are the ``match`` events, each joined with the last ``sampling`` event of its sample
before it (:func:`evals_rows`).

A log names its model once, in its spec: the ``completion_fns`` the run was given, joined by
commas as ``oaieval`` takes them on its command line and names its log file
(``<run_id>_<completion_fns>_<eval>.jsonl``); a spec of one completion function names that
model (:func:`spec_model`). The several-models check, ``--by model``, a calibrator's record of
its rows' models and the rows' ids read it (:func:`evals_model`), so that two models' logs of
one eval are neither pooled without a word nor refused as re-runs of one another. A file holding
a second spec (logs concatenated) is read on while that spec names the same model (a re-run,
whose rows repeat the sample ids, refused as rows read twice unless ``--all-runs``); a spec of
another model in it is refused: the file's rows would be one model's to every check.

A log without its ``final_report`` is of a run that did not end (it crashed, was stopped, or
is still going): its rows are read, and the reader is told (:func:`cut_note`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from calibcli.io.compression import open_path, read_errors
from calibcli.io.content import file_version
from calibcli.io.sources import MAX_LINE_BYTES
from calibcli.io.strict_json import long_integer


def is_evals_spec(value: Mapping[str, Any]) -> bool:
    """Whether a JSON object is the first line of an OpenAI evals record log (the run spec)."""
    spec = value.get("spec")
    return isinstance(spec, Mapping) and "run_id" in spec and len(value) == 1


def spec_model(spec: Any) -> str | None:
    """The model a run spec names: its ``completion_fns`` joined by commas (one completion
    function: its name), else the ``model_name`` of a spec ``oaieval`` wrote before it took
    completion functions; None when it names none."""
    fns = spec.get("completion_fns") if isinstance(spec, Mapping) else None
    if fns is None and isinstance(spec, Mapping):
        fns = spec.get("model_name")
    if isinstance(fns, str):
        return fns or None
    if not isinstance(fns, list) or not fns or not all(isinstance(f, str) and f for f in fns):
        return None
    return ",".join(fns)


def evals_model(path: str) -> str | None:
    """The model an OpenAI evals log's spec names (:func:`spec_model` of its first line); None
    when it names none, the file is no such log or cannot be read (the reader names why)."""
    version = file_version(path)
    return None if version is None else _first_spec_model(*version)


@lru_cache(maxsize=64)
def _first_spec_model(path: str, _mtime: int, _size: int) -> str | None:
    # cached by the file's identity: the pooled check, --by model, the ids and a calibrator's
    # record each ask for it
    try:
        with open_path(path) as f:
            line = b""
            while not line.strip():
                line = f.readline(MAX_LINE_BYTES + 1)
                if not line or len(line) > MAX_LINE_BYTES:
                    return None
        value = json.loads(line.decode("utf-8-sig"))
    except (*read_errors(), ValueError, RecursionError):
        return None
    if not isinstance(value, Mapping) or not is_evals_spec(value):
        return None
    return spec_model(value["spec"])


def evals_rows(
    text: str, notes: Callable[[str], None] | None = None
) -> Iterator[tuple[int, Any, str]]:
    """The match events of an OpenAI evals record log (line, joined row, the event's text),
    each with the last sampling event of its sample before it under ``"sampling"`` and the line
    of its sample's first match under ``"matched_at"`` (None for a first). Other lines are
    passed over; a sampling event is dropped once its match is read (a line kept per sample).
    A second spec naming another model than the first is refused (see the module docstring);
    ``notes`` is told of a log without its final report, after its last row."""
    from calibcli.io.documents import DocumentError

    pending: dict[Any, Any] = {}
    matched: dict[Any, int] = {}
    runs = finished = first = verdicts = 0  # specs, final reports, the first spec's line
    model: str | None = None
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as e:
            raise DocumentError(f"invalid JSON: {e.msg} (column {e.colno})", number) from None
        except ValueError:  # an integer longer than int() converts
            raise DocumentError(long_integer(line), number) from None
        if not isinstance(event, Mapping):
            raise DocumentError("line is not a JSON object", number)
        kind = event.get("type")
        if kind == "sampling":
            pending[_sample_key(event)] = event.get("data")
        elif kind == "match":
            key = _sample_key(event)
            joined = {**event, "sampling": pending.pop(key, None), "matched_at": matched.get(key)}
            matched.setdefault(key, number)
            verdicts += 1
            yield number, joined, line.strip()
        elif "final_report" in event and len(event) == 1:
            finished += 1
        elif is_evals_spec(event):
            named = spec_model(event["spec"])
            if runs and named != model:
                raise DocumentError(_other_model(named, model, first), number)
            if not runs:
                first, model = number, named
            runs += 1
    if not matched:
        raise DocumentError(
            "an OpenAI evals log without match events: no verdicts to calibrate against"
        )
    if notes is not None and finished < runs:
        notes(cut_note(verdicts, len(pending), runs > 1))


def _other_model(named: str | None, model: str | None, first: int) -> str:
    def shown(m: str | None) -> str:
        return repr(m) if m is not None else "no model (no completion_fns)"

    return (
        f"a second run spec in the log, of {shown(named)}, after the spec of {shown(model)} "
        f"(line {first}): the rows of two models' runs would be read as one model's; give "
        "each run's log as a file of its own"
    )


def cut_note(verdicts: int, unmatched: int, several: bool = False) -> str:
    """What to say of an OpenAI evals log without its ``final_report``: its run did not end,
    so its ``verdicts`` rows may be a part of those it planned; ``unmatched`` samples were
    sampled without a match event (the verdicts it had not yet recorded)."""
    which = "a run of the log" if several else "the log's run"
    sampled = (
        f" (and {unmatched:,} more sample{'' if unmatched == 1 else 's'} sampled without "
        "its match event)"
        if unmatched
        else ""
    )
    return (
        f"the OpenAI evals log has no final_report: {which} did not end (it crashed, was "
        f"stopped, or is still going); it holds {verdicts:,} verdict"
        f"{'' if verdicts == 1 else 's'}{sampled}: the figures are those of the samples it "
        "holds, which may be a part of those the run planned"
    )


def _sample_key(event: Mapping[str, Any]) -> Any:
    sample = event.get("sample_id")
    return json.dumps(sample) if isinstance(sample, (dict, list)) else sample
