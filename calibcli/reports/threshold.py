"""The automation-threshold report (``calibcli threshold``): at which confidence can answers be
auto-approved with accuracy >= A, guaranteed with probability >= 1 − δ.

Builds report sections from a reader's columns with :mod:`calibcli.metrics.selective`; the
report shell, warnings and strict JSON come from :mod:`calibcli.reports.report`. With a separate fit
input (``--fit``) the threshold is chosen there and its coverage and accuracy are *realised*
on the main input; otherwise both come from the same rows, which flatters them (said in a
warning).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from calibcli.reports.report import Note, Report, Section, assemble

COVERAGES = (0.1, 0.5, 0.9)  # selective accuracy is reported at these coverages
TABLE_ROWS = 20  # rows of the risk–coverage table at round coverages (all with --full)
PLOT_POINTS = 400  # points of the accuracy–coverage curve --plot draws


@dataclass(frozen=True)
class ThresholdSettings:
    """What the user asked: the target accuracy, δ, the method, a full curve, a fit input."""

    target_accuracy: float
    delta: float = 0.05
    method: str = "ltt"
    full: bool = False
    fit_files: tuple[str, ...] = ()


def _choice(choice: Any, *, guaranteed: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "threshold": choice.threshold,
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


def _realised(curve: Any, threshold: float | None) -> dict[str, Any]:
    """Coverage and accuracy on ``curve``'s rows of accepting confidence >= ``threshold``."""
    import numpy as np

    if threshold is None:
        return {"accepted": 0, "errors": 0, "coverage": 0.0, "accuracy": None}
    # thresholds are descending: the rows accepted are those of the last t_j >= threshold
    j = int(np.searchsorted(-curve.thresholds, -threshold, side="right")) - 1
    accepted = int(curve.accepted[j]) if j >= 0 else 0
    errors = int(curve.errors[j]) if j >= 0 else 0
    return {
        "accepted": accepted,
        "errors": errors,
        "coverage": accepted / curve.total if curve.total else 0.0,
        "accuracy": (accepted - errors) / accepted if accepted else None,
    }


def _table(curve: Any, settings: ThresholdSettings) -> dict[str, Any]:
    import numpy as np

    from calibcli.metrics.selective import accuracy_lower_bound, display_rows

    if settings.full:
        rows = np.arange(curve.thresholds.shape[0])
    else:
        rows = display_rows(curve, rows=TABLE_ROWS)
    accepted, errors = curve.accepted[rows], curve.errors[rows]
    lower = accuracy_lower_bound(accepted - errors, accepted, delta=settings.delta)
    return {
        "threshold": curve.thresholds[rows].tolist(),
        "accepted": accepted.tolist(),
        "errors": errors.tolist(),
        "coverage": (accepted / curve.total).tolist(),
        "accuracy": ((accepted - errors) / accepted).tolist(),
        "accuracy_lower_bound": np.atleast_1d(lower).tolist(),
    }


