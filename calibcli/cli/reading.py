"""Reading for the commands: the readers' errors become exit 2, options are checked before any
input is read, and recalibration reads what it needs."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from calibcli.cli.app import say, usage_error
from calibcli.errors import shown_name


def read(read: Callable[..., Any], files: list[str], fmt: Any, quiet: bool, **options: Any) -> Any:
    """Run a calibcli.io reader; invalid input becomes exit 2 with its one-line message."""
    from calibcli.io import InputError

    progress = None
    if not quiet and sys.stderr is not None and sys.stderr.isatty():
        from calibcli.cli.progress import progress_bar as progress
    from calibcli.cli.progress import phases

    try:
        # phases: summary files given as inputs are read and merged as long phases
        with one_blas_thread(), phases(quiet):
            data = read(files, fmt=fmt.value, progress=progress, **options)
    except InputError as exc:
        raise usage_error(str(exc)) from None
    if fmt.value == "auto" and not quiet:
        read_files = [(s.display, s.format) for s in data.sources if s.skipped is None]
        announce_formats(read_files)
    return unused(data, read, options)


def unused(data: Any, reader: Callable[..., Any], options: dict[str, Any]) -> Any:
    """The data with :func:`unused_warnings` of the files it read (``options``: as given to
    ``reader``, ``given`` among them)."""
    from dataclasses import replace

    formats = [s.format for s in data.sources if s.skipped is None and s.format is not None]
    said = [w for w in unused_warnings(reader, options, formats) if w not in data.warnings]
    return replace(data, warnings=(*data.warnings, *said)) if said else data


def unused_warnings(
    reader: Callable[..., Any], options: dict[str, Any], formats: list[str]
) -> list[str]:
    """A warning for each reading option given at another value than its default
    (``options``: as given to ``reader``, ``given`` naming those given) that the rows of none
    of ``formats`` (the files read) use (:func:`calibcli.formats.unused_options`): a
    misspelt or misplaced option would otherwise leave the figures those of the rows read
    without it, without a word. None when what was given is not known."""
    import inspect

    from calibcli.io import unused_options

    named = options.get("given")
    if named is None:
        return []
    defaults = inspect.signature(reader).parameters
    given = {  # in the reader's order, so that the warnings come in the same order each run
        name: value
        for name, value in options.items()
        if name in named and name in defaults and value != defaults[name].default
    }
    return unused_options(given, formats)


def announce_formats(found: Iterable[tuple[str, str | None]]) -> None:
    """One stderr line naming the non-native formats detected among the files read (pairs of
    file and format; files skipped are left out by the caller, a warning names them):
    ``detected formats: lm-eval (12 files), inspect-ai (1 file)``, or for a single file
    ``detected format: openai (chat.json)``. Plain JSONL, the default, is not announced: a CI
    gate's stderr should carry warnings and verdicts, not a line on every run."""
    files: dict[str, str] = {}
    for name, fmt in found:
        if fmt is not None and fmt != "jsonl":
            files.setdefault(name, fmt)
    if not files:
        return
    if len(files) == 1:
        ((name, fmt),) = files.items()
        say(f"detected format: {fmt} ({shown_name(name)})")
        return
    counts = Counter(files.values())  # in the order the formats were first met
    parts = [f"{fmt} ({n:,} file{'' if n == 1 else 's'})" for fmt, n in counts.items()]
    say(f"detected format{'s' if len(counts) > 1 else ''}: {', '.join(parts)}")


def check_calibration_options(fmt: Any, plot: Path | None, labels: list[str] | None) -> None:
    """Refuse what cannot work before any reading, so a typo costs nothing."""
    if labels and plot is None:
        raise usage_error("--label names --plot series; give --plot PATH too")
    if plot is not None:
        from calibcli.render import image_format

        try:
            image_format(plot)
        except ValueError as exc:
            raise usage_error(f"--plot: {exc}") from None


