"""The models OpenAI responses and vLLM server responses name, row by row.

lm-eval and inspect-ai name a run's model once, in a file name, a results file or a log's
``eval``. An API response names it in each row instead: a chat or legacy completion at its top
(``model``, as vLLM's OpenAI-compatible server writes it too), a Batch API output line in
``response.body.model``. A batch may send requests to several models, so every row of a file is
read for its model, not only the first; a file's models are then its run's, as a pooled check
and a calibrator's ``fitted_on`` read them. ``LLM.generate`` outputs (vLLM offline) name no
model, and their files none.

A file naming several models gives them joined by :data:`SEPARATOR` (a model name holds no line
break), so that one string, as a summary's source records a run's model, still tells them all
(:func:`models_named` splits it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from calibcli.io.compression import open_path, read_errors
from calibcli.io.content import file_version

RESPONSE_FORMATS = ("openai", "vllm")
"""The formats whose rows name their model, each row its own."""
SEPARATOR = "\n"
"""What joins the models of a file whose rows name several."""


def row_model(row: Any) -> str | None:
    """The model a response row names: a Batch API output line's ``response.body.model``, else
    the row's own ``model`` (a chat or legacy completion, a vLLM server response); None when it
    names none (a failed batch request names none either: the reader reports it)."""
    if not isinstance(row, Mapping):
        return None
    response = row.get("response") if "custom_id" in row else None
    if isinstance(response, Mapping):
        body = response.get("body")
        row = body if isinstance(body, Mapping) else {}
    return _named(row.get("model"))


def response_model(path: str) -> str | None:
    """The model the rows of an OpenAI or vLLM response file name (:func:`row_model` of each),
    the models joined by :data:`SEPARATOR` when they name several (sorted), None when none
    names one or the file cannot be read (its rows' errors are the reader's to name)."""
    version = file_version(path)
    return None if version is None else _models_of(*version)


def models_named(model: str | None) -> list[str]:
    """The models a run's recorded model stands for: one (``""`` too, an lm-eval run without
    model arguments), several joined by :data:`SEPARATOR`, or none (None)."""
    return [] if model is None else model.split(SEPARATOR)


@lru_cache(maxsize=64)
def _models_of(path: str, _mtime: int, _size: int) -> str | None:
    # cached by the file's identity: the pooled check, the calibrator's record and the check
    # of a calibrator's rows each ask for it
    from calibcli.io.documents import DocumentError, document_kind, iter_document

    try:
        kind = document_kind(path)
        if kind is None:
            found = {m for m in _line_models(path) if m is not None}
        elif kind in ("json-array", "json-object"):
            found = _names(row for _, row in iter_document(path, kind=kind))
        else:
            return None
    except (*read_errors(), DocumentError, ValueError, RecursionError):
        return None
    return SEPARATOR.join(sorted(found)) or None


def _names(rows: Iterable[Any]) -> set[str]:
    return {m for m in map(row_model, rows) if m is not None}


def _line_models(path: str) -> Iterator[str | None]:
    """:func:`row_model` of each JSON Lines row of ``path``, decoding only the fields it reads
    (a line that cannot be decoded skipped: the reader names it)."""
    import msgspec

    top, response, body = (msgspec.json.Decoder(t) for t in _shapes())
    with open_path(path) as f:
        for line in f:
            # a key spelled with escapes (mod\u0065l) holds a backslash
            if b"model" not in line and b"\\" not in line:
                continue
            try:
                row = top.decode(line)
            except (msgspec.DecodeError, RecursionError):  # not an object, or not JSON
                continue
            if row.custom_id is msgspec.UNSET or row.response is msgspec.UNSET:
                yield _named(row.model)
                continue
            try:  # a batch line: the model of response.body, as row_model reads it
                found = response.decode(row.response)
            except (msgspec.DecodeError, RecursionError):  # no object: the line's own model
                yield _named(row.model)
                continue
            try:
                yield None if found.body is msgspec.UNSET else _named(body.decode(found.body).model)
            except (msgspec.DecodeError, RecursionError):
                yield None


def _named(model: Any) -> str | None:
    """A model's name: a string as it is, a number as JSON writes it (a model named ``5`` is
    a model all the same, and two such files are two models); None for none (null, ``""``,
    or a value that names nothing: an object, a list, an integer too long to read)."""
    if isinstance(model, str):
        return model or None
    if isinstance(model, (int, float)) and not isinstance(model, bool):
        return json.dumps(model)
    return None


@lru_cache(maxsize=1)
def _shapes() -> tuple[type, type, type]:
    """The fields of a row :func:`row_model` reads, as msgspec structs: the line's ``model``,
    ``custom_id`` and ``response``, the response's ``body``, the body's ``model``."""
    import msgspec

    unset: Any = msgspec.UNSET
    raw = msgspec.Raw | msgspec.UnsetType
    line = msgspec.defstruct(
        "Line", [("model", Any, None), ("custom_id", Any, unset), ("response", raw, unset)]
    )
    response = msgspec.defstruct("Response", [("body", raw, unset)])
    return line, response, msgspec.defstruct("Body", [("model", Any, None)])
