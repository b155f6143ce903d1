"""``calibcli compare`` from Python: :func:`compare`."""

from __future__ import annotations

from typing import Any

from calibcli.api.predictions import ARRAYS, Predictions, given, option, usage, whole
from calibcli.api.result import Result
from calibcli.errors import InputError

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
    gate_each: bool = False,
    unpaired: bool = False,
    allow_unmatched: bool = False,
    workers: int | None = None,
) -> Any:
    """Is NEW better or worse calibrated than BASE on the same questions? ``calibcli
    compare``'s report, as a :class:`~calibcli.api.Result` whose ``to_json()`` is the
    command's ``--json`` output for the same rows.

    ``base`` and ``new`` are each :class:`~calibcli.api.Predictions` (read with their ids:
    ``read_predictions(path, id_field="id")``; lm-eval, inspect-ai and the other formats
    with ids of their own have them anyway), or a tuple ``(confidence, correct, ids)`` or
    ``(confidence, correct, ids, group)`` of arrays. Rows are matched by id, in BASE's order
    (an id given twice on a side is an error, and so are more than 5% unmatched rows on
    either side unless ``allow_unmatched=True``); ``unpaired=True`` compares the sides whole.
    With groups on BASE (``by``), every group of the matched rows is compared too.

    Every calibration figure of both sides, and the difference d = f(NEW) − f(BASE) with a
    paired percentile bootstrap interval: the same resampled questions on both sides
    (``ci`` level, default 0.95; ``bootstrap`` resamples, default 1,000; ``seed``, default
    0); McNemar's exact test of accuracy (a binomial test on the b questions only BASE got
    right and the c only NEW got right: p = P(|Binomial(b + c, ½) − (b + c)/2| >= |b − (b +
    c)/2|)); and, when both sides agree on every answer's correctness, DeLong's test of
    AUROC. ``max_increase={"ece": 0.01}`` (a figure where lower is better) and
    ``max_decrease={"auroc": 0.01}`` make ``result.passed`` False when NEW may be worse by
    more than the margin: the upper end of d's interval beyond it by default
    (``gate_on="estimate"``: d itself); ``gate_each=True`` gates every group too.
    """
    from calibcli.io import default_id
    from calibcli.reports import CompareSettings, check_matching, compare_options, compare_report
    from calibcli.reports import options as checks
    from calibcli.summaries import PairedRows, match

    sides = _side(base, "base"), _side(new, "new")
    if ci is not None:
        ci = option(WHERE, "ci", checks.ci_level, ci)
    if bootstrap is not None:
        bootstrap = whole(WHERE, "bootstrap", bootstrap, checks.MIN_BOOTSTRAP)
    if seed is not None:
        seed = whole(WHERE, "seed", seed, 0)
    if workers is not None:
        workers = whole(WHERE, "workers", workers, 1)
    bins = whole(WHERE, "bins", bins, 1, checks.MAX_BINS)
    if gate_on is not None and gate_on not in ("estimate", "upper"):
        raise InputError(WHERE, None, f"gate_on: {gate_on!r} is not one of 'estimate', 'upper'")
    gate = usage(
        WHERE,
        compare_options,
        grouped=sides[0].by is not None,
        gate_each=bool(gate_each),
        unpaired=bool(unpaired),
        id_field=None,  # ids were read (or given) with the rows
        max_increase=_margins(max_increase, "max_increase"),
        max_decrease=_margins(max_decrease, "max_decrease"),
        gate_on=gate_on,
    )
    names = tuple(_name(side) for side in sides)
    if unpaired:
        (b, n) = sides
        matched = PairedRows(
            (b.confidence, b.correct), (n.confidence, n.correct), None, 0, 0, len(b), len(n)
        )
    else:
        matched = match(*(_keyed(side, name) for side, name in zip(sides, names, strict=True)))
        usage(
            WHERE,
            check_matching,
            matched=matched,
            base=names[0],
            new=names[1],
            allow_unmatched=bool(allow_unmatched),
        )
    settings = CompareSettings(
        level=ci or 0.95,
        samples=bootstrap or 1000,
        seed=seed or 0,
        bins=bins,
        paired=not unpaired,
        workers=workers,
    )
    b, n = sides
    report = compare_report(
        matched,
        settings,
        formats={"base": b.format, "new": n.format},
        files={"base": [names[0]], "new": [names[1]]},
        id_field=None if unpaired else (b.id_field or default_id(b.format)),
        gate=gate,
        by=b.by,
    )
    return Result(report)


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
    return KeyedRows(
        rows.keys, rows.confidence, rows.correct, rows.groups, rows.format, rows.where or []
    )


def _margins(given: dict[str, float] | None, name: str) -> list[str]:
    """``{"ece": 0.01}`` as the command's ``FIGURE=MARGIN`` texts."""
    if given is None:
        return []
    if not hasattr(given, "items"):
        raise TypeError(f"{name}: give {{figure: margin}}, e.g. {{'ece': 0.01}}")
    texts = []
    for figure, margin in given.items():
        number = isinstance(margin, (int, float)) and not isinstance(margin, bool)
        texts.append(f"{figure}={float(margin)!r}" if number else f"{figure}={margin}")
    return texts
