"""Summary files (``calibcli summarize`` / ``merge`` output) as inputs beside plain files.

A summary file is recognised by its first bytes, whatever its name. Its settings govern how
its rows were read: a command's reading options not given take the file's, one given at the
file's value is read as it is, and one given at another value is refused (the rows cannot be
read again), whether or not that value is the option's default. ``--bins`` may differ
when the file holds its table of distinct confidences (the bins are rebuilt from it, exactly);
not otherwise. Plain files read in the same run are read with the file's settings and merged
with it; a source counted both ways is refused, as merging refuses it, and so are the same rows
reached by another route (:mod:`calibcli.summaries.copies`) unless ``--all-runs`` pools them.
A summary's sources are lm-eval runs as files are: of a task's re-runs in one folder only the
newest is counted (:func:`older_inputs`), and a file of no rows among them is said
(:func:`no_rows`), as reading the files says both."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection
from dataclasses import fields, replace
from typing import Any

from calibcli.errors import InputError

SETTING_OPTIONS = {
    "bins": "--bins",
    "confidence_field": "--confidence-field",
    "correct_field": "--correct-field",
    "fmt": "--format",
    "mc_norm": "--mc-norm",
    "by": "--by",
    "scorer": "--scorer",
    "inspect_confidence": "--inspect-confidence",
    "nll_field": "--nll-field",
    "tokens_field": "--tokens-field",
    "bytes_field": "--bytes-field",
    "words_field": "--words-field",
    "logprobs_field": "--logprobs-field",
    "choices": "--choices",
    "gold_field": "--gold-field",
    "id_field": "--id-field",
}
"""The option that sets each summary setting, for messages."""


class PartsError(InputError):
    """Summary files that cannot be counted together (two parts holding the same bytes, parts
    of other kinds or settings). The message names the files itself, both parts or the file
    read and the part counting it too, so it is shown as it is, without a file in front, as
    ``merge`` shows it; ``path`` is the part it is about, where an annotation points."""

    def __str__(self) -> str:
        return self.detail

    def __reduce__(self):  # picklable across worker processes, as its base is
        return (PartsError, (self.path, self.line, self.detail))


def is_summary_file(path: str) -> bool:
    """True when ``path`` is a regular file that starts like a summary file, compressed (gzip,
    zstd, xz, bzip2) or not: only its first bytes are decompressed to tell."""
    if path == "-":
        return False
    from calibcli.io.compression import MAGIC_BYTES, codec_of, decompressed, read_errors
    from calibcli.summaries import MAGIC

    try:
        with open(path, "rb") as f:
            if not os.path.isfile(path):
                return False
            head = f.read(max(len(MAGIC), MAGIC_BYTES))
            codec = codec_of(head)
            if codec is None:
                return head[: len(MAGIC)] == MAGIC
            f.seek(0)
            return decompressed(f, codec).read(len(MAGIC)) == MAGIC
    except (OSError, EOFError, *read_errors()):
        return False  # a damaged compressed input is refused by the reader that reads it


def load(path: str) -> Any:
    """A summary file's summary; InputError naming the file when it is not one this version
    reads."""
    from calibcli.io.compression import AppendedBytes, open_path, read_errors
    from calibcli.summaries import SummaryError, from_bytes

    try:
        with open_path(path) as f:  # decompressed when it is compressed
            data = f.read()
        summary = from_bytes(data)
        if not summary.sources:  # what a summary read, its checks of pooling read
            raise SummaryError("a damaged calibcli summary (it names no file it read)")
        return summary
    except SummaryError as e:
        raise InputError(path, None, str(e)) from None
    except AppendedBytes as e:
        raise InputError(path, None, e.detail) from None
    except OSError as e:
        raise InputError(path, None, f"cannot read: {e.strerror or e}") from None
    except (EOFError, *read_errors()) as e:
        raise InputError(path, None, f"a damaged compressed summary ({e})") from None


def summary_sources(path: str) -> list[str] | None:
    """The names of the files a summary file read rows of, each once, as they were given to
    it; None when ``path`` is not a summary file."""
    if not is_summary_file(path):
        return None
    return list(dict.fromkeys(s.name for s in load(path).sources if s.skipped is None))


def adopt_settings(
    settings: Any, kind: str, parts: list[tuple[str, Any]], given: Collection[str]
) -> tuple[Any, int | None]:
    """The settings to read with beside these summary files: theirs, where ``given`` does not
    name the setting (its option was not given); InputError where a given option asks for
    another value. Also the bins asked for when they differ from the files' (the caller
    rebuilds them from the files' tables), else None."""
    from calibcli.summaries import agree

    label, first = parts[0]
    if first.kind != kind:
        what = (
            "calibrate, reliability, threshold or fit"
            if first.kind == "calibration"
            else ("perplexity")
        )
        raise InputError(label, None, f"a {first.kind} summary; measure it with {what}")
    adopted: dict[str, Any] = {}
    rebin = None
    for f in fields(settings):
        mine, theirs = getattr(settings, f.name), getattr(first.settings, f.name)
        if mine == theirs or (f.name in given and agree(f.name, mine, theirs)):
            continue
        if f.name not in given:
            adopted[f.name] = theirs
            continue
        if f.name == "bins":
            rebin, adopted["bins"] = mine, theirs
            continue
        option = SETTING_OPTIONS.get(f.name, f.name)
        was = f"without {option}" if theirs is None else f"with {option} {_shown(theirs)}"
        raise InputError(
            label,
            None,
            f"its rows were read {was}, not {option} {_shown(mine)}: they cannot be read again "
            f"from a summary (drop {option}, or summarize the inputs again)",
        )
    _ids_known(settings, parts, given)
    return replace(settings, **adopted), rebin


