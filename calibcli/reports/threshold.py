"""The automation-threshold report (``calibcli threshold``): at which confidence can answers be
auto-approved with accuracy >= A, guaranteed with probability >= 1 − δ.

Builds report sections from a reader's columns with :mod:`calibcli.metrics.selective`; the report
shell, warnings and strict JSON come from :mod:`calibcli.reports.report`. With a separate fit input
(``--fit``) the threshold is chosen there and its coverage and accuracy are *realised* on the main
input; otherwise both come from the same rows, which flatters them (said in a warning). Where the
--fit rows came from is checked against the evaluated rows' (:mod:`calibcli.reports.threshold_fit`):
rows read into other numbers are refused, another model's or another grading's fail the gate closed.

Which rows each figure comes from: ``n``, ``coverage``, every ``realised`` block, the curve and the
summary figures (AURC, E-AURC, selective accuracy) are the evaluated rows' (FILE...); ``fit_n`` and
the ``guaranteed`` and ``plug_in`` blocks outside ``realised`` are the rows the threshold was chosen
on: the --fit rows, or the evaluated rows themselves without --fit. When the guaranteed threshold's
accuracy on the evaluated rows falls below the target, the report warns and a --min-coverage gate
fails closed: the coverage is not reached at the accuracy asked for. A chosen threshold's
``highest_rejected`` and ``lowest_accepted`` confidences tell a renderer how to print it.

On rows that repeat their questions (an inspect-ai run's epochs, a HELM run's train trials) the
guaranteed threshold is chosen, and every accuracy lower bound read, on one answer per question
drawn at random (``one_per_question`` in the guaranteed block), since the binomial tests and bounds
need independent answers; every other figure weighs every answer. The draw depends on the rows and
their questions' keys, never on the rows' order (the same rows in other files or order, or read by
other workers, give the same report).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from calibcli.reports.figures import confidence
from calibcli.reports.gate import value_text
from calibcli.reports.report import Note, Report, Section, assemble
from calibcli.reports.threshold_questions import one_answer_each, repeated_in, repeats_of

REPEATED_GUARANTEE = (
    "the guarantee counts each row it was chosen on as a question of its own, but a run scored "
    "each question several times (see the warning) and these rows do not say their questions: "
    "it is too optimistic, and --min-coverage fails closed; choose the threshold on the run's "
    "own file, which does, or with --fit on a run that scores each question once"
)
"""Why the guaranteed threshold of rows that repeat questions they do not name is not one."""
REPEATED_COVERAGE = (
    "the threshold was chosen on rows that repeat their questions (see the warning), so its "
    "guarantee is too optimistic; choose it with --fit on a run that scores each question once"
)
"""Why --min-coverage fails closed on a threshold chosen on such rows."""
ONE_PER_QUESTION = (
    "a run scored each question several times (see the warning), so the guaranteed "
    "threshold was chosen, and every accuracy lower bound read, on one answer per question, "
    "drawn at random (seed 0): the guarantee holds for one answer to a new question; the other "
    "figures weigh every answer"
)
"""How the guaranteed threshold of rows that repeat their questions was chosen."""
EVALUATED_PER_QUESTION = (
    "the evaluated rows repeat their questions (see the warning), so the accuracy lower bounds "
    "of the realised figures and of the curve are read on one answer per question, drawn at "
    "random (seed 0); the other figures weigh every answer"
)
"""How the bounds on evaluated rows that repeat their questions are read."""
EVALUATED_UNKEYED = (
    "the evaluated rows repeat their questions (see the warning) and do not say which: the "
    "accuracy lower bounds of the realised figures and of the curve, which need independent "
    "answers, are null"
)
"""Why those bounds are null on such rows that do not name their questions."""

COVERAGES = (0.1, 0.5, 0.9)  # selective accuracy is reported at these coverages
TABLE_ROWS = 20  # rows of the risk–coverage table at round coverages (all with --full)
CURVE_POINTS = 400  # points of the accuracy–coverage curve in the report (what --plot draws)


@dataclass(frozen=True)
class ThresholdSettings:
    """What the user asked: the target accuracy, δ, the method, a full curve, a fit input, and for
    Learn then Test the size of its grid of candidate thresholds (None: the default grid, 0: every
    distinct confidence instead)."""

    target_accuracy: float
    delta: float = 0.05
    method: str = "ltt"
    full: bool = False
    fit_files: tuple[str, ...] = ()
    grid: int | None = None

    @property
    def grid_size(self) -> int | None:
        """The grid's size for ltt (0: every distinct confidence), None for sgr."""
        if self.method != "ltt":
            return None
        if self.grid is None:
            from calibcli.metrics import GRID_SIZE

            return GRID_SIZE
        return self.grid


