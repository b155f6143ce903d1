"""``calibcli threshold`` from Python: :func:`threshold`."""

from __future__ import annotations

from typing import Any

from calibcli.api.predictions import ARRAYS, Predictions, given, summary_of
from calibcli.api.result import Result
from calibcli.reports import flag, one_of, option, usage, whole

WHERE = "threshold"
BINS = 10  # the bins threshold reads with (its figures' reliability table)


def threshold(
    confidence: Any,
    correct: Any = None,
    *,
    target_accuracy: float,
    group: Any = None,
    by: str | None = None,
    delta: float = 0.05,
    method: str = "ltt",
    grid: int | None = None,
    fit: Any = None,
    min_coverage: float | None = None,
    gate_each: bool = False,
    full: bool = False,
) -> Any:
    """The automation threshold: ``calibcli threshold``'s report, as a
    :class:`~calibcli.api.Result` whose ``to_json()`` is the command's ``--json`` output.

    The lowest confidence t such that the rows with confidence >= t have accuracy >=
    ``target_accuracy`` (A) with probability >= 1 − ``delta``: candidate thresholds are
    tested from the highest down with the exact binomial test of H0: accuracy(t) < A, whose
    p-value is P(Binomial(n_t, A) >= k_t) for k_t right answers among the n_t rows accepted,
    stopping at the first not rejected at level ``delta`` (Learn then Test, ``method="ltt"``,
    over ``grid`` thresholds fixed before the data; or ``"sgr"``, selection with guaranteed
    risk), so looking at many thresholds does not void the guarantee. The plug-in threshold
    (empirical accuracy >= A, no guarantee), the risk–coverage table, AURC, E-AURC and the
    accuracy at 10/50/90% coverage are reported beside it.

    ``confidence``, ``correct``, ``group`` and ``by`` as for :func:`~calibcli.api.calibrate`;
    ``fit`` (Predictions, or a tuple ``(confidence, correct)`` or ``(confidence, correct,
    group)``) chooses the threshold on held-out rows and reports its realised coverage and
    accuracy on these, checked against them as ``--fit`` checks its rows (held-out rows of
    another model, or graded another way, warn and fail a ``min_coverage`` gate closed;
    confidences read another way, from another field, with another ``mc_norm``, or
    inspect-ai confidences taken by another ``inspect_confidence`` rule, are an InputError;
    rows given as arrays name no model); ``min_coverage=0.3`` makes
    ``result.passed`` False unless the guaranteed threshold accepts at least that share
    (``gate_each=True``: in every group too); ``full=True`` keeps every distinct threshold in
    the table.

    >>> import calibcli
    >>> rows = calibcli.read_predictions("sample_data/well_calibrated.jsonl")
    >>> result = calibcli.threshold(rows, target_accuracy=0.8)
    >>> round(result["guaranteed"]["threshold"], 4), result["guaranteed"]["coverage"]
    (0.7182, 0.2605)
    """
    from calibcli.reports import Gate, ThresholdSettings, threshold_options, threshold_report
    from calibcli.reports import options as checks

    gate_each, full = flag(WHERE, "gate_each", gate_each), flag(WHERE, "full", full)
    rows = given(confidence, correct, group=group, by=by)
    target = option(WHERE, "target_accuracy", checks.fraction, target_accuracy)
    delta = option(WHERE, "delta", checks.delta, delta)
    method = one_of(WHERE, "method", method, _methods())
    if grid is not None:
        grid = whole(WHERE, "grid", grid, 0)
        grid = option(WHERE, "grid", checks.grid, grid)
    if min_coverage is not None:
        min_coverage = option(WHERE, "min_coverage", checks.coverage, min_coverage)
    usage(
        WHERE,
        threshold_options,
        grouped=rows.by is not None,
        gate_each=gate_each,
        min_coverage=min_coverage,
        grid=grid,
        method=method,
    )
    held_out = None
    if fit is not None:
        held_out = _fit_rows(fit, rows)
    settings = ThresholdSettings(
        target_accuracy=float(target),
        delta=float(delta),
        method=method,
        full=full,
        fit_files=() if held_out is None else (held_out.files or (ARRAYS,)),
        grid=grid,
    )
    minimums = {} if min_coverage is None else {"coverage": float(min_coverage)}
    report = threshold_report(
        summary_of(rows, bins=BINS),
        settings,
        fit=None if held_out is None else summary_of(held_out, bins=BINS),
        gate=Gate({}, each=gate_each, minimums=minimums),
        read=None if held_out is None else fit_reading(held_out, rows),
    )
    return Result(report, rows.files)


def _methods() -> list[str]:
    from calibcli.reports import SELECTION_METHODS

    return [m.name for m in SELECTION_METHODS]


def _fit_rows(fit: Any, rows: Predictions) -> Predictions:
    """The held-out rows: Predictions, or a tuple of their arrays, grouped by the field the
    evaluated rows are grouped by (the threshold of a group is chosen on its fit rows)."""
    if isinstance(fit, Predictions):
        held_out = fit
    elif isinstance(fit, tuple) and len(fit) in (2, 3):
        group = fit[2] if len(fit) == 3 else None
        if group is None and rows.by is not None:  # each group is chosen on its own rows
            raise usage_error(
                f"fit: the evaluated rows are grouped by {rows.by!r}: give the held-out rows' "
                "groups too, as (confidence, correct, group)"
            )
        held_out = given(*fit[:2], group=group, by=rows.by, what="fit")
    else:
        raise TypeError("fit: give Predictions, or (confidence, correct[, group])")
    if held_out.by != rows.by:
        raise usage_error(
            f"fit: the held-out rows are grouped by {held_out.by!r}, the evaluated rows by "
            f"{rows.by!r}: group both alike"
        )
    return held_out


def fit_reading(held_out: Predictions, rows: Predictions) -> dict[str, Any]:
    """How the held-out rows and the evaluated rows were read, as ``threshold --fit`` gives it
    to the report (``read``), so that its checks of the one against the other run here too
    (another model's rows or another grading warn and fail a ``min_coverage`` gate closed;
    confidences read another way are an InputError); rows given as arrays record nothing. The
    summaries built of Predictions record no inspect-ai mode, so each side's is given here (as
    its rows hold it, auto resolved), and the remedies are spelled as this function's
    arguments."""
    from calibcli.io import sides_read_as

    read = sides_read_as((held_out.read_as, held_out.files), (rows.read_as, rows.files))
    modes = {"fit": held_out.inspect_confidence, "evaluated": rows.inspect_confidence}
    return {**read, "inspect_confidence": modes, "api": True}


def usage_error(message: str) -> Exception:
    from calibcli.errors import InputError

    return InputError(WHERE, None, message)