def _ids_known(settings: Any, parts: list[tuple[str, Any]], given: Collection[str]) -> None:
    """InputError when ``--id-field`` is given beside a summary file that holds rows without
    ids (all of them, or those of a part merged in without ids): they cannot be checked for
    repeats (among its parts, or against the files read beside it), so the check the option
    asks for would pass them unchecked. A summary written with the ids of all its rows
    (whatever settings it records) is read."""
    name = getattr(settings, "id_field", None)
    if "id_field" not in given or name is None:
        return
    for label, part in parts:
        ids = getattr(part, "row_ids", None)
        if part.n and (ids is None or ids.hashes.shape[0] < part.n):  # some rows without
            raise InputError(
                label,
                None,
                f"its rows were read without --id-field, so their ids are not known: --id-field "
                f"{_shown(name)} cannot check them for repeats (summarize the inputs with "
                f"--id-field {_shown(name)}, or drop it)",
            )


def _shown(value: Any) -> str:
    return value if isinstance(value, str) and value.replace("-", "").isalnum() else repr(value)


def combine(read_summary: Any, parts: list[tuple[str, Any]], plan: Any, rebin: int | None) -> Any:
    """The summary of the plain files read (``read_summary``, None when there were none) and
    of the summary files, as the command's reading ``plan`` asks: kept rows, when it keeps
    them, from the files' tables of distinct confidences (when one lacks its table the rows
    are not kept and ``missing`` says why); bins rebuilt for ``rebin`` bins when given. The
    Poisson bootstrap state is the one merging the files with a summary of the plain files
    gives; ``plan.resamples`` asks for one, which every summary file must then hold."""
    from calibcli.io.older_parts import older_inputs, read_runs
    from calibcli.summaries import (
        SummaryMismatch,
        check_copies,
        check_disjoint,
        check_read_copies,
        check_source_copies,
        merge_parts,
        to_part,
    )

    said: list[str] = []
    if not plan.all_runs:  # a summary of older runs only is left out, as an older file is
        inputs = [*([] if read_summary is None else [(None, read_summary)]), *parts]
        left, said = older_inputs([(label, read_runs(s)) for label, s in inputs])
        if read_summary is not None and 0 in left:  # what the files read say of their runs
            said = [*(w for w in read_summary.warnings if w.startswith(RERUNS)), *said]
            read_summary = None
        parts = [(n, s) for i, (n, s) in enumerate(inputs) if n is not None and i not in left]
    if not parts:  # every summary given holds older runs only: the files read are the rows
        if rebin is not None and read_summary.kind == "calibration":
            read_summary = rebinned(read_summary, rebin, keep_rows=plan.keep_rows)
        return _said(read_summary, said)
    labels = [label for label, _ in parts]
    try:
        merged = merge_parts([p for _, p in parts], labels)
        # the same rows reached by other routes (compressed, stdin, reordered) are copies too,
        # unless --all-runs pools them on purpose
        if not plan.all_runs:
            remedy = "give each summary once (pass --all-runs to pool them on purpose)"
            check_copies([p for _, p in parts], labels, remedy)
        if read_summary is not None:
            # each part on its own, so that a refusal names the one holding the file read here
            check_disjoint([read_summary, *(p for _, p in parts)], [None, *labels])
            if not plan.all_runs:
                check_read_copies(read_summary, [p for _, p in parts], labels, merged)
        if not plan.all_runs:  # one source's rows inside another part, by another route
            read = [] if read_summary is None else [(None, read_summary)]
            remedy = "give each input once (pass --all-runs to pool them on purpose)"
            check_source_copies([*parts, *read], remedy)
    except SummaryMismatch as e:
        raise PartsError(e.part or labels[0], None, str(e)) from None
    if plan.resamples is not None and merged.kind == "calibration":
        _check_resamples(parts, plan.resamples, rebin)
    if merged.kind == "perplexity":
        if read_summary is None:
            return _said(merged, said)
        from calibcli.summaries import merge_perplexity

        return _said(_merge(merge_perplexity, [read_summary, merged], labels), said)
    if read_summary is not None and merged.bootstrap is not None:
        read_summary = _with_bootstrap(read_summary, merged.bootstrap)
    if rebin is not None and merged.distinct is None:
        raise InputError(
            labels[0],
            None,
            f"its tables have {merged.settings.bins} bins and it holds no table of distinct "
            f"confidences to rebuild others from ({merged.missing}): use --bins "
            f"{merged.settings.bins}",
        )
    if plan.keep_rows or rebin is not None:
        if merged.distinct is not None:
            from calibcli.summaries import rows_of

            merged = replace(merged, kept=rows_of(merged), _views={})
        elif read_summary is not None and read_summary.kept is not None:
            read_summary, _ = to_part(read_summary, "never")
            read_summary = replace(read_summary, missing=None)
    from calibcli.summaries import merge_calibration

    inputs = [merged] if read_summary is None else [read_summary, merged]
    out = _merge(merge_calibration, inputs, labels)
    if read_summary is not None and read_summary.bootstrap is not None:
        # the state merging the parts with the plain files' part gives: the same sums added
        # in the same order, so the same bits
        from calibcli.summaries import merged_bootstrap

        state = merged_bootstrap([read_summary, *(p for _, p in parts)], out.group_names)
        out = replace(out, bootstrap=state, _views={})
    if out.kept is not None or not plan.keep_rows:  # nothing reads them from here on
        out = replace(out, distinct=None, moments=None, missing=None, _views={})
    if rebin is not None:
        out = rebinned(out, rebin, keep_rows=plan.keep_rows)
    return _said(out, said)


