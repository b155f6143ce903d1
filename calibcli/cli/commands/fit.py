"""calibcli fit: a recalibration map fitted on held-out rows, written as a calibrator file."""

from __future__ import annotations

import typer

from calibcli.cli.app import EXIT_CODES, app, usage_error
from calibcli.cli.emit import check_outputs
from calibcli.cli.options import (
    BinsOpt,
    Files,
    JsonOpt,
    MethodOpt,
    OutputOpt,
    SummaryOpt,
    one,
)
from calibcli.cli.progress import phases
from calibcli.cli.reading import read_predictions, require_rows
from calibcli.cli.reading_options import Reading, reading_options


@app.command(epilog=EXIT_CODES)
@reading_options
def fit(
    files: Files,
    method: MethodOpt = ...,
    bins: BinsOpt = (10,),
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    summary: SummaryOpt = None,
    reading: Reading | None = None,
) -> None:
    """Fit a recalibration map on held-out rows and write it as a calibrator file (-o).

    Methods: temperature (sigma(logit(c) / T)), platt (sigma(a logit(c) + b), Platt's target
    smoothing), isotonic (pool-adjacent-violators, linear between fitted points), histogram
    (each equal-width bin's accuracy; --bins) and beta (Kull et al. 2017). With --by, one
    calibrator per group (rows of other groups use the pooled one). Apply it with
    'calibcli calibrate|reliability|threshold --calibrator FILE' on other rows, or stream
    recalibrated rows with 'calibcli apply'.
    """
    from calibcli.cli.emit import emit
    from calibcli.cli.reading import one_blas_thread, read_choices
    from calibcli.reports import fit_report, fitted_on
    from calibcli.summaries import choices_data, fit_choices, fit_data

    bins, method = one(bins), one(method)
    check_outputs(output=output, summary=summary)
    data = read_predictions(files, reading, bins=bins, keep_columns=True)
    require_rows(data, "fit")
    bins = data.settings.bins  # a summary file's, unless --bins was given
    # the settings the rows were read with: a summary file's own where its options were not
    # given, so the file records what fitting its sources directly would
    by = data.settings.by
    from calibcli.io import read_as

    provenance = fitted_on(
        data, fitted_files(files), data.settings.mc_norm, data.inspect_confidence, read_as(data)
    )
    # lm-eval rows: temperature scales the choices' loglikelihoods (Guo et al. 2017), not the
    # confidence of the top choice
    choices = None
    if data.fmt == "lm-eval" and method.value == "temperature":
        choices = read_choices(data)
    try:
        with one_blas_thread(), phases(reading.quiet):
            if choices is None:
                calibrators = fit_data(
                    data, method=method.value, bins=bins, fitted_on=provenance, by=by
                )
            else:
                calibrators = fit_choices(choices, fitted_on=provenance, by=by)
    except ValueError as exc:
        raise usage_error(f"cannot fit {method.value}: {exc}") from None
    with one_blas_thread():
        after = None if choices is None else choices_data(choices, calibrators, bins=bins)
        result = fit_report(data, calibrators, bins=bins, after=after)
    # the file carries the fit's warnings, as stderr, --summary and the report say them, and
    # what tells the rows fitted on again: their fingerprint and the inputs read
    calibrators = calibrators.fitted(data, result.warnings)
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


def fitted_files(files: list[str]) -> list[str]:
    """The files a calibrator records it was fitted on: those given, a summary file named by
    the files it summarized (those it read rows of), as fitting them directly names them."""
    from calibcli.io import summary_sources

    named: list[str] = []
    for name in files:
        named += summary_sources(name) or [name]
    return named
