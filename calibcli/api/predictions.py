"""Rows in Python: :func:`read_predictions` reads them from files as the commands read them;
:func:`given` checks rows given as arrays by the commands' row rules, with their messages.

Rows given as arrays are the native rows of a JSON Lines file: their report's format is
``jsonl`` and each figure is the one the command gives for a file holding those rows. Rows
read by :func:`read_predictions` keep what the command's report records of where they came
from (their files, format and fields), so a report of them is the command's for those files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from calibcli.api.columns import confidences, correctness, row_values, same_length
from calibcli.errors import InputError
from calibcli.reports import answer_options, field_name, flag, one_of, text, whole

ARRAYS = "<arrays>"  # how messages and reports name rows given as arrays


@dataclass(frozen=True, eq=False)
class Predictions:
    """Rows as read, in input order, as numpy arrays of one entry per row: ``confidence``
    (float64, in [0, 1]), ``correct`` (bool), ``group`` (object: the row's group name as the
    reports name it, with ``by``; else None) and ``id`` (object: the row's id as written, else
    None). ``by``, ``format``, ``files`` and the fields say how they were read, and
    ``inspect_confidence`` the --inspect-confidence mode inspect-ai rows' confidences were taken
    by (auto resolved per sample: ``answer-token``, ``sequence``, or ``auto`` for both; None
    for rows of other formats), which :func:`~calibcli.fit` records.

    Give it to :func:`~calibcli.calibrate` and the other functions in place of the arrays;
    ``to_pandas()`` makes a DataFrame of the four columns. Rows built directly are checked
    as rows given as arrays are (InputError naming the first bad row by its index), and the
    arrays are read-only, so that the rows cannot change after the check: :meth:`with_values`
    gives the rows with other values, keeping what the reading knew of them. Rows built
    directly know only what they are given, as rows given as arrays do: built of a read
    Predictions' arrays alone, they lose each row's question (an inspect-ai sample's epochs
    then count as questions of their own), that the rows pool several models' (on which every
    gate fails closed) and the reading's warnings."""

    confidence: np.ndarray
    correct: np.ndarray
    group: np.ndarray
    id: np.ndarray
    by: str | None = None
    format: str = "jsonl"
    files: tuple[str, ...] = ()
    confidence_field: str = "confidence"
    correct_field: str = "correct"
    mc_norm: str = "none"
    id_field: str | None = None
    keys: list[Any] | None = field(default=None, repr=False)  # each row's id as compare keys it
    where: list[str] | None = field(default=None, repr=False)  # "path:line" of each row
    inspect_confidence: str | None = None
    # what the reading said of the files (older re-runs left out, a run that did not succeed):
    # the functions' reports carry it, as the commands' do
    warnings: tuple[str, ...] = field(default=(), repr=False)
    # row -> what an lm-eval or inspect-ai row asks: compare checks matched rows ask the same
    documents: dict[int, tuple[str, str]] | None = field(default=None, repr=False)
    # what the runs say, as the commands say it: several models' rows (every gate fails
    # closed), and each row's question (uint64) where an inspect-ai sample has several epochs,
    # which the bootstrap and cross-fitting draw and hold out together
    mixed: str | None = field(default=None, repr=False)
    questions: np.ndarray | None = field(default=None, repr=False)
    # how the rows were read, as a calibrator fitted on them records it (scorer, gold field,
    # answer options, the models and tasks their runs name)
    read_as: dict[str, Any] = field(default_factory=dict, repr=False)
    # each file read, in row order: (path, its rows, its format), whose figures the reports
    # give file by file as the commands' do
    parts: tuple[tuple[str, int, str | None], ...] = field(default=(), repr=False)
    # the readers' bounds the files were read with (max_line_bytes, max_document_bytes), which
    # reading them again (an lm-eval file's choices, for temperature) keeps
    bounds: dict[str, Any] = field(default_factory=dict, repr=False)
    # re-runs pooled with all_runs whose ids repeat beyond their runs' epochs: each part's
    # (the epochs its run recorded, the most rows a question holds), as the commands' summary
    # records its files; None otherwise
    pooled: tuple[tuple[int | None, int | None], ...] | None = field(default=None, repr=False)
    # the inspect-ai scorer the rows were read with, as given (None: each log's own one), which
    # compare checks the other side against as it checks logs graded by different scorers
    scorer: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _check(self)

    def __len__(self) -> int:
        return int(self.confidence.shape[0])

    @property
    def groups(self) -> list[str] | None:
        """Each row's group name (None without groups)."""
        return None if self.by is None else self.group.tolist()

    def with_values(
        self, confidence: Any = None, correct: Any = None, group: Any = None, *, by: Any = None
    ) -> Predictions:
        """These rows with the values given in place of their own: ``confidence``, ``correct``
        and ``group`` each one value per row, in the rows' order, checked as arrays given to
        the functions are (groups named as the functions name the groups given as ``group=``,
        reported under ``by``, else the rows' own ``by``, else ``"group"``). Everything else
        the rows carry is kept: their ids, files and format, and what the reading knew of them
        (each row's question, several models pooled, the reading's warnings), which the
        reports of the new rows act on as they do for these."""
        name, n, changes = ARRAYS, len(self), {}
        if by is not None and group is None:
            raise InputError(
                name, None, f"by={by!r} names the groups given as group=, and none were given"
            )
        for what, values, check in (
            ("confidence", confidence, confidences),
            ("correct", correct, correctness),
        ):
            if values is not None:
                checked = check(name, values)
                _same_rows(n, checked.shape[0], what)
                changes[what] = _frozen(checked)
        if group is not None:
            if by is not None:
                field_name(name, "by", by)
            changes["group"] = _frozen(_objects(_group_names(name, group, n), n))
            changes["by"] = by or self.by or "group"
        return replace(self, **changes)

    def to_pandas(self) -> Any:
        """A pandas DataFrame with the columns confidence, correct, group and id."""
        try:
            import pandas
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install pandas") from None
        columns = ("confidence", "correct", "group", "id")
        return pandas.DataFrame({name: getattr(self, name) for name in columns})

    def __repr__(self) -> str:
        where = ", ".join(self.files) if self.files else ARRAYS
        per = f", by {self.by}" if self.by else ""
        return f"<calibcli predictions: {len(self):,} rows of {where} ({self.format}{per})>"


