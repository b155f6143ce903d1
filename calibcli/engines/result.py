"""The summary an engine run ends with, on the driver: its report and its part file.

:meth:`EngineSummary.report` is the dict ``calibcli calibrate --json`` (or ``calibcli
perplexity --json``) prints for the same rows: the part is measured exactly as the CLI measures
a summary file given as an input (its rows rebuilt from the table of distinct confidences when
it holds one; without it, the figures that need every row are null with the reason).
:meth:`EngineSummary.write` writes the part, which ``calibcli calibrate``, ``merge`` and the
other commands read like the output of ``calibcli summarize``.

The report's log loss and smooth ECE take logs and exponentials of every row, whose last bits
depend on how numpy loaded: ``import calibcli`` before numpy leaves numpy's AVX-512 exp and log
loops (and OpenBLAS's AVX-512 kernels) out, as the command line does, and the report is then the
command's to the bit. A driver that loaded numpy first (pandas, Dask's DataFrames and a Spark
session all do) is warned, as the Python functions warn, that those figures may differ in the
last digit.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import Any

from calibcli.engines.memory import held_memory
from calibcli.errors import InputError
from calibcli.reports import flag, one_of, option, usage, whole


class EngineSummary:
    """One summary of every row an engine read (``summary``: a
    :class:`~calibcli.summaries.CalibrationSummary` or
    :class:`~calibcli.summaries.PerplexitySummary` part, without kept rows)."""

    def __init__(self, summary: Any) -> None:
        self.summary = summary

    @property
    def kind(self) -> str:
        return self.summary.kind

    @property
    def n(self) -> int:
        """Rows summarized."""
        return self.summary.n

    def __repr__(self) -> str:
        return f"<EngineSummary: {self.n:,} {self.kind} rows>"

    def to_bytes(self) -> bytes:
        from calibcli.summaries import to_bytes

        return to_bytes(self.summary)

    def write(self, path: str | os.PathLike) -> None:
        """Write the part to ``path`` (a file the CLI reads as an input, and merges), put in
        place only once written in full, as ``calibcli summarize -o`` writes it: a write that
        fails leaves an existing file as it was."""
        from calibcli.io import AtomicFile

        with AtomicFile(path) as f:
            f.write(self.to_bytes())

    def measured(self) -> Any:
        """The summary as a report reads it: kept rows rebuilt from the table of distinct
        confidences when there is one (what the CLI does with a summary file)."""
        part = self.summary
        if part.kind != "calibration" or part.distinct is None:
            return part
        from calibcli.summaries import rows_of

        return replace(part, kept=rows_of(part), distinct=None, moments=None, _views={})

    def report(
        self,
        *,
        strategy: str = "uniform",
        min_populated_bins: int = 3,
        ci: float | None = None,
        limits: dict[str, float] | None = None,
        gate_on: str = "estimate",
        floors: dict[str, int] | None = None,
        gate_each: bool = False,
    ) -> dict[str, Any]:
        """The report ``calibcli calibrate --json`` prints (``perplexity --json`` for
        perplexity rows), as a dict. ``ci`` asks for the Poisson bootstrap's intervals, which
        need the summary made with ``bootstrap_samples`` (``--bootstrap-scheme poisson``) and
        hold its uniform bins only (another ``strategy`` is a ValueError); ``limits`` are the
        ``--max-*`` gates (figure -> largest value allowed), ``floors`` the
        ``--min-rows``/``--min-tokens`` gates (count -> least value: ``{"n": 1000}``,
        ``{"total_tokens": ...}`` or ``{"sequences": ...}``), and ``gate_each`` applies them
        to every group too (``--gate-each``). ``gate_on="upper"`` gates the upper ends of the
        intervals, at 95% unless ``ci`` says otherwise. A value the command or
        ``calibcli.calibrate()`` refuses is refused with its message (an
        :class:`~calibcli.errors.InputError`; a switch that is not True or False, a
        TypeError), as are a limit on a figure no ``--max-*`` gate reads and a floor on a
        count without one."""
        from threadpoolctl import threadpool_limits

        from calibcli.system import warn_other_digits

        options = self._options(
            strategy, min_populated_bins, ci, limits, gate_on, floors, gate_each
        )
        warn_other_digits()
        # one BLAS thread, as the command line measures: a product split between threads sums
        # its terms in another order
        with threadpool_limits(limits=1, user_api="blas"):
            return self._report(*options)

    def _options(
        self,
        strategy: Any,
        min_populated_bins: Any,
        ci: Any,
        limits: Any,
        gate_on: Any,
        floors: Any,
        gate_each: Any,
    ) -> tuple[str, int, float | None, dict[str, float], str, dict[str, int], bool]:
        """The options checked, before anything is measured, as ``calibcli.calibrate()``
        checks its keywords of the same names, with its messages: ``limits`` as its
        ``max_FIGURE`` keywords, ``floors`` as ``min_rows`` (the command's ``--min-*``), each
        in the registry's order, as the command's gate checks them; ``gate_on="upper"`` asks
        for 95% intervals unless ``ci`` says otherwise."""
        from calibcli.reports import BIN_STRATEGIES, CALIBRATION, PERPLEXITY, calibrate_options
        from calibcli.reports import options as checks

        figures = PERPLEXITY if self.kind == "perplexity" else CALIBRATION
        gate_each = flag(WHERE, "gate_each", gate_each)
        strategy = one_of(WHERE, "strategy", strategy, [s.name for s in BIN_STRATEGIES])
        min_bins = whole(WHERE, "min_populated_bins", min_populated_bins, 1)
        if ci is not None:
            ci = option(WHERE, "ci", checks.ci_level, ci)
        gate_on = one_of(WHERE, "gate_on", gate_on, ("estimate", "upper"))
        thresholds = _figure_limits(limits, figures)
        least = _floor_values(floors, figures)
        if self.kind == "perplexity" and (ci is not None or gate_on == "upper"):
            # the perplexity command has neither: its figures have no bootstrap intervals
            raise _usage(
                'ci and gate_on="upper" read bootstrap intervals, and a perplexity report has none'
            )
        ci = usage(
            WHERE,
            calibrate_options,
            grouped=self.summary.settings.by is not None,
            gate_each=gate_each,
            limits=thresholds,
            floors=least,
            gate_on=gate_on,
            ci=ci,
            bootstrap=None,
            seed=None,
        )
        return strategy, min_bins, ci, thresholds, gate_on, least, gate_each

    def _report(
        self,
        strategy: str,
        min_populated_bins: int,
        ci: float | None,
        limits: dict[str, float],
        gate_on: str,
        floors: dict[str, int],
        gate_each: bool,
    ) -> dict[str, Any]:
        from calibcli.reports import (
            CALIBRATION,
            PERPLEXITY,
            Bootstrap,
            Gate,
            calibrate_report,
            floor_options,
            perplexity_report,
        )

        figures = PERPLEXITY if self.kind == "perplexity" else CALIBRATION
        gate = Gate(
            limits,
            gate_on,
            gate_each,
            minimums=floors,
            options=floor_options(figures, floors),
        )
        data = self.measured()
        if self.kind == "perplexity":
            return json.loads(perplexity_report(data, gate).to_json())
        if strategy != "uniform" and data.kept is None:
            raise ValueError(
                f"strategy {strategy!r} needs every row's confidence, and this summary holds "
                f"only their sums: {data.missing}"
            )
        boot = None
        if ci is not None:
            state = data.bootstrap
            if state is None:
                asked = "ci" if gate_on == "estimate" else 'gate_on="upper" (its ci intervals)'
                raise ValueError(
                    f"{asked} needs the Poisson bootstrap's replicate sums: summarize with "
                    "bootstrap_samples=N and key=<id column>"
                )
            if strategy != "uniform":
                raise ValueError(
                    f"ci with strategy {strategy!r}: the Poisson bootstrap's replicate sums "
                    "hold uniform bins only"
                )
            boot = Bootstrap(ci, state.samples, state.seed, None, "poisson")
        result = calibrate_report(
            data,
            bins=data.settings.bins,
            strategy=strategy,
            min_bins=min_populated_bins,
            bootstrap=boot,
            gate=gate,
            reorder_ok=True,
        )
        return json.loads(result.to_json())


# report()'s option checks are the Python API's (calibcli.reports.option_values), their
# messages following the keyword that gave the value, after "report: ".
WHERE = "report"


def _usage(detail: str) -> InputError:
    return InputError(WHERE, None, detail)


def _figure_limits(limits: Any, figures: Any) -> dict[str, float]:
    """``{figure: threshold}``, each checked as ``max_FIGURE=`` (``--max-FIGURE``) is, in the
    registry's order; a figure no gate reads is refused (a maximum on one that is better high,
    such as AUROC, would pass the worse model)."""
    from calibcli.reports import gateable
    from calibcli.reports import options as checks

    keys = [f.key for f in gateable(figures)]
    given = _mapping("limits", limits)
    for key in given:
        if key not in keys:
            known = ", ".join(repr(k) for k in keys)
            raise _usage(f"limits: no gate reads {key!r}: the figures with one are {known}")
    checked = {
        key: float(option(WHERE, f"max_{key}", checks.finite_threshold, value))
        for key, value in given.items()
        if value is not None
    }
    return {key: checked[key] for key in keys if key in checked}


def _floor_values(floors: Any, figures: Any) -> dict[str, int]:
    """``{count: least}``, each checked as ``min_rows=`` (``--min-rows``, ``--min-tokens``) is,
    in the registry's order; a count no floor gates is refused."""
    from calibcli.reports import floor_options, floored

    nouns = {f.key: f.floor for f in floored(figures)}
    given = _mapping("floors", floors)
    try:
        floor_options(figures, given)
    except ValueError as exc:
        raise _usage(f"floors: {exc}") from None
    checked = {
        key: whole(WHERE, f"min_{nouns[key]}", value, 1)
        for key, value in given.items()
        if value is not None
    }
    return {key: checked[key] for key in nouns if key in checked}


