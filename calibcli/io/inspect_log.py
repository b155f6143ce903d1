"""inspect-ai ``.json`` logs decoded with msgspec: the log held once as bytes, each sample
decoded from its own text when it is read, and with ``slim`` only the sample fields the
inspect-ai row functions read (:mod:`calibcli.io.documents` falls back to ``json.loads`` of the
whole text for anything msgspec does not read); :func:`status_note`, the warning about a log
whose run did not succeed (its samples may be a part of the run's); :func:`part_note`, the
one about a run that evaluated a part of its dataset (``limit``); and :func:`cut_note`, the one
about a log holding fewer samples than its run scored (a log cut short); and
:func:`folder_manifest`, what a folder's eval-set manifest (``logs.json``) is, left out; and
:func:`scored_samples`, a log's samples less those that ended in an error unscored, left out as
inspect-ai's metrics leave them out, and less those marked invalidated."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from calibcli.io.compression import open_path, read_errors, without_suffix
from calibcli.io.content import file_version

SAMPLE_FIELDS = ("id", "epoch", "error", "scores", "output", "choices", "invalidation")
"""The fields of an inspect-ai sample that its row functions and ids read, and the one that
says it is invalidated."""
ERROR_CHARS = 100
"""Most characters of a failed run's error message quoted in its note."""


def inspect_samples(
    data: bytes,
    slim: Callable[[Any], bool] | None = None,
    sample_type: Any = None,
    notes: Callable[[str], None] | None = None,
) -> Iterator[tuple[str, Any]] | None:
    """The ``(locator, sample)`` pairs of an inspect-ai ``.json`` log as
    :func:`~calibcli.io.documents.iter_document` yields them from ``json.loads`` of the whole
    text, or None for any other document (and for a log without samples, or one msgspec does
    not read: ``NaN``, a byte-order mark), which ``json.loads`` then reads. msgspec decodes the
    top level keeping each sample's JSON text as a view of ``data``, and each sample is decoded
    when it is yielded: the log is held once and the samples already read are not held at
    all. ``slim``, ``sample_type`` and ``notes``: see
    :func:`~calibcli.io.documents.iter_document`."""
    import msgspec

    # one decode of the whole log, so that each sample's Raw is a view of ``data`` itself; the
    # run's status is read beside the samples, and its spec's dataset and config after
    raw, empty = msgspec.Raw, msgspec.Raw()
    fields = [("status", Any, None), ("error", raw, empty), ("results", raw, empty)]
    log = msgspec.defstruct("Log", [("eval", raw), ("samples", list[raw]), *fields])
    try:
        top = msgspec.json.decode(data, type=log)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if not (bytes(top.eval).startswith(b"{") and top.samples):
        return None
    if notes is not None:
        note_status(_status_fields(top), len(top.samples), notes)
    return scored_samples(_decoded_samples(top.samples, slim, sample_type), notes)


def scored_samples(
    items: Iterable[tuple[Any, ...]], notes: Callable[[str], None] | None = None
) -> Iterator[tuple[Any, ...]]:
    """The items (``(locator, sample, ...)``) of an inspect-ai log's samples less those that
    ended in an error without a score: inspect-ai computes its metrics from the samples it
    scored (``eval_results`` of their scores, whatever the run's status), so those are left
    out of its figures, and of calibcli's alike. After the last, ``notes`` is told how many
    were left out. A sample that ended in an error but was scored (``score_on_error``) is
    kept, and its row function says what is wrong with it. Samples marked invalidated are
    left out too, and ``notes`` told how many and why
    (:func:`~calibcli.io.inspect_invalidated.invalidated_note`)."""
    from calibcli.io.inspect_invalidated import invalidated_note, invalidation

    held = left = 0
    invalid: list[Any] = []
    for item in items:
        held += 1
        if (record := invalidation(item[1])) is not None:
            invalid.append(record)
            continue
        if _unscored_error(item[1]):
            left += 1
            continue
        yield item
    if invalid and notes is not None:
        notes(invalidated_note(invalid, held))
    if left and notes is not None:
        said = "sample" if held == 1 else "samples"
        notes(
            f"{left} of {held} {said} ended in an error and "
            f"{'is' if left == 1 else 'are'} left out, as inspect-ai's own metrics leave them out"
        )


