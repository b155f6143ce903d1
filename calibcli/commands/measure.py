"""The measuring commands: perplexity, calibrate and reliability."""

from __future__ import annotations

from calibcli.app import (
    EXIT_CODES,
    app,
    check_outputs,
    emit,
    one_blas_thread,
    picture,
    read,
    read_predictions,
    recalibrate,
    recalibration_options,
    usage_error,
)
from calibcli.figures import CALIBRATION, PERPLEXITY
from calibcli.options import (
    MAX_LINE_MB,
    BinsOpt,
    BootstrapOpt,
    ByOpt,
    BytesField,
    CalibratorOpt,
    CiOpt,
    Files,
    FoldsOpt,
    Format,
    FormatOpt,
    GateEachOpt,
    GateOn,
    GateOnOpt,
    JsonOpt,
    LabelOpt,
    LogprobsField,
    MaxLineMbOpt,
    MinBinsOpt,
    NllField,
    OutputOpt,
    PlotOpt,
    QuietOpt,
    Reading,
    RecalibrateOpt,
    SeedOpt,
    Strategy,
    StrategyOpt,
    SummaryOpt,
    TokensField,
    WordsField,
    WorkersOpt,
    gate_options,
    line_bytes,
    reading_options,
)


@app.command(epilog=EXIT_CODES)
@gate_options(PERPLEXITY)
def perplexity(
    files: Files,
    nll_field: NllField = "nll",
    tokens_field: TokensField = "tokens",
    bytes_field: BytesField = "bytes",
    words_field: WordsField = "words",
    logprobs_field: LogprobsField = "logprobs",
    fmt: FormatOpt = Format.auto,
    by: ByOpt = None,
    gate_each: GateEachOpt = False,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    quiet: QuietOpt = False,
    summary: SummaryOpt = None,
    workers: WorkersOpt = None,
    max_line_mb: MaxLineMbOpt = MAX_LINE_MB,
    limits: dict[str, float] | None = None,
) -> None:
    """Corpus perplexity: exp(total NLL / total tokens), pooled over every sequence.

    Rows: {"nll": summed NLL in nats, "tokens": count}; optional "bytes" and "words" add bits per
    byte, byte perplexity and word perplexity. A --max-perplexity gate fails closed on no rows,
    zero tokens, or input without token counts.
    """
    from calibcli.gate import Gate
    from calibcli.io import read_perplexity
    from calibcli.report import perplexity_report

    if gate_each and by is None:
        raise usage_error("--gate-each needs --by FIELD")
    if gate_each and not limits:
        raise usage_error("--gate-each applies the --max-* gates to every group; give one")
    check_outputs(output=output, summary=summary)
    data = read(
        read_perplexity,
        files,
        fmt,
        quiet,
        nll_field=nll_field,
        tokens_field=tokens_field,
        bytes_field=bytes_field,
        words_field=words_field,
        logprobs_field=logprobs_field,
        by=by,
        workers=workers,
        max_line_bytes=line_bytes(max_line_mb),
    )
    result = perplexity_report(data, Gate(limits or {}, each=gate_each))
    emit(result, json_out=json_out, output=output, summary=summary, files=files, by=by)


