"""Reading: files, ``-`` (stdin), compressed files and whole documents, folded block by block into
a summary (:mod:`calibcli.summaries`).

The public API is this module's: :func:`read_calibration` and :func:`read_perplexity` return a
:class:`~calibcli.summaries.CalibrationSummary` / :class:`~calibcli.summaries.PerplexitySummary`;
bad input raises :class:`~calibcli.errors.InputError`, whose message is one line,
``path:line: what is wrong`` (or ``path: reason`` for a file that cannot be read). Lines are
1-based physical lines of the (decompressed) input.

Inside the package, one job per module: :mod:`~calibcli.io.sources` (files, stdin, compressed ->
newline-aligned blocks), :mod:`~calibcli.io.compression` (gzip, Zstandard, xz and bzip2, by their
magic numbers), :mod:`~calibcli.io.documents` (whole-document inputs),
:mod:`~calibcli.io.rows` (what a valid row is, every message), :mod:`~calibcli.io.route` (each
file's format, skipped files, converters of other formats), :mod:`~calibcli.io.decode` (block ->
columns), :mod:`~calibcli.io.plan` (what reading a kind of rows needs), :mod:`~calibcli.io.fold`
(one source's blocks -> a summary builder), :mod:`~calibcli.io.reader` (the loop),
:mod:`~calibcli.io.parallel` (worker processes), :mod:`~calibcli.io.content` (what identifies an
input), :mod:`~calibcli.io.same_rows` (files holding the same rows, refused),
:mod:`~calibcli.io.records` (row-by-row reading) and, for what the commands and engines write,
:mod:`~calibcli.io.atomic` (files put in place only once written in full). Memory stays flat
whatever the input's size, except the kept rows (8 bytes per row).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from calibcli.errors import InputError, shown_name

__all__ = [
    "CALIBRATION_FORMATS",
    "COUNTED_FORMATS",
    "FORMATS",
    "INSPECT_CONFIDENCES",
    "MAX_LINE_BYTES",
    "MC_NORMS",
    "PERPLEXITY_FORMATS",
    "AtomicFile",
    "CalibrationData",
    "ColumnProblems",
    "FrameSpec",
    "IdIndex",
    "InputError",
    "PerplexityData",
    "choose_runs",
    "compared_modes",
    "compressing",
    "default_id",
    "delimited_kind",
    "file_content_id",
    "file_spans",
    "files_read_as",
    "frame_summary",
    "graded_otherwise",
    "input_kind",
    "is_summary_file",
    "load_summary",
    "match_keys",
    "named_files",
    "other_choices",
    "other_model",
    "other_task",
    "read_as",
    "read_calibration",
    "read_choices",
    "read_compared",
    "read_key_columns",
    "read_keyed",
    "read_matched",
    "read_perplexity",
    "records",
    "repeated_parts",
    "runs_of_one_task",
    "several_models",
    "side_modes",
    "side_scorers",
    "side_tasks",
    "sides_read_as",
    "suffix_codec",
    "summary_sources",
    "unused_options",
    "whole_read",
    "without_partial",
]

from calibcli.formats import BY_NAME as _FORMATS
from calibcli.formats import CONFIDENCES as INSPECT_CONFIDENCES
from calibcli.formats import MC_NORMS, NAMES, providing, task_from_filename, unused_options

FORMATS = ("auto", *NAMES)
"""Every ``--format`` value: ``auto`` (detected per file) or a format of the registry."""
CALIBRATION_FORMATS = ("auto", *providing("calibration"))
PERPLEXITY_FORMATS = ("auto", *providing("perplexity"))
COUNTED_FORMATS = tuple(f.name for f in _FORMATS.values() if f.counts)
"""The formats whose rows take the counts --bytes-field and --words-field name."""


def default_id(fmt: str) -> str:
    """How compare matches rows of a format by default, as its report names it."""
    entry = _FORMATS.get(fmt)
    return (entry.default_id if entry is not None else None) or "id"


MAX_LINE_BYTES = 64 << 20
"""Longest line read by default (64 MiB): a longer one is an error, found without holding it."""


def _check_options(fmt: str, mc_norm: str, workers: Any, command: str, max_line_bytes: Any) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if mc_norm not in MC_NORMS:
        raise ValueError(f"unknown mc_norm {mc_norm!r}; expected one of {', '.join(MC_NORMS)}")
    if workers is not None and (type(workers) is not int or workers < 1):
        raise ValueError(f"workers must be a whole number >= 1 or None, not {workers!r}")
    if fmt != "auto":
        from calibcli.formats import FORMAT_PROVIDES

        if command not in FORMAT_PROVIDES[fmt]:
            other = "perplexity" if command == "calibration" else "calibrate"
            raise ValueError(f"the {fmt} format carries no {command} rows; use {other}")
    if type(max_line_bytes) is not int or max_line_bytes < 1:
        raise ValueError(f"max_line_bytes must be a whole number >= 1, not {max_line_bytes!r}")


def _nothing_left(reader: Any, what: str) -> InputError:
    """Every source was skipped (or the rest held no rows): bad input, naming why."""
    first = reader.reasons[0].removesuffix("; skipped")
    more = len(reader.skipped) - 1
    others = f", and {more} other file(s) skipped too" if more else ""
    return InputError(reader.skipped[0], None, f"{first}{others}: no {what} left to read")


def _read(
    plan: Any,
    sources: list[str],
    workers: Any,
    progress: Any,
    what: str,
    part: tuple[int, int] | None = None,
    span: tuple[int, int] | None = None,
    given: Collection[str] = frozenset(),
) -> Any:
    from dataclasses import replace

    from calibcli.io.folders import expand, hidden_files, unread_subfolders
    from calibcli.io.parts import adopt_settings, combine, is_summary_file, load
    from calibcli.io.pooled_ids import keyed_by_question, pooled_repeats
    from calibcli.io.reader import Reader
    from calibcli.io.runs import choose_runs, limited_runs
    from calibcli.io.same_rows import refuse_same_rows
    from calibcli.io.task_config import assumed_delimiters
    from calibcli.summaries import load_parts

    hidden = hidden_files(list(sources))
    expanded = expand(list(sources))
    unread = unread_subfolders(list(sources), expanded)
    sources = expanded
    labels = [s for s in sources if is_summary_file(s)]
    parts = list(zip(labels, load_parts(labels, load), strict=True))
    rebin = None
    if parts:
        settings, rebin = adopt_settings(plan.settings, plan.kind, parts, given)
        # bins other than the files' are rebuilt from every row, so the rows are kept
        plan = replace(plan.adopting(settings), keep_rows=plan.keep_rows or rebin is not None)
        sources = [s for s in sources if not any(s == label for label, _ in parts)]
    if (part is not None or span is not None) and (len(sources) != 1 or parts):
        # a summary file among them too: given alone it is merged below, never cut
        raise ValueError("part and span cut one plain file: give exactly one")
    summary = None
    if sources or not parts:
        runs = choose_runs(list(sources), all_runs=plan.all_runs)
        # each question's rows are keyed alike, so that a bootstrap draws them together
        plan = keyed_by_question(plan, runs.files, bool(parts))
        reader = Reader(plan, workers=workers, progress=progress)
        builder = plan.builder()
        if part is not None or span is not None:
            if part is not None:
                reader.read_part(sources[0], part[0], part[1], builder)
            else:
                reader.read_span(sources[0], span[0], span[1], builder)
        for source in runs.files if part is None and span is None else ():
            reader.read(source, builder)
        summary = builder.summary(warnings=[*runs.warnings, *reader.warnings])
        # the rows' question keys: for perplexity rows, no further than the files; pooled
        # re-runs' keys travel in the summary's ids, to the summary files read beside them
        summary = pooled_repeats(summary, plan)
        refuse_same_rows(summary, plan.all_runs)
        read = _files_read(summary.sources)
        mc_norm = getattr(plan.settings, "mc_norm", "none")
        read_as = [(s.name, s.format) for s in summary.sources if s.skipped is None]
        assumed = assumed_delimiters(read_as, mc_norm)
        said = [*summary.warnings, *limited_runs(read), *_no_rows(read), *assumed]
        summary = replace(summary, warnings=tuple(dict.fromkeys(said)))
        if reader.skipped and summary.n == 0 and not parts:
            raise _nothing_left(reader, what)
    if parts:
        summary = _partial(combine(summary, parts, plan, rebin))
    if hidden or unread:  # a folder's files left out for their names first, its subfolders last
        said = [*hidden, *summary.warnings, *unread]
        summary = replace(summary, warnings=tuple(dict.fromkeys(said)))
    return _one_sample(pooled_repeats(summary, plan), plan.settings.by, plan.all_runs)


NO_ROWS = "holds no rows: the figures are the other files'"


def _files_read(sources: Any) -> list[tuple[str, int | None]]:
    """The rows read from each file (None for a range of one), for what its run recorded."""
    return [
        (s.name, s.rows if s.start == 0 and s.stop is None else None)
        for s in sources
        if s.skipped is None
    ]


def _no_rows(read: list[tuple[str, int | None]]) -> list[str]:
    """What to say of a file of no rows beside others (a shard whose job wrote nothing): the
    rows counted are the others' alone."""
    from calibcli.io.sources import display_name  # standard input as <stdin>, as errors say

    if len(read) < 2:
        return []
    return [f"{shown_name(display_name(name))}: {NO_ROWS}" for name, rows in read if rows == 0]