def _unscored_error(sample: Any) -> bool:
    """Whether a sample (a dict, or a typed struct and its text) ended in an error and holds
    no score."""
    if type(sample) is tuple:  # (struct, text) of the typed path
        return bool(sample[0].error) and not sample[0].scores
    return isinstance(sample, Mapping) and bool(sample.get("error")) and not sample.get("scores")


def log_samples(
    samples: list[Any], spans: list[tuple[int, int]] | None, text: str
) -> Iterator[tuple[Any, ...]]:
    """``(locator, sample)`` of each sample of a log decoded whole, with ``spans`` (the
    samples' text spans in ``text``) ``(locator, sample, sample text)``."""
    for i, sample in enumerate(samples):
        ident = sample.get("id") if isinstance(sample, Mapping) else None
        epoch = sample.get("epoch") if isinstance(sample, Mapping) else None
        locator = f"samples[{i}] (id {ident}, epoch {epoch})"
        if spans is None:
            yield locator, sample
        else:
            start, end = spans[i]
            yield locator, sample, text[start:end]


def note_status(log: Mapping[str, Any], samples: int, notes: Callable[[str], None]) -> None:
    """``notes`` of what a log says of its samples: that its run did not succeed
    (:func:`status_note`), that it evaluated a part of its dataset (:func:`part_note`), that
    the log holds fewer of them than the run scored (:func:`cut_note`)."""
    for note in (status_note(log, samples), part_note(log), cut_note(log, samples)):
        if note is not None:
            notes(note)


def part_note(log: Mapping[str, Any]) -> str | None:
    """What to say of an inspect-ai log whose run evaluated a part of its dataset (``--limit``,
    ``--sample-id``): its ``eval.dataset.sample_ids`` lists fewer samples than the dataset's
    ``eval.dataset.samples``. None when it evaluated them all, or the log does not say."""
    spec = log.get("eval")
    dataset = spec.get("dataset") if isinstance(spec, Mapping) else None
    if not isinstance(dataset, Mapping):
        return None
    total, ids = whole_count(dataset.get("samples")), dataset.get("sample_ids")
    if total is None or not isinstance(ids, list) or len(ids) >= total:
        return None
    config = spec.get("config")
    config = config if isinstance(config, Mapping) else {}
    limit = _limit(config)
    how = f" ({limit})" if limit else " (sample_id)" if config.get("sample_id") else ""
    return (
        f"the inspect-ai run evaluated only {len(ids):,} of the {total:,} samples of its "
        f"dataset{how}: the figures are those of this part, not of the whole dataset"
    )


def cut_note(log: Mapping[str, Any], samples: int) -> str | None:
    """What to say of a log of a run that succeeded holding fewer than the samples the run
    scored (a copy stopped short, sample files lost from an ``.eval`` archive): as many as
    its ``results.completed_samples``, else its ``eval.dataset.sample_ids`` (the samples run,
    those of a ``--limit`` alone) times its ``eval.config.epochs``. None when it holds them
    all, when the log does not say, and for a run that did not succeed, whose samples
    :func:`status_note` already says may be a part of those it planned."""
    if log.get("status") != "success":
        return None
    results, spec = log.get("results"), log.get("eval")
    done = whole_count(results.get("completed_samples")) if isinstance(results, Mapping) else None
    dataset = spec.get("dataset") if isinstance(spec, Mapping) else None
    config = spec.get("config") if isinstance(spec, Mapping) else None
    ids = dataset.get("sample_ids") if isinstance(dataset, Mapping) else None
    epochs = whole_count(config.get("epochs")) if isinstance(config, Mapping) else None
    planned = len(ids) * (epochs or 1) if isinstance(ids, list) else None
    scored = done if done is not None else planned
    if scored is None or samples >= scored:
        return None
    if scored == planned:
        each = f"{epochs or 1} epoch{'' if (epochs or 1) == 1 else 's'}"
        how = f"{len(ids):,} sample{'' if len(ids) == 1 else 's'} x {each}"
    else:
        how = "results.completed_samples"
    return (
        f"holds {samples:,} sample{'' if samples == 1 else 's'}, but its run scored "
        f"{scored:,} ({how}): the log is cut short, and the figures are those of the samples "
        "it holds"
    )