# --------------------------------------------------------------------------- reading files

READING_OPTIONS = (
    "confidence_field",
    "correct_field",
    "format",
    "mc_norm",
    "scorer",
    "inspect_confidence",
    "gold_field",
    "choices",
    "by",
    "id_field",
    "max_line_mb",
    "max_document_mb",
    "all_runs",
)


def read_predictions(paths: Any, **reading_options: Any) -> Predictions:
    """Read (confidence, correct) rows from files as ``calibcli compare`` reads them: every
    format the commands read (JSON Lines, lm-eval, inspect-ai, HELM, OpenAI, CSV, Parquet, ...,
    detected per file), each row checked by the same rules with the same one-line errors
    (:class:`~calibcli.errors.InputError`, ``path:line: what is wrong``).

    ``paths`` is a path, ``-`` (standard input) or a list of them, read one after another.
    Reading options, as the commands' options of the same names: ``confidence_field``,
    ``correct_field``, ``format`` (default ``"auto"``), ``mc_norm``, ``scorer``,
    ``inspect_confidence``, ``gold_field``, ``choices``, ``by`` (a dotted field: each row's
    group), ``id_field`` (each row's id; lm-eval, inspect-ai and the other formats with ids
    of their own are identified without it), ``max_line_mb``, ``max_document_mb``. An id
    read twice is an error, and so is a native row carrying its file's first row's ``id``
    (a run appended to its file again), unless ``all_runs=True``: every re-run of a task among
    the files is then read and pooled, as ``calibrate --all-runs`` pools them (:func:`compare`
    refuses rows whose ids repeat, as the command does); pooled rows whose ids repeat (one
    task's inspect-ai logs, native rows given ``id_field``) are then each question's answers,
    counted and drawn by question with the command's warning. Two models' lm-eval files of one
    task hold the same doc_ids without a row read twice (their figures mix the models, and
    every gate on them fails closed). What the reading says of the files (a folder's files
    skipped, older re-runs left out) is in ``warnings``, as the commands say it.

    Returns :class:`Predictions`: numpy arrays, and ``to_pandas()`` for a DataFrame.

    >>> import calibcli
    >>> rows = calibcli.read_predictions("sample_data/overconfident.jsonl", by="subject")
    >>> len(rows), rows.confidence[:2].round(4).tolist(), rows.correct[:2].tolist()
    (2000, [0.6436, 0.9118], [False, False])
    >>> rows.group[:2].tolist()
    ['law', 'history']
    """
    from calibcli.io import files_read_as, read_keyed

    files, options = reading_arguments("read_predictions", paths, reading_options)
    rows = read_keyed(files, **options, keyed=None, documents=True, questions=True)
    asked = {k: options[k] for k in ("scorer", "gold_field", "choices")}
    bounds = {k: options[k] for k in ("max_line_bytes", "max_document_bytes") if k in options}
    return Predictions(
        _frozen(rows.confidence),
        _frozen(rows.correct),
        _frozen(_objects(rows.groups, rows.n)),
        _frozen(_objects([_shown(key) for key in rows.keys], rows.n)),
        options["by"],
        rows.fmt,
        tuple(files),
        options["confidence_field"],
        options["correct_field"],
        options["mc_norm"],
        options["id_field"],
        list(rows.keys),
        list(rows.where),
        rows.inspect_confidence,
        rows.warnings,
        rows.docs,
        rows.mixed,
        None if rows.questions is None else _frozen(rows.questions),
        files_read_as(rows.read_as, **asked),
        rows.parts,
        bounds,
        rows.pooled,
        options["scorer"],
    )


