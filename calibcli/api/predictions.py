"""Rows in Python: :func:`read_predictions` reads them from files as the commands read them;
:func:`given` checks rows given as arrays by the commands' row rules, with their messages.

Rows given as arrays are the native rows of a JSON Lines file: their report's format is
``jsonl`` and each figure is the one the command gives for a file holding those rows. Rows
read by :func:`read_predictions` keep what the command's report records of where they came
from (their files, format and fields), so a report of them is the command's for those files.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from calibcli.api.option_values import answer_options, field_name, flag, one_of, text, whole
from calibcli.errors import InputError

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
    ``to_pandas()`` makes a DataFrame of the four columns."""

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

    def __len__(self) -> int:
        return int(self.confidence.shape[0])

    @property
    def groups(self) -> list[str] | None:
        """Each row's group name (None without groups)."""
        return None if self.by is None else self.group.tolist()

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
    (a run appended to its file again), unless ``all_runs=True``: every re-run of a task in a
    folder is then read and pooled, as ``calibrate --all-runs`` pools them (:func:`compare`
    refuses rows whose ids repeat, as the command does). Two models' lm-eval files of one
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
    return Predictions(
        rows.confidence,
        rows.correct,
        _objects(rows.groups, rows.n),
        _objects([_shown(key) for key in rows.keys], rows.n),
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
        rows.questions,
        files_read_as(rows.read_as, **asked),
        rows.parts,
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
    conf = _column(name, confidence, _confidence_rule).astype(np.float64)
    corr = _column(name, correct, _correct_rule).astype(bool)
    n = conf.shape[0]
    _same_length(name, n, corr.shape[0], "correct")
    groups = None
    if group is not None:
        from calibcli.io import group_name

        values = _values(name, group, "group")
        _same_length(name, n, len(values), "group")
        # a string is a group's name as it is, so that the names of Predictions.group given
        # back name the same groups; a string that names another value's group is refused
        groups = [v if isinstance(v, str) else group_name(v) for v in values]
        _one_name_each(name, values, groups)
    keys = shown = None
    if ids is not None:
        shown = _values(name, ids, "ids")
        _same_length(name, n, len(shown), "ids")
        keys = _keys(name, shown)
    return Predictions(
        conf,
        corr,
        _objects(groups, n),
        _objects(shown, n),
        None if groups is None else (by or "group"),
        keys=keys,
        where=None if keys is None else [f"{name}: index {i}" for i in range(n)],
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


def _confidence_rule() -> tuple[Callable, Callable]:
    """(the rule on an array of numbers, the row rule that words the message)"""
    from calibcli.io import check_confidence, confidence_ok

    def whole(arr: np.ndarray) -> np.ndarray | None:
        return confidence_ok(arr) if arr.dtype.kind in "iuf" else None

    return whole, lambda v: check_confidence(v, "confidence")


def _correct_rule() -> tuple[Callable, Callable]:
    from calibcli.io import check_correct

    def whole(arr: np.ndarray) -> np.ndarray | None:
        if arr.dtype == bool:
            return np.ones(arr.shape, bool)
        return ((arr == 0) | (arr == 1)) if arr.dtype.kind in "iu" else None

    return whole, lambda v: check_correct(v, "correct")


def _column(name: str, values: Any, rule: Callable[[], tuple[Callable, Callable]]) -> np.ndarray:
    """One column checked: the rule on the whole array when it holds numbers, then the row
    rule (which words the message) on the first row it refuses, or on every row of an array
    of other values (booleans as confidences, floats as correctness: refused as in a file).
    float32 and float16 values are read as written, as a file of them reads them: an array of
    them, and each among a list's or an object array's values."""
    arr = _written_values(values)
    if arr.ndim != 1:
        raise InputError(
            name, None, f"expected one value per row, not an array of shape {arr.shape}"
        )
    whole, check = rule()
    ok = whole(arr)
    positions = range(arr.shape[0]) if ok is None else np.flatnonzero(~ok)[:1]
    # datetime64 and timedelta64 values stay numpy's: item() would give their ticks as ints
    ticks = arr.dtype.kind in "mM"
    for i in positions:
        value = arr[i]
        try:
            check(value.item() if isinstance(value, np.generic) and not ticks else value)
        except ValueError as exc:
            raise InputError(name, f" index {i}", str(exc)) from None
    return arr


_NARROW = (np.float32, np.float16)


def _written_values(values: Any) -> np.ndarray:
    """``numpy.asarray(values)`` with every float32 and float16 value read as written
    (:func:`~calibcli.io.narrow.written_floats`): an array of either dtype, and such scalars
    among a list's or an object array's values (which ``asarray`` widens, or keeps as they
    are), each as an array of its type reads it. An array of another dtype is returned as it
    is, with no cost per value."""
    from calibcli.io import written_floats

    if isinstance(values, (list, tuple)):
        return written_floats(np.asarray(_written_scalars(list(values))))
    if isinstance(values, np.ma.MaskedArray):
        return _unmasked(values)
    arr = written_floats(np.asarray(values))
    if arr.dtype != object:
        return arr
    flat = arr.reshape(-1).tolist()  # an object array's values as they are
    if not any(t in _NARROW for t in set(map(type, flat))):
        return arr
    out = np.empty(arr.size, dtype=object)
    out[:] = _written_scalars(flat)
    return out.reshape(arr.shape)


def _unmasked(values: np.ma.MaskedArray) -> np.ndarray:
    """A masked array's values read as written, each masked one missing (None, in an object
    array): a masked confidence or correctness is then refused naming its row, as a null is in
    a file, a masked group is the group ``null`` and a masked id is refused as a null id is.
    (``asarray`` would keep the value under the mask, as if it were given.)"""
    data = _written_values(np.ma.getdata(values))
    mask = np.ma.getmaskarray(values)
    if not mask.any():
        return data
    out = np.empty(data.shape, dtype=object)
    out.reshape(-1)[:] = list(data.reshape(-1))  # numpy's scalars kept: datetimes stay dates
    out[mask] = None
    return out


def _written_scalars(values: list) -> list:
    """``values`` (a list, changed in place) with their float32 and float16 scalars replaced by
    their values as written (Python floats), each type's read as one array of it."""
    from calibcli.io import written_floats

    if not any(t in _NARROW for t in set(map(type, values))):
        return values
    for kind in _NARROW:
        at = [i for i, v in enumerate(values) if type(v) is kind]
        if at:
            read = written_floats(np.array([values[i] for i in at], kind)).tolist()
            for i, value in zip(at, read, strict=True):
                values[i] = value
    return values


def _values(name: str, column: Any, what: str) -> list[Any]:
    """One value per row (``what``: ``group`` or ``ids``), in the rows' order, as Python
    values: numpy scalars as theirs (float32 and float16 as written). A group that is missing
    (None, NaN, pandas' NA or NaT) is None, named ``null`` as the commands name a null or an
    empty cell; any other group that is no string, number or boolean is an InputError naming
    its row and type (ids are checked by compare's id rules). A set or a mapping, which holds
    no row order, is refused."""
    from collections.abc import Mapping, Set, ValuesView

    if isinstance(column, (str, bytes)):  # list() would make each character a row's value
        raise InputError(
            name,
            None,
            f"{what}: {column!r} is one value, not one per row: give a list or an array of "
            "the rows' values",
        )
    if isinstance(column, (Set, Mapping, ValuesView)):
        raise InputError(
            name,
            None,
            f"{what}: a {type(column).__name__} holds no row order: give one value per row, "
            "in the rows' order (a list or an array)",
        )
    dtype = getattr(column, "dtype", None)
    if isinstance(column, np.ndarray) or (isinstance(dtype, np.dtype) and dtype.kind in "fmM"):
        arr = _written_values(column)
        if arr.ndim != 1:
            shape = f"not an array of shape {arr.shape}"
            raise InputError(name, None, f"{what}: expected one value per row, {shape}")
        if arr.dtype.kind in "mM":  # tolist() would give them as integers
            # NaT is a missing group (null); any other date or duration is no group name
            dated = np.flatnonzero(~np.isnat(arr)) if what == "group" else np.arange(arr.size)
            if dated.size:
                raise InputError(name, f" index {dated[0]}", _not_a_value(what, str(arr.dtype)))
        values = arr.tolist()  # Python values; an object array's as they are
    else:  # a list, or pandas' values (its missing values as themselves)
        values = column.tolist() if hasattr(column, "tolist") else list(column)
    values = _written_scalars(values)
    missing = _missing()
    for i, value in enumerate(values):
        if isinstance(value, np.generic) and value.dtype.kind in "biufU":
            value = values[i] = value.item()
        if what != "group" or value is None or isinstance(value, str):
            continue
        if (
            any(value is m for m in missing)
            or (isinstance(value, float) and value != value)
            or (isinstance(value, (np.datetime64, np.timedelta64)) and np.isnat(value))
        ):
            values[i] = None
        elif not isinstance(value, (int, float)):
            raise InputError(name, f" index {i}", _not_a_value(what, type(value).__name__))
    return values


def _not_a_value(what: str, kind: str) -> str:
    if what == "group":
        return f"group is of type {kind}, not a string, number or boolean"
    return f"id is of type {kind}, not a string or number"


def _missing() -> tuple[Any, ...]:
    """pandas' missing values (NA, NaT), when pandas is loaded (no value of it can be given
    before)."""
    import sys

    pandas = sys.modules.get("pandas")
    return () if pandas is None else (pandas.NA, pandas.NaT)


def _same_length(name: str, n: int, other: int, what: str) -> None:
    if other != n:
        raise InputError(name, None, f"confidence and {what} differ in length: {n} != {other}")


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
    for name, n, fmt in parts:
        stop = start + n
        epochs = None
        if rows.questions is not None and n:
            epochs = int(rows_of_question[start:stop].max())
        table = None
        if rows.by is None:
            table = BinTable(bins)
            table.add(rows.confidence[start:stop], rows.correct[start:stop])
        out.append(Source(name, "", fmt, n, epochs=epochs, table=table))
        start = stop
    return tuple(out)