def status_note(log: Mapping[str, Any], samples: int) -> str | None:
    """What to say of an inspect-ai log whose run did not succeed, holding ``samples``
    samples: its ``status`` (``"error"``, ``"cancelled"``, ``"started"`` for a run still going
    or stopped), the first line of its ``error.message``, and how many samples the run planned
    as far as the log says (``results.total_samples``, else ``eval.dataset.samples``,
    ``eval.config.limit`` and ``eval.config.epochs``). None for ``"success"`` or no status.
    ``log`` is the log's top level, or the header of an ``.eval`` log."""
    status = log.get("status")
    if not isinstance(status, str) or status == "success":
        return None
    if status == "started":
        what = "the inspect-ai log has status 'started' (its run was still going, or was stopped)"
    else:
        error = log.get("error")
        message = error.get("message") if isinstance(error, Mapping) else None
        first = message.strip().split("\n", 1)[0].strip() if isinstance(message, str) else ""
        if len(first) > ERROR_CHARS:
            first = first[: ERROR_CHARS - 3].rstrip() + "..."
        what = f"the inspect-ai run ended with status {status!r}" + (f" ({first})" if first else "")
    results = log.get("results")
    total = whole_count(results.get("total_samples")) if isinstance(results, Mapping) else None
    held = f"{samples} sample{'' if samples == 1 else 's'}"
    if total and samples >= total:
        return f"{what}: it holds all {total} samples the run planned"
    if total:
        return f"{what}: its {held} may be a part of the {total} it planned"
    spec = log.get("eval")
    dataset = spec.get("dataset") if isinstance(spec, Mapping) else None
    config = spec.get("config") if isinstance(spec, Mapping) else None
    config = config if isinstance(config, Mapping) else {}
    planned = []
    if isinstance(dataset, Mapping) and whole_count(dataset.get("samples")) is not None:
        planned.append(f"a dataset of {dataset['samples']} samples")
    limit = _limit(config)
    if limit:
        planned.append(limit)
    epochs = whole_count(config.get("epochs"))
    if epochs is not None and epochs > 1:
        planned.append(f"{epochs} epochs")
    given = f" ({', '.join(planned)})" if planned else ""
    return f"{what}: its {held} may be a part of those it planned{given}"


def _limit(config: Mapping[str, Any]) -> str | None:
    """A run's ``config.limit`` as said: ``limit 8``, or ``limit 10,20`` for a range (as
    inspect-ai's ``--limit 10,20``); None when there is none."""
    limit = config.get("limit")
    if whole_count(limit) is not None:
        return f"limit {limit}"
    if (
        isinstance(limit, list)
        and len(limit) == 2
        and all(whole_count(n) is not None for n in limit)
    ):
        return f"limit {limit[0]},{limit[1]}"
    return None


def whole_count(value: Any) -> int | None:
    """``value`` when it is a count (an int >= 0, not a bool), else None: how a count a log or
    a results file records is read."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _status_fields(top: Any) -> dict[str, Any]:
    """The fields :func:`status_note` reads, decoded from the log's top level (``eval`` only
    down to its dataset and config, ``results`` to its total); a field msgspec cannot decode
    is left out."""
    import msgspec

    spec = msgspec.defstruct("Spec", [("dataset", Any, None), ("config", Any, None)])
    counts = [("total_samples", Any, None), ("completed_samples", Any, None)]
    results = msgspec.defstruct("Results", counts)
    errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
    fields: dict[str, Any] = {"status": top.status}
    with contextlib.suppress(*errors):
        fields["error"] = msgspec.json.decode(top.error) if len(top.error) else None
    with contextlib.suppress(*errors):
        found = msgspec.json.decode(top.results, type=results)
        fields["results"] = {"total_samples": found.total_samples}
        fields["results"]["completed_samples"] = found.completed_samples
    with contextlib.suppress(*errors):
        decoded = msgspec.json.decode(top.eval, type=spec)
        fields["eval"] = {"dataset": decoded.dataset, "config": decoded.config}
    return fields


def full_sample(raw: Any) -> Any:
    """One sample's JSON text (a ``msgspec.Raw``) decoded whole, as ``json.loads`` of the log
    reads it: msgspec first, ``json.loads`` for what msgspec does not read (``1e400``).
    ValueError saying what is wrong with the sample's text (not UTF-8, an integer too long)."""
    import msgspec

    with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return msgspec.json.decode(raw)
    return _loads(raw)