def whole_read(summary: Any, *, by: str | None = None, all_runs: bool = False) -> Any:
    """A summary merged from parts read apart (an engine's tasks, each reading a file or a
    DataFrame partition), judged as a reading of all its inputs at once is: the same rows in
    two files by other bytes refused unless ``all_runs``
    (:func:`~calibcli.io.same_rows.refuse_same_rows`), a file of no rows beside others said,
    pieces of a ``--part`` file missing said and every gate failing closed (:func:`_partial`),
    rows of several models said and every gate failing closed (:func:`_one_sample`). The
    parts' own say of missing pieces is left to this judgement (:func:`without_partial`)."""
    from dataclasses import replace

    from calibcli.io.same_rows import refuse_same_rows

    refuse_same_rows(summary, all_runs)
    said = [*summary.warnings, *_no_rows(_files_read(summary.sources))]
    summary = replace(summary, warnings=tuple(dict.fromkeys(said)))
    return _one_sample(_partial(summary), by, all_runs)


def without_partial(summary: Any) -> Any:
    """The summary without its say of missing pieces of a ``--part`` file: a part merged with
    others is judged again once they are in (:func:`whole_read`), as ``summarize`` leaves it to
    the reader of the file it writes."""
    from dataclasses import replace

    from calibcli.summaries import partial_inputs

    said = set(partial_inputs(summary.sources))
    if not said and summary.partial is None:
        return summary
    warnings = tuple(w for w in summary.warnings if w not in said)
    return replace(summary, warnings=warnings, partial=None)