def read_predictions(
    files: list[str],
    reading: Any,
    *,
    bins: int,
    keep_columns: bool,
    plot: Path | None = None,
    labels: list[str] | None = None,
    row_keys: bool = False,
    part: tuple[int, int] | None = None,
    resamples: tuple[int, int] | None = None,
) -> Any:
    """Check the options, then read calibration rows into a summary (``row_keys``: key every
    row for the Poisson bootstrap; ``part``: ``summarize --part k/K``'s share of one file;
    ``resamples``: ``summarize --bootstrap-samples N --seed S``, which summary files given
    must hold)."""
    from calibcli.io import read_calibration

    check_calibration_options(reading.fmt, plot, labels)
    return read(
        read_calibration,
        files,
        reading.fmt,
        reading.quiet,
        **calibration_reading(reading),
        bins=bins,
        keep_columns=keep_columns,
        row_keys=row_keys,
        resamples=resamples,
        part=part,
    )


def calibration_reading(reading: Any) -> dict[str, Any]:
    """The keywords of :func:`calibcli.io.read_calibration` that the reading options give."""
    return {
        "confidence_field": reading.confidence_field,
        "correct_field": reading.correct_field,
        "per_source": reading.by is None,
        "by": reading.by,
        "mc_norm": reading.mc_norm.value,
        "scorer": reading.scorer,
        "inspect_confidence": reading.inspect_confidence.value,
        "workers": reading.workers,
        "max_line_bytes": reading.max_line_bytes,
        "max_document_bytes": reading.max_document_bytes,
        "id_field": reading.id_field,
        "all_runs": reading.all_runs,
        "gold_field": reading.gold_field,
        "choices": reading.choices,
        "given": reading.given,
    }


def poisson_settings(
    data: Any, samples: int | None, seed: int | None, strategy: str, gate_on: Any, limits: Any
) -> tuple[int | None, int | None]:
    """The resamples and seed of --bootstrap-scheme poisson. Rows read from files carry their
    keys and take any; a summary file's replicate sums fix them (another --bootstrap or --seed
    is exit 2), hold its own bins only (sums binned as it was made: other --bins would take
    the intervals of its bins beside the figures of theirs, so they are exit 2), uniform bins
    only and no interval for auroc or smece, so a gate on the upper end of smece's is exit 2."""
    if data.kept is not None and data.kept.keyed:
        return samples, seed
    state = data.bootstrap
    if state is None:
        raise usage_error(
            "--bootstrap-scheme poisson needs the rows' keys, and a summary file given holds no "
            "bootstrap state: summarize with --bootstrap-samples N"
        )
    held = (
        (samples, state.samples, "--bootstrap"),
        (seed, state.seed, "--seed"),
        (data.settings.bins, state.bins, "--bins"),  # a summary's, unless --bins was given
    )
    for given, kept, option in held:
        if given is not None and given != kept:
            raise usage_error(
                f"the summary's bootstrap state holds {option} {kept}, not {given}: drop "
                f"{option}, or summarize again with it"
            )
    if strategy != "uniform":
        raise usage_error(
            f"--strategy {strategy} --ci: a summary's bootstrap state holds uniform bins only"
        )
    if getattr(gate_on, "value", gate_on) == "upper" and "smece" in (limits or {}):
        raise usage_error(
            "--gate-on upper --max-smece needs smece's interval, which a summary's bootstrap "
            "state cannot give (it needs every row); gate on the estimate, or read the files"
        )
    return state.samples, state.seed


def grouping(files: list[str], by: str | None) -> str | None:
    """The field the rows are grouped by: ``--by`` when given, else that of the first summary
    file among ``files`` (folders and patterns looked into, as the readers look), whose
    setting an option not given takes, so that --gate-each on a summary made with --by is
    checked before anything is read."""
    if by is not None:
        return by
    from calibcli.io import is_summary_file, load_summary, named_files

    for path in named_files(list(files)):  # a source standing for nothing stands for itself
        if is_summary_file(path):
            return getattr(load_summary(path).settings, "by", None)
    return None