def reading_arguments(
    where: str, paths: Any, reading_options: dict[str, Any]
) -> tuple[list[str], dict[str, Any]]:
    """The files of ``paths`` and the readers' keyword arguments for ``reading_options``
    (:data:`READING_OPTIONS`, as :func:`read_predictions` takes them), each checked; an
    unknown option is a TypeError naming ``where``."""
    from calibcli.io import CALIBRATION_FORMATS, INSPECT_CONFIDENCES, MC_NORMS

    unknown = sorted(set(reading_options) - set(READING_OPTIONS))
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    got = dict(reading_options)
    files = _paths(paths)
    fields = {}
    for name in ("confidence_field", "correct_field", "scorer", "gold_field", "by", "id_field"):
        if got.get(name) is not None:
            check = text if name == "scorer" else field_name
            fields[name] = check(where, name, got[name])
    confidence = fields.get("confidence_field", "confidence")
    if confidence == fields.get("correct_field", "correct"):  # as the commands refuse it
        raise InputError(
            where,
            None,
            f"confidence_field: {confidence!r} is the correct_field: a confidence read from the "
            "outcome it predicts is perfectly calibrated whatever the model answered",
        )
    choices = got.get("choices")
    if choices is not None:
        choices = answer_options(where, choices)
    megabytes = {}
    for name in ("max_line_mb", "max_document_mb"):
        if got.get(name) is not None:
            megabytes[name] = whole(where, name, got[name], 1) << 20
    fmt = one_of(where, "format", got.get("format", "auto"), CALIBRATION_FORMATS)
    mc_norm = one_of(where, "mc_norm", got.get("mc_norm", "none"), MC_NORMS)
    inspect = got.get("inspect_confidence", "auto")
    inspect = one_of(where, "inspect_confidence", inspect, INSPECT_CONFIDENCES)
    bounds = {"max_line_bytes": megabytes["max_line_mb"]} if "max_line_mb" in megabytes else {}
    return files, {
        "id_field": fields.get("id_field"),
        "confidence_field": fields.get("confidence_field", "confidence"),
        "correct_field": fields.get("correct_field", "correct"),
        "fmt": fmt,
        "mc_norm": mc_norm,
        "by": fields.get("by"),
        "scorer": fields.get("scorer"),
        "inspect_confidence": inspect,
        "max_document_bytes": megabytes.get("max_document_mb"),
        "gold_field": fields.get("gold_field"),
        "choices": choices,
        "all_runs": flag(where, "all_runs", got.get("all_runs", False)),
        **bounds,
    }


