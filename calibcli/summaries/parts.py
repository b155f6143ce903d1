"""Parts: summaries written to files (``calibcli summarize``), merged (``calibcli merge``) and
read back as inputs.

A calibration part keeps no rows. It keeps the exact bin tables, the NLL and smooth-ECE sums
(:mod:`calibcli.summaries.moments`) and, unless left out, the table of distinct confidences
(:mod:`calibcli.summaries.distinct`), which gives the rows back up to their order: every
figure that needs rows (AUROC, AURC, thresholds, equal-mass bins, fits, the bootstrap) is then
the one a single pass gives. Without it those figures cannot be measured, and ``missing`` says
why.

Merging refuses parts of other kinds or settings and a source (by content) whose byte ranges
two parts both counted. Parts are merged in a canonical order — by their first source's name
and byte offset — so the same parts give the same bytes whatever order they were named in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from calibcli.metrics import phase
from calibcli.summaries.ids import SummaryMismatch, check_id_schemes

TABLE_MODES = ("auto", "always", "never")
"""``summarize --table``: keep the distinct-value table up to the cap, always, or never."""


def _table_cap() -> int:
    from calibcli.summaries.distinct import MAX_DISTINCT

    return MAX_DISTINCT


def to_part(
    summary: Any, table: str = "auto", bootstrap: tuple[int, int] | None = None
) -> tuple[Any, list[str]]:
    """The part of a summary read with its rows kept (a perplexity summary is a part as it
    is), and the warnings making it raised. The Poisson bootstrap's replicate sums of summary
    files read (their merged state) are kept, as merging keeps them; ``bootstrap=(samples,
    seed)`` adds them from the rows' keys when there is no such state (the rows must have been
    read with their keys, and summary files read with that state: see ``resamples`` of
    :func:`calibcli.io.read_calibration`)."""
    if summary.kind != "calibration":
        return summary, []
    from calibcli.summaries.distinct import DistinctTable
    from calibcli.summaries.moments import RowMoments

    kept = summary.kept
    assert kept is not None, "a part is made from a summary with its rows kept"
    groups = 1 if summary.group_names is None else len(summary.group_names)
    per_group = kept.by_group(groups) if summary.group_names is not None else [kept.columns()]
    moments = RowMoments.of_columns(per_group)
    warnings: list[str] = []
    distinct = missing = None
    if table == "never":
        missing = "it was summarized with --table never"
    else:
        distinct = DistinctTable.from_rows(
            kept.right, kept.wrong, kept.right_groups, kept.wrong_groups, groups
        )
        cap = _table_cap()
        if table == "auto" and distinct.distinct > cap:
            missing = (
                f"its {distinct.distinct:,} distinct confidences exceed the {cap:,} that "
                "--table auto keeps (summarize with --table always to keep them)"
            )
            warnings.append(f"the table of distinct confidences was dropped: {missing}")
            distinct = None
    state = summary.bootstrap
    if state is not None and state.bins != summary.settings.bins:
        # summary files rebinned (--bins): their sums are of other bins, which nothing reads
        warnings.append(
            f"the bootstrap state was dropped: its sums are of {state.bins} bins, not "
            f"{summary.settings.bins} (summarize the inputs again with --bins "
            f"{summary.settings.bins} to keep one)"
        )
        state = None
    if bootstrap is not None and state is None:
        samples, seed = bootstrap
        state = bootstrap_state(summary, summary.settings.bins, samples, seed)
        if state is None:
            raise ValueError("the Poisson bootstrap's sums need the rows read with their keys")
    elif bootstrap is not None and (state.samples, state.seed) != tuple(bootstrap):
        raise ValueError(
            f"a bootstrap state of {state.samples} resamples (seed {state.seed}) is not the "
            f"{bootstrap[0]} (seed {bootstrap[1]}) asked for"
        )
    part = replace(
        summary,
        kept=None,
        distinct=distinct,
        moments=moments,
        missing=missing,
        bootstrap=state,
        warnings=tuple(dict.fromkeys([*summary.warnings, *warnings])),
        _views={},
    )
    return part, warnings


def bootstrap_state(summary: Any, bins: int, samples: int, seed: int) -> Any:
    """The Poisson bootstrap's replicate sums of a summary's kept rows, from their keys (None
    when the rows were read without keys)."""
    kept = summary.kept
    if kept is None or not kept.keyed:
        return None
    from calibcli.metrics import PoissonState

    groups = 1 if summary.group_names is None else len(summary.group_names)
    return PoissonState.from_rows(
        kept.right,
        kept.wrong,
        kept.right_keys,
        kept.wrong_keys,
        bins=bins,
        samples=samples,
        seed=seed,
        right_groups=kept.right_groups,
        wrong_groups=kept.wrong_groups,
        groups=groups,
    )


def merge_row_state(summaries: list[Any], index: Any, grouped: bool) -> tuple[Any, Any, Any, Any]:
    """(distinct table, moments, missing, bootstrap state) of merged calibration summaries: a
    table, moments or bootstrap state only when every summary has them; ``missing`` the first
    reason one lacks its table."""
    distinct = moments = None
    groups = len(index) if grouped else 1
    maps = [index.remap(s.group_names) if grouped else np.zeros(1, np.intp) for s in summaries]
    if all(s.distinct is not None for s in summaries):
        from calibcli.summaries.distinct import DistinctTable

        # one sort of every part's values: the bar names the work while it runs
        with phase("merging distinct confidences", len(summaries)):
            distinct = DistinctTable.combine([s.distinct for s in summaries], maps, groups)
    if all(s.moments is not None for s in summaries):
        from calibcli.summaries.moments import RowMoments

        moments = RowMoments.empty(groups)
        with phase("merging NLL and smooth-ECE sums", len(summaries)) as advance:
            for done, (s, m) in enumerate(zip(summaries, maps, strict=True), 1):
                moments.add(s.moments, m)
                advance(done)
    missing = next((s.missing for s in summaries if s.missing is not None), None)
    if missing is None and any(s.distinct is not None for s in summaries) and distinct is None:
        missing = "a part it was merged with holds no table of distinct confidences"
    bootstrap = _merged_bootstrap(summaries, maps, groups)
    return distinct, moments, missing, bootstrap


def merged_bootstrap(summaries: list[Any], group_names: tuple[str, ...] | None) -> Any:
    """The Poisson bootstrap state of summaries (each holding one) merged as :func:`merge_parts`
    merges parts, in their canonical order, their groups numbered as ``group_names`` (the merged
    summary's; None: no groups) number them: the same sums, added in the same order."""
    summaries = sorted(summaries, key=canonical_key)
    if group_names is None:
        return _merged_bootstrap(summaries, [np.zeros(1, np.intp)] * len(summaries), 1)
    from calibcli.summaries.rows import GroupIndex

    index = GroupIndex(group_names)
    maps = [index.remap(s.group_names) for s in summaries]
    return _merged_bootstrap(summaries, maps, len(index))


def bootstrap_difference(state: Any, bins: int, samples: int, seed: int) -> str | None:
    """Why a bootstrap state cannot be merged with the one of ``samples`` resamples of
    ``seed`` in ``bins`` bins, in the words merging two such parts uses; None when it can."""
    if (state.bins, state.samples, state.seed) == (bins, samples, seed):
        return None
    from calibcli.metrics import PoissonState

    try:  # raises, before adding any sum, when they differ
        state.merged(PoissonState.empty(bins=bins, samples=samples, seed=seed, groups=1))
    except ValueError as e:
        return str(e)
    return None


def dropped_bootstrap(parts: list[Any], labels: list[str]) -> str | None:
    """What a merge of calibration ``parts`` (named by ``labels``) says when some hold a
    Poisson bootstrap state and others of rows none: the merged summary holds none (it is only
    kept when every part of rows holds one), which a reader would otherwise learn only when
    ``--bootstrap-scheme poisson`` refuses the file; None otherwise."""
    named = list(zip(parts, labels, strict=True))
    held = [(label, p.bootstrap) for p, label in named if getattr(p, "bootstrap", None)]
    # a part of no rows adds no sums: it is not said to drop them
    without = [label for p, label in named if getattr(p, "bootstrap", None) is None and p.n]
    if not held or not without:
        return None
    label, state = held[0]
    more = f" and {len(without) - 1} more" if len(without) > 1 else ""
    return (
        f"{label} holds {state.samples:,} Poisson bootstrap resamples and {without[0]}{more} "
        "none: the merged summary holds none, so --bootstrap-scheme poisson cannot read it "
        f"(summarize every part with --bootstrap-samples {state.samples} --seed {state.seed})"
    )


def _merged_bootstrap(summaries: list[Any], maps: list[np.ndarray], groups: int) -> Any:
    """The summaries' bootstrap states added in order, group g of the i-th at ``maps[i][g]``;
    None unless every summary holds one, save a summary of no rows (it adds no sums)."""
    held = [(s, m) for s, m in zip(summaries, maps, strict=True) if s.bootstrap is not None or s.n]
    if not held or not all(s.bootstrap is not None for s, _ in held):
        return None
    summaries, maps = [s for s, _ in held], [m for _, m in held]
    from calibcli.metrics import PoissonState

    first = summaries[0].bootstrap
    bootstrap = PoissonState.empty(
        bins=first.bins, samples=first.samples, seed=first.seed, groups=groups
    )
    identity = np.arange(groups)
    with phase("merging bootstrap sums", len(summaries)) as advance:
        for done, (s, m) in enumerate(zip(summaries, maps, strict=True), 1):
            try:
                bootstrap = bootstrap.merged(s.bootstrap, identity, m, groups)
            except ValueError as e:
                raise SummaryMismatch(f"cannot merge their bootstrap states: {e}") from None
            advance(done)
    return bootstrap


# --------------------------------------------------------------------------- merging parts


def load_parts(labels: list[str], load: Callable[[str], Any]) -> list[Any]:
    """``load(label)`` of each part, in order, reported as the phase "reading parts" (a
    thousand parts take seconds to read)."""
    parts = []
    with phase("reading parts", len(labels)) as advance:
        for label in labels:
            parts.append(load(label))
            advance(len(parts))
    return parts


def canonical_key(summary: Any) -> tuple:
    """Where a part sorts among others: its first source's name and byte offset."""
    first = summary.sources[0] if summary.sources else None
    if first is None:
        return ("", 0, "")
    return (first.name, first.start, first.content)


def _overlap(a: Any, b: Any) -> tuple[int, int | None] | None:
    """The bytes (start, stop; stop None: to the end) two sources both counted, None when they
    hold other content or other ranges of it."""
    if not a.content or a.content != b.content:
        return None
    start = max(a.start, b.start)
    stops = [s.stop for s in (a, b) if s.stop is not None]
    stop = min(stops) if stops else None
    return (start, stop) if stop is None or start < stop else None


def _shared_bytes(start: int, stop: int | None) -> str:
    """The shared bytes as a message names them: nothing when they are the whole file."""
    if stop is None:
        return "" if start == 0 else f"bytes {start:,} to the end"
    return f"bytes {start:,}-{stop:,}"


def _overlap_message(first: Any, first_label: str | None, then: Any, label: str | None) -> str:
    """What :func:`check_disjoint` says about ``then`` (of the part ``label``) counting bytes
    ``first`` (of the part named before it) counted too; a label None is the files read here."""
    span = _shared_bytes(*_overlap(first, then))
    if None in (first_label, label):
        read, held_label = (first, label) if first_label is None else (then, first_label)
        counted = "its rows are" if not span else f"its {span} are"
        return (
            f"{read.display} is read here and {counted} counted in {held_label} too: give the "
            "summary or the file, not both"
        )
    named = "" if then.display == first.display else f"as {then.display} in {label}: "
    return (
        f"{first_label} and {label} both count {span + ' of ' if span else ''}{first.display} "
        f"({named}the same content): a part merged twice, or one input summarized twice; "
        "merge each part once"
    )


def check_disjoint(parts: list[Any], labels: list[str | None]) -> None:
    """SummaryMismatch when two parts counted the same bytes of one source (by content), naming
    both parts, the source as the first of them names it, and the bytes both counted. A label
    None stands for files read in this run (the message names the file read instead).

    Only sources of different parts are compared: the sources inside one part were judged when
    it was made (the same content twice is a warning then, and pooled with --all-runs)."""
    seen: dict[str, list[tuple[Any, str | None]]] = {}
    for part, label in zip(parts, labels, strict=True):
        counted = [s for s in part.sources if s.skipped is None and s.rows]
        for s in counted:
            for other, other_label in seen.get(s.content, ()):
                if _overlap(other, s) is not None:
                    blamed = label if label is not None else other_label
                    raise SummaryMismatch(
                        _overlap_message(other, other_label, s, label), part=blamed
                    )
        for s in counted:
            seen.setdefault(s.content, []).append((s, label))


def merge_parts(parts: list[Any], labels: list[str]) -> Any:
    """The merge of parts (``labels``: how messages name them), in canonical order;
    SummaryMismatch, naming both parts, for parts that cannot be merged."""
    first, first_label = parts[0], labels[0]
    for part, label in zip(parts[1:], labels[1:], strict=True):
        if part.kind != first.kind:
            raise SummaryMismatch(
                f"{label} is a {part.kind} summary and {first_label} a {first.kind} one"
            )
        differences = first.settings.differences(part.settings)
        if differences:
            raise SummaryMismatch(
                f"{first_label} and {label} were summarized with other settings: "
                + "; ".join(differences)
            )
    check_disjoint(parts, labels)
    counted = [(part, label) for part, label in zip(parts, labels, strict=True) if _counted(part)]
    # a summary whose inspect-ai ids carry no task, beside others holding such ids, named
    check_id_schemes([p for p, _ in counted], [label for _, label in counted])
    for part, label in counted if len(counted) > 1 else ():
        if part.row_ids is not None and part.row_ids.batched:
            # its ids were hashed with the ids read beside them: equal ids in two parts may
            # hash apart, so a question or row the parts share would go unseen
            raise SummaryMismatch(
                f"{label} was written by an earlier calibcli, whose hash of a row's id depended "
                "on the ids read with it, so its ids cannot be matched with the other parts'; "
                "summarize its files again",
                part=label,
            )
        if part.settings.id_field is not None and part.row_ids is None:
            # a summary of identified rows keeps their ids, or with --all-runs their questions'
            # keys: without either it pooled re-runs before summaries kept those keys
            raise SummaryMismatch(
                f"{label} pools rows identified by --id-field {part.settings.id_field} but keeps "
                "no keys of their questions (an earlier calibcli wrote it with --all-runs), so "
                "the questions it shares with the other parts cannot be counted once; summarize "
                "its files again",
                part=label,
            )
    order = sorted(range(len(parts)), key=lambda i: canonical_key(parts[i]))
    ordered = [parts[i] for i in order]
    try:
        if first.kind == "calibration":
            from calibcli.summaries.calibration import merge_calibration

            return merge_calibration(ordered)
        from calibcli.summaries.perplexity import merge_perplexity

        return merge_perplexity(ordered)
    except SummaryMismatch as e:
        raise SummaryMismatch(f"{', '.join(labels)}: {e}") from None


def _counted(part: Any) -> bool:
    """Whether a part holds rows (calibration rows, or scored perplexity sequences)."""
    return bool(getattr(part, "n", 0) or getattr(part, "sequences", 0))


# --------------------------------------------------------------------------- parts as inputs


def rows_of(part: Any) -> Any:
    """The rows a calibration part's table gives back (sorted by group and value), as
    :class:`~calibcli.summaries.rows.RowColumns`."""
    from calibcli.summaries.rows import RowColumns

    table = part.distinct
    cols = table.columns()
    if part.group_names is None:
        return RowColumns(cols.conf_correct, cols.conf_wrong)
    right_ids, wrong_ids = table.group_ids()
    return RowColumns(
        cols.conf_correct, cols.conf_wrong, right_ids.astype(np.intp), wrong_ids.astype(np.intp)
    )
