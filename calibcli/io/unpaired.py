"""``calibcli compare --unpaired``'s rows: each side read whole, without matching, with what its
runs say of them (:class:`~calibcli.io.runs.RunChecks`) and, when a side's rows repeat their
questions (an inspect-ai run's epochs, a HELM run's train trials, lm-eval re-runs pooled with
``all_runs``, or other re-runs pooled with it whose ids repeat:
:func:`~calibcli.io.pooled_ids.pooled_side`), each row's question: the unpaired bootstrap draws
each side's questions whole, and ``--min-rows`` counts each question once, as calibrate counts
it. ``--id-field`` identifies each side's rows and matches none (BASE and NEW may number their
rows alike): read without ``--all-runs``, a side's row whose id an earlier row holds is refused
as calibrate refuses it."""

from __future__ import annotations

from typing import Any

import numpy as np

from calibcli.io.ids import OWN_IDS, SCOPED_KEYS, question_of, sample_scope
from calibcli.io.keys import canonical_id


def read_unpaired(base: str, new: str, **options: Any) -> tuple[Any, tuple[str, str], tuple]:
    """The files ``base`` and ``new`` read whole by
    :func:`~calibcli.io.keyed.read_key_columns` (same options, checks and errors), as
    :class:`~calibcli.summaries.PairedRows` of nothing matched, the two formats found, and
    each file read with its format and, for an inspect-ai log, its samples taken each way
    (``(path, format, counts)``), BASE's then NEW's."""
    from dataclasses import replace

    from calibcli.io.keyed import read_key_columns
    from calibcli.io.runs import drawn_whole, either
    from calibcli.summaries import PairedRows

    b, n = (read_key_columns([f], **options, keyed=False) for f in (base, new))
    asked = labels = None
    if b.questions is not None or n.questions is not None:
        asked = tuple((side.n, distinct(side.questions, side.n)) for side in (b, n))
        labels = (b.questions, n.questions)
    # a side whose questions are known is drawn a question at a time: what its runs say of its
    # repeats closes no gate, and its warning says how the rows are drawn
    checks = [
        side.checks
        if side.questions is None or side.checks is None
        else replace(side.checks, repeats=None)
        for side in (b, n)
    ]
    said = [
        side.warnings if side.questions is None else tuple(map(drawn_whole, side.warnings))
        for side in (b, n)
    ]
    rows = PairedRows(
        (b.confidence, b.correct),
        (n.confidence, n.correct),
        None,
        0,
        0,
        b.n,
        n.n,
        tuple(dict.fromkeys((*said[0], *said[1]))),
        **either(*checks),
        asked=asked,
        side_questions=labels,
    )
    return rows, (b.fmt, n.fmt), (*b.formats, *n.formats)


def side_questions(
    reader: Any,
    spans: list,
    side: Any,
    asked: np.ndarray,
    declared: bool,
    *,
    all_runs: bool,
    id_field: str | None,
    by: str | None,
) -> np.ndarray | None:
    """An unpaired side's question hashes ``asked``, kept when they repeat: where its runs said
    before its rows were read that they repeat them (``declared``) or, pooled with
    ``all_runs``, where its ids repeat beyond their runs' epochs
    (:func:`~calibcli.io.pooled_ids.pooled_side`). Read without ``all_runs``, a row whose
    ``id_field`` id an earlier row of the side holds is refused as calibrate refuses it
    (:func:`raise_read_before`). None when no question repeats: each row its own."""
    if all_runs:
        from calibcli.io.pooled_ids import pooled_side

        return pooled_side(reader, spans, asked, declared, id_field, by)
    if id_field is not None:
        raise_read_before(reader, spans, side, asked)
    return asked if declared else None


def raise_read_before(reader: Any, spans: list, side: Any, asked: np.ndarray) -> None:
    """:class:`~calibcli.errors.RepeatedRowError` at the earliest row of an unpaired side
    whose ``--id-field`` id an earlier row holds (``asked``: each row's id hash), naming both
    rows in calibrate's words; nothing when no id repeats. The sides are checked each on its
    own: BASE and NEW may number their rows alike."""
    from calibcli.errors import RepeatedRowError
    from calibcli.io.fold import DOUBLE_READ
    from calibcli.io.ids import show_id
    from calibcli.io.keys import IdHashes

    repeat = IdHashes(asked, np.zeros_like(asked)).first_repeat()
    if repeat is None:
        return
    (first_name, first_at, _), (name, at, key) = (
        side.kept.get(i) or reader.locate(spans, i) for i in repeat
    )
    lead = f"the row of id {show_id(key)} was read before, at "
    raise RepeatedRowError(name, at, lead, (first_name, first_at), f": {DOUBLE_READ}")


def distinct(questions: Any, rows: int) -> int:
    """How many questions ``rows`` rows hold: the distinct hashes of ``questions`` (each row's
    question), or ``rows`` when None (each row its own question)."""
    return rows if questions is None else int(np.unique(np.asarray(questions)).shape[0])


def asked_bytes(
    fmt: str | None, key_of: Any, row: dict, at: tuple[str, int], id_field: str | None = None
) -> bytes:
    """The canonical bytes of an unpaired row's question: an inspect-ai sample's or a HELM
    instance's whatever its epoch or trial (:func:`~calibcli.io.ids.question_of`), an lm-eval
    document's with the model its path names (re-runs of a task share it, two models' files
    do not, as :func:`calibcli.read_predictions` keys them), an inspect-ai, HELM or OpenAI evals
    row's with what it carries of its run (:func:`~calibcli.io.ids.sample_scope`), a row's
    ``id_field`` when given (rows pooled with ``--all-runs`` repeat it); a row of another
    format, read without ids, is its own question (``at``: its file and its place among the
    side's rows)."""
    if fmt not in OWN_IDS and id_field is None:
        return canonical_id(("row", *at))
    key = key_of(row)
    if fmt == "lm-eval" and key[0] == "task":
        from calibcli.io.runs import rerun_task

        model = rerun_task(at[0])[1]
        if model is not None:
            key = ("task", f"{key[1]} ({model})", *key[2:])
    if key[0] in SCOPED_KEYS:  # two tasks' or models' runs number their rows alike
        scope = sample_scope(fmt, at[0])
        key = key if scope is None else (*key, scope)
    return canonical_id(question_of(key))
