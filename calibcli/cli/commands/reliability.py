"""calibcli reliability: per-bin reliability data and the diagram."""

from __future__ import annotations

from calibcli.cli.app import EXIT_CODES, app
from calibcli.cli.emit import Plot, check_outputs, emit
from calibcli.cli.options import (
    BinsOpt,
    CalibratorOpt,
    Files,
    HtmlOpt,
    JsonOpt,
    LabelOpt,
    OutputOpt,
    PlotOpt,
    SummaryOpt,
    one,
)
from calibcli.cli.reading import (
    calibrator_reading,
    load_numpy_without_blas_threads,
    one_blas_thread,
    read_predictions,
    recalibrate,
    recalibration_options,
    require_rows,
)
from calibcli.cli.reading_options import Reading, reading_options


@app.command(epilog=EXIT_CODES)
@reading_options
def reliability(
    files: Files,
    bins: BinsOpt = (10,),
    plot: PlotOpt = None,
    html: HtmlOpt = None,
    label: LabelOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    summary: SummaryOpt = None,
    calibrator: CalibratorOpt = None,
    reading: Reading | None = None,
) -> None:
    """Reliability diagram data: per bin, its range, count, mean confidence, accuracy with a
    Wilson 95% interval and the gap, then the diagram drawn in the terminal.

    Warns when fewer than 3 bins are populated (capped at --bins) or the median populated bin
    holds fewer than 30 predictions. With --calibrator the bins are those of the recalibrated
    confidences, with the headline figures before and after beside them.
    """
    bins, calibrator = one(bins), one(calibrator)
    if calibrator is None:
        load_numpy_without_blas_threads()  # figures from the per-bin sums: no BLAS call
    from calibcli.reports import Recalibration, reliability_report

    calibrators, _ = recalibration_options(calibrator, None, None)
    reading = calibrator_reading(reading, calibrators)
    check_outputs(output=output, summary=summary, plot=plot, html=html)
    data = read_predictions(
        files,
        reading,
        bins=bins,
        keep_columns=calibrators is not None,
        plot=plot,
        labels=label,
    )
    bins = data.settings.bins  # a summary file's, unless --bins was given
    if calibrators is None:
        result = reliability_report(data)
    else:
        require_rows(data, "--calibrator")
        after, settings, notes = recalibrate(
            data,
            calibrators,
            None,
            folds=5,
            bins=bins,
            files=files,
            confidence_given=reading.confidence_given,
        )
        recalibration = Recalibration(data, settings, tuple(notes), {"bins": bins})
        with one_blas_thread():
            result = reliability_report(after, recalibration=recalibration)
    image = None if plot is None else Plot(plot, label, with_ci=True)
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
