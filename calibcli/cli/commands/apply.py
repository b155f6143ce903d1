"""calibcli apply: rows streamed back out with their confidence recalibrated."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from calibcli.cli.app import EXIT_CODES, app, usage_error, warn
from calibcli.cli.emit import check_outputs
from calibcli.cli.options import (
    ByOpt,
    ConfidenceField,
    QuietOpt,
    one,
    output_path,
)

# apply's own: the kinds it rewrites, and what --all-runs lets it write twice
Files = Annotated[
    list[str],
    typer.Argument(
        metavar="FILE...",
        show_default=False,
        help="Input files, rewritten in order to one output: JSON Lines, a JSON array or "
        "object, CSV and TSV tables with a header row (their rows come back as one table, so "
        "not with files of other kinds), any of them compressed (gzip, Zstandard, xz, bzip2); "
        "a folder or a quoted pattern reads its input files in name order; '-' reads standard "
        "input (JSON Lines). Parquet and Arrow tables and summary files are read by the other "
        "commands, not rewritten.",
    ),
]
AllRuns = Annotated[
    bool,
    typer.Option(
        "--all-runs",
        help="Rewrite every run given: re-runs of an lm-eval task (other timestamps in the file "
        "names; by default only the newest is read), two files of the same bytes (a copy, "
        "or a compressed copy) or of the same confidences in another order, rows after the "
        "first that carry its id (a run appended to its file again). A path given twice is "
        "refused.",
    ),
]
AllowInSample = Annotated[
    bool,
    typer.Option(
        "--allow-in-sample",
        help="Write rows the calibrator was fitted on, with a warning: figures computed on "
        "them after it are in-sample and flatter its map. Without it such rows are refused "
        "(exit 2), told by their confidences and outcomes as calibrate --calibrator tells "
        "them.",
    ),
]


@app.command(name="apply", epilog=EXIT_CODES)
def apply_calibrator(
    calibrator: Annotated[
        Path, typer.Argument(metavar="CALIBRATOR", help="A calibrator file from 'calibcli fit'.")
    ],
    files: Files,
    confidence_field: ConfidenceField = None,
    by: ByOpt = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            metavar="PATH",
            parser=output_path,
            help="Write the rows to PATH (put in place only when complete; compressed when PATH "
            "ends in .gz, .zst, .xz or .bz2) instead of stdout.",
        ),
    ] = None,
    all_runs: AllRuns = False,
    allow_in_sample: AllowInSample = False,
    quiet: QuietOpt = False,
) -> None:
    """Stream rows back out with the confidence recalibrated: the same field (a dotted path
    reaches into nested objects) rewritten in place, every other value kept exactly as it was
    written (1e5 stays 1e5), one JSON object per line; a CSV or TSV table comes back as a
    table, its confidence cell replaced and every other character kept.

    Native rows only: lm-eval rows carry choice loglikelihoods, not a confidence to rewrite (use
    calibrate --calibrator on them). With --by, each group's rows use the group's calibrator
    when the file holds one. Rows are written once, as the other commands count them once (see
    --all-runs). Rows stream to stdout as they are read; an input error stops the stream (exit
    2), and so does a file found, once read, to hold an earlier file's confidences in another
    order (rows written before, a batch at a time, stay written). With -o the file appears
    only once every row was written, and not at all on an error.

    Rows that carry their outcome (the calibrator's correct field) and are rows the calibrator
    was fitted on, as calibrate --calibrator tells them, are refused once every row is read
    (exit 2; with -o nothing is written): figures computed on them after the map are
    in-sample and flatter it (see --allow-in-sample). Rows without outcomes are not looked
    at: nothing can be scored on them.
    """
    import sys

    confidence_field, by = one(confidence_field), one(by)

    from calibcli.cli.reading import check_groups, recalibration_options
    from calibcli.cli.staging import OutputError, StreamTarget
    from calibcli.io import (
        InputError,
        compressing,
        rewrite_confidences,
        several_models,
        suffix_codec,
    )
    from calibcli.summaries import MULTICLASS, pooled_map_note

    calibrators, _ = recalibration_options(calibrator, None, None)
    if calibrators.method == MULTICLASS:
        raise usage_error(
            f"{calibrator}: this calibrator scales lm-eval choices' loglikelihoods; apply "
            "rewrites native confidence rows (use calibcli calibrate --calibrator on lm-eval "
            "rows)"
        )
    check_groups(calibrators, by)  # another --by field's groups would take its maps
    if by is not None and calibrators.by is None and not calibrators.groups:  # shown under -q too
        warn(
            f"--by {by}: the calibrator holds one map, fitted without --by; every row takes it, "
            "so the option is not used"
        )
    recorded = calibrators.fitted_on.get("confidence_field")
    if confidence_field is None:
        confidence_field = recorded if isinstance(recorded, str) else "confidence"
    elif isinstance(recorded, str) and recorded != confidence_field:  # shown under -q too
        warn(
            f"the calibrator was fitted on the field {recorded!r}; it maps "
            f"{confidence_field!r} here, as --confidence-field asked"
        )
    fitted_format = calibrators.fitted_on.get("format")
    if isinstance(fitted_format, str) and fitted_format not in ("jsonl", "mixed"):
        warn(
            f"the calibrator was fitted on {fitted_format} rows; it maps the JSON Lines "
            f"rows' {confidence_field!r} here, whose confidences may be taken another way"
        )
    check_outputs(output=output)
    if output is not None:
        _check_output_kind(files, output)

    seen: set[str] = set()  # the --by groups met, for the warning on those without a map

    def mapping(group: str | None, confidences: Any) -> Any:
        if group is not None:
            seen.add(group)
        return calibrators.for_group(group).apply(confidences)

    scored = _ScoredRows(calibrators, confidence_field)  # rows with an outcome: in-sample?
    reading = {"all_runs": all_runs, "warn": warn, "correct": scored.field, "scored": scored.add}
    if output is None and sys.stdout is None:
        raise usage_error("cannot write to standard output: it is closed")
    try:
        if output is None:
            count = rewrite_confidences(
                files, confidence_field, by, mapping, sys.stdout.buffer.write, **reading
            )
            sys.stdout.flush()
            _check_in_sample(calibrators, scored, files, allow_in_sample, all_runs)
        else:
            with StreamTarget(output, "rows") as target:
                write, finish = target.write, None
                codec = suffix_codec(output.name)
                if codec is not None:
                    write, finish = compressing(target.write, codec)
                count = rewrite_confidences(files, confidence_field, by, mapping, write, **reading)
                # decided before the file is put in place: refused, it is not written at all
                _check_in_sample(calibrators, scored, files, allow_in_sample, all_runs)
                if finish is not None:
                    finish()
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
    pooled = pooled_map_note(calibrators, by, seen)
    if pooled:
        warn(pooled)
    # a map fitted on several models' rows pooled is none of theirs: no gate after it holds
    several = several_models(calibrators, by, seen, gated=False)
    if several:
        warn(several)


# what figures on rows written after the map they were fitted for are, and the ways out
_IN_SAMPLE = "figures computed on the output are in-sample for them and flatter the map"
_WAYS_OUT = (
    "apply the calibrator to held-out rows (or fit it on other rows), or pass "
    "--allow-in-sample to write them anyway"
)


class _ScoredRows:
    """The rows read that carry an outcome, in the calibrator's correct field (the one its
    fingerprint was made with), gathered a batch at a time as the confidences of right and of
    wrong answers."""

    def __init__(self, calibrators: Any, confidence_field: str) -> None:
        recorded = calibrators.fitted_on.get("correct_field")
        self.field = recorded if isinstance(recorded, str) else "correct"
        self.confidence_field = confidence_field
        self.right: list[Any] = []
        self.wrong: list[Any] = []

    def add(self, conf: Any, correct: Any) -> None:
        self.right.append(conf[correct])
        self.wrong.append(conf[~correct])

    def summary(self) -> Any:
        """The rows as calibrate holds the rows it scores (their fingerprint, and the rows
        kept), or None without any."""
        import numpy as np

        from calibcli.summaries import CalibrationSettings, from_columns

        if not self.right and not self.wrong:
            return None
        empty = np.zeros(0, np.float64)
        right, wrong = (np.concatenate([empty, *part]) for part in (self.right, self.wrong))
        self.right, self.wrong = [], []
        fields = {"confidence_field": self.confidence_field, "correct_field": self.field}
        return from_columns(CalibrationSettings(**fields), right, wrong)


def _check_in_sample(
    calibrators: Any, scored: Any, files: list[str], allowed: bool, all_runs: bool
) -> None:
    """Exit 2 when the rows read are rows the calibrator was fitted on, told as calibrate
    --calibrator tells them (:func:`calibcli.summaries.scored_in_sample`: by content, the rows
    carrying an outcome; by the files read when the calibrator records no fingerprint or the
    values repeat too much to tell), so that the two commands give the same verdict on the
    same rows; a warning instead when ``allowed``. Rows without outcomes are not looked at:
    no figure can be computed on them."""
    from calibcli.errors import shown_name
    from calibcli.io import file_content_id
    from calibcli.summaries import scored_in_sample

    summary = scored.summary()
    if summary is None:
        return
    said = _IN_SAMPLE if allowed else f"{_IN_SAMPLE}; {_WAYS_OUT}"
    read = _files_read(files, all_runs)
    told = {"here": "read here", "consequence": (said, said), "content_of": file_content_id}
    note = scored_in_sample(calibrators, summary, read, **told)
    if note is None:
        return
    if allowed:
        warn(note)
        return
    names = [shown_name("<stdin>" if f == "-" else f) for f in files]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    raise usage_error(f"{shown}: {note}")


def _files_read(files: list[str], all_runs: bool) -> list[str]:
    """The files the rows were read from, as the rewriting chose them: folders and patterns
    expanded, older re-runs of a task left out unless ``all_runs`` (the files a calibrator's
    fit read are compared with these, never with a folder's other files)."""
    from calibcli.io import InputError, choose_runs, named_files

    try:
        return choose_runs(named_files(list(files)), all_runs=all_runs).files
    except InputError:  # the rewriting read them: it said what is wrong, if anything is
        return list(files)


# what an output's name says it holds, less a compression suffix
_JSON_ENDINGS = (".jsonl", ".ndjson", ".json")


def _check_output_kind(files: list[str], output: Path) -> None:
    """Exit 2 when ``-o`` names a kind of file other than the rows written: apply writes each
    row as its input holds it (a table's rows as a table, JSON rows as JSON), so a CSV
    written to ``out.jsonl`` (or JSON Lines to ``out.csv``) would not read back. An output
    named otherwise (``out.txt``) is written as it comes."""
    from calibcli.io import delimited_kind, named_files, suffix_codec

    tables = {delimited_kind(f) for f in named_files(list(files)) if f != "-"} - {None}
    wanted = delimited_kind(output.name)
    name = output.name.lower()
    codec = suffix_codec(name)
    named_json = (name[: -len(codec.suffix)] if codec else name).endswith(_JSON_ENDINGS)
    if tables and (named_json or (wanted is not None and wanted not in tables)):
        kind = "/".join(sorted(tables)).upper()
        raise usage_error(
            f"{output}: the rows are written as their input holds them, a {kind} table; name "
            f"the output .{sorted(tables)[0]}"
        )
    if not tables and wanted is not None:
        raise usage_error(
            f"{output}: the rows are written as their input holds them, JSON; name the output "
            ".jsonl"
        )