def _loads(raw: Any) -> Any:
    """A sample's JSON text read by ``json.loads``, as UTF-8 only (given bytes, json.loads
    would also take UTF-8 holding encoded surrogates); ValueError as :func:`full_sample`."""
    from calibcli.io.strict_json import long_integer

    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not valid UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e.msg} (column {e.colno})") from None
    except ValueError:  # an integer longer than int() converts
        raise ValueError(long_integer(text)) from None


def _decoded_samples(
    samples: list[Any], slim: Callable[[Any], bool] | None, sample_type: Any
) -> Iterator[tuple[str, Any]]:
    import msgspec

    from calibcli.io.inspect_invalidated import invalidation, with_invalidation

    unset = msgspec.UNSET
    errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
    fields = [(name, Any, unset) for name in SAMPLE_FIELDS]
    slim_decode = msgspec.json.Decoder(msgspec.defstruct("Sample", fields, gc=False)).decode
    if sample_type is not None:  # an invalidated sample is told by its struct
        sample_type = with_invalidation(sample_type)
    typed_decode = None if sample_type is None else msgspec.json.Decoder(sample_type).decode
    slimmed, decided = False, slim is None
    for i in range(len(samples)):
        raw, samples[i] = samples[i], None  # a yielded sample's text is not kept
        sample: Any = None
        if slimmed and typed_decode is not None:
            try:
                kept = typed_decode(raw)
            except errors:
                kept = None
            if kept is not None:
                ident = None if kept.id is unset else kept.id
                epoch = None if kept.epoch is unset else kept.epoch
                # the struct and its text, from which a sample the struct cannot give values
                # for is decoded whole
                yield f"samples[{i}] (id {ident}, epoch {epoch})", (kept, raw)
                continue
            sample = _whole(full_sample, raw, i)
        elif slimmed:
            with contextlib.suppress(*errors):
                kept = slim_decode(raw)
                sample = {
                    name: value
                    for name in SAMPLE_FIELDS
                    if (value := getattr(kept, name)) is not unset
                }
            if sample is None:
                sample = _whole(_loads, raw, i)
        else:
            sample = _whole(full_sample, raw, i)
        if not decided and invalidation(sample) is None and not _unscored_error(sample):
            # decided by the first sample kept, which the reader routes the log by: those
            # left out before it are read whole too
            slimmed, decided = slim(sample), True
        ident = sample.get("id") if isinstance(sample, Mapping) else None
        epoch = sample.get("epoch") if isinstance(sample, Mapping) else None
        yield f"samples[{i}] (id {ident}, epoch {epoch})", sample


def _whole(decode: Callable[[Any], Any], raw: Any, i: int) -> Any:
    """Sample ``i`` decoded whole by ``decode``; what is wrong with its text as a
    DocumentError naming it."""
    from calibcli.io.documents import DocumentError

    try:
        return decode(raw)
    except ValueError as e:
        raise DocumentError(str(e), f"samples[{i}]") from None


def log_model(path: str) -> str | None:
    """The model an inspect-ai log's run used (``eval.model``, with the ``model_path`` of its
    ``eval.model_args`` as :func:`spec_model` names it); None when the log does not say or
    cannot be read (its samples are read, and their errors named, as without it)."""
    return _log_run(path)[0]


def log_epochs(path: str) -> int | None:
    """How many times an inspect-ai log's run scored each sample (``eval.config.epochs``);
    None when the log does not say or cannot be read."""
    return _log_run(path)[1]


def log_scorers(path: str) -> tuple[str, ...]:
    """The names of the scorers an inspect-ai log's task was run with (``eval.scorers``, each
    object's ``name``), which its samples hold no score of when it was written with
    ``--no-score``; empty when the log does not say or cannot be read (and for stdin)."""
    return _log_run(path)[2]


