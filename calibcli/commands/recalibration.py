"""Recalibration commands: fit a calibrator on held-out rows, apply one to rows."""

from __future__ import annotations

from typing import Any

import typer

from calibcli.app import EXIT_CODES, app, check_outputs, read_predictions, usage_error
from calibcli.options import (
    MAX_LINE_MB,
    BinsOpt,
    ByOpt,
    CalibrationFormat,
    CalibrationFormatOpt,
    ConfidenceField,
    CorrectField,
    Files,
    JsonOpt,
    MaxLineMbOpt,
    McNorm,
    McNormOpt,
    MethodOpt,
    OutputOpt,
    QuietOpt,
    SummaryOpt,
    WorkersOpt,
    line_bytes,
)


@app.command(epilog=EXIT_CODES)
def fit(
    files: Files,
    method: MethodOpt = ...,
    confidence_field: ConfidenceField = "confidence",
    correct_field: CorrectField = "correct",
    bins: BinsOpt = 10,
    fmt: CalibrationFormatOpt = CalibrationFormat.auto,
    mc_norm: McNormOpt = McNorm.none,
    by: ByOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    quiet: QuietOpt = False,
    summary: SummaryOpt = None,
    workers: WorkersOpt = None,
    max_line_mb: MaxLineMbOpt = MAX_LINE_MB,
) -> None:
    """Fit a recalibration map on held-out rows and write it as a calibrator file (-o).

    Methods: temperature (sigma(logit(c) / T)), platt (sigma(a logit(c) + b), Platt's target
    smoothing), isotonic (pool-adjacent-violators, linear between fitted points), histogram
    (each equal-width bin's accuracy; --bins) and beta (Kull et al. 2017). With --by, one
    calibrator per group (rows of other groups use the pooled one). Apply it with
    'calibcli calibrate|reliability|threshold --calibrator FILE' on other rows, or stream
    recalibrated rows with 'calibcli apply'.
    """
    from calibcli.app import emit, one_blas_thread
    from calibcli.recalibrate import fit_data
    from calibcli.report import fit_report

    check_outputs(output=output, summary=summary)
    data = read_predictions(
        files,
        fmt=fmt,
        quiet=quiet,
        confidence_field=confidence_field,
        correct_field=correct_field,
        bins=bins,
        mc_norm=mc_norm,
        by=by,
        plot=None,
        labels=None,
        keep_columns=True,
        workers=workers,
        max_line_bytes=line_bytes(max_line_mb),
    )
    fitted_on: dict[str, Any] = {
        "n": int(data.stats.n),
        "files": list(files),
        "format": data.fmt,
        "confidence_field": confidence_field,
        "correct_field": correct_field,
    }
    if data.fmt == "lm-eval":
        fitted_on["mc_norm"] = mc_norm.value
    try:
        with one_blas_thread():
            calibrators = fit_data(data, method=method.value, bins=bins, fitted_on=fitted_on, by=by)
    except ValueError as exc:
        raise usage_error(f"cannot fit {method.value}: {exc}") from None
    with one_blas_thread():
        result = fit_report(data, calibrators, bins=bins)
    emit(
        result,
        json_out=json_out,
        output=output,
        summary=summary,
        files=files,
        by=by,
        document=calibrators.to_json(),
    )
    raise typer.Exit(0)