def _paths(paths: Any) -> list[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    listed = isinstance(paths, (list, tuple)) and paths
    if listed and all(isinstance(p, (str, os.PathLike)) for p in paths):
        return [os.fspath(p) for p in paths]
    raise InputError("read_predictions", None, f"paths: {paths!r} is not a path or a list of them")


def _shown(key: Any) -> Any:
    """A row's id as written: a string, number, boolean or null as it is; an id of several
    parts (a task and a doc_id, a sample and its epoch) as compare's messages show it; None
    for a row read without an id."""
    from calibcli.io import show_id

    kind = key[0]
    if kind == "row":
        return None
    if kind in ("string", "number", "literal") and len(key) == 2:
        return key[1]
    return show_id(key)


def _objects(values: list[Any] | None, n: int) -> np.ndarray:
    out = np.empty(n, dtype=object)
    if values is not None:
        out[:] = values
    return out


# --------------------------------------------------------------------------- arrays


def given(
    confidence: Any,
    correct: Any,
    *,
    group: Any = None,
    by: str | None = None,
    ids: Any = None,
    what: str = "",
) -> Predictions:
    """The rows given to a function: :class:`Predictions` as they are (``correct`` None), or
    arrays checked by the commands' row rules. ``group`` holds each row's group (named as
    ``--by`` names a field's values: ``1``, ``true``, a string as it is, a missing value
    such as None, NaN, NaT or pandas' NA ``null``), reported under ``by`` (default
    ``"group"``; ``by`` without ``group`` is refused); ``ids`` each row's id (compare's
    matching: a null or NaN id is refused). A masked array's masked values are missing, and
    dates and durations are no confidences or correctness. InputError names the first bad row
    by its index (``<arrays>: index 3: confidence 1.5 is outside [0, 1]``); ``what`` names
    the argument when a function takes several sets of rows."""
    if isinstance(confidence, Predictions):
        if any(given is not None for given in (correct, group, by, ids)):
            raise InputError(
                ARRAYS,
                None,
                "rows given as Predictions carry their correctness, groups and ids; give "
                "no correct, group, by or ids beside them (read them with by= for groups)",
            )
        return confidence
    if correct is None:
        raise TypeError("give the rows' correctness beside their confidences, or Predictions")
    name = f"{what} {ARRAYS}" if what else ARRAYS
    if by is not None:
        field_name(name, "by", by)
        if group is None:  # nothing here reads a field: by would be silently dropped
            raise InputError(
                name,
                None,
                f"by={by!r} names the groups given as group=, and none were given: give each "
                f"row's group as group= (read_predictions(path, by={by!r}) reads a file's field)",
            )
    conf = confidences(name, confidence)
    corr = correctness(name, correct)
    n = conf.shape[0]
    same_length(name, n, corr.shape[0], "correct")
    groups = None if group is None else _group_names(name, group, n)
    keys = shown = None
    if ids is not None:
        shown = row_values(name, ids, "ids")
        same_length(name, n, len(shown), "ids")
        keys = _keys(name, shown)
    return Predictions(
        _frozen(conf),
        _frozen(corr),
        _frozen(_objects(groups, n)),
        _frozen(_objects(shown, n)),
        None if groups is None else (by or "group"),
        keys=keys,
        where=None if keys is None else [f"{name}: index {i}" for i in range(n)],
    )


def _group_names(name: str, group: Any, n: int) -> list[str]:
    """Each row's group name: a string is a group's name as it is, so that the names of
    Predictions.group given back name the same groups; a string that names another value's
    group is refused."""
    from calibcli.io import group_name

    values = row_values(name, group, "group")
    same_length(name, n, len(values), "group")
    groups = [v if isinstance(v, str) else group_name(v) for v in values]
    _one_name_each(name, values, groups)
    return groups


def _same_rows(n: int, given: int, what: str) -> None:
    if given != n:
        raise InputError(
            ARRAYS, None, f"{what}: expected one value for each of the {n:,} rows, got {given:,}"
        )


def _one_name_each(name: str, values: list[Any], names: list[str]) -> None:
    """Refuse a string group beside a value of another type that is named as that string (the
    string "1" and the number 1, "null" and a missing value): the two would be pooled into one
    group, where a file's rows hold two (``--by`` names the string ``"1"``, in quotes)."""
    if not any(isinstance(v, str) for v in values):
        return
    typed = {
        n: i for i, (v, n) in enumerate(zip(values, names, strict=True)) if not isinstance(v, str)
    }
    if not typed:
        return
    for i, value in enumerate(values):
        if isinstance(value, str) and value in typed:
            j = typed[value]
            raise InputError(
                name,
                f" index {i}",
                f"group: the string {value!r} and the value {values[j]!r} (index {j}) would be "
                f"one group, named {value}: give the groups as values of one type (all "
                "strings, or all numbers)",
            )


def _keys(name: str, ids: list[Any]) -> list[Any]:
    """Each id as compare keys it (the number 1 and the string "1" are different ids); an id
    given twice is an error naming both rows."""
    from calibcli.io import id_key, show_id

    keys: list[Any] = []
    seen: dict[Any, int] = {}
    for i, value in enumerate(ids):
        try:
            key = id_key(value)
        except ValueError as exc:
            raise InputError(name, f" index {i}", f"id {exc}") from None
        if key in seen:
            raise InputError(
                name, f" index {i}", f"duplicate id {show_id(key)} (first at index {seen[key]})"
            )
        seen[key] = i
        keys.append(key)
    return keys


def _check(rows: Predictions) -> None:
    """Check rows built directly by the rules rows given as arrays are checked by (each
    confidence in [0, 1], each correctness true/false or 0/1, one group, id, question, key and
    line per row, and with ``by`` each group a name) and make their arrays read-only, so that
    no report reads rows that changed after the check."""
    name = ARRAYS
    conf = confidences(name, rows.confidence, copy=False)
    n = conf.shape[0]
    corr = correctness(name, rows.correct, copy=False)
    same_length(name, n, corr.shape[0], "correct")
    kept = {
        "confidence": _read_only(rows.confidence, conf),
        "correct": _read_only(rows.correct, corr),
        "group": _one_each(name, rows.group, n, "group"),
        "id": _one_each(name, rows.id, n, "ids"),
    }
    if rows.by is not None:
        named = [isinstance(g, str) for g in kept["group"]]
        if not all(named):
            i = named.index(False)
            value = kept["group"][i]
            raise InputError(
                name,
                f" index {i}",
                f"group {value!r} is not a group's name: with by, each row's group is named by "
                "a string (as read_predictions and the functions given group= name them)",
            )
    if rows.questions is not None:
        asked = np.asarray(rows.questions)
        if asked.ndim != 1 or asked.dtype != np.uint64:
            raise InputError(name, None, "questions: expected one uint64 hash per row")
        same_length(name, n, asked.shape[0], "questions")
        kept["questions"] = _read_only(rows.questions, asked)
    for what in ("keys", "where"):
        if getattr(rows, what) is not None:
            same_length(name, n, len(getattr(rows, what)), what)
    if rows.parts:
        same_length(name, n, sum(part[1] for part in rows.parts), "the parts' rows")
    if rows.pooled is not None and len(rows.pooled) != len(rows.parts):
        raise InputError(name, None, "pooled: expected one entry per part read")
    for attribute, value in kept.items():
        object.__setattr__(rows, attribute, value)


def _one_each(name: str, values: Any, n: int, what: str) -> np.ndarray:
    """One value per row, as an object array (None: a None for each row)."""
    if values is None:
        return _frozen(_objects(None, n))
    if isinstance(values, np.ndarray) and values.dtype == object:
        if values.ndim != 1:
            shape = f"not an array of shape {values.shape}"
            raise InputError(name, None, f"{what}: expected one value per row, {shape}")
        same_length(name, n, values.shape[0], what)
        return _read_only(values, values)
    listed = row_values(name, values, what)
    same_length(name, n, len(listed), what)
    return _frozen(_objects(listed, n))


def _read_only(given: Any, checked: np.ndarray) -> np.ndarray:
    """``checked`` (``given``, as checked) read-only: as it is when it is ``given`` and held as
    :func:`_frozen` holds rows (a read-only view of a read-only array holding its own data);
    else a copy, since the caller's array, or an array that views another's, could change
    after the check."""
    base = checked.base
    if (
        checked is given
        and not checked.flags.writeable
        and isinstance(base, np.ndarray)
        and base.base is None
        and not base.flags.writeable
    ):
        return checked
    return _frozen(checked.copy())


def _frozen(arr: np.ndarray) -> np.ndarray:
    """``arr`` (an array of the rows' own, which nothing else holds) made read-only, as a view
    of it: numpy refuses to make a view of a read-only array writable again
    (``setflags(write=True)``), as it would let the array itself, so the checked rows cannot
    change short of going through the view's ``base``."""
    arr.flags.writeable = False
    return arr.view()


def summary_of(rows: Predictions, *, bins: int) -> Any:
    """The :class:`~calibcli.summaries.CalibrationSummary` the readers build of these rows,
    every row kept in the order given, with a source for each file read (its own table
    without groups, as the commands keep one for their per-file figures)."""
    from calibcli.summaries import CalibrationSettings, CalibrationSummary

    settings = CalibrationSettings(
        bins=bins,
        confidence_field=rows.confidence_field,
        correct_field=rows.correct_field,
        fmt=rows.format,
        mc_norm=rows.mc_norm,
        by=rows.by,
    )
    summary = CalibrationSummary.from_arrays(
        rows.confidence, rows.correct, settings=settings, groups=rows.groups, warnings=rows.warnings
    )
    kept, asked = summary.kept, rows.questions
    if asked is not None:
        # the kept rows, right answers first, keyed by their questions
        kept = replace(kept, right_keys=asked[rows.correct], wrong_keys=asked[~rows.correct])
    return replace(summary, kept=kept, mixed=rows.mixed, sources=_sources(rows, bins))


def _sources(rows: Predictions, bins: int) -> tuple[Any, ...]:
    """A source for each file the rows were read from (one for rows given as arrays when they
    repeat questions), each with the most rows of a question as its run's epochs (counted in
    every file: re-runs pooled with ``all_runs`` repeat them across files), as a run read
    from files records its own, and its own table of its rows when they have no groups."""
    from calibcli.summaries import BinTable, Source

    if not rows.parts and rows.questions is None:
        return ()
    parts = rows.parts or ((ARRAYS, len(rows), rows.format),)
    out, start = [], 0
    if rows.questions is not None:
        # each row's question's rows in all the files: re-runs pooled repeat it across them
        _, question, counts = np.unique(rows.questions, return_inverse=True, return_counts=True)
        rows_of_question = counts[question]
    # re-runs whose ids repeat: each file's own epochs, and the rows of a question among them
    pooled = rows.pooled or ((None, None),) * len(parts)
    for (name, n, fmt), (own, most) in zip(parts, pooled, strict=True):
        stop = start + n
        epochs = None
        if rows.pooled is not None:
            epochs = own
        elif rows.questions is not None and n:
            epochs = int(rows_of_question[start:stop].max())
        table = None
        if rows.by is None:
            table = BinTable(bins)
            table.add(rows.confidence[start:stop], rows.correct[start:stop])
        out.append(Source(name, "", fmt, n, epochs=epochs, table=table, pooled=most))
        start = stop
    return tuple(out)