def log_task_name(path: str) -> str | None:
    """The task an inspect-ai log's run evaluated (``eval.task``), found as :func:`log_epochs`
    finds its epochs (a ``.json`` log's whole ``eval`` when it does not end within the first
    MiB); None when the log does not say or cannot be read."""
    return _log_run(path)[3]


def head_epochs(path: str) -> int | None:
    """``eval.config.epochs`` of an inspect-ai log, found without reading its samples: from an
    ``.eval`` log's header, or a ``.json`` log's ``eval`` ending within the file's first MiB
    (where inspect-ai writes it), compressed or not; None otherwise, also for any other file."""
    if path.lower().endswith(".eval"):
        return log_epochs(path)
    if not without_suffix(path.lower()).endswith(".json"):
        return None
    found = file_version(path)
    return None if found is None else _run_spec(_head_spec(*found))[1]


@functools.lru_cache(maxsize=64)
def _head_spec(path: str, _mtime: int, _size: int) -> Any:
    """A ``.json`` log's ``eval`` from its first MiB (:func:`_head_eval`), read once per file
    (decompressed, for a compressed log)."""
    try:
        with open_path(path) as f:
            return _head_eval(f.read(HEAD_BYTES))
    except read_errors():
        return None


def _run_spec(spec: Any) -> tuple[str | None, int | None, tuple[str, ...], str | None]:
    """(model, epochs, scorer names, task) of a log's ``eval`` object (None, or no names, for
    what it does not say)."""
    spec = spec if isinstance(spec, Mapping) else {}
    model, config, scorers = spec_model(spec), spec.get("config"), spec.get("scorers")
    epochs = whole_count(config.get("epochs")) if isinstance(config, Mapping) else None
    listed = (
        [s.get("name") for s in scorers if isinstance(s, Mapping)]
        if isinstance(scorers, list)
        else []
    )
    names = tuple(name for name in listed if isinstance(name, str))
    task = spec.get("task")
    task = task if isinstance(task, str) and task else None
    return model, epochs, names, task


def spec_model(spec: Mapping[str, Any]) -> str | None:
    """The model of a log's ``eval`` object: ``model``, and ``model@<model_path>`` when its
    ``model_args`` hold a ``model_path`` (the local weights ``hf/local``, ``vllm/local`` and the
    like load, which all name one ``model``: each checkpoint is a model of its own); None
    when it names no model."""
    model, args = spec.get("model"), spec.get("model_args")
    if not (isinstance(model, str) and model):
        return None
    path = args.get("model_path") if isinstance(args, Mapping) else None
    if not (isinstance(path, str) and path):
        return model
    # one folder however it is spelt (``./ckpt/`` is ``ckpt``)
    return f"{model}@{posixpath.normpath(path.replace(chr(92), '/'))}"


def forget_runs() -> None:
    """Forget what was read of the logs (their heads and runs), as after they changed."""
    from calibcli.io import inspect_copies

    _head_spec.cache_clear()
    log_spec.cache_clear()
    _run_of.cache_clear()
    inspect_copies.forget_runs()
    _manifest_of.cache_clear()


def folder_manifest(path: str) -> str | None:
    """What a folder's file is when it is one of the manifests inspect-ai's eval_set writes
    beside its logs (``logs.json``, ``eval-set.json``, and holding what inspect-ai writes in
    them: :func:`~calibcli.formats.inspect_ai.manifest_message`), said as the warning of a file
    left out, e.g. ``an inspect-ai eval-set manifest (...), not a log; skipped``. None for any
    other file, and for one that cannot be read or is not JSON (read, it says why)."""
    from calibcli.formats import MANIFEST_NAMES

    if os.path.basename(path).lower() not in MANIFEST_NAMES:
        return None
    found = file_version(path)
    return None if found is None else _manifest_of(*found)


@functools.lru_cache(maxsize=64)
def _manifest_of(path: str, _mtime: int, _size: int) -> str | None:
    """:func:`folder_manifest` of one version of a file, read once (a folder is listed more
    than once in a reading)."""
    from calibcli.formats import manifest_message
    from calibcli.io.documents import MAX_DOCUMENT_BYTES

    try:
        with open(path, "rb") as f:
            data = f.read(MAX_DOCUMENT_BYTES + 1)
        value = json.loads(data) if len(data) <= MAX_DOCUMENT_BYTES else None
    except (*read_errors(), ValueError, RecursionError):
        return None
    found = manifest_message(value)
    return None if found is None else f"{found}; skipped"