def threshold_options(
    *, grouped: bool, gate_each: bool, min_coverage: float | None, grid: int | None, method: str
) -> None:
    """Check threshold's options together before any row is read; ValueError says what cannot
    work, in the command line's words."""
    if gate_each and not grouped:
        raise ValueError("--gate-each needs --by FIELD")
    if gate_each and min_coverage is None:
        raise ValueError("--gate-each applies --min-coverage to every group; give it")
    if grid is not None and method != "ltt":
        raise ValueError(
            "--grid sets Learn then Test's candidates; --method sgr bisects the distinct "
            "confidences"
        )


def _choice(choice: Any, curve: Any, *, guaranteed: bool) -> dict[str, Any]:
    """A chosen threshold's block: its figures on ``curve``'s rows, which it was chosen on."""
    seen = _realised(curve, choice.threshold)
    out: dict[str, Any] = {
        "threshold": choice.threshold,
        "highest_rejected": seen["highest_rejected"],
        "lowest_accepted": seen["lowest_accepted"],
        "accepted": int(choice.accepted),
        "errors": int(choice.errors),
        "coverage": float(choice.coverage),
        "accuracy": None if math.isnan(choice.accuracy) else float(choice.accuracy),
    }
    if guaranteed:
        bound = choice.accuracy_lower_bound
        out["accuracy_lower_bound"] = None if math.isnan(bound) else float(bound)
        out["p_value"] = None if math.isnan(choice.p_value) else float(choice.p_value)
        out["test_level"] = choice.test_level
        out["tests_run"] = int(choice.tests_run)
    return out


def _realised(curve: Any, threshold: float | None, delta: float | None = None) -> dict[str, Any]:
    """Coverage and accuracy on ``curve``'s rows of accepting confidence >= ``threshold``; with
    ``delta`` also the one-sided Clopper–Pearson lower bound on that accuracy at level δ (valid for
    rows the threshold was not chosen on)."""
    from calibcli.metrics import accuracy_lower_bound, highest_rejected, points_at

    # thresholds are descending: the rows accepted are those of the last t_j >= threshold
    j = -1 if threshold is None else points_at(curve.thresholds, threshold)
    accepted = int(curve.accepted[j]) if j >= 0 else 0
    errors = int(curve.errors[j]) if j >= 0 else 0
    rejected = None if threshold is None else highest_rejected(curve.thresholds, threshold)
    out: dict[str, Any] = {
        "accepted": accepted,
        "errors": errors,
        "coverage": accepted / curve.total if curve.total else 0.0,
        "accuracy": (accepted - errors) / accepted if accepted else None,
        "highest_rejected": rejected,
        "lowest_accepted": float(curve.thresholds[j]) if j >= 0 else None,
    }
    if delta is not None:
        bound = accuracy_lower_bound(accepted - errors, accepted, delta=delta) if accepted else None
        out["accuracy_lower_bound"] = bound
    return out


def _in_sample(choice: dict[str, Any], *, guaranteed: bool) -> dict[str, Any]:
    """The ``realised`` block of a threshold evaluated on the rows it was chosen on: its own
    figures (the guaranteed threshold's bound is the one its test gives, at the test level)."""
    keys = ("highest_rejected", "lowest_accepted", "accepted", "errors", "coverage", "accuracy")
    keys += ("accuracy_lower_bound",) if guaranteed else ()
    return {k: choice[k] for k in keys}


