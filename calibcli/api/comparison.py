"""``calibcli compare`` from Python: :func:`compare`."""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

from calibcli.api.predictions import ARRAYS, Predictions, given
from calibcli.api.result import Result
from calibcli.errors import InputError
from calibcli.reports import flag, option, usage, whole, written_number

WHERE = "compare"


def compare(
    base: Any,
    new: Any,
    *,
    max_increase: dict[str, float] | None = None,
    max_decrease: dict[str, float] | None = None,
    gate_on: str | None = None,
    ci: float | None = None,
    bootstrap: int | None = None,
    seed: int | None = None,
    bins: int = 10,
    min_populated_bins: int = 3,
    gate_each: bool = False,
    unpaired: bool = False,
    allow_unmatched: bool = False,
    workers: int | None = None,
    min_rows: int | None = None,
    **reading_options: Any,
) -> Any:
    """Is NEW better or worse calibrated than BASE on the same questions? ``calibcli
    compare``'s report, as a :class:`~calibcli.api.Result` whose ``to_json()`` is the
    command's ``--json`` output for the same rows.

    ``base`` and ``new`` are each :class:`~calibcli.api.Predictions` (read with their ids:
    ``read_predictions(path, id_field="id")``; lm-eval, inspect-ai and the other formats
    with ids of their own have them anyway), or a tuple ``(confidence, correct, ids)`` or
    ``(confidence, correct, ids, group)`` of arrays. Rows are matched by id, in BASE's order
    (an id given twice on a side is an error, and so are more than 5% unmatched rows on
    either side unless ``allow_unmatched=True``); ``unpaired=True`` compares the sides whole,
    their ids matching nothing (a side's rows that repeat an id are refused, or, read with
    ``all_runs=True``, counted and drawn by question).
    With groups on BASE (``by``), every group of the matched rows is compared too; groups on
    NEW must then put each matched id in BASE's group, and groups on NEW alone are an error.

    Every calibration figure of both sides, and the difference d = f(NEW) − f(BASE) with a
    paired percentile bootstrap interval: the same resampled questions on both sides
    (``ci`` level, default 0.95; ``bootstrap`` resamples, 200 to 1,000,000, default 1,000;
    ``seed``, default 0); McNemar's exact test of accuracy (a binomial test on the b
    questions only BASE got right and the c only NEW got right: p = P(|Binomial(b + c, ½) −
    (b + c)/2| >= |b − (b + c)/2|)); and, when both sides agree on every answer's
    correctness, DeLong's test of AUROC. ``max_increase={"ece": 0.01}`` (a figure where
    lower is better) and ``max_decrease={"auroc": 0.01}`` make ``result.passed`` False when
    NEW may be worse by more than the margin: the upper end of d's interval beyond it by
    default (``gate_on="estimate"``: d itself; on ECE, MCE, RMSCE, smECE and ece_1bin the upper
    end plus BASE's bias allowance, the figure's mean on BASE's confidences with 200 draws of
    calibrated outcomes seeded by ``seed``), and ``min_rows=1000`` when fewer rows are
    compared (matched pairs; the smaller side unpaired); ``gate_each=True`` gates every group
    too (the switches ``gate_each``, ``unpaired`` and ``allow_unmatched`` are True or False).
    The binned checks (ECE, MCE, RMSCE) fail closed when a side populates fewer than
    ``min_populated_bins`` (default 3) of the ``bins``.

    ``base`` and ``new`` may also be two paths: each file is read as the command reads it (in
    columns, NEW matched to BASE as it is read), with the reading options of
    :func:`~calibcli.read_predictions` as keywords (``id_field``, ``format``, ``by``, ...).
    """
    from calibcli.api.comparison_sides import with_sides
    from calibcli.api.predictions import reading_arguments
    from calibcli.io import compared_modes, default_id, match_keys, read_compared
    from calibcli.reports import CompareSettings, check_matching, compare_options, compare_report
    from calibcli.reports import options as checks
    from calibcli.summaries import PairedRows

    gate_each = flag(WHERE, "gate_each", gate_each)
    unpaired = flag(WHERE, "unpaired", unpaired)
    allow_unmatched = flag(WHERE, "allow_unmatched", allow_unmatched)
    paths = _is_path(base), _is_path(new)
    if any(paths):
        if not all(paths):
            raise TypeError("compare: give two paths, or two sets of rows")
        files, options = reading_arguments(WHERE, [base], reading_options)
        files += reading_arguments(WHERE, [new], {})[0]
        sides = None
    else:
        if reading_options:
            raise TypeError(
                f"compare() got an unexpected keyword argument {sorted(reading_options)[0]!r}"
                " (reading options go with paths)"
            )
        sides = _side(base, "base"), _side(new, "new")
    if ci is not None:
        ci = option(WHERE, "ci", checks.ci_level, ci)
    if bootstrap is not None:
        bootstrap = whole(WHERE, "bootstrap", bootstrap, checks.MIN_BOOTSTRAP, checks.MAX_BOOTSTRAP)
    if seed is not None:
        seed = whole(WHERE, "seed", seed, 0)
    if workers is not None:
        workers = whole(WHERE, "workers", workers, 1)
    bins = whole(WHERE, "bins", bins, 1, checks.MAX_BINS)
    min_bins = whole(WHERE, "min_populated_bins", min_populated_bins, 1)
    if gate_on is not None and gate_on not in ("estimate", "upper"):
        raise InputError(WHERE, None, f"gate_on: {gate_on!r} is not one of 'estimate', 'upper'")
    by = options["by"] if sides is None else sides[0].by
    gate = usage(
        WHERE,
        compare_options,
        grouped=by is not None,
        gate_each=gate_each,
        unpaired=unpaired,
        max_increase=_margins(max_increase, "max_increase"),
        max_decrease=_margins(max_decrease, "max_decrease"),
        gate_on=gate_on,
        min_rows=None if min_rows is None else whole(WHERE, "min_rows", min_rows, 1),
        allow_unmatched=allow_unmatched,
    )
    if sides is None:
        names = tuple(files)
        # unpaired, ``id_field`` identifies each side's rows (a repeated id refused, or counted
        # by question with ``all_runs``) and matches none
        id_field = options["id_field"]
        matched, found, read = read_compared(*names, unpaired=unpaired, **options)
        modes = compared_modes(*names, read)
    else:
        names = tuple(_name(side) for side in sides)
        b, n = sides
        found, id_field = (b.format, n.format), b.id_field
        if unpaired:
            matched = PairedRows(
                (b.confidence, b.correct), (n.confidence, n.correct), None, 0, 0, len(b), len(n)
            )
        else:
            keyed = [_keyed(s, name) for s, name in zip(sides, names, strict=True)]
            matched = usage(WHERE, match_keys, base=keyed[0], new=keyed[1], base_name=names[0])
        # what the reading said of each side's files, then of the matched rows, as compare of
        # the files says it
        said = (*_compared(b.warnings), *_compared(n.warnings), *matched.warnings)
        modes = _taken(b), _taken(n)
        # what the runs say closes gates as compare of the files closes them (several models
        # on a side); unpaired, each side's questions are drawn whole and --min-rows counts them
        repeated = unpaired and (b.questions is not None or n.questions is not None)
        matched = replace(
            matched,
            warnings=tuple(dict.fromkeys(said)),
            mixed=b.mixed or n.mixed,
            asked=tuple(_asked(side) for side in sides) if repeated else None,
            side_questions=(b.questions, n.questions) if repeated else None,
        )
        # the tasks, scorers, grading and scoring of each side, as compare of the files
        # checks them (the command reads both sides with one scoring)
        matched = with_sides(matched, b, n, paired=not unpaired)
    if not unpaired:
        usage(
            WHERE,
            check_matching,
            matched=matched,
            base=names[0],
            new=names[1],
            allow_unmatched=allow_unmatched,
        )
    settings = CompareSettings(
        level=ci or 0.95,
        samples=bootstrap or 1000,
        seed=seed or 0,
        bins=bins,
        paired=not unpaired,
        workers=workers,
        min_bins=min_bins,
    )
    report = compare_report(
        matched,
        settings,
        formats={"base": found[0], "new": found[1]},
        files={"base": [names[0]], "new": [names[1]]},
        id_field=None if unpaired else (id_field or default_id(found[0])),
        gate=gate,
        by=by,
        modes=modes,
    )
    return Result(report)