def require_rows(data: Any, what: str) -> None:
    """Exit 2 when ``what`` (an option or a command) needs every row's confidence and the
    summary files read hold only sums of them (no table of distinct confidences)."""
    if data.kept is None and data.missing is not None:
        raise usage_error(
            f"{what} needs every row's confidence, and a summary file given holds only their "
            f"sums: {data.missing}"
        )


def recalibration_options(
    calibrator: Path | None, method: Any, folds: int | None
) -> tuple[Any, str | None]:
    """The calibrator file (loaded and validated) or the cross-fitting method, checked before
    any input is read."""
    if calibrator is not None and method is not None:
        raise usage_error("--calibrator and --recalibrate both recalibrate; give one")
    if folds is not None and method is None:
        raise usage_error(
            "--folds sets up --recalibrate's cross-fitting; give --recalibrate METHOD"
        )
    if calibrator is None:
        return None, None if method is None else method.value
    from calibcli.io import check_fitted_names
    from calibcli.summaries import load

    try:
        calibrators = load(calibrator)
        check_fitted_names(calibrators)
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    return calibrators, None


def calibrator_reading(reading: Any, calibrators: Any) -> Any:
    """The reading a calibrator file asks for, checked before any input is read: a file fitted
    per --by group maps groups of that field only (another --by field is exit 2; without --by
    every row takes its pooled map), and the confidence field defaults to the one it was
    fitted on."""
    from dataclasses import replace

    if calibrators is None:
        return reading
    check_groups(calibrators, reading.by)
    recorded = calibrators.fitted_on.get("confidence_field")
    if isinstance(recorded, str) and not reading.confidence_given:
        reading = replace(reading, confidence_field=recorded)
    return reading


def check_groups(calibrators: Any, by: str | None) -> None:
    """Exit 2 when a calibrator fitted per --by group would map rows grouped by --by another
    field (:func:`calibcli.io.calibrator_checks.other_groups`)."""
    from calibcli.io import other_groups

    refused = other_groups(calibrators, by)
    if refused is not None:
        raise usage_error(f"{calibrators.path}: {refused}")


def provenance_notes(data: Any, calibrators: Any, confidence_given: bool = True) -> list[str]:
    """What a calibrator file records of the rows it was fitted on, checked against the rows
    read (:func:`calibcli.io.calibrator_notes`, the checks the Python API makes too): the
    maps that would score other numbers are exit 2 (rows grouped by a summary file's other
    --by field, another multiple-choice normalisation, inspect-ai confidence mode or OpenAI
    --choices, a summary file's rows of another confidence field than the calibrator's when
    ``confidence_given`` is False), the rest warnings. A file that records none of these
    (fitted on other formats, or written before they were recorded) is applied as it is."""
    if calibrators is None:
        return []
    from calibcli.io import RowsRead, calibrator_notes

    rows = RowsRead.of_summary(data, confidence_given=confidence_given)
    try:
        return calibrator_notes(calibrators, rows, data.group_names)
    except ValueError as exc:
        raise usage_error(str(exc)) from None


def other_model(calibrators: Any, data: Any, scored: dict[str, Any] | None = None) -> str | None:
    """Why the rows scored are another model's than the rows the calibrator was fitted on
    (:func:`calibcli.io.other_model`; ``scored``: :func:`calibcli.io.read_as` of them), or None:
    every gate on the figures after it then fails closed."""
    from calibcli.io import other_model as why
    from calibcli.io import read_as

    if calibrators is None:
        return None
    return why(calibrators.fitted_on, read_as(data) if scored is None else scored)


def several_models(calibrators: Any, data: Any) -> str | None:
    """Why the map the rows scored take was fitted on several models' rows pooled
    (:func:`calibcli.io.several_models`), or None: every gate on the figures after it then
    fails closed, as after another model's map (:func:`other_model`)."""
    from calibcli.io import several_models as why

    if calibrators is None:
        return None
    return why(calibrators, data.settings.by, data.group_names)