def threshold_section(columns: Any, fit_columns: Any, settings: ThresholdSettings) -> Section:
    """The threshold figures for one set of rows (pooled, or one --by group)."""
    from calibcli.metrics.selective import (
        RiskCoverage,
        aurc,
        e_aurc,
        plug_in_threshold,
        select_threshold,
        selective_accuracy,
    )

    n = 0 if columns is None else int(columns.n)
    section: dict[str, Any] = {"n": n}
    notes: list[Note] = []
    if n == 0:
        notes.append(Note("empty", "no rows were read; there is no threshold to choose"))
        section.update(
            guaranteed=None, plug_in=None, aurc=None, e_aurc=None, selective_accuracy=None
        )
        return Section(section, notes, {"coverage": "no rows were read"})
    curve = RiskCoverage.from_columns(columns)
    fit_curve = curve if fit_columns is None else RiskCoverage.from_columns(fit_columns)
    if fit_curve.total == 0:
        notes.append(Note("empty_fit", "the --fit input holds no rows for these rows' group"))
        closed = {"coverage": "the --fit input holds no rows"}
        section.update(guaranteed=None, plug_in=None)
    else:
        chosen = select_threshold(
            fit_curve,
            target_accuracy=settings.target_accuracy,
            delta=settings.delta,
            method=settings.method,
        )
        plug = plug_in_threshold(fit_curve, target_accuracy=settings.target_accuracy)
        section["guaranteed"] = _choice(chosen, guaranteed=True)
        section["plug_in"] = _choice(plug, guaranteed=False)
        if fit_columns is not None:
            section["fit_n"] = int(fit_curve.total)
            section["guaranteed"]["realised"] = _realised(curve, chosen.threshold)
            section["plug_in"]["realised"] = _realised(curve, plug.threshold)
        closed = {}
        if chosen.threshold is None:
            reason = (
                f"no threshold reaches accuracy {settings.target_accuracy:g} with confidence "
                f"{1 - settings.delta:g}"
            )
            closed["coverage"] = reason
            notes.append(Note("no_threshold", reason, explains=("threshold",)))
    section["coverage"] = _gated_coverage(section)
    section["aurc"] = aurc(curve)
    section["e_aurc"] = e_aurc(curve)
    section["selective_accuracy"] = {
        f"{round(c * 100)}": selective_accuracy(curve, c) for c in COVERAGES
    }
    section["curve"] = _table(curve, settings)
    return Section(section, notes, closed, picture=_picture(curve, section, settings))


def _picture(curve: Any, section: dict[str, Any], settings: ThresholdSettings) -> dict[str, Any]:
    """A denser accuracy–coverage curve than the table's, and the marks --plot draws."""
    from calibcli.metrics.selective import display_rows

    rows = display_rows(curve, rows=PLOT_POINTS)
    accepted, errors = curve.accepted[rows], curve.errors[rows]
    chosen = section.get("guaranteed") or {}
    plug = section.get("plug_in") or {}
    return {
        "coverage": (accepted / curve.total).tolist(),
        "accuracy": ((accepted - errors) / accepted).tolist(),
        "target_accuracy": settings.target_accuracy,
        "guaranteed": (chosen.get("realised") or chosen).get("coverage") if chosen else None,
        "guaranteed_threshold": chosen.get("threshold"),
        "plug_in": (plug.get("realised") or plug).get("coverage") if plug else None,
    }


def _gated_coverage(section: dict[str, Any]) -> float | None:
    """The coverage a --min-coverage gate checks: the guaranteed threshold's share of the
    evaluated rows (realised on them when the threshold was chosen on --fit rows)."""
    chosen = section.get("guaranteed")
    if not chosen:
        return None
    return chosen.get("realised", chosen)["coverage"]


def threshold_report(
    data: Any, settings: ThresholdSettings, *, fit: Any = None, gate: Any = None
) -> Report:
    """The threshold report: the guaranteed and plug-in thresholds, summary figures, the
    risk–coverage table, per --by group (each group's threshold chosen on its own rows)."""

    names = {id(part): name for name, part in (data.groups or {}).items()}

    def fit_part(d: Any) -> Any:
        if fit is None:
            return None
        if d is data or fit.groups is None:
            return fit.columns
        part = fit.groups.get(names.get(id(d)))
        return None if part is None else part.columns

    def build(d: Any) -> Section:
        columns = fit_part(d)
        if fit is not None and columns is None:
            from calibcli.metrics import PredictionColumns

            columns = PredictionColumns.concat([])
        return threshold_section(d.columns, columns, settings)

    head = {
        "target_accuracy": settings.target_accuracy,
        "delta": settings.delta,
        "method": settings.method,
        "fit": {"files": list(settings.fit_files)} if settings.fit_files else None,
    }
    report = assemble("threshold", data, build, gate=gate, after=lambda _: head)
    if not settings.fit_files:
        note = (
            "the threshold was chosen and evaluated on the same rows: its coverage and accuracy "
            "are optimistic; choose it on held-out rows with --fit FILE"
        )
        for copy in (report.body, report.display):
            copy["warnings"] = [*copy["warnings"], note]
    return report