def _partial(summary: Any) -> Any:
    """A summary read from summary files, said to be of part of an input, every gate on it
    failing closed, when pieces of a file read with ``--part`` are missing from it."""
    from dataclasses import replace

    from calibcli.summaries import partial_inputs, partial_reason

    said = partial_inputs(summary.sources)
    if not said:
        return summary
    warnings = tuple(dict.fromkeys([*summary.warnings, *said]))
    return replace(summary, warnings=warnings, partial=partial_reason(summary.sources))


_SEQUENCES_REPEATED = (  # how the warning about perplexity rows repeating questions ends
    "the figures are those of every scored sequence: exact repeats leave the perplexity as it "
    "is, but the sequences and tokens count each repeat, so --min-rows and --min-tokens count "
    "each question once"
)


def _one_sample(summary: Any, by: str | None, all_runs: bool = False) -> Any:
    """The summary with what each source's run records (:func:`calibcli.io.runs.rerun_sources`:
    lm-eval re-runs pooled with ``all_runs`` as epochs), said to mix models (``single_model``:
    the --by groups known to be one model's) unless --by model keeps them apart, and to repeat
    its questions when a run scored each sample several times (``groups_known``: each group's
    model and repeats, where known). A summary file's say is replaced by its records' now."""
    from dataclasses import replace

    from calibcli.io.runs import REPEATED, models_named, rerun_sources, source_checks
    from calibcli.summaries import filtered_said, group_sources

    sources = rerun_sources(summary.sources, all_runs, summary.settings.id_field is None)
    # rows kept with their questions' keys, or not kept (no bootstrap over rows runs), are
    # drawn by question; kept rows without keys (a summary file's) are not, its Poisson sums are
    kept = getattr(summary, "kept", None)
    whole = kept is None or kept.keyed
    sums = getattr(summary, "bootstrap", None) is not None
    tail = "" if summary.kind == "calibration" else _SEQUENCES_REPEATED
    mixed, repeats = source_checks(sources, by, whole, sums, tail)
    task = task_from_filename if by == "task" else None  # an lm-eval file's --by task group
    known = group_sources(sources, summary.group_names, task, models_named)  # skipped left out
    said = [w for w in (mixed, repeats) if w is not None]
    kept_said = [w for w in summary.warnings if not w.startswith(REPEATED) or w in said]
    more = {} if summary.kind != "calibration" else {"repeats": None if whole else repeats}
    return replace(
        summary,
        sources=sources,
        warnings=filtered_said([*kept_said, *said], sources),
        mixed=mixed,
        single_model=frozenset(known.models if mixed else ()),
        groups_known=known,
        **more,
    )