RERUNS = "re-runs of "
"""How the warning about re-runs left out opens (:func:`calibcli.io.runs.rerun_warning`)."""


def _said(summary: Any, said: list[str]) -> Any:
    """The summary saying ``said`` first, and :func:`no_rows` of its sources last."""
    warnings = dict.fromkeys([*said, *summary.warnings, *no_rows(summary.sources)])
    return replace(summary, warnings=tuple(warnings))


def no_rows(sources: Any) -> list[str]:
    """What reading files says of each file of no rows beside others (a shard whose job wrote
    nothing), said of a summary's ``sources``: the figures are the other files'."""
    from calibcli.io import _files_read, _no_rows

    return _no_rows(_files_read(sources))


def _check_resamples(
    parts: list[tuple[str, Any]], resamples: tuple[int, int], rebin: int | None
) -> None:
    """InputError naming a summary file whose bootstrap state is not the one asked for (its
    ``resamples``, in the bins read): one without cannot get it, its rows are not there to
    resample; one with other resamples, seed or bins cannot be merged with it."""
    from calibcli.summaries import bootstrap_difference

    samples, seed = resamples
    for label, part in parts:
        state = part.bootstrap
        if state is None:
            raise InputError(
                label,
                None,
                f"it holds no bootstrap state and its rows are not there to resample: "
                f"{samples:,} resamples cannot be drawn from it (summarize its inputs with "
                f"--bootstrap-samples {samples}, or leave --bootstrap-samples out)",
            )
        bins = part.settings.bins if rebin is None else rebin
        differs = bootstrap_difference(state, bins, samples, seed)
        if differs is not None:
            raise InputError(
                label,
                None,
                f"cannot merge its bootstrap state with the {samples:,} resamples of seed "
                f"{seed} in {bins} bins asked for: {differs}",
            )


