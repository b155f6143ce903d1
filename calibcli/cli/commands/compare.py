"""calibcli compare: is NEW better or worse calibrated than BASE on the same questions?"""

from __future__ import annotations

from typing import Annotated

import typer

from calibcli.cli.app import EXIT_CODES, app, usage_error
from calibcli.cli.emit import Plot, check_outputs, emit
from calibcli.cli.options import (
    AllowUnmatchedOpt,
    BinsOpt,
    BootstrapOpt,
    CalibrationFormat,
    CiOpt,
    CompareMinRowsOpt,
    GateEachOpt,
    GateOnOpt,
    HtmlOpt,
    JsonOpt,
    LabelOpt,
    MaxDecreaseOpt,
    MaxIncreaseOpt,
    MinBinsOpt,
    OutputOpt,
    PlotOpt,
    SeedOpt,
    SummaryOpt,
    UnpairedOpt,
    one,
)
from calibcli.cli.progress import phases
from calibcli.cli.reading import (
    announce_formats,
    one_blas_thread,
    unused_warnings,
    worker_errors,
)
from calibcli.cli.reading_options import Reading, reading_options


@app.command(epilog=EXIT_CODES)
@reading_options
def compare(
    base: Annotated[str, typer.Argument(metavar="BASE", help="The baseline's predictions.")],
    new: Annotated[str, typer.Argument(metavar="NEW", help="The new predictions.")],
    max_increase: MaxIncreaseOpt = None,
    max_decrease: MaxDecreaseOpt = None,
    min_rows: CompareMinRowsOpt = None,
    gate_on: GateOnOpt = None,
    ci: CiOpt = None,
    bootstrap: BootstrapOpt = None,
    seed: SeedOpt = None,
    bins: BinsOpt = (10,),
    min_populated_bins: MinBinsOpt = (3,),
    gate_each: GateEachOpt = False,
    unpaired: UnpairedOpt = False,
    allow_unmatched: AllowUnmatchedOpt = False,
    plot: PlotOpt = None,
    html: HtmlOpt = None,
    label: LabelOpt = None,
    json_out: JsonOpt = False,
    output: OutputOpt = None,
    summary: SummaryOpt = None,
    reading: Reading | None = None,
) -> None:
    """Compare two prediction files on the same questions: every calibration figure of BASE and
    NEW, the difference NEW - BASE with a paired bootstrap interval (the same resampled
    questions for both), McNemar's exact test of accuracy and, when both sides agree on every
    answer's correctness, DeLong's test of AUROC. When a run repeats the questions (inspect-ai
    epochs, HELM train trials) the bootstrap draws whole questions and the tests are those for
    clustered rows (Durkalski et al.'s McNemar test, Obuchowski's covariance for DeLong's).

    Rows are matched by --id-field; duplicate ids are an error, and so are more than 5%
    unmatched rows on either side unless --allow-unmatched. --unpaired matches none: each side
    is resampled on its own, and --id-field only identifies its rows (an id repeated on a side
    is refused, or with --all-runs the side is counted and drawn by question). --max-increase
    ece=0.01 (and --max-decrease auroc=0.01) gate on the upper end of the difference's interval
    by default: exit 1 when NEW may be worse than BASE by more than the margin. On ECE, MCE,
    RMSCE, smECE and ece_1bin that end carries BASE's bias allowance: the figure's mean on BASE's
    confidences with 200 draws of calibrated outcomes (seeded by --seed). With fewer than 10
    right or 10 wrong answers on NEW, that end is raised to NEW's rare-class floor (its figure
    with the rarer class at its Clopper-Pearson upper count) less BASE's estimate; paired, with
    fewer than 10 questions NEW gets wrong and BASE right, to the discordance floor (those
    questions at their upper count, NEW alone turned), on --max-decrease too. That end needs
    30 matched rows, and for accuracy and auroc 10 right and 10 wrong answers on each side; with
    fewer the gate fails closed, as the binned checks (ECE, MCE, RMSCE) do when a side populates
    fewer than --min-populated-bins bins. --min-rows N fails unless N rows are compared.
    """
    from dataclasses import replace

    from calibcli.io import (
        InputError,
        compared_modes,
        default_id,
        delimited_kind,
        read_calibration,
        read_compared,
    )
    from calibcli.reports import CompareSettings, check_matching, compare_options, compare_report

    id_field = reading.id_field
    ci, bins, bootstrap, seed = one(ci), one(bins), one(bootstrap), one(seed)
    try:
        gate = compare_options(
            grouped=reading.by is not None,
            gate_each=gate_each,
            unpaired=unpaired,
            max_increase=max_increase or [],
            max_decrease=max_decrease or [],
            gate_on=None if gate_on is None else one(gate_on).value,
            min_rows=one(min_rows),
            allow_unmatched=allow_unmatched,
        )
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    if label and plot is None:
        raise usage_error("--label names --plot series; give --plot PATH too")
    if label and len(label) != 2:
        raise usage_error(
            f"--label is given {'once' if len(label) == 1 else f'{len(label)} times'}; compare "
            "takes it twice, the names of BASE and NEW, in order"
        )
    check_outputs(output=output, summary=summary, plot=plot, html=html)
    keyed = {
        "id_field": id_field,
        "confidence_field": reading.confidence_field,
        "correct_field": reading.correct_field,
        "fmt": reading.fmt.value,
        "mc_norm": reading.mc_norm.value,
        "by": reading.by,
        "scorer": reading.scorer,
        "inspect_confidence": reading.inspect_confidence.value,
        "max_line_bytes": reading.max_line_bytes,
        "max_document_bytes": reading.max_document_bytes,
        "gold_field": reading.gold_field,
        "choices": reading.choices,
        "all_runs": reading.all_runs,
    }
    try:
        matched, found, read = read_compared(base, new, unpaired=unpaired, **keyed)
    except InputError as exc:
        raise usage_error(str(exc)) from None
    unused = unused_warnings(read_calibration, {**keyed, "given": reading.given}, list(found))
    if unused:
        matched = replace(matched, warnings=(*matched.warnings, *unused))
    if not unpaired:
        try:
            tables = any(delimited_kind(side) for side in (base, new))
            check_matching(matched, base, new, allow_unmatched, tables)
        except ValueError as exc:
            raise usage_error(str(exc)) from None
    modes = compared_modes(base, new, read)  # how auto took each side's inspect-ai confidences
    _return_freed_memory()
    if not reading.quiet and reading.fmt is CalibrationFormat.auto:
        announce_formats(found[:2] for found in read)  # each file read, a folder's many
    settings = CompareSettings(
        level=ci or 0.95,
        samples=bootstrap or 1000,
        seed=seed or 0,
        bins=bins,
        paired=not unpaired,
        workers=reading.workers,
        min_bins=one(min_populated_bins),
    )
    with one_blas_thread(), worker_errors(), phases(reading.quiet):
        result = compare_report(
            matched,
            settings,
            formats={"base": found[0], "new": found[1]},
            files={"base": [base], "new": [new]},
            id_field=None if unpaired else (id_field or default_id(found[0])),
            gate=gate,
            by=reading.by,
            modes=modes,
        )
    image = None if plot is None else Plot(plot, label, with_ci=True)
    emit(
        result,
        json_out=json_out,
        output=output,
        summary=summary,
        files=[base, new],
        plot=image,
        html=html,
    )


def _return_freed_memory() -> None:
    """Hand the memory reading freed back to the system before the bootstrap: the reader's
    per-block arrays and objects leave holes in the C heap that the allocator keeps (about as
    much as the matched columns at 2M rows), so the bootstrap's peak would stand on top of
    them. glibc's ``malloc_trim``, looked up among the process's own symbols; elsewhere
    nothing."""
    import sys

    if not sys.platform.startswith("linux"):
        return
    import contextlib
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # a C library without it (musl)
        ctypes.CDLL(None).malloc_trim(0)
