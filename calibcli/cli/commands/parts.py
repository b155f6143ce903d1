"""calibcli summarize and merge: summaries of shards written to files, and merged.

A summary file is an input like any file for calibrate, reliability, threshold, fit and
perplexity (:mod:`calibcli.io.parts`); what it holds is described in
:mod:`calibcli.summaries.parts`.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from calibcli.cli.app import EXIT_CODES, app, usage_error, warn
from calibcli.cli.options import (
    MAX_BOOTSTRAP,
    MIN_BOOTSTRAP,
    BinsOpt,
    BytesField,
    Files,
    LogprobsField,
    NllField,
    TokensField,
    WordsField,
    once,
    one,
    output_path,
)
from calibcli.cli.progress import phases
from calibcli.cli.reading_options import Reading, named_fields, reading_options


class Kind(str, Enum):
    auto = "auto"
    calibration = "calibration"
    perplexity = "perplexity"


class TableMode(str, Enum):
    auto = "auto"
    always = "always"
    never = "never"


def _part(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", value)
    if not found or not 1 <= int(found[1]) <= int(found[2]):
        raise typer.BadParameter(f"{value!r} is not k/K with 1 <= k <= K, e.g. 3/8")
    return int(found[1]), int(found[2])


def _one_plain_file(files: list[str]) -> None:
    """Exit 2 unless the inputs of --part stand for exactly one plain file: a folder or a
    pattern counts as the files it stands for, and a summary file holds no lines to cut."""
    from calibcli.errors import shown_name
    from calibcli.io import is_summary_file, named_files

    named = named_files(list(files))  # a source standing for nothing stands for itself
    if len(files) == 1 and len(named) != 1:
        held = "this folder holds" if os.path.isdir(files[0]) else "this pattern matches"
        raise usage_error(
            f"{shown_name(files[0])}: --part cuts one file into ranges, and {held} "
            f"{len(named):,} files: give exactly one file"
        )
    if len(named) != 1:
        raise usage_error("--part cuts one file into ranges: give exactly one file")
    if is_summary_file(named[0]):
        raise usage_error(
            f"{shown_name(named[0])}: --part cuts a file's lines into ranges, and a calibcli "
            "summary file holds sums, not lines: give the file it summarized"
        )


SummaryOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        metavar="PATH",
        parser=output_path,
        help="The summary file to write (replaced only once it is complete).",
    ),
]
KindOpt = once(
    Kind,
    "--kind",
    help="The rows to summarize: calibration (confidence, correct) or perplexity (NLL, "
    "tokens); auto decides from the first row of the first file that holds one (a folder's "
    "files in name order). Rows that read as either kind, with an option only calibration "
    "rows use, are refused: give the kind.",
)
PartOpt = once(
    str,
    "--part",
    metavar="k/K",
    help="Summarize the k-th of K ranges of one plain JSON Lines file, cut at line starts "
    "(not for compressed files, whole JSON documents or stdin). Lines keep their numbers in the "
    "file.",
)
TableOpt = once(
    TableMode,
    "--table",
    then="give it once: the figures the summary can give depend on it",
    help="The table of distinct confidences, which the figures needing every row read "
    "(AUROC, AURC, thresholds, equal-mass bins, fits, --ci): auto keeps it up to 2,097,152 "
    "distinct values and drops it with a warning above; always; never.",
)


_RESAMPLES = "give it once: the resamples kept, and the intervals from them, depend on it"
BootstrapSamplesOpt = once(
    int,
    "--bootstrap-samples",
    metavar="N",
    min=MIN_BOOTSTRAP,
    max=MAX_BOOTSTRAP,
    show_default=False,
    then=_RESAMPLES,
    help="Also keep N Poisson bootstrap resamples' sums (uniform bins), which merge: "
    "calibrate --ci L --bootstrap-scheme poisson then gives intervals from the summary. "
    "About 500 bytes a resample per group.",
)
BootstrapSeedOpt = once(
    int,
    "--seed",
    metavar="S",
    min=0,
    show_default=False,
    then=_RESAMPLES,
    help="The seed of --bootstrap-samples (default 0).",
)


@app.command(epilog=EXIT_CODES)
@reading_options
def summarize(
    files: Files,
    output: SummaryOutput,
    kind: KindOpt = (Kind.auto,),
    part: PartOpt = None,
    table: TableOpt = (TableMode.auto,),
    bins: BinsOpt = (10,),
    bootstrap_samples: BootstrapSamplesOpt = None,
    seed: BootstrapSeedOpt = None,
    nll_field: NllField = ("nll",),
    tokens_field: TokensField = ("tokens",),
    bytes_field: BytesField = ("bytes",),
    words_field: WordsField = ("words",),
    logprobs_field: LogprobsField = ("logprobs",),
    reading: Reading | None = None,
) -> None:
    """Summarize inputs into a file that merges: a shard's figures without its rows.

    The file holds exact bin tables, the NLL and smooth-ECE sums and (see --table) the table
    of distinct confidences, per --by group; for perplexity rows, exact totals. Merge such files
    with 'calibcli merge'; measure one with calibrate, reliability, threshold, fit or perplexity
    like any input: the figures are those of reading every shard in one run.
    """
    from calibcli.cli.emit import check_outputs
    from calibcli.cli.reading import absent_count_fields, read, read_predictions

    bins, kind, part, table = one(bins), one(kind), one(part), one(table)
    bootstrap_samples, seed = one(bootstrap_samples), one(seed)
    assert reading is not None
    where = _part(part)
    if where is not None:
        _one_plain_file(files)
    check_outputs(output=output)
    fields = {
        "nll_field": one(nll_field),
        "tokens_field": one(tokens_field),
        "bytes_field": one(bytes_field),
        "words_field": one(words_field),
        "logprobs_field": one(logprobs_field),
    }
    named_fields({"--" + name.replace("_", "-"): value for name, value in fields.items()})
    chosen = kind.value if kind is not Kind.auto else _kind(files, reading, fields)
    given = _given_values(
        reading, fields, bins=bins, table=table, bootstrap_samples=bootstrap_samples, seed=seed
    )
    if kind is Kind.auto and chosen == "perplexity":
        _check_either_kind(files, reading, given)
    if seed is not None and bootstrap_samples is None:
        raise usage_error("--seed seeds --bootstrap-samples; give --bootstrap-samples N too")
    if bootstrap_samples is not None and chosen != "calibration":
        raise usage_error("--bootstrap-samples resamples calibration rows; these are perplexity")
    resamples = None if bootstrap_samples is None else (bootstrap_samples, seed or 0)
    if chosen == "calibration":
        # the commands' own reading, every reading option included; summary files keep their
        # bootstrap state, which must then be the one asked for
        data = read_predictions(
            files,
            reading,
            bins=bins,
            keep_columns=True,
            row_keys=resamples is not None,
            part=where,
            resamples=resamples,
        )
    else:
        from calibcli.io import read_perplexity

        options = {
            "by": reading.by,
            "workers": reading.workers,
            "max_line_bytes": reading.max_line_bytes,
            "max_document_bytes": reading.max_document_bytes,
            "id_field": reading.id_field,
            "all_runs": reading.all_runs,
            "part": where,
            "given": reading.given,
        }
        data = read(read_perplexity, files, reading.fmt, reading.quiet, **fields, **options)
        counts = {"bytes": fields["bytes_field"], "words": fields["words_field"]}
        data = absent_count_fields(data, counts)  # as perplexity says it, and kept in the file
    from calibcli.summaries import partial_inputs, to_part

    with phases(reading.quiet):
        summary, warnings = to_part(data, table.value, resamples)
    # pieces missing from summary files read here are said, not kept: a reader of this file
    # judges its pieces again, once the others are merged in
    said = partial_inputs(summary.sources)
    if said:
        summary = replace(summary, warnings=tuple(w for w in summary.warnings if w not in said))
    # options the rows summarized do not use are said, not kept: they are not about the rows
    for warning in _unused_of_kind(given, chosen):
        warn(warning)
    # what reading said (re-runs left out, models pooled, ...) is kept in the file and said here
    for warning in dict.fromkeys([*data.warnings, *warnings]):
        warn(warning)
    dropped = None if resamples is not None else _dropped_state(files, data)
    if dropped is not None:  # said as merge says it, and not kept: the file holds no state
        warn(f"{output}: {dropped}")
    size = _write(output, summary)
    if not reading.quiet and size is not None:
        typer.echo(f"{_described(summary)} -> {output} ({_size(size)})", err=True)


def _dropped_state(files: list[str], data: Any) -> str | None:
    """What summarize says, in merge's words (:func:`calibcli.summaries.dropped_bootstrap`),
    when summary files among ``files`` hold a Poisson bootstrap state that their summary with
    the other inputs (``data``, as read) does not: a state is kept only when every input of
    rows holds one, and neither files read without --bootstrap-samples nor summary files
    written without it hold one. None when no state was dropped (the summary files are read
    again only when the summary holds none)."""
    if data.kind != "calibration" or data.bootstrap is not None:
        return None
    from types import SimpleNamespace

    from calibcli.errors import shown_name
    from calibcli.io import is_summary_file, load_summary, named_files
    from calibcli.summaries import dropped_bootstrap

    given = list(dict.fromkeys(named_files(list(files))))
    loaded = {path: load_summary(path) for path in given if is_summary_file(path)}
    if not any(part.bootstrap is not None for part in loaded.values()):
        return None
    parts = []
    for path in given:  # a file read here counts the rows of its sources of that name
        rows = sum(s.rows for s in data.sources if s.name == path and s.skipped is None)
        parts.append(loaded[path] if path in loaded else SimpleNamespace(bootstrap=None, n=rows))
    labels = [shown_name("<stdin>" if path == "-" else path) for path in given]
    return dropped_bootstrap(parts, labels)


def _kind(files: list[str], reading: Reading, fields: dict[str, str]) -> str:
    """--kind auto: the kind of a summary file given, else of the first row of the first
    file that holds one; calibration when that cannot be told."""
    from calibcli.io import input_kind

    return input_kind(
        files,
        fmt=reading.fmt.value,
        confidence_field=reading.confidence_field,
        correct_field=reading.correct_field,
        gold_field=reading.gold_field,  # an OpenAI response is calibration rows only with it
        **fields,
    )


# The options of summarize that rows of one kind only use, in the order of --help; the
# reading options shared by both kinds (--format, --by, --id-field, ...) are not among them.
_OPTIONS_OF = {
    "calibration": (
        "bins",
        "table",
        "bootstrap_samples",
        "seed",
        "confidence_field",
        "correct_field",
        "mc_norm",
        "scorer",
        "inspect_confidence",
        "gold_field",
        "choices",
    ),
    "perplexity": ("nll_field", "tokens_field", "bytes_field", "words_field", "logprobs_field"),
}
_ROWS_HOLD = {"calibration": "confidences and correctness", "perplexity": "NLL and tokens"}


def _given_values(reading: Reading, fields: dict[str, str], **own: Any) -> dict[str, str]:
    """Each option of :data:`_OPTIONS_OF` given on the command line (a parameter name), at
    its value as shown in a warning, in the order of :data:`_OPTIONS_OF`."""
    values = {
        **own,
        "confidence_field": reading.confidence_field,
        "correct_field": reading.correct_field,
        "mc_norm": reading.mc_norm,
        "scorer": reading.scorer,
        "inspect_confidence": reading.inspect_confidence,
        "gold_field": reading.gold_field,
        "choices": None if reading.choices is None else ",".join(reading.choices),
        **fields,
    }
    named = reading.given or frozenset()
    return {
        name: str(getattr(values[name], "value", values[name]))
        for names in _OPTIONS_OF.values()
        for name in names
        if name in named
    }


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _unused_of_kind(given: dict[str, str], chosen: str) -> list[str]:
    """A warning for each option given that only the other kind of rows than ``chosen`` uses,
    worded as the reading options' (:func:`calibcli.io.unused_options`): the summary is that
    of the rows read without it, so a misplaced option would otherwise change nothing without
    a word."""
    other = "perplexity" if chosen == "calibration" else "calibration"
    return [
        f"{_flag(name)} {value}: the rows are summarized as {chosen} rows ({_ROWS_HOLD[chosen]}), "
        f"which do not use it; the option is not used"
        for name, value in given.items()
        if name in _OPTIONS_OF[other]
    ]


def _check_either_kind(files: list[str], reading: Reading, given: dict[str, str]) -> None:
    """--kind auto found perplexity rows and an option only calibration rows use was given:
    exit 2 asking for --kind when the inputs read as calibration rows too (a row holding both
    an NLL and a confidence), since summarizing either kind would drop what the other reads;
    otherwise the option is said to be unused. Standard input is not read twice: its rows are
    taken as perplexity rows, the option said to be unused."""
    from calibcli.cli.reading import calibration_reading
    from calibcli.io import CALIBRATION_FORMATS, InputError, read_calibration

    ours = [name for name in given if name in _OPTIONS_OF["calibration"]]
    if not ours or "-" in files or reading.fmt.value not in CALIBRATION_FORMATS:
        return
    try:  # the commands' own reading of calibration rows, every reading option included
        read_calibration(list(files), fmt=reading.fmt.value, **calibration_reading(reading))
    except (InputError, ValueError):
        return
    shown = ", ".join(_flag(name) for name in ours)
    raise usage_error(
        f"--kind auto: the rows read as perplexity rows ({_ROWS_HOLD['perplexity']}) and as "
        f"calibration rows ({_ROWS_HOLD['calibration']}), and {shown} "
        f"{'is an option' if len(ours) == 1 else 'are options'} of calibration rows: give "
        f"--kind calibration, or --kind perplexity without {'it' if len(ours) == 1 else 'them'}"
    )


def _described(summary: Any) -> str:
    rows = f"{summary.n:,} {summary.kind} rows"
    if summary.kind != "calibration":
        return rows
    if summary.distinct is None:
        return f"{rows}, no table of distinct confidences"
    return f"{rows}, {summary.distinct.distinct:,} distinct confidences"


def _size(nbytes: int) -> str:
    return f"{nbytes / 1e6:.1f} MB" if nbytes >= 100_000 else f"{nbytes / 1e3:.1f} kB"


def _write(path: Path, summary: Any) -> int | None:
    """Write the summary file, piece by piece into a file put in place when complete (no copy
    of the whole in memory); return its size in bytes, or None when it went to a stream whose
    reader left (``-o /dev/stdout | head``): not an error, and nothing to say."""
    from calibcli.cli.staging import OutputError, StreamTarget
    from calibcli.summaries import pieces

    size = 0
    try:
        with StreamTarget(path, "summary file") as target:
            for piece in pieces(summary):
                target.write(piece)
                size += len(piece)
    except OutputError as exc:
        raise usage_error(str(exc)) from None
    except BrokenPipeError:
        return None
    return size


MergeFiles = Annotated[
    list[Path],
    typer.Argument(metavar="PART...", show_default=False, help="Summary files to merge."),
]
MergeAllRuns = Annotated[
    bool,
    typer.Option(
        "--all-runs",
        help="Pool every run the parts hold: lm-eval re-runs of a task (other timestamps in "
        "the file names; by default a part of older runs only is left out and one holding an "
        "older run beside other files refused, as the commands reading them do), and parts "
        "holding the same rows read from other files.",
    ),
]


@app.command(epilog=EXIT_CODES)
def merge(
    parts: MergeFiles,
    output: SummaryOutput,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No progress bars and no closing line.")
    ] = False,
    all_runs: MergeAllRuns = False,
) -> None:
    """Merge summary files into one: the summary of all their rows.

    Associative and order-free: any grouping and order of the same parts gives the same file.
    Pieces of a file read with --part k/K may be merged a few at a time: until all K are in,
    a warning names the missing ones, and every gate on the file's figures fails.
    Refuses (exit 2, naming both parts) parts of other kinds, settings or versions, two
    parts that counted the same bytes of one input, and two parts of 30 rows or more holding
    the same rows read from other files (plain and compressed, stdin, reordered), unless
    --all-runs. Of an lm-eval task's re-runs only the newest is merged, as the commands read
    them: a part of older runs only is left out with a warning, one holding an older run beside
    other rows refused, unless --all-runs.
    """
    from calibcli.cli.emit import check_outputs
    from calibcli.errors import InputError
    from calibcli.io import choose_runs, repeated_parts
    from calibcli.io import load_summary as load
    from calibcli.summaries import (
        SummaryMismatch,
        check_copies,
        check_source_copies,
        dropped_bootstrap,
        load_parts,
        merge_parts,
        partial_inputs,
    )

    check_outputs(output=output)
    labels = [str(p) for p in parts]
    try:
        with phases(quiet):
            loaded = load_parts(labels, load)
            # a part of a task's older runs only is left out, as the commands reading it do
            runs = choose_runs([], all_runs=all_runs, parts=list(zip(labels, loaded, strict=True)))
            kept = [
                (label, p) for label, p in zip(labels, loaded, strict=True) if label in runs.files
            ]
            labels, loaded = [label for label, _ in kept], [p for _, p in kept]
            merged = merge_parts(loaded, labels)
            # re-runs pooled: each source records its own task's runs, as summarize records
            # them of the files read at once, so that each group is judged by its own repeats
            if all_runs:
                merged = repeated_parts(merged, all_runs, merged=True)
            if not all_runs:  # the same rows by other routes, unless pooled on purpose
                check_copies(loaded, labels, "merge each part once")
                check_source_copies(kept, "merge each part once")
    except InputError as exc:
        raise usage_error(str(exc)) from None
    except SummaryMismatch as exc:
        raise usage_error(str(exc)) from None
    # what the runs say (older runs left out, a file of no rows) is said, and kept in the file
    # as summarize keeps what reading says
    for warning in runs.warnings:
        warn(warning)
    merged = replace(merged, warnings=tuple(dict.fromkeys([*runs.warnings, *merged.warnings])))
    size = _write(output, merged)
    # pieces of a file missing (a failed job): merged all the same, so that the others may be
    # merged in later, and said, as every command reading the file says it
    for warning in partial_inputs(merged.sources):
        warn(f"{output}: {warning}")
    dropped = dropped_bootstrap(loaded, labels)
    if dropped is not None:
        warn(f"{output}: {dropped}")
    if not quiet and size is not None:
        count = f"{len(kept)} part{'s' if len(kept) != 1 else ''}"
        typer.echo(f"{count}: {_described(merged)} -> {output} ({_size(size)})", err=True)
