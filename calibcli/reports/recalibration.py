"""Recalibration in a report: the figures before and after, pooled and per group."""

from __future__ import annotations

from typing import Any

from calibcli.reports import figures as registry
from calibcli.reports.report import Report


def _before_after(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    keys = [f.key for f in registry.RECALIBRATION]
    return {
        "before": {k: registry.lookup(before, k) for k in keys},
        "after": {k: registry.lookup(after, k) for k in keys},
    }


def with_recalibration(
    target: Report,
    before: Report,
    after: Report,
    settings: dict[str, Any],
    notes: list[str],
    *,
    plot_both: bool = True,
) -> Report:
    """``target`` (the report of the recalibrated rows) with a ``recalibration`` object: the
    settings (method, calibrator file or folds) and the figures of the calibrate reports
    ``before`` and ``after``, pooled and per group; ``notes`` are added to the warnings.
    With ``plot_both`` (and no --by groups) ``--plot`` then draws both reliability curves."""
    pairs = (
        (target.body, before.body, after.body),
        (target.display, before.display, after.display),
    )
    for copy, source, result in pairs:
        block: dict[str, Any] = {**settings, **_before_after(source, result)}
        if "groups" in result and "groups" in source:
            block["groups"] = {
                name: _before_after(source["groups"].get(name, {}), section)
                for name, section in result["groups"].items()
            }
        tail = {k: copy.pop(k) for k in ("warnings", "gate") if k in copy}
        copy["recalibration"] = block
        copy.update(tail)
        copy["warnings"] = copy["warnings"] + notes
    if plot_both and "groups" not in target.body:
        target.series.clear()
        target.series.update({"before": before.display, "after": after.display})
    return target