def _with_bootstrap(summary: Any, like: Any) -> Any:
    """The summary of files read beside summary files with replicate sums: with its own,
    from its rows' keys, for the same resamples (none when its rows were read without keys,
    and then the merge holds none)."""
    from calibcli.summaries import bootstrap_state

    state = bootstrap_state(summary, like.bins, like.samples, like.seed)
    return summary if state is None else replace(summary, bootstrap=state, _views={})


def _merge(merge: Any, summaries: list[Any], labels: list[str]) -> Any:
    from calibcli.summaries import SummaryMismatch

    try:
        return merge(summaries)
    except SummaryMismatch as e:
        raise InputError(labels[0], None, str(e)) from None


def rebinned(summary: Any, bins: int, *, keep_rows: bool) -> Any:
    """The summary with its bin tables rebuilt for ``bins`` from its kept rows (the sources'
    own tables, which cannot be rebuilt, are dropped: no per-file figures)."""
    import numpy as np

    from calibcli.summaries import BinTable

    rows = summary.kept
    groups = 1 if summary.group_names is None else len(summary.group_names)
    table = BinTable(bins, groups)
    for values, flag, ids in (
        (rows.right, True, rows.right_groups),
        (rows.wrong, False, rows.wrong_groups),
    ):
        table.add(values, np.full(values.shape[0], flag), ids, groups)
    sources = tuple(replace(s, table=None) for s in summary.sources)
    settings = replace(summary.settings, bins=bins)
    return replace(
        summary,
        settings=settings,
        table=table,
        sources=sources,
        kept=rows if keep_rows else None,
        _views={},
    )


def input_kind(files: list[str], *, fmt: str = "auto", **fields: str | None) -> str:
    """The kind of rows (``calibration`` or ``perplexity``) the inputs hold: a summary file's,
    else the first row's of the first file that holds one, in any format the commands read
    (JSON Lines, a JSON document, a CSV, TSV, Parquet or Arrow table, an inspect-ai log;
    plain or compressed; folders and patterns stand for their files, and a blank file, such as
    a shard whose job wrote nothing, decides nothing): :func:`row_kind`. ``calibration`` when
    that cannot be told (stdin, unreadable files). ``fields`` are the field options
    (``confidence_field`` ... ``logprobs_field``, ``gold_field``); others are ignored."""
    from calibcli import formats
    from calibcli.io.folders import expand

    with contextlib.suppress(InputError):  # the reading says what is wrong with them
        files = expand(list(files))
    for path in files:
        if is_summary_file(path):
            return load(path).kind
    if fmt != "auto" and len(formats.FORMAT_PROVIDES[fmt]) == 1:
        return formats.FORMAT_PROVIDES[fmt][0]
    row = next((r for r in map(_first_row, files[:FIRST_FILES]) if r is not None), None)
    return row_kind(row, fmt=fmt, **fields)


DETECTED_BY = ("confidence_field", "correct_field", "nll_field", "tokens_field", "logprobs_field")
"""The field options format detection reads."""