def _threshold_text(threshold: float) -> str:
    """A threshold in a warning: six significant digits, or all of them when six would round
    it to 0 or 1 (0.9999996 is not the threshold 1, which accepts only rows at confidence 1)."""
    text = f"{threshold:.6g}"
    return repr(threshold) if float(text) in (0.0, 1.0) and float(text) != threshold else text


def _target_text(target: float) -> str:
    """The target accuracy as given (shortest round-trip text): 0.999999999 is not 1."""
    return repr(float(target))


def _below_evidence(curve: Any, chooser: Any, threshold: float | None) -> list[Note]:
    """A warning when evaluated rows (``curve``'s) are accepted below the lowest confidence among
    the rows ``threshold`` was chosen on (``chooser``'s curve): no row it was chosen on was as
    unsure (none when no evaluated row lies between the two)."""
    from calibcli.metrics import points_at

    lowest = float(chooser.thresholds[-1])
    if threshold is None or threshold >= lowest:
        return []
    j, k = points_at(curve.thresholds, threshold), points_at(curve.thresholds, lowest)
    below = (int(curve.accepted[j]) if j >= 0 else 0) - (int(curve.accepted[k]) if k >= 0 else 0)
    seen = _threshold_text(lowest)
    text = (
        f"the guaranteed threshold {_threshold_text(threshold)} lies below {seen}, the lowest "
        f"confidence among the rows it was chosen on: it accepts {below:,} of the evaluated "
        "rows between the two on no evidence"
    )
    general = "the guaranteed threshold accepts evaluated rows below any it was chosen on"
    return [Note("below_evidence", text, detail=seen, general=general)] if below else []


def _below_target(section: dict[str, Any], settings: ThresholdSettings) -> tuple[Note, str] | None:
    """The warning and the gate's reason when the guaranteed threshold's accuracy on the
    evaluated rows falls below the target (None when it does not, or is undefined)."""
    chosen = section["guaranteed"]
    seen = chosen["realised"]
    accuracy, target = seen["accuracy"], settings.target_accuracy
    if chosen["threshold"] is None or accuracy is None or accuracy >= target:
        return None
    # to as many digits as it takes to read below the target: 0.79996 is not "0.8"
    accuracy, target = value_text(accuracy, target, least=4), _target_text(target)
    right, fit = seen["accepted"] - seen["errors"], chosen["accuracy"]
    shown = _threshold_text(chosen["threshold"])
    text = (
        f"the guaranteed threshold {shown} accepts {seen['accepted']:,} of the "
        f"evaluated rows with accuracy {accuracy} ({right:,} right), below the target "
        f"{target} ({fit:.4g} on the fit rows): on these rows it does not deliver the "
        "accuracy asked for"
    )
    general = (
        f"the guaranteed threshold's accuracy on the evaluated rows is below the target "
        f"{target}: on these rows it does not deliver the accuracy asked for"
    )
    reason = (
        f"the guaranteed threshold's accuracy on the evaluated rows, {accuracy}, is below "
        f"the target accuracy {target}"
    )
    return Note("below_target", text, detail=accuracy, general=general), reason