def _is_path(rows: Any) -> bool:
    return isinstance(rows, (str, os.PathLike))


def _side(rows: Any, what: str) -> Predictions:
    if isinstance(rows, Predictions):
        if len(rows.files) > 1:
            raise InputError(
                WHERE, None, f"{what}: compare reads one file per side, not {len(rows.files)}"
            )
        return rows
    if isinstance(rows, tuple) and len(rows) in (3, 4):
        group = rows[3] if len(rows) == 4 else None
        return given(rows[0], rows[1], ids=rows[2], group=group, what=what)
    raise TypeError(f"{what}: give Predictions, or (confidence, correct, ids[, group])")


def _taken(rows: Predictions) -> tuple | None:
    """How a side's inspect-ai confidences were taken, log by log, as compare of the files says
    it (:func:`~calibcli.io.inspect_rows.side_modes`): a log of rows read in one of auto's modes
    took each of its samples that way; rows auto read both ways are read again to count them.
    None for rows of other modes or formats, and rows given as arrays."""
    from calibcli.io import side_modes

    logs = [(path, n) for path, n, fmt in rows.parts if fmt == "inspect-ai"]
    if rows.inspect_confidence == "auto":
        options = {"scorer": rows.read_as.get("scorer"), **rows.bounds}
        return side_modes([path for path, _ in logs], options)
    if rows.inspect_confidence not in _AUTO_MODES:
        return None
    first = rows.inspect_confidence == "answer-token"
    return tuple(
        ("<stdin>" if path == "-" else path, *((n, 0) if first else (0, n))) for path, n in logs
    )


