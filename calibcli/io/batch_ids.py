"""A Batch API output's lines, each named by the request it answers: its ``custom_id``.

OpenAI's Batch API takes the ``custom_id`` of each request from the batch's input file, refuses
a batch whose input repeats one, and writes it into the output line of that request beside
ids of the run's own (the line's ``batch_req_…`` id, the response's ``request_id`` and
``body.id``), which are new every time a batch runs. A batch submitted again, its output read
beside the first's or appended to it, thus repeats every ``custom_id`` under new ids, its
answers sampled again: the custom_id alone tells it. So a Batch output read without
``--id-field`` or ``--all-runs`` has each line identified by its request
(:func:`request_key`), as the formats with ids of their own are, and a request read twice, in
one file or in two, is refused as a row read twice is (:data:`TWICE`); the file's first line
says that its lines are Batch lines (:attr:`calibcli.io.first_id.FirstId.requests`).

A request is its ``custom_id`` and the model its response names
(:func:`~calibcli.io.response_models.row_model`): one batch input sent to two models gives two
models' answers to the same requests, no line read twice (the rows of two models pooled are
said, and fail every gate, as other runs of two models do). ``compare`` matches Batch lines by
``custom_id`` alone (:func:`calibcli.io.ids.row_key`), the requests two models answered.

Batches that number their requests alike without being one batch submitted again (shards of
one job, each numbered ``request-1``, ``request-2``, …) cannot be told from a batch
submitted again, since no output line says which input it answered: they are refused alike,
the message naming both ways to read them (``--all-runs`` pools every line, ``--id-field id``
names each line by its own ``batch_req`` id)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from calibcli.io.ids import id_key
from calibcli.io.response_models import row_model

BATCH_ID = "custom_id"
"""The key of a Batch API output line that names its request."""

TWICE = (
    "a batch submitted again, or the same lines in two files, would count twice (pass "
    "--all-runs to pool re-runs on purpose; batches that number their requests alike, such as "
    "the shards of one job, are read with --id-field id)"
)


def is_batch_line(row: Any) -> bool:
    """Whether ``row`` is a Batch API output line (a request's ``custom_id`` and its
    ``response``), as the openai format detects one."""
    return isinstance(row, Mapping) and BATCH_ID in row and "response" in row


def request_key(row: Mapping[str, Any]) -> tuple:
    """The request a Batch output line answers: ``("request", *custom_id's id, model)``, the
    model its response names (None for a failed request). ValueError, worded as an id's error
    is, for a custom_id that is no id (null, an object), and for an answer naming no model
    (its request would match no other model's answer, nor a re-run's naming it)."""
    try:
        custom = id_key(row[BATCH_ID])
    except ValueError as exc:
        text = str(exc)
        raise ValueError(
            f'id field "{BATCH_ID}" {text}' if text.startswith("is ") else text
        ) from None
    model = row_model(row)
    if model is None and _answered(row):
        raise ValueError(
            "a Batch API output line whose response names no model (response.body.model): "
            "whose answer it is cannot be told, so its request cannot be matched with another "
            "batch's; read it with --id-field id, or give the model its response names"
        )
    return ("request", *custom, model)


def _answered(row: Mapping[str, Any]) -> bool:
    """Whether a Batch output line holds an answer (a response body of status 200), not a
    failed request (which the readers name as such)."""
    response = row.get("response")
    return (
        isinstance(response, Mapping)
        and response.get("status_code") == 200
        and isinstance(response.get("body"), Mapping)
    )


def read_before(key: tuple) -> str:
    """The lead of the message of a request read twice (its key from :func:`request_key`),
    followed by the place of its first line."""
    from calibcli.io.ids import show_id

    return f"the request of {BATCH_ID} {show_id(key[1:3])} was read before, at "