def _no_threshold(chosen: Any, chooser: Any, settings: ThresholdSettings, fit: bool) -> Note:
    """Why no threshold passed (``chosen``, on ``chooser``'s rows: the --fit rows with ``fit``),
    as the warning and the gate's reason say it: SGR's failed tests, or where Learn then Test's
    walk stopped, with that threshold's rows, wrong answers and p-value; a few wrong answers among
    the most confident rows stop it however accurate the rows below, so it names what may pass."""
    target = _target_text(settings.target_accuracy)
    none = f"no threshold reaches accuracy {target} with confidence {confidence(settings.delta)}"
    if chosen.tests_run == 0:  # every candidate accepts too few rows for any test to pass
        return Note("no_threshold", none, explains=("threshold",))
    p, delta = value_text(chosen.p_value, chosen.test_level, least=3), repr(settings.delta)
    if chosen.method == "sgr":
        text = f"SGR's bisection passed none of its tests ({chosen.tests_run:,}, each at level "
        text += f"{chosen.test_level:.3g}: δ = {delta} shared among its steps; the smallest "
        general = f"SGR's bisection passed none of its tests, so {none} by this test"
        text += f"p-value {p}), so {none} by this test"
        return Note("sgr_none", text, f"smallest p = {p}", ("threshold",), general)
    at, skipped = _threshold_text(chosen.stopped_at), chosen.skipped
    above = [f"the {skipped:,} above it accept too few rows to test"] if skipped else []
    if settings.grid_size:
        where = "; ".join([f"grid point {skipped + 1:,} of {settings.grid_size:,}", *above])
        where, hint = f"{at} ({where})", "a coarser --grid whose first threshold accepts more rows"
    else:
        where, hint = f"the confidence {at}" + "".join(f" ({a})" for a in above), "the default grid"
    seen = _realised(chooser, chosen.stopped_at)
    rows = f"{seen['accepted']:,} of the {chooser.total:,} {'fit ' * fit}rows, "
    rows += f"{seen['errors']:,} of them wrong"
    after = (
        f"and no threshold below it is tested, so {none} by this test, whatever the rows below it "
        f"hold; --method sgr, or {hint}, may find one (each setting tried on the same rows adds up "
        "to δ to the risk of a false guarantee)"
    )
    said = "Learn then Test's fixed-sequence test stopped at the first threshold it tested"
    text = f"{said}, {where}, which accepts {rows}: p = {p} > δ = {delta}, {after}"
    general = f"{said} (shown with its rows, wrong answers and p-value > δ = {delta}), {after}"
    return Note("ltt_stopped", text, f"{at}: {rows}, p = {p}", ("threshold",), general)


def _table(curve: Any, settings: ThresholdSettings, bounds_on: Any = None) -> dict[str, Any]:
    """The risk–coverage table of ``curve``; its accuracy lower bounds are read on ``bounds_on`` at
    the same thresholds when given (one answer per question of rows that repeat them), null for rows
    that repeat questions they do not name (``bounds_on`` False)."""
    import numpy as np

    from calibcli.metrics import curve_lower_bounds, display_rows, next_lower

    if settings.full:
        rows = np.arange(curve.thresholds.shape[0])
    else:
        rows = display_rows(curve, rows=TABLE_ROWS)
    accepted, errors = curve.accepted[rows], curve.errors[rows]
    if bounds_on is None:
        lower = np.atleast_1d(curve_lower_bounds(curve, rows, delta=settings.delta)).tolist()
    else:
        lower = [_bound_at(bounds_on or None, t, settings.delta) for t in curve.thresholds[rows]]
    return {
        "threshold": curve.thresholds[rows].tolist(),
        "highest_rejected": next_lower(curve.thresholds, rows.tolist()),
        "accepted": accepted.tolist(),
        "errors": errors.tolist(),
        "coverage": (accepted / curve.total).tolist(),
        "accuracy": ((accepted - errors) / accepted).tolist(),
        "accuracy_lower_bound": lower,
    }


def _bound_at(curve: Any, threshold: float | None, delta: float) -> float | None:
    """The one-sided Clopper–Pearson lower bound on the accuracy of ``curve``'s rows with
    confidence >= ``threshold`` (None: no curve, no threshold or no such row)."""
    from calibcli.metrics import accuracy_lower_bound, points_at

    if curve is None or threshold is None:
        return None
    j = points_at(curve.thresholds, threshold)
    accepted = int(curve.accepted[j]) if j >= 0 else 0
    if not accepted:
        return None
    return float(accuracy_lower_bound(accepted - int(curve.errors[j]), accepted, delta=delta))


def threshold_section(
    columns: Any,
    fit_columns: Any,
    settings: ThresholdSettings,
    *,
    grouped: bool = False,
    fit_keys: Any = None,
    eval_keys: Any = None,
    eval_repeats: bool = False,
) -> Section:
    """The threshold figures for one set of rows (pooled, or one --by group: ``grouped``).
    ``fit_keys``: the rows the threshold is chosen on repeat their questions, and these are their
    (right, wrong) question keys; the guaranteed threshold is chosen on one answer per question
    (:func:`~calibcli.reports.threshold_questions.one_answer_each`). ``eval_repeats``: the
    evaluated rows repeat their questions, and
    the bounds on them are read on one answer per question of ``eval_keys`` (null without them)."""
    from calibcli.metrics import (
        RiskCoverage,
        aurc,
        e_aurc,
        plug_in_threshold,
        select_threshold,
        selective_accuracy,
        threshold_grid,
    )

    n = 0 if columns is None else int(columns.n)
    section: dict[str, Any] = {"n": n}
    notes: list[Note] = []
    if n == 0:
        notes.append(Note("empty", "no rows were read; there is no threshold to choose"))
        section.update(dict.fromkeys(("guaranteed", "plug_in", "aurc", "e_aurc")))
        section["selective_accuracy"] = None
        return Section(section, notes, {"coverage": "no rows were read"})
    curve = RiskCoverage.from_columns(columns)
    fit_curve = curve if fit_columns is None else RiskCoverage.from_columns(fit_columns)
    # what the evaluated rows' bounds are read on: every row, one answer per question, or
    # nothing (False) when the rows repeat questions they do not name
    drawn = one_answer_each(columns, eval_keys) if eval_repeats and eval_keys else None
    bounds_on = (drawn[0] if drawn else False) if eval_repeats else None
    if fit_curve.total == 0:
        held = "the --fit input holds no rows" + (" of this group" if grouped else "")
        general = "the --fit input holds no rows of these groups: they have no threshold"
        text = f"{held}: {'it has no threshold' if grouped else 'there is no threshold'}"
        notes.append(Note("empty_fit", text, general=general))
        closed = {"coverage": held}
        section.update(guaranteed=None, plug_in=None)
    else:
        size = settings.grid_size
        chooser, one = fit_curve, None
        if fit_keys is not None:
            if fit_columns is None and drawn is not None:
                chooser, one = drawn  # chosen on the evaluated rows: their own draw
            else:
                rows = columns if fit_columns is None else fit_columns
                chooser, one = one_answer_each(rows, fit_keys)
        chosen = select_threshold(
            chooser,
            target_accuracy=settings.target_accuracy,
            delta=settings.delta,
            method=settings.method,
            grid=threshold_grid(size) if size else None,
        )
        plug = plug_in_threshold(fit_curve, target_accuracy=settings.target_accuracy)
        section["guaranteed"] = _choice(chosen, chooser, guaranteed=True)
        if one is not None:
            section["guaranteed"]["one_per_question"] = one
        section["plug_in"] = _choice(plug, fit_curve, guaranteed=False)
        if fit_columns is not None:
            section["fit_n"] = int(fit_curve.total)
            realised = _realised(curve, chosen.threshold, settings.delta)
            if eval_repeats:
                bound = _bound_at(bounds_on or None, chosen.threshold, settings.delta)
                realised["accuracy_lower_bound"] = bound
            section["guaranteed"]["realised"] = realised
            section["plug_in"]["realised"] = _realised(curve, plug.threshold)
        else:
            for key in ("guaranteed", "plug_in"):
                block = section[key]
                block["realised"] = _in_sample(block, guaranteed=key == "guaranteed")
            if one is not None:  # chosen on some of the rows: read on every one of them
                block = section["guaranteed"]
                bound = {"accuracy_lower_bound": block["accuracy_lower_bound"]}
                block["realised"] = {**_realised(curve, chosen.threshold), **bound}
        closed = {}
        if chosen.threshold is None:
            notes.append(_no_threshold(chosen, chooser, settings, fit_columns is not None))
            closed["coverage"] = notes[-1].text
        notes += _below_evidence(curve, chooser, chosen.threshold)
        below = _below_target(section, settings)
        if below is not None:
            notes.append(below[0])
            closed["coverage"] = below[1]
    section["coverage"] = _gated_coverage(section)
    section["aurc"] = aurc(curve)
    section["e_aurc"] = e_aurc(curve)
    section["selective_accuracy"] = {
        f"{round(c * 100)}": selective_accuracy(curve, c) for c in COVERAGES
    }
    section["curve"] = _table(curve, settings, bounds_on)
    section["coverage_curve"] = _coverage_curve(curve)
    return Section(section, notes, closed)