def _asked(rows: Predictions) -> tuple[int, int]:
    """(rows, questions) of a side compared unpaired: its rows' distinct questions (each row
    its own where they are None), which --min-rows counts as compare of the files does."""
    if rows.questions is None:
        return len(rows), len(rows)
    import numpy as np

    return len(rows), int(np.unique(np.asarray(rows.questions)).shape[0])


def _name(rows: Predictions) -> str:
    """How the report and messages name a side: its file, or ``<arrays>``."""
    return rows.files[0] if rows.files else ARRAYS


def _keyed(rows: Predictions, name: str) -> Any:
    """The side's rows with their ids, as compare's reader gives them."""
    from calibcli.summaries import KeyedRows

    if rows.keys is None or any(key[0] == "row" for key in rows.keys[:1]):
        raise InputError(
            WHERE,
            None,
            f"compare matches rows by id, and the rows of {name} have none: read them with "
            "id_field=, give their ids, or compare them unpaired=True",
        )
    _distinct(rows, name)
    return KeyedRows(
        rows.keys,
        rows.confidence,
        rows.correct,
        rows.groups,
        rows.format,
        rows.where or [],
        docs=rows.documents,
        mixed=rows.mixed,
        questions=rows.questions,
    )


# the modes --inspect-confidence auto takes by: sides taken by them otherwise are said by the
# report's own warning (calibcli.reports.compare_sides.taken_two_ways)
_AUTO_MODES = ("answer-token", "sequence")


def _compared(warnings: tuple[str, ...]) -> tuple[str, ...]:
    """What compare of the files says of them among what the reading said: compare's reader
    names the files a folder skips (results files, files of other task kinds) but leaves
    files of no rows out without a word, so its report names none of those."""
    from calibcli.io import NO_ROWS

    return tuple(w for w in warnings if not w.endswith(f": {NO_ROWS}"))


def _distinct(rows: Predictions, name: str) -> None:
    """Refuse an id held by two rows, as compare of the files refuses it: rows read with
    ``all_runs=True`` pool re-runs (and two models' files of one task share doc_ids), which
    calibrate takes as they are but no pairing can match."""
    from calibcli.io import show_id

    first: dict[Any, int] = {}
    for i, key in enumerate(rows.keys):
        j = first.setdefault(key, i)
        if j != i:
            at = rows.where or []
            later = at[i] if at else f"{name}: index {i}"
            earlier = at[j] if at else f"index {j}"
            message = f"duplicate id {show_id(key)} (first at {earlier})"
            raise InputError(later, None, message + _runs_of_one_task(rows, j, i))


def _runs_of_one_task(rows: Predictions, first: int, second: int) -> str:
    """:func:`calibcli.io.runs_of_one_task` of the files holding rows ``first`` and ``second``
    (as :attr:`Predictions.parts` records them)."""
    from calibcli.io import runs_of_one_task

    files, formats, at = [], {}, 0
    for path, n, fmt in rows.parts:
        formats[path] = fmt
        files.extend(path for row in (first, second) if at <= row < at + n)
        at += n
    return runs_of_one_task(*files, formats) if len(files) == 2 else ""


def _margins(given: dict[str, float] | None, name: str) -> list[str]:
    """``{"ece": 0.01}`` as the command's ``FIGURE=MARGIN`` texts."""
    if given is None:
        return []
    if not hasattr(given, "items"):
        raise TypeError(f"{name}: give {{figure: margin}}, e.g. {{'ece': 0.01}}")
    texts = []
    for figure, margin in given.items():
        margin = written_number(margin)  # a float32 as its digits, as the command reads them
        number = isinstance(margin, (int, float)) and not isinstance(margin, bool)
        texts.append(f"{figure}={_number(margin)!r}" if number else f"{figure}={margin}")
    return texts


def _number(value: float) -> float:
    """A number as a float; an int no float holds infinite, as the command reads 1e400."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf
