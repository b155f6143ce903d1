"""Recalibration in a report: the figures before and after, pooled and per group."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from calibcli.reports import figures as registry


@dataclass(frozen=True)
class Recalibration:
    """A recalibration to show beside a report of the recalibrated rows: the summary of the
    rows as read (``before``), the report's ``recalibration`` settings (method, calibrator file
    or folds), warnings about it, how the figures before and after are binned, and whether the
    pooled before/after carry their reliability bins (what ``--plot`` draws as two curves).
    ``in_sample`` says when the rows scored hold rows the calibrator was fitted on, and
    ``other_model`` when they are another model's than those it was fitted on, and
    ``several_models`` when the map they take was fitted on several models' rows pooled: the
    gates on the figures after it then fail closed, whatever their values."""

    before: Any  # CalibrationSummary
    settings: dict[str, Any]
    notes: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)  # bins, strategy, min_bins, reorder_ok
    curves: bool = True
    in_sample: str | None = None
    other_model: str | None = None
    several_models: str | None = None

    def closed(self, figures: Iterable[str]) -> dict[str, str] | None:
        """The gate checks on ``figures`` (after recalibration) that fail closed: all of them
        when the rows scored hold rows the calibrator was fitted on, since the figures after it
        are then in-sample and flatter it, or are another model's, whose confidences it was not
        fitted to, or when it was fitted on several models' rows pooled, a map of none of
        them; None otherwise."""
        if self.in_sample:
            return dict.fromkeys(figures, IN_SAMPLE_GATE)
        if self.other_model:
            return dict.fromkeys(figures, OTHER_MODEL_GATE)
        return dict.fromkeys(figures, SEVERAL_MODELS_GATE) if self.several_models else None


def carried(summary: Any, recalibration: Recalibration | None) -> Any:
    """The recalibrated rows' summary, mixing models, repeating questions and covering part of
    an input where the rows before did: a map changes the confidences, not whose rows they
    are."""
    before = None if recalibration is None else recalibration.before
    said = {
        key: getattr(before, key)
        for key in ("mixed", "repeats", "partial")
        if getattr(before, key, None) is not None and getattr(summary, key, None) is None
    }
    return replace(summary, **said) if said else summary


IN_SAMPLE_GATE = (
    "the calibrator was fitted on rows scored here, so the figures after it are in-sample "
    "(score held-out rows)"
)
OTHER_MODEL_GATE = (
    "the calibrator was fitted on another model's rows (see the warning): a map of one model's "
    "confidences says nothing of another's"
)
SEVERAL_MODELS_GATE = (
    "the calibrator was fitted on several models' rows pooled (see the warning): fit one "
    "calibrator per model"
)


def _pick(section: dict[str, Any], curves: bool) -> dict[str, Any]:
    out = {f.key: registry.lookup(section, f.key) for f in registry.RECALIBRATION}
    if curves:
        out["n"] = section.get("n")
        out["reliability"] = section.get("reliability")
    return out


def before_after(
    before: dict[str, Any], after: dict[str, Any], *, curves: bool = False
) -> dict[str, Any]:
    """The recalibration figures of two calibrate sections (with ``curves``, also their row
    counts and reliability bins)."""
    return {"before": _pick(before, curves), "after": _pick(after, curves)}


def recalibration_block(recalibration: Recalibration, after: dict[str, Any]) -> dict[str, Any]:
    """``{"recalibration": ...}``: the settings and the figures before (computed from
    ``recalibration.before``) and after (``after``: a calibrate report body or pooled
    section, with its ``groups``), pooled and per group."""
    from calibcli.reports.calibrate import calibrate_figures

    before = calibrate_figures(
        recalibration.before, **{"reorder_ok": True, **recalibration.options}
    )
    block: dict[str, Any] = {
        **recalibration.settings,
        **before_after(before, after, curves=recalibration.curves and "groups" not in after),
    }
    if "groups" in after and "groups" in before:
        block["groups"] = {
            name: before_after(before["groups"].get(name, {}), section)
            for name, section in after["groups"].items()
        }
    return {"recalibration": block}
