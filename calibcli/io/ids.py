"""Row ids: what identifies a row across files (compare's matching) and within one reading
(rows read twice). A native row has an id only when ``--id-field`` names one; an lm-eval row's
id is its task (from the file name) and ``doc_id``; an inspect-ai sample's its ``id`` and
``epoch``. Ids keep JSON types apart: the number 1 and the string "1" are different ids."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any


def id_key(value: Any) -> Any:
    """A hashable id that keeps JSON types apart (1 and "1" are different ids)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, (int, float)):
        return ("number", value)
    if isinstance(value, str):
        return ("string", value)
    kind = "an object" if isinstance(value, dict) else "a list"
    raise ValueError(f"is {kind}, not a string or number")


def show_id(key: Any) -> str:
    """An id as the user wrote it (strings quoted, so 1 and "1" read differently)."""
    kind, value = key[0], key[-1]
    if kind == "evals":
        return show_id(key[1:])
    if kind == "string":
        return repr(value)
    if kind == "task":
        return f"{key[1]}/{show_id(key[2:])}"
    if kind == "sample":
        return f"{show_id(key[1:3])} (epoch {key[3]})"
    if kind == "instance":
        shown = f"{show_id(key[1:3])} (trial {key[3]}"
        return shown + (f", {key[4]})" if key[4] else ")")
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def default_id_field(fmt: str) -> str:
    """The field an id error names: the registry's default id without the task or epoch."""
    from calibcli.io import default_id

    return (
        default_id(fmt)
        .removeprefix("task + ")
        .removesuffix(" + epoch")
        .removesuffix(" + train_trial_index")
    )


def row_key(formats: Any, row: dict, fmt: str, id_field: str | None, task: str | None) -> Any:
    """The id of a row: ``id_field``'s value, or the format's default id."""
    if id_field is not None:
        return id_key(formats.lookup(row, id_field))
    if fmt == "lm-eval":
        return ("task", task or "-", *id_key(formats.lookup(row, "doc_id")))
    if fmt == "inspect-ai":
        epoch = row.get("epoch", 1)
        return ("sample", *id_key(formats.lookup(row, "id")), epoch)
    if fmt == "openai-evals":
        return ("evals", *id_key(formats.lookup(row, "sample_id")))
    if fmt == "helm":
        perturbation = row.get("perturbation")
        name = perturbation.get("name") if isinstance(perturbation, dict) else None
        trial = row.get("train_trial_index", 0)
        return ("instance", *id_key(formats.lookup(row, "instance_id")), trial, name)
    return id_key(formats.lookup(row, "id"))


def identifier(fmt: str, id_field: str | None, source: str) -> Callable[[dict], Any] | None:
    """Row -> its id for rows of ``fmt`` read from ``source``: by ``id_field`` when given,
    else by the format's structural id (lm-eval, inspect-ai); None for native rows without an
    id field (they are never identified, so the fast path stays fast)."""
    from calibcli import formats

    if id_field is None and fmt not in ("lm-eval", "inspect-ai", "helm", "openai-evals"):
        return None
    task = formats.task_from_filename(source) if source != "-" else None
    model = formats.model_from_filename(source) if source != "-" else None
    if task is not None and model is not None:
        # two models' files of one task hold the same doc_ids without reading a row twice
        task = f"{task} ({model})"

    def ident(row: dict) -> Any:
        try:
            return row_key(formats, row, fmt, id_field, task)
        except ValueError as exc:
            field = id_field or default_id_field(fmt)
            text = str(exc)
            raise ValueError(
                f'id field "{field}" {text}' if text.startswith("is ") else text
            ) from None

    return ident


def id_hash(key: Any) -> int:
    """A stable 64-bit hash of an id (the same in every process and run)."""
    digest = hashlib.blake2b(repr(key).encode("utf-8", "backslashreplace"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")
