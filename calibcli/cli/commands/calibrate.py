"""calibcli calibrate: the calibration estimator family, bootstrap intervals and the gate."""

from __future__ import annotations

from dataclasses import replace

from calibcli.cli.app import EXIT_CODES, app, usage_error
from calibcli.cli.emit import Plot, check_outputs, emit
from calibcli.cli.options import (
    BinsOpt,
    BootstrapOpt,
    BootstrapScheme,
    BootstrapSchemeOpt,
    CalibratorOpt,
    CiOpt,
    Files,
    FoldsOpt,
    GateEachOpt,
    GateOn,
    GateOnOpt,
    HtmlOpt,
    JsonOpt,
    LabelOpt,
    MinBinsOpt,
    OutputOpt,
    PlotOpt,
    RecalibrateOpt,
    SeedOpt,
    Strategy,
    StrategyOpt,
    SummaryOpt,
    gate_options,
    one,
)
from calibcli.cli.progress import phases
from calibcli.cli.reading import (
    calibrator_reading,
    grouping,
    one_blas_thread,
    other_model,
    poisson_settings,
    read_predictions,
    recalibrate,
    recalibration_options,
    require_rows,
    several_models,
    worker_errors,
)
from calibcli.cli.reading_options import Reading, reading_options
from calibcli.reports import CALIBRATION

CROSS_FIT_INTERVALS = (
    "the intervals after --recalibrate resample the cross-fitted confidences with each fold's "
    "map held fixed and leave out the variance of fitting the maps"
)


@app.command(epilog=EXIT_CODES)
@gate_options(CALIBRATION)
@reading_options
def calibrate(
    files: Files,
    bins: BinsOpt = (10,),
    strategy: StrategyOpt = (Strategy.uniform,),
    min_populated_bins: MinBinsOpt = (3,),
    ci: CiOpt = None,
    bootstrap: BootstrapOpt = None,
    bootstrap_scheme: BootstrapSchemeOpt = (BootstrapScheme.multinomial,),
    seed: SeedOpt = None,
    gate_on: GateOnOpt = (GateOn.estimate,),
    gate_each: GateEachOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
    label: LabelOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    summary: SummaryOpt = None,
    calibrator: CalibratorOpt = None,
    recalibrate_with: RecalibrateOpt = None,
    folds: FoldsOpt = None,
    limits: dict[str, float] | None = None,
    floors: dict[str, int] | None = None,
    reading: Reading | None = None,
) -> None:
    """Calibration: ECE, Brier (decomposed), MCE, RMSCE, smooth ECE, NLL, AUROC and more.

    Rows: {"confidence": number in [0, 1], "correct": true|false|0|1}. Warns when fewer than
    --min-populated-bins bins are populated, and when the median populated bin holds fewer than
    30 predictions (binned estimates are then noisy: prefer smece or rmsce_debiased and
    --gate-on upper). Warnings never fail a gate; too few populated bins and no rows do, and so
    do fewer than 30 rows under --gate-on upper (too few for a bootstrap interval's end) and
    fewer rows than --min-rows. Under --gate-on upper, with fewer than 10 right or 10 wrong
    answers a check reads the larger of the upper end and the rare-class floor: the figure with
    the rarer class raised to its one-sided Clopper-Pearson upper count.
    With --calibrator or --recalibrate the figures (and gates) are those after recalibration,
    shown beside the figures before it; a --max-* gate fails closed when the calibrator was
    fitted on rows scored here (its figures are in-sample).
    """
    from calibcli.reports import (
        CALIBRATION,
        Gate,
        Recalibration,
        bootstrap_for,
        calibrate_options,
        calibrate_report,
        floor_options,
    )
    from calibcli.summaries import scored_in_sample

    gate_on, bins, ci = one(gate_on), one(bins), one(ci)
    min_populated_bins, strategy = one(min_populated_bins), one(strategy)
    bootstrap, bootstrap_scheme, seed = one(bootstrap), one(bootstrap_scheme), one(seed)
    calibrator, recalibrate_with, folds = one(calibrator), one(recalibrate_with), one(folds)
    try:
        ci = calibrate_options(
            grouped=(reading.by if not gate_each else grouping(files, reading.by)) is not None,
            gate_each=gate_each,
            limits=limits,
            floors=floors,
            gate_on=gate_on.value,
            ci=ci,
            bootstrap=bootstrap,
            seed=seed,
        )
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    if ci is None and "bootstrap_scheme" in (reading.given or ()):
        raise usage_error("--bootstrap-scheme sets up --ci intervals; give --ci LEVEL too")
    calibrators, method = recalibration_options(calibrator, recalibrate_with, folds)
    if method is not None and gate_on.value == "upper":
        # the bootstrap resamples the out-of-fold confidences with each fold's map held fixed
        raise usage_error(
            CROSS_FIT_INTERVALS + ": their upper ends cannot gate; gate the "
            "estimate, or fit on other rows (calibcli fit) and gate with --calibrator"
        )
    reading = calibrator_reading(reading, calibrators)
    check_outputs(output=output, summary=summary, plot=plot, html=html)
    poisson = ci is not None and bootstrap_scheme is BootstrapScheme.poisson
    data = read_predictions(
        files,
        reading,
        bins=bins,
        keep_columns=True,
        plot=plot,
        labels=label,
        row_keys=poisson,
    )
    bins = data.settings.bins  # a summary file's, unless --bins was given
    if poisson:
        bootstrap, seed = poisson_settings(data, bootstrap, seed, strategy.value, gate_on, limits)
        # its weights are keyed by question (the rows' keys, or a summary's sums), so rows
        # that repeat their questions leave its intervals honest
        data = replace(data, repeats=None)
    for needed, what in (
        (strategy is not Strategy.uniform, f"--strategy {strategy.value}"),
        (ci is not None and not poisson, "--ci"),
        (calibrators is not None, "--calibrator"),
        (method is not None, "--recalibrate"),
    ):
        if needed:
            require_rows(data, what)
    boot = bootstrap_for(ci, bootstrap, seed, reading.workers, bootstrap_scheme.value)
    options = {"bins": bins, "strategy": strategy.value, "min_bins": min_populated_bins}
    floors = floors or {}
    gate = Gate(
        limits or {},
        gate_on.value,
        gate_each,
        minimums=floors,
        options=floor_options(CALIBRATION, floors),
    )
    with one_blas_thread(), worker_errors(), phases(reading.quiet):
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
                confidence_given=reading.confidence_given,
            )
            if poisson and (after.kept is None or not after.kept.keyed):
                raise usage_error(
                    "--bootstrap-scheme poisson: temperature over lm-eval choices reads the "
                    "rows again without the keys the Poisson weights are drawn from; use "
                    "--bootstrap-scheme multinomial"
                )
            if method is not None and boot is not None:
                notes = [*notes, f"{CROSS_FIT_INTERVALS}, so they are narrower than they should be"]
            # the gates fail closed on figures after a calibrator fitted on these rows
            shared = None if calibrators is None else scored_in_sample(calibrators, data, files)
            recalibration = Recalibration(
                data,
                settings,
                tuple(notes),
                options,
                in_sample=shared,
                other_model=other_model(calibrators, data),  # its gates fail closed too
                several_models=several_models(calibrators, data),
            )
            result = calibrate_report(
                after,
                bootstrap=boot,
                gate=gate,
                reorder_ok=True,
                recalibration=recalibration,
                **options,
            )
    del data  # free the columns: the report holds everything shown from here on
    image = None if plot is None else Plot(plot, label, with_ci=boot is not None)
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