def _coverage_curve(curve: Any) -> dict[str, Any]:
    """A denser accuracy–coverage curve than the table's (what --plot draws)."""
    from calibcli.metrics import display_rows

    rows = display_rows(curve, rows=CURVE_POINTS)
    accepted, errors = curve.accepted[rows], curve.errors[rows]
    return {
        "coverage": (accepted / curve.total).tolist(),
        "accuracy": ((accepted - errors) / accepted).tolist(),
    }


def _gated_coverage(section: dict[str, Any]) -> float | None:
    """The coverage a --min-coverage gate checks: the guaranteed threshold's share of the
    evaluated rows (realised on them when the threshold was chosen on --fit rows)."""
    chosen = section.get("guaranteed")
    return chosen["realised"]["coverage"] if chosen else None


def _mapped_scale(settings: dict[str, Any]) -> str:
    """What a threshold chosen on recalibrated confidences means: it is compared with the
    calibrator's output, so a raw confidence held against it accepts other rows (a map that
    lowers confidences makes the raw threshold accept more, and less accurate, rows)."""
    path = settings.get("calibrator")
    which = f"{settings.get('method')}{f', calibrator {path}' if path else ''}"
    return (
        f"the thresholds are on the recalibrated scale ({which}): a row is accepted when its "
        "confidence mapped by the calibrator is >= the threshold; compare the threshold with "
        "mapped confidences (calibcli apply), never with the raw ones"
    )