def read_calibration(
    sources: list[str],
    *,
    confidence_field: str = "confidence",
    correct_field: str = "correct",
    bins: int = 10,
    keep_columns: bool = False,
    per_source: bool = False,
    by: str | None = None,
    fmt: str = "auto",
    mc_norm: str = "none",
    scorer: str | None = None,
    inspect_confidence: str = "auto",
    progress: Callable[[str, int | None], Any] | None = None,
    workers: int | None = None,
    block_size: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_document_bytes: int | None = None,
    id_field: str | None = None,
    all_runs: bool = False,
    part: tuple[int, int] | None = None,
    row_keys: bool = False,
    resamples: tuple[int, int] | None = None,
    gold_field: str | None = None,
    choices: list[str] | tuple[str, ...] | None = None,
    span: tuple[int, int] | None = None,
    given: Collection[str] | None = None,
) -> Any:
    """Read (confidence, correct) rows from files or ``-`` into a
    :class:`~calibcli.summaries.CalibrationSummary`.

    ``keep_columns`` also keeps every confidence (8 bytes per row) for the estimators that need
    all rows; ``per_source`` keeps each source's own table (per-file figures, without ``by``);
    ``by`` (a dotted field path, or ``task`` for lm-eval input) groups the rows.
    ``fmt`` is ``auto`` (detected per file from its first row) or one of :data:`FORMATS` that
    carries calibration rows (``jsonl``, ``lm-eval``, ``inspect-ai``). An lm-eval file of
    another task kind than multiple choice is skipped with a warning; it is an error when
    nothing is left. ``scorer`` names the inspect-ai scorer giving correctness (needed when
    the samples have several); ``inspect_confidence`` how an inspect-ai answer's confidence
    comes from its output's token logprobs (``auto``: ``answer-token`` for a multiple-choice
    sample's ``ANSWER: X`` line, else ``sequence``; or one of ``answer-token``, ``sequence``,
    ``first-token``, ``mean-token``, see :func:`calibcli.formats.inspect_sample_row`).
    ``workers`` is the number of processes per source (>= 1; None: two on a machine with two
    CPUs or more for an input of 32 MB or more, else one); no figure depends on it.
    ``progress(name, size)``, when given, makes a progress bar for a source (an object with
    ``update(bytes)`` and ``close()``, or None). A line longer than ``max_line_bytes`` (default
    64 MiB) is invalid input, and so is a compressed whole document (a compressed JSON file, an
    ``.eval`` log's member) larger than ``max_document_bytes`` once inflated (default 256 MiB).
    Raises :class:`InputError` for unreadable or invalid input and ValueError for invalid
    options.

    Rows are read once: among the files, re-runs of an lm-eval task in one folder (other
    timestamps in the file names) are left out but the newest, with a warning; the same file
    twice, standard input twice, or a row whose id (lm-eval task + doc_id, an inspect-ai
    sample's id, epoch and log task, or ``id_field``) was read before is invalid input.
    ``all_runs`` pools them all on purpose.

    Multiple-choice answers scored from token logprobs (OpenAI chat completions, OpenAI evals
    logs) recognise ``choices`` as their options (default the letters A to E); an OpenAI
    response's gold label is the value at ``gold_field`` (a dotted path), an evals log's the
    match event's own verdict.

    A summary file (``calibcli summarize`` / ``merge`` output) is an input like any file: its
    rows are merged with the others (:mod:`calibcli.io.parts`). ``part=(k, K)`` reads only
    the k-th of K ranges of one plain JSON Lines file, cut at line starts; ``span=(start,
    stop)`` the lines of one that start in that byte range (ranges that tile a file read each
    line once, with its number in the file). ``row_keys`` keys every kept row for the Poisson
    bootstrap (an id's hash, or the source's content and the row's line), a source then read in
    one process; ``resamples=(samples, seed)``, its resamples, which summary files read must
    hold (their rows are not there to resample). ``given`` names the settings the caller was
    given (``bins``, ``confidence_field``, ``mc_norm``, ...; None: those not at this function's
    defaults): a summary file's settings are taken for the others, and one given at another
    value than the file's is invalid input.
    """
    from calibcli.io.plan import ReadPlan, answer_options
    from calibcli.io.sources import BLOCK_SIZE
    from calibcli.summaries import CalibrationSettings

    _check_options(fmt, mc_norm, workers, "calibration", max_line_bytes)
    options = answer_options(choices)
    settings = CalibrationSettings(
        bins=bins,
        confidence_field=confidence_field,
        correct_field=correct_field,
        fmt=fmt,
        mc_norm=mc_norm,
        by=by,
        scorer=scorer,
        inspect_confidence=inspect_confidence,
        choices=None if options is None else ",".join(options),
        gold_field=gold_field,
        id_field=id_field,
    )
    plan = ReadPlan(
        "calibration",
        settings,
        keep_columns,
        block_size or BLOCK_SIZE,
        max_line_bytes,
        per_source=per_source,
        max_document_bytes=max_document_bytes,
        id_field=id_field,
        all_runs=all_runs,
        gold_field=gold_field,
        options=options,
        row_keys=row_keys and keep_columns,
        resamples=resamples,
    )
    if given is None:
        given = _not_default(read_calibration, settings)
    return _read(plan, list(sources), workers, progress, "calibration rows", part, span, given)


