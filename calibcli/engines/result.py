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
        to every group too (``--gate-each``)."""
        from threadpoolctl import threadpool_limits

        from calibcli.system import warn_other_digits

        warn_other_digits()
        # one BLAS thread, as the command line measures: a product split between threads sums
        # its terms in another order
        with threadpool_limits(limits=1, user_api="blas"):
            return self._report(
                strategy, min_populated_bins, ci, limits, gate_on, floors, gate_each
            )

    def _report(
        self,
        strategy: str,
        min_populated_bins: int,
        ci: float | None,
        limits: dict[str, float] | None,
        gate_on: str,
        floors: dict[str, int] | None,
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

        floors = dict(floors or {})
        figures = PERPLEXITY if self.kind == "perplexity" else CALIBRATION
        gate = Gate(
            dict(limits or {}),
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
                raise ValueError(
                    "ci needs the Poisson bootstrap's replicate sums: summarize with "
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