@app.command(epilog=EXIT_CODES)
@gate_options(CALIBRATION)
@reading_options
def calibrate(
    files: Files,
    bins: BinsOpt = 10,
    strategy: StrategyOpt = Strategy.uniform,
    min_populated_bins: MinBinsOpt = 3,
    ci: CiOpt = None,
    bootstrap: BootstrapOpt = None,
    seed: SeedOpt = None,
    gate_on: GateOnOpt = GateOn.estimate,
    gate_each: GateEachOpt = False,
    plot: PlotOpt = None,
    label: LabelOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    summary: SummaryOpt = None,
    calibrator: CalibratorOpt = None,
    recalibrate_with: RecalibrateOpt = None,
    folds: FoldsOpt = None,
    limits: dict[str, float] | None = None,
    reading: Reading | None = None,
) -> None:
    """Calibration: ECE, Brier (decomposed), MCE, RMSCE, smooth ECE, NLL, AUROC and more.

    Rows: {"confidence": number in [0, 1], "correct": true|false|0|1}. Warns when fewer than
    --min-populated-bins bins are populated, and when the median populated bin holds fewer than
    30 predictions (binned estimates are then noisy: prefer smece or rmsce_debiased and
    --gate-on upper). Warnings never fail a gate; too few populated bins and no rows do.
    With --calibrator or --recalibrate the figures (and gates) are those after recalibration,
    shown beside the figures before it.
    """
    from calibcli.gate import Gate
    from calibcli.report import Bootstrap, calibrate_report, with_recalibration

    if gate_each and reading.by is None:
        raise usage_error("--gate-each needs --by FIELD")
    if gate_each and not limits:
        raise usage_error("--gate-each applies the --max-* gates to every group; give one")
    if gate_on is GateOn.upper and ci is None:
        ci = 0.95
    if ci is None and (bootstrap is not None or seed is not None):
        raise usage_error("--bootstrap and --seed set up --ci intervals; give --ci LEVEL too")
    calibrators, method = recalibration_options(calibrator, recalibrate_with, folds)
    check_outputs(output=output, summary=summary, plot=plot)
    data = read_predictions(
        files,
        reading,
        bins=bins,
        keep_columns=True,
        plot=plot,
        labels=label,
        per_source=calibrators is None and method is None,
    )
    boot = None
    if ci is not None:
        boot = Bootstrap(ci, bootstrap or 1000, seed or 0, reading.workers)
    options = {"bins": bins, "strategy": strategy.value, "min_bins": min_populated_bins}
    gate = Gate(limits or {}, gate_on.value, gate_each)
    with one_blas_thread():
        if calibrators is None and method is None:
            # reorder_ok: the reader's fresh buffers; nothing else needs their row order
            result = calibrate_report(data, bootstrap=boot, gate=gate, reorder_ok=True, **options)
        else:
            after, settings, notes = recalibrate(
                data,
                calibrators,
                method,
                folds=folds or 5,
                bins=bins,
                files=files,
                mc_norm=reading.mc_norm,
                by=reading.by,
            )
            result = calibrate_report(after, bootstrap=boot, gate=gate, reorder_ok=True, **options)
            before = calibrate_report(data, reorder_ok=True, **options)
            result = with_recalibration(result, before, result, settings, notes)
    del data  # free the columns: the report holds everything shown from here on
    image = None if plot is None else (plot, picture(result, plot, label, with_ci=boot is not None))
    emit(
        result,
        json_out=json_out,
        output=output,
        summary=summary,
        files=files,
        by=reading.by,
        plot=image,
    )


@app.command(epilog=EXIT_CODES)
@reading_options
def reliability(
    files: Files,
    bins: BinsOpt = 10,
    plot: PlotOpt = None,
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
    from calibcli.report import calibrate_report, reliability_report, with_recalibration

    calibrators, _ = recalibration_options(calibrator, None, None)
    check_outputs(output=output, summary=summary, plot=plot)
    data = read_predictions(
        files,
        reading,
        bins=bins,
        keep_columns=calibrators is not None,
        plot=plot,
        labels=label,
        per_source=calibrators is None,
    )
    if calibrators is None:
        result = reliability_report(data)
    else:
        after, settings, notes = recalibrate(
            data,
            calibrators,
            None,
            folds=5,
            bins=bins,
            files=files,
            mc_norm=reading.mc_norm,
            by=reading.by,
        )
        with one_blas_thread():
            result = with_recalibration(
                reliability_report(after),
                calibrate_report(data, bins=bins, reorder_ok=True),
                calibrate_report(after, bins=bins, reorder_ok=True),
                settings,
                notes,
            )
    image = None if plot is None else (plot, picture(result, plot, label, with_ci=True))
    emit(
        result,
        json_out=json_out,
        output=output,
        summary=summary,
        files=files,
        by=reading.by,
        plot=image,
    )