def read_perplexity(
    sources: list[str],
    *,
    nll_field: str = "nll",
    tokens_field: str = "tokens",
    bytes_field: str = "bytes",
    words_field: str = "words",
    logprobs_field: str = "logprobs",
    by: str | None = None,
    fmt: str = "auto",
    progress: Callable[[str, int | None], Any] | None = None,
    workers: int | None = None,
    block_size: int | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_document_bytes: int | None = None,
    id_field: str | None = None,
    all_runs: bool = False,
    part: tuple[int, int] | None = None,
    span: tuple[int, int] | None = None,
    given: Collection[str] | None = None,
) -> Any:
    """Read per-sequence NLL rows (or lm-eval rolling rows, per-token logprobs, OpenAI responses
    with logprobs, vLLM prompt logprobs) into a :class:`~calibcli.summaries.PerplexitySummary`.

    Native rows: ``{"nll": summed NLL in nats, "tokens": count}`` plus optional ``bytes`` and
    ``words`` (totalled only when every row carries them). Totals are exact: integer counts,
    and the NLL an exact sum of doubles read back as the nearest double (+inf beyond the
    largest, flagged ``nll_overflow``). The format is detected per file (``fmt`` ``auto``) or
    forced; lm-eval files of tasks other than ``loglikelihood_rolling`` are skipped with a
    warning. ``workers``, ``progress``, ``max_line_bytes``, summary files, ``part``, ``span`` and
    ``given`` as for :func:`read_calibration`.
    Raises :class:`InputError` on bad input.
    """
    from calibcli.io.plan import ReadPlan
    from calibcli.io.sources import BLOCK_SIZE
    from calibcli.summaries import PerplexitySettings

    _check_options(fmt, "none", workers, "perplexity", max_line_bytes)
    settings = PerplexitySettings(
        nll_field, tokens_field, bytes_field, words_field, logprobs_field, fmt, by, id_field
    )
    plan = ReadPlan(
        "perplexity",
        settings,
        False,
        block_size or BLOCK_SIZE,
        max_line_bytes,
        max_document_bytes=max_document_bytes,
        id_field=id_field,
        all_runs=all_runs,
    )
    if given is None:
        given = _not_default(read_perplexity, settings)
    return _read(plan, list(sources), workers, progress, "perplexity rows", part, span, given)


def _not_default(reader: Callable[..., Any], settings: Any) -> frozenset[str]:
    """The settings whose value is not the reader's default for them: what a caller that does
    not say which options it was given is taken to have given."""
    import inspect
    from dataclasses import fields

    defaults = inspect.signature(reader).parameters
    return frozenset(
        f.name for f in fields(settings) if getattr(settings, f.name) != defaults[f.name].default
    )


