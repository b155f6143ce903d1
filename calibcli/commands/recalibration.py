"""Recalibration commands: fit a calibrator on held-out rows, apply one to rows."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from calibcli.app import EXIT_CODES, app, check_outputs, read_predictions, usage_error
from calibcli.options import (
    BinsOpt,
    ByOpt,
    ConfidenceField,
    Files,
    JsonOpt,
    MethodOpt,
    OutputOpt,
    QuietOpt,
    Reading,
    SummaryOpt,
    reading_options,
)


@app.command(epilog=EXIT_CODES)
@reading_options
def fit(
    files: Files,
    method: MethodOpt = ...,
    bins: BinsOpt = 10,
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
    from calibcli.app import emit, one_blas_thread, read_choices
    from calibcli.recalibrate import choices_data, fit_choices, fit_data
    from calibcli.report import fit_report

    check_outputs(output=output, summary=summary)
    data = read_predictions(files, reading, bins=bins, keep_columns=True)
    fitted_on: dict[str, Any] = {
        "n": int(data.stats.n),
        "files": list(files),
        "format": data.fmt,
        "confidence_field": reading.confidence_field,
        "correct_field": reading.correct_field,
    }
    if data.fmt == "lm-eval":
        fitted_on["mc_norm"] = reading.mc_norm.value
    # lm-eval rows: temperature scales the choices' loglikelihoods (Guo et al. 2017), not the
    # confidence of the top choice
    choices = None
    if data.fmt == "lm-eval" and method.value == "temperature":
        choices = read_choices(files, mc_norm=reading.mc_norm, by=reading.by)
    try:
        with one_blas_thread():
            if choices is None:
                calibrators = fit_data(
                    data, method=method.value, bins=bins, fitted_on=fitted_on, by=reading.by
                )
            else:
                calibrators = fit_choices(choices, fitted_on=fitted_on, by=reading.by)
    except ValueError as exc:
        raise usage_error(f"cannot fit {method.value}: {exc}") from None
    with one_blas_thread():
        after = None if choices is None else choices_data(choices, calibrators, bins=bins)
        result = fit_report(data, calibrators, bins=bins, after=after)
    emit(
        result,
        json_out=json_out,
        output=output,
        summary=summary,
        files=files,
        by=reading.by,
        document=calibrators.to_json(),
    )
    raise typer.Exit(0)


BATCH = 8192  # rows mapped in one vectorised call


@app.command(name="apply", epilog=EXIT_CODES)
def apply_calibrator(
    calibrator: Annotated[
        Path, typer.Argument(metavar="CALIBRATOR", help="A calibrator file from 'calibcli fit'.")
    ],
    files: Files,
    confidence_field: ConfidenceField = "confidence",
    by: ByOpt = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            metavar="PATH",
            help="Write the rows to PATH (put in place only when complete) instead of stdout.",
        ),
    ] = None,
    quiet: QuietOpt = False,
) -> None:
    """Stream rows back out with the confidence recalibrated: the same field (a dotted path
    reaches into nested objects), every other key kept as it was, one JSON object per line.

    Native rows only: lm-eval rows carry choice loglikelihoods, not a confidence to rewrite (use
    calibrate --calibrator on them). With --by, each group's rows use the group's calibrator
    when the file holds one. Rows stream to stdout as they are read; an input error stops the
    stream (exit 2). With -o the file appears only once every row was written.
    """
    import sys

    from calibcli.app import recalibration_options
    from calibcli.io import InputError
    from calibcli.output import OutputError, StreamTarget
    from calibcli.recalibrate import MULTICLASS

    calibrators, _ = recalibration_options(calibrator, None, None)
    if calibrators.method == MULTICLASS:
        raise usage_error(
            f"{calibrator}: this calibrator scales lm-eval choices' loglikelihoods; apply "
            "rewrites native confidence rows (use calibcli calibrate --calibrator on lm-eval "
            "rows)"
        )
    check_outputs(output=output)
    if output is None and sys.stdout is None:
        raise usage_error("cannot write to standard output: it is closed")
    try:
        if output is None:
            count = _apply_rows(calibrators, files, confidence_field, by, sys.stdout.buffer.write)
            sys.stdout.flush()
        else:
            with StreamTarget(output, "rows") as target:
                count = _apply_rows(calibrators, files, confidence_field, by, target.write)
    except InputError as exc:
        raise usage_error(str(exc)) from None
    except OutputError as exc:
        raise usage_error(str(exc)) from None
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    except OSError as exc:
        raise usage_error(f"cannot write to standard output: {exc.strerror or exc}") from None
    if not quiet:
        typer.echo(f"recalibrated {count:,} rows ({calibrators.method})", err=True)


def _apply_rows(calibrators: Any, files: list[str], field: str, by: str | None, write: Any) -> int:
    """Map the rows' confidences batch by batch and write them; returns the row count."""
    import json

    import numpy as np

    from calibcli import formats
    from calibcli.io import InputError
    from calibcli.io.records import records
    from calibcli.io.rows import check_confidence, group_name

    count = 0
    batch: list[tuple[dict, float, str | None]] = []

    def flush() -> None:
        names = [g for _, _, g in batch]
        conf = np.fromiter((c for _, c, _ in batch), dtype=np.float64, count=len(batch))
        mapped = np.empty_like(conf)
        for name in set(names):
            rows = np.fromiter((g == name for g in names), dtype=bool, count=len(names))
            mapped[rows] = calibrators.for_group(name).apply(conf[rows])
        lines = []
        for (row, _, _), value in zip(batch, mapped.tolist(), strict=True):
            _set(row, field, value)
            lines.append(json.dumps(row, ensure_ascii=False))
        write(("\n".join(lines) + "\n").encode("utf-8"))
        batch.clear()

    for source in files:
        for name, line_no, row, _ in records(source):
            try:
                if "doc_id" in row and "filtered_resps" in row:
                    raise ValueError(
                        "an lm-eval row has no confidence field to rewrite; apply takes native "
                        "rows (use calibcli calibrate --calibrator on lm-eval rows)"
                    )
                c = check_confidence(formats.lookup(row, field), field)
                group = None if by is None else group_name(formats.by_value(row, by))
            except ValueError as exc:
                raise InputError(name, line_no, str(exc)) from None
            batch.append((row, c, group))
            count += 1
            if len(batch) >= BATCH:
                flush()
    if batch:
        flush()
    return count


def _set(row: dict, dotted: str, value: float) -> None:
    """Set the value at a dotted path that :func:`calibcli.formats.lookup` found."""
    if dotted in row:
        row[dotted] = value
        return
    node: Any = row
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(leaf)] = value
    else:
        node[leaf] = value
