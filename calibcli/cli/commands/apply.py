"""calibcli apply: rows streamed back out with their confidence recalibrated."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from calibcli.cli.app import EXIT_CODES, app, usage_error
from calibcli.cli.emit import check_outputs
from calibcli.cli.options import (
    ByOpt,
    ConfidenceField,
    Files,
    QuietOpt,
)

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

    from calibcli.cli.reading import recalibration_options
    from calibcli.cli.staging import OutputError, StreamTarget
    from calibcli.io import InputError
    from calibcli.summaries import MULTICLASS

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