def _log_run(path: str) -> tuple[str | None, int | None, tuple[str, ...], str | None]:
    found = file_version(path)
    return (None, None, (), None) if found is None else _run_of(*found)


@functools.lru_cache(maxsize=64)
def _run_of(
    path: str, _mtime: int, size: int
) -> tuple[str | None, int | None, tuple[str, ...], str | None]:
    """(model, epochs, scorer names, task) of an inspect-ai log: from an ``.eval`` log's header or a
    ``.json`` log's ``eval`` (compressed or not). Cached by the file's identity, as lm-eval's
    results files are."""
    return _run_spec(log_spec(path, _mtime, size))


@functools.lru_cache(maxsize=256)
def log_spec(path: str, _mtime: int, size: int) -> Any:
    """The ``eval`` object of an inspect-ai log (an ``.eval`` log's header's, a ``.json`` log's
    near its start, else in the whole log up to ``MAX_DOCUMENT_BYTES``, its samples skipped),
    or None when it cannot be read."""
    import zipfile

    from calibcli.io.documents import MAX_DOCUMENT_BYTES, eval_header

    spec: Any = None
    try:
        if path.lower().endswith(".eval"):
            with open(path, "rb") as f, zipfile.ZipFile(f) as archive:
                header = eval_header(archive, f, MAX_DOCUMENT_BYTES)
            spec = header.get("eval") if header is not None else None
        elif without_suffix(path.lower()).endswith(".json"):
            spec = _head_spec(path, _mtime, size)  # where inspect-ai writes it, at any size
            if spec is None and size <= MAX_DOCUMENT_BYTES:  # the whole log, samples skipped
                with open_path(path) as f:
                    text = f.read(MAX_DOCUMENT_BYTES + 1)  # decompressed: no more than that
                spec = _whole_eval(text) if len(text) <= MAX_DOCUMENT_BYTES else None
    except (*read_errors(), zipfile.BadZipFile, ValueError, RecursionError, AttributeError):
        return None
    return spec


HEAD_BYTES = 1 << 20
"""The start of a ``.json`` log searched for its ``eval``: inspect-ai writes it before the
samples, after ``version`` and ``status``."""


def _head_eval(head: bytes) -> Any:
    """The ``eval`` object of a ``.json`` log from the start of its text (:func:`head_member`)."""
    return head_member(head, "eval")


def head_member(head: bytes, key: str) -> Any:
    """The top-level member ``key`` of a ``.json`` log from the start of its text, when the
    members before it and it itself end within ``head`` (inspect-ai writes ``eval``, ``plan``
    and ``results`` before the samples); else None. Only the top level's members are decoded,
    in order, and never the samples."""
    text = head.decode("utf-8", "ignore")
    decoder, skip = json.JSONDecoder(), re.compile(r"[ \t\n\r]*")
    pos = skip.match(text).end()
    if not text.startswith("{", pos):
        return None
    try:
        while True:
            name, pos = decoder.raw_decode(text, skip.match(text, pos + 1).end())
            pos = skip.match(text, pos).end()
            if not isinstance(name, str) or name == "samples" or not text.startswith(":", pos):
                return None
            value, pos = decoder.raw_decode(text, skip.match(text, pos + 1).end())
            if name == key:
                return value
            pos = skip.match(text, pos).end()
            if not text.startswith(",", pos):
                return None
    except (ValueError, RecursionError):
        return None


def _whole_eval(data: bytes) -> Any:
    """The ``model``, ``model_args``, ``config``, ``scorers``, ``task`` and ``eval_id`` of a
    ``.json`` log's ``eval``, its samples skipped."""
    import msgspec

    names = ("model", "model_args", "config", "scorers", "task", "eval_id")
    fields = msgspec.defstruct("Spec", [(name, Any, None) for name in names])
    found = msgspec.json.decode(data, type=msgspec.defstruct("Log", [("eval", fields, None)]))
    return None if found.eval is None else {name: getattr(found.eval, name) for name in names}