def recalibrate(
    data: Any,
    calibrators: Any,
    method: str | None,
    confidence_given: bool = True,
    **options: Any,
) -> Any:
    """:func:`calibcli.summaries.recalibrate.recalibrated`, a failed fit becoming exit 2.
    For lm-eval input, temperature (a calibrator of it, or --recalibrate temperature) scales the
    choices' loglikelihoods, so the rows are read again with every choice's score.
    ``confidence_given``: whether --confidence-field was given (:func:`provenance_notes`)."""
    from calibcli.summaries import MULTICLASS, recalibrated

    choices = None
    wants_choices = method == "temperature" or (
        calibrators is not None and calibrators.method == MULTICLASS
    )
    notes = provenance_notes(data, calibrators, confidence_given)
    if data.fmt == "lm-eval" and wants_choices:  # the rows as read, in lm-eval format
        choices = read_choices(data)
    try:
        after, settings, more = recalibrated(
            data, calibrators=calibrators, method=method, choices=choices, **options
        )
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    return after, settings, notes + more


def read_choices(summary: Any) -> Any:
    """The rows of a summary's sources again, lm-eval rows with every choice's score, read with
    its settings (the sources it skipped, such as a run folder's results file, stay skipped):
    each source's byte range alone (a ``summarize --part`` piece), and only while its file is
    the one summarized (its content and row count). Bad input, or a file changed since, is
    exit 2."""
    from calibcli.io import InputError
    from calibcli.io import read_choices as read

    read_from = [s for s in summary.sources if s.skipped is None]
    settings = summary.settings
    try:
        return read(
            [s.name for s in read_from],
            mc_norm=settings.mc_norm,
            by=settings.by,
            summarized=read_from,
        )
    except InputError as exc:
        raise usage_error(str(exc)) from None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """The estimators make only small BLAS calls; a multi-threaded BLAS pool would spin on the
    core that a reader worker or a bootstrap process needs."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def load_numpy_without_blas_threads() -> None:
    """Import numpy with OpenBLAS sized to one thread, for a command that makes no BLAS call
    on more than a few numbers: OpenBLAS otherwise starts a thread per CPU as it loads, about
    40 ms of CPU per run. A size the user set is kept, and the environment is left as it was
    (processes this one starts size their own BLAS)."""
    import os

    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


@contextmanager
def worker_errors() -> Iterator[None]:
    """A bootstrap's process pool that cannot start (fork or spawn refused) or loses a worker
    becomes exit 2 with one line, never a traceback (exit 3) or a wait on a pool that will
    never answer."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        yield
    except BrokenProcessPool as exc:
        raise usage_error(f"{exc}; try --workers 1") from None


def absent_count_fields(data: Any, named: dict[str, str]) -> Any:
    """Perplexity rows' data with a warning for each count field named by its option
    (``named``: count -> field; those of their default name say nothing) that is not read: a
    misspelt field, or one of a format whose rows carry their own counts, would leave its
    figures out (or take others) without a word."""
    from dataclasses import replace

    from calibcli.io import COUNTED_FORMATS
    from calibcli.summaries import COUNTS

    named = {count: field for count, field in named.items() if field != count}
    own = sorted({f for f in data.formats.values() if f not in COUNTED_FORMATS})
    said = []
    for count, field in named.items():
        absent = data.n and data.present[COUNTS.index(count)] is False
        unit = count[:-1]
        if own:
            many = len(own) > 1
            formats = f"the {' and '.join(own)} format{'s take' if many else ' takes'}"
            whose = "formats'" if many else "format's"
            after = (
                f" and the figures per {unit} are not given"
                if absent
                else f" (the {count} are the {whose} own)"
            )
            said.append(
                f"--{count}-field {field}: {formats} no count fields, so it is not read{after}"
            )
        elif absent:
            said.append(
                f"--{count}-field {field}: no row holds it, so the figures per {unit} are not given"
            )
    return replace(data, warnings=(*data.warnings, *said)) if said else data