ROW_RULES = {
    "check_confidence": "calibcli.io.rows",
    "check_correct": "calibcli.io.rows",
    "confidence_ok": "calibcli.io.rows",
    "group_name": "calibcli.io.rows",
    "long_integer": "calibcli.io.strict_json",
    "id_key": "calibcli.io.ids",
    "show_id": "calibcli.io.ids",
    "written_floats": "calibcli.io.narrow",
}

_PROVENANCE = (
    "read_as",
    "files_read_as",
    "sides_read_as",
    "other_choices",
    "other_model",
    "other_task",
    "several_models",
    "graded_otherwise",
)
_CHECKED = ("RowsRead", "calibrator_notes", "check_fitted_names", "other_groups")
_SIDES = ("side_tasks", "side_scorers")
_ATOMIC = ("AtomicFile", "is_special", "mode_for", "signals_held", "target_of", "temporary_beside")


def __getattr__(name: str) -> Any:
    # row-by-row reading (compare, apply, choices) loads on first use
    if name == "runs_of_one_task":  # why two re-runs of a task cannot be paired
        from calibcli.io.runs import runs_of_one_task

        return runs_of_one_task
    if name == "rewrite_confidences":
        import importlib

        return importlib.import_module("calibcli.io.rewrite").rewrite_confidences
    if name in ("read_choices", "read_keyed", "records"):
        import importlib

        records = importlib.import_module("calibcli.io.records")
        return records if name == "records" else getattr(records, name)
    if name in ("read_key_columns", "read_matched", "read_compared", "IdIndex", *_SIDES):
        import importlib  # compare's readers, and what its sides are runs of and graded by

        home = "compared" if name in _SIDES else "keyed"
        return getattr(importlib.import_module(f"calibcli.io.{home}"), name)
    if name in _PROVENANCE or name in _CHECKED:  # how rows were read, as a calibrator records
        import importlib  # it and checks it (the commands' --calibrator and the Python API)

        home = "provenance" if name in _PROVENANCE else "calibrator_checks"
        return getattr(importlib.import_module(f"calibcli.io.{home}"), name)
    if name in ("compared_modes", "side_modes"):  # how auto took compared logs' confidences
        import importlib

        home = "route" if name == "compared_modes" else "inspect_rows"
        return getattr(importlib.import_module(f"calibcli.io.{home}"), name)
    if name == "repeated_parts":  # the questions re-runs pooled across an engine's parts repeat
        from calibcli.io.pooled_ids import repeated_parts

        return repeated_parts
    if name == "match_keys":
        from calibcli.io.matching import match_keys

        return match_keys
    if name in ("FrameSpec", "ColumnProblems", "frame_summary", "repeated_frame_id"):
        import importlib

        return getattr(importlib.import_module("calibcli.io.frames"), name)
    if name in ("named_files", "file_content_id"):  # the files behind folders and patterns
        import importlib  # given as inputs; what identifies a file's bytes (a source's content)

        home = "folders" if name == "named_files" else "content"
        return getattr(importlib.import_module(f"calibcli.io.{home}"), name)
    if name == "delimited_kind":  # whether a file's name makes it a CSV or TSV table
        from calibcli.io.delimited import delimited_kind

        return delimited_kind
    if name in ("compressing", "suffix_codec"):  # compressed output, by the file's suffix
        import importlib

        return getattr(importlib.import_module("calibcli.io.compression"), name)
    if name in ("file_spans", "choose_runs"):  # an engine's files: ranges, runs chosen
        import importlib

        module = "calibcli.io.reader" if name == "file_spans" else "calibcli.io.runs"
        return getattr(importlib.import_module(module), name)
    if name in ("input_kind", "is_summary_file", "load_summary", "summary_sources"):
        import importlib

        parts = importlib.import_module("calibcli.io.parts")
        return getattr(parts, "load" if name == "load_summary" else name)
    if name in _ATOMIC:
        import importlib  # files put in place only once written in full

        return getattr(importlib.import_module("calibcli.io.atomic"), name)
    if name in ROW_RULES:  # one row's checks, ids and group names, for rows given as arrays
        import importlib

        return getattr(importlib.import_module(ROW_RULES[name]), name)
    if name in ("CalibrationData", "PerplexityData"):  # summaries given as statistics
        import calibcli.summaries

        return getattr(calibcli.summaries, name)
    raise AttributeError(f"module 'calibcli.io' has no attribute {name!r}")
