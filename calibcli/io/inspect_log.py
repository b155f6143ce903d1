"""inspect-ai ``.json`` logs decoded with msgspec: the log held once as bytes, each sample
decoded from its own text when it is read, and with ``slim`` only the sample fields the
inspect-ai row functions read (:mod:`calibcli.io.documents` falls back to ``json.loads`` of the
whole text for anything msgspec does not read)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

SAMPLE_FIELDS = ("id", "epoch", "error", "scores", "output", "choices")
"""The fields of an inspect-ai sample that its row functions and ids read."""


def inspect_samples(
    data: bytes, slim: Callable[[Any], bool] | None = None, sample_type: Any = None
) -> Iterator[tuple[str, Any]] | None:
    """The ``(locator, sample)`` pairs of an inspect-ai ``.json`` log as
    :func:`~calibcli.io.documents.iter_document` yields them from ``json.loads`` of the whole
    text, or None for any other document (and for a log without samples, or one msgspec does
    not read: ``NaN``, a byte-order mark), which ``json.loads`` then reads. msgspec decodes the
    top level keeping each sample's JSON text as a view of ``data``, and each sample is decoded
    when it is yielded: the log is held once and the samples already read are not held at
    all. ``slim`` and ``sample_type``: see :func:`~calibcli.io.documents.iter_document`."""
    import msgspec

    # one decode of the whole log, so that each sample's Raw is a view of ``data`` itself
    log = msgspec.defstruct("Log", [("eval", msgspec.Raw), ("samples", list[msgspec.Raw])])
    try:
        top = msgspec.json.decode(data, type=log)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if not (bytes(top.eval).startswith(b"{") and top.samples):
        return None
    return _decoded_samples(top.samples, slim, sample_type)


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

    unset = msgspec.UNSET
    errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
    fields = [(name, Any, unset) for name in SAMPLE_FIELDS]
    slim_decode = msgspec.json.Decoder(msgspec.defstruct("Sample", fields, gc=False)).decode
    typed_decode = None if sample_type is None else msgspec.json.Decoder(sample_type).decode
    slimmed = False
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
        if i == 0 and slim is not None:
            slimmed = slim(sample)
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