def row_kind(row: Any, *, fmt: str = "auto", **fields: str | None) -> str:
    """The kind of a file's first row, as the commands would read it: that of its format
    (``fmt``, or detected) when the format holds one kind; for a format holding both, the
    kind its row reads as: an lm-eval row by its task's kind; an inspect-ai sample scoring
    its prompt (prompt logprobs, no binary score) as perplexity; an OpenAI response as
    calibration only given ``gold_field`` (the answer's field, which calibration rows need);
    a HELM entry without the ``max_prob`` statistic as perplexity; a native row holding the
    NLL field (or a logprobs list) as perplexity. ``calibration`` when none tells."""
    from calibcli import formats

    if not isinstance(row, dict):
        return "calibration"
    detect = {k: v for k, v in fields.items() if k in DETECTED_BY and isinstance(v, str)}
    try:
        found = fmt if fmt != "auto" else formats.detect_row_format(row, **detect)
    except ValueError:
        return "calibration"
    provides = formats.FORMAT_PROVIDES[found]
    if len(provides) == 1:
        return provides[0]
    if found == "lm-eval":
        try:
            rolling = formats.lm_eval_row_kind(row) == "loglikelihood_rolling"
        except ValueError:
            return "calibration"
        return "perplexity" if rolling else "calibration"
    if found == "inspect-ai":
        return "perplexity" if _scores_prompt(row) else "calibration"
    if found == "openai":
        return "calibration" if fields.get("gold_field") is not None else "perplexity"
    if found == "helm":
        return "perplexity" if _helm_perplexity(row) else "calibration"
    for name in (detect.get("nll_field", "nll"), detect.get("logprobs_field", "logprobs")):
        try:
            formats.lookup(row, name)
        except ValueError:
            continue
        return "perplexity"
    return "calibration"


def _scores_prompt(sample: dict) -> bool:
    """Whether an inspect-ai sample reads as a perplexity row (its prompt's logprobs) and
    holds no binary score, the one outcome a calibration row is read from: a sample of a
    perplexity eval (its scorer gives a number)."""
    from calibcli import formats

    try:
        formats.inspect_prompt_row(sample)
    except (ValueError, RecursionError):
        return False
    scores = sample.get("scores")
    scores = scores if isinstance(scores, dict) else {}
    values = [s.get("value") for s in scores.values() if isinstance(s, dict)]
    # a scorer's value, or each of its several values
    flat = [x for v in values for x in (v.values() if isinstance(v, dict) else [v])]
    return not any(formats.is_outcome(x) for x in flat)


def _helm_perplexity(entry: dict) -> bool:
    """Whether a HELM entry reads as a perplexity row and not as a calibration row (a
    language-modelling run's: a logprob and token counts, no ``max_prob``)."""
    from calibcli import formats

    helm = formats.BY_NAME["helm"]
    for kind, read in (("calibration", helm.calibration), ("perplexity", helm.perplexity)):
        try:
            if read is not None and read(entry):
                return kind == "perplexity"
        except (ValueError, RecursionError):
            continue
    return False


FIRST_FILES = 64
"""Files looked at, in order, for a first row that tells the kind."""


def _first_row(path: str) -> Any:
    """The first row of a file as the commands read it: the first non-blank line of JSON
    Lines (plain or compressed), parsed, or a document's or table's first row
    (:func:`~calibcli.io.documents.iter_document`); None when it holds none or cannot be read
    (the reading then says why)."""
    from calibcli.io.compression import open_path, read_errors
    from calibcli.io.reader import whole_document_kind
    from calibcli.io.strict_json import loads_line

    if path == "-":
        return None
    kind = whole_document_kind(path)
    if kind is not None:
        return _first_document_row(path, kind)
    try:
        with open_path(path) as f:
            for _ in range(1000):
                line = f.readline(1 << 24)
                if not line:
                    return None
                if line.strip():
                    return loads_line(line)
    except (*read_errors(), ValueError, RecursionError):
        return None
    return None


def _first_document_row(path: str, kind: str) -> Any:
    """The first row of a whole document or table (an inspect-ai log's first sample, a JSON
    array's first element, a table's first record); None when there is none or it cannot be
    read."""
    from calibcli.io.compression import read_errors
    from calibcli.io.documents import iter_document

    rows = iter_document(path, kind=kind)
    try:
        _, row = next(rows)
    except (StopIteration, InputError, ValueError, RecursionError, *read_errors()):
        return None
    finally:
        rows.close()
    return row
