"""calibcli threshold: the confidence above which answers can be auto-approved, with a
finite-sample guarantee on their accuracy."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calibcli.cli.app import EXIT_CODES, app, usage_error
from calibcli.cli.emit import Plot, check_outputs, emit
from calibcli.cli.options import (
    CalibratorOpt,
    DeltaOpt,
    Files,
    FitOpt,
    FullOpt,
    GateEachOpt,
    GridOpt,
    HtmlOpt,
    JsonOpt,
    MinCoverageOpt,
    OutputOpt,
    PlotOpt,
    SelectMethod,
    SelectMethodOpt,
    SummaryOpt,
    TargetAccuracyOpt,
    one,
)
from calibcli.cli.progress import phases
from calibcli.cli.reading import (
    calibrator_reading,
    grouping,
    one_blas_thread,
    other_model,
    read_predictions,
    recalibrate,
    recalibration_options,
    require_rows,
    several_models,
)
from calibcli.cli.reading_options import Reading, reading_options


@app.command(epilog=EXIT_CODES)
@reading_options
def threshold(
    files: Files,
    target_accuracy: TargetAccuracyOpt = ...,
    delta: DeltaOpt = (0.05,),
    method: SelectMethodOpt = (SelectMethod.ltt,),
    grid: GridOpt = None,
    fit: FitOpt = None,
    min_coverage: MinCoverageOpt = None,
    gate_each: GateEachOpt = False,
    calibrator: CalibratorOpt = None,
    full: FullOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    summary: SummaryOpt = None,
    reading: Reading | None = None,
) -> None:
    """Automation threshold: the lowest confidence t such that the rows with confidence >= t
    have accuracy >= --target-accuracy, with probability >= 1 - --delta.

    Thresholds are tested from the highest down with the exact binomial test (Learn then Test,
    fixed sequence over a grid fixed before the data, see --grid; or --method sgr), so looking
    at many thresholds does not void the guarantee. The plug-in threshold (empirical accuracy
    >= A, no guarantee) is shown beside it, with the risk-coverage table, AURC, E-AURC and
    accuracy at 10/50/90% coverage. Choose the threshold on held-out rows with --fit;
    --min-coverage gates on the share it accepts.
    """
    from calibcli.errors import InputError
    from calibcli.reports import (
        Gate,
        Recalibration,
        ThresholdSettings,
        threshold_options,
        threshold_report,
    )
    from calibcli.summaries import scored_in_sample

    min_coverage, grid = one(min_coverage), one(grid)
    target_accuracy, delta, method = one(target_accuracy), one(delta), one(method)
    calibrator = one(calibrator)
    try:
        threshold_options(
            grouped=(reading.by if not gate_each else grouping(files, reading.by)) is not None,
            gate_each=gate_each,
            min_coverage=min_coverage,
            grid=grid,
            method=method.value,
        )
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    calibrators, _ = recalibration_options(calibrator, None, None)
    reading = calibrator_reading(reading, calibrators)
    check_outputs(output=output, summary=summary, plot=plot, html=html)
    if fit and "-" in files and "-" in fit:  # the second read would find standard input empty
        raise usage_error(
            "standard input is given both as FILE and as --fit: it can be read once; save "
            "one of them to a file"
        )
    shape = {"bins": 10, "keep_columns": True, "plot": plot}
    data = read_predictions(files, reading, **shape)
    require_rows(data, "threshold")
    fit_data = None if not fit else read_predictions(fit, fit_side(reading, fit, data), **shape)
    read = None
    if fit_data is not None:
        require_rows(fit_data, "threshold --fit")
        read = fit_reading(fit, files, fit_data, data)
    recalibration = None
    if calibrators is not None:
        # a summary file's rows of another confidence field than the calibrator's are exit 2
        options = {"folds": 5, "bins": 10, "confidence_given": reading.confidence_given}
        raw = data
        data, how, notes = recalibrate(data, calibrators, None, files=files, **options)
        recalibration = Recalibration(
            raw,
            how,
            tuple(notes),
            {"reorder_ok": False},
            curves=False,
            in_sample=scored_in_sample(calibrators, raw, files),
            other_model=other_model(calibrators, raw),
            several_models=several_models(calibrators, raw),
        )
        if fit_data is not None:
            fit_data, _, fit_notes = recalibrate(fit_data, calibrators, None, files=fit, **options)
            # what the calibrator says of the --fit rows (another format, a pooled map, rows
            # it was fitted on) travels with their own warnings into the report
            extra = [f"the --fit rows: {n}" for n in fit_notes if n not in notes]
            fit_data = replace(fit_data, warnings=(*fit_data.warnings, *extra))
    settings = ThresholdSettings(
        target_accuracy=target_accuracy,
        delta=delta,
        method=method.value,
        full=full,
        fit_files=tuple(fit or ()),
        grid=grid,
    )
    minimums = {} if min_coverage is None else {"coverage": min_coverage}
    try:
        with one_blas_thread(), phases(reading.quiet):
            result = threshold_report(
                data,
                settings,
                fit=fit_data,
                gate=Gate({}, each=gate_each, minimums=minimums),
                recalibration=recalibration,
                read=read,
            )
    except InputError as exc:  # the --fit rows hold other numbers than the evaluated rows
        raise usage_error(str(exc)) from None
    image = None if plot is None else Plot(plot)
    emit(
        result,
        json_out=json_out,
        output=output,
        summary=summary,
        files=files,
        by=reading.by,
        plot=image,
        html=html,
    )


def fit_side(reading: Any, fit: list[str], data: Any) -> Any:
    """The reading of the --fit inputs: without --by, grouped by the field that a summary file
    among the evaluated inputs was made with, as the files beside it are read, so that each
    group's threshold is chosen on its own --fit rows (read with the command line's --by, every
    group would take a threshold chosen on all of them). A summary file among the --fit inputs
    keeps its own --by, which the report holds against the evaluated rows' (another is exit 2)."""
    from calibcli.io import is_summary_file, named_files

    by = data.settings.by
    if reading.by is not None or by is None:
        return reading
    if any(is_summary_file(path) for path in named_files(list(fit))):
        return reading
    return replace(reading, by=by)


def fit_reading(fit: list[str], files: list[str], fit_data: Any, data: Any) -> dict[str, Any]:
    """How the --fit rows and the evaluated rows were read, for the report to check the one
    against the other (:func:`calibcli.reports.threshold_report`'s ``read``;
    :func:`calibcli.io.sides_read_as`)."""
    from calibcli.io import read_as, sides_read_as

    return sides_read_as((read_as(fit_data), fit), (read_as(data), files))