def _mapping(name: str, value: Any) -> dict[str, Any]:
    from collections.abc import Mapping

    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _usage(f"{name}: {value!r} is not a mapping of figure to value")
    return dict(value)


@held_memory
def finish(
    result: Any,
    label: str = "the input",
    *,
    by: str | None = None,
    all_runs: bool = False,
    said: tuple[str, ...] = (),
) -> EngineSummary:
    """The driver's summary of the merged task results; the input's error when a task found
    one: :class:`~calibcli.errors.InputError` naming the file and line, or, for a DataFrame,
    each bad column with its count of bad values and the first one. The summary is judged as
    the command line judges a reading of all the inputs at once (:func:`calibcli.io.whole_read`:
    the same rows in two files refused unless ``all_runs``, an empty file said, missing pieces
    of a ``--part`` file and rows of several models failing every gate), so its report and the
    part it writes are the command's. ``said``: what choosing the files said, first among the
    summary's warnings as the command says it first."""
    if result.error is not None:
        _, path, line, detail = result.error
        raise InputError(path, line, detail)
    if result.problems is not None:
        raise InputError(label, None, result.problems.message())
    if result.mismatch is not None:
        raise InputError(label, None, result.mismatch)
    from calibcli.io import repeated_parts, whole_read
    from calibcli.summaries import from_bytes

    # the questions that re-runs pooled with all_runs repeat across the tasks' parts
    summary = repeated_parts(from_bytes(result.payload), all_runs)
    if said:
        summary = replace(summary, warnings=tuple(dict.fromkeys([*said, *summary.warnings])))
    return EngineSummary(whole_read(summary, by=by, all_runs=all_runs))
