"""The fit report: the fitted map's parameters and its in-sample figures before and after."""

from __future__ import annotations

from typing import Any

from calibcli.reports.calibrate import calibrate_report
from calibcli.reports.recalibration import _before_after
from calibcli.reports.report import SCHEMA_VERSION, Report, finish, input_formats, input_notes


def fit_report(data: Any, calibrators: Any, *, bins: int, after: Any = None) -> Report:
    """What ``calibcli fit`` shows: the fitted parameters (pooled and per group) and the
    figures before and after the map on the rows it was fitted on — in-sample, so the "after"
    flatters the map; the calibrator file itself is :meth:`CalibratorFile.to_json`."""
    from calibcli.summaries.recalibrate import apply_to_data

    before = calibrate_report(data, bins=bins)
    if after is None:
        after = apply_to_data(data, calibrators, bins=bins)
    after = calibrate_report(after, bins=bins, reorder_ok=True)
    body: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": "fit",
        "format": getattr(data, "fmt", "jsonl"),
        **input_formats(data),
        "method": calibrators.method,
        "n": int(data.stats.n),
        "params": calibrators.calibrator.to_dict(),
        "in_sample": _before_after(before.body, after.body),
    }
    if data.groups is not None:
        body["by"] = calibrators.by
        body["groups"] = {
            name: {
                "n": calibrators.group_rows.get(name),
                "params": calibrators.groups[name].to_dict(),
                "in_sample": _before_after(before.body["groups"][name], after.body["groups"][name]),
            }
            for name in calibrators.groups
        }
    return finish(body, input_notes(data), [])