def threshold_report(
    summary: Any,
    settings: ThresholdSettings,
    *,
    fit: Any = None,
    gate: Any = None,
    recalibration: Any = None,
    read: Any = None,
) -> Report:
    """The threshold report: the guaranteed and plug-in thresholds, summary figures, the
    risk–coverage table, per --by group (each group's threshold chosen on its own rows, or on the
    ``fit`` summary's rows of the same group). With ``recalibration``
    (:class:`~calibcli.reports.recalibration.Recalibration`) the summaries hold recalibrated rows
    and the report shows the figures before and after. ``read``: how the ``fit`` rows and the
    evaluated ones were read (:func:`~calibcli.reports.threshold_fit.fit_origin`, which refuses
    with InputError a threshold chosen on other numbers than those it is held against)."""
    from dataclasses import replace

    from calibcli.metrics import PredictionColumns
    from calibcli.reports.recalibration import carried
    from calibcli.reports.threshold_fit import (
        OTHER_MODEL,
        FitOrigin,
        fit_only_groups,
        fit_origin,
        other_model_sections,
        other_rows,
    )

    origin = FitOrigin()
    if fit is not None and read is not None:  # the rows as read, before any calibrator
        raw = summary if recalibration is None else recalibration.before
        origin = fit_origin(fit, raw, read)

    summary = carried(summary, recalibration)
    mixed = getattr(fit, "mixed", None)
    if mixed is not None:  # a threshold chosen on several models' rows: no group is one's
        summary = replace(summary, mixed=summary.mixed or mixed, single_model=frozenset())
    partial = getattr(fit, "partial", None)
    if partial is not None and getattr(summary, "partial", None) is None:
        # a threshold chosen on a merge missing pieces of its input is not the one asked for
        summary = replace(summary, partial=f"the --fit rows: {partial}")
    fit_groups = None if fit is None else fit.by_group()
    # under rows of several models, a group of one model's rows is held against the model of
    # its own --fit rows, not against the models of other groups' rows (None: every section
    # fails closed on a threshold chosen on another model's rows)
    shut = other_model_sections(fit, summary, origin.closed)

    # rows that repeat their questions, with the questions' keys, choose the guaranteed
    # threshold on one answer per question; without the keys its gate fails closed
    chooser = fit if fit is not None else summary
    repeated, drawn = repeats_of(chooser)
    eval_repeated, eval_keyed = repeats_of(summary)
    # each group's by its own runs' repeats where known (the pooled rows' by every run's)
    fit_repeated, eval_repeated_in = repeated_in(chooser), repeated_in(summary)

    def build(view: Any, group: str | None) -> Section:
        columns, chosen_on = None, view
        if fit is not None:
            if group is None or fit_groups is None:
                chosen_on = fit.pooled()
            else:
                chosen_on = fit_groups.get(group)
            columns = None if chosen_on is None else chosen_on.columns
            if columns is None:
                columns = PredictionColumns.concat([])
        keys = chosen_on.keys if drawn and chosen_on is not None else None
        section = threshold_section(
            view.columns,
            columns,
            settings,
            grouped=group is not None,
            fit_keys=keys,
            eval_keys=view.keys if eval_keyed else None,
            eval_repeats=eval_repeated_in(group),
        )
        if shut is not None and group in shut:  # chosen on another model's rows
            reason = OTHER_MODEL
        elif fit_repeated(group) and not drawn and not above:  # on questions it cannot name
            reason = REPEATED_COVERAGE
        else:
            return section
        return Section(section.figures, section.notes, {"coverage": reason, **section.closed})

    def closing(pooled: Section, groups: dict[str, Section] | None) -> dict[str, Any]:
        if recalibration is None:
            return {}
        from calibcli.reports.calibrate import calibrate_figures
        from calibcli.reports.recalibration import recalibration_block

        return recalibration_block(recalibration, calibrate_figures(summary))

    head = {
        "target_accuracy": settings.target_accuracy,
        "delta": settings.delta,
        "method": settings.method,
        "grid": settings.grid_size,
        "fit": {"files": list(settings.fit_files)} if settings.fit_files else None,
    }
    notes = []
    if fit is not None:  # the --fit input's own warnings (a file skipped, a run that failed)
        said = set(summary.warnings)
        notes += [Note("input", w) for w in dict.fromkeys(fit.warnings) if w not in said]
    overlap = None
    if fit is not None:  # by content: the same rows under another name, or dev inside dev+test
        from calibcli.summaries import rows_in_sample_note

        overlap = rows_in_sample_note(  # their exact values, and rounded (float32, 4 decimals)
            fit,
            summary,
            "the rows the threshold was chosen on",
            "the threshold was partly chosen on the rows it is evaluated on, so its coverage and "
            "accuracy here are optimistic; evaluate on rows held out from --fit",
        )
    if fit is not None:
        notes += [Note("fit_rows", text) for text in (*other_rows(fit, summary), *origin.notes)]
        notes += [Note("fit_only_groups", t) for t in fit_only_groups(fit_groups, summary)]
    if overlap is not None:
        notes.append(Note("in_sample", overlap))
    elif not settings.fit_files:
        notes.append(
            Note(
                "in_sample",
                "the threshold was chosen and evaluated on the same rows: its coverage and "
                "accuracy are optimistic; choose it on held-out rows with --fit FILE",
            )
        )
    if recalibration is not None:
        notes.append(Note("recalibration", _mapped_scale(recalibration.settings)))
        notes += [Note("recalibration", t) for t in recalibration.notes]
    # the coverage after a calibrator fitted on the rows evaluated is in-sample
    closed = recalibration.closed(gate.minimums) if recalibration and gate else {}
    why = origin.closed if shut is None else origin.others  # another model's: by section
    if why is not None:
        closed = {"coverage": why, **(closed or {})}
    above = "coverage" in (closed or {})  # every section's coverage fails closed already
    if drawn:
        notes.append(Note("repeats", ONE_PER_QUESTION))
    elif repeated:
        notes.append(Note("repeats", REPEATED_GUARANTEE))
    if eval_repeated and not eval_keyed:
        notes.append(Note("repeats", EVALUATED_UNKEYED))
    elif eval_repeated and fit is not None:
        notes.append(Note("repeats", EVALUATED_PER_QUESTION))
    return assemble(
        "threshold",
        summary,
        build,
        gate=gate,
        closed=closed or None,
        after=lambda _: head,
        closing=closing,
        notes=notes,
    )
