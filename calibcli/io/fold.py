"""Folding decoded blocks into what the reader returns: statistics, totals and column buffers.

A sink takes one decoded block at a time (:meth:`add`) and keeps only running results: compensated
per-bin statistics (:class:`~calibcli.metrics.core.StatsAccumulator`) for calibration rows, exact
integer totals and per-block NLL sums (pooled with ``math.fsum``) for perplexity rows, and with
``keep_columns`` the confidences, split by correctness, in preallocated float64 buffers (8 bytes
per row; unused capacity is never touched, so it costs no resident memory). With grouping, each
group has a sink of its own. Sinks of separate shares of the input (workers, sources) merge with
:meth:`export` and :meth:`absorb`, in input order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from calibcli.io.data import CalibrationData, InputError, PerplexityData
from calibcli.io.rows import PERPLEXITY_COUNTS, PerplexityRow

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


class ColumnBuffer:
    """Growable float64 buffers for the confidences of right and of wrong answers.

    Capacity comes from a row estimate; unused capacity is allocated but never touched, so it
    costs address space, not resident memory. Estimates are capped at ``MAX_RESERVE`` rows per
    buffer (an allocation far beyond the machine's memory could be refused); growth doubles.
    """

    MAX_RESERVE = 1 << 26  # 512 MB of address space per buffer

    def __init__(self, capacity: int) -> None:
        import numpy as np

        cap = min(max(int(capacity), 4096), self.MAX_RESERVE)
        self._bufs = [np.empty(cap), np.empty(cap)]  # [right, wrong]
        self._n = [0, 0]

    def reserve(self, rows: int) -> None:
        """Make room for ``rows`` more rows in each buffer (a no-op if there is room)."""
        rows = min(int(rows), self.MAX_RESERVE)
        for i in (0, 1):
            self._grow(i, self._n[i] + rows)

    def _grow(self, i: int, need: int) -> None:
        import numpy as np

        buf = self._bufs[i]
        if need > buf.shape[0]:
            grown = np.empty(max(2 * buf.shape[0], need))
            grown[: self._n[i]] = buf[: self._n[i]]
            self._bufs[i] = grown

    def claim(self, i: int, k: int) -> np.ndarray:
        """The next ``k`` slots of buffer i (0 right, 1 wrong), counted as filled: the caller
        writes them (a worker's column is received straight into them)."""
        n = self._n[i]
        self._grow(i, n + k)
        self._n[i] = n + k
        return self._bufs[i][n : n + k]

    def add(self, conf: np.ndarray, corr: np.ndarray) -> None:
        self.extend(conf[corr], conf[~corr])

    def extend(self, right: np.ndarray, wrong: np.ndarray) -> None:
        self.claim(0, right.shape[0])[:] = right
        self.claim(1, wrong.shape[0])[:] = wrong

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return self._bufs[0][: self._n[0]], self._bufs[1][: self._n[1]]


def group_indices(keys: list[str]) -> Iterator[tuple[str, Any]]:
    """(key, row selector) for each distinct key of a block, in first-seen order."""
    import numpy as np

    first = keys[0]
    if keys.count(first) == len(keys):
        yield first, slice(None)
        return
    positions: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        positions.setdefault(k, []).append(i)
    for k, idx in positions.items():
        yield k, np.asarray(idx, dtype=np.intp)


class CalibrationSink:
    """Folds calibration blocks into statistics (and columns), optionally per group."""

    def __init__(self, bins: int, keep_columns: bool, grouped: bool = False) -> None:
        from calibcli.metrics.core import StatsAccumulator

        self.bins = bins
        self.keep_columns = keep_columns
        self.acc = StatsAccumulator(bins)
        self.columns: ColumnBuffer | None = None
        self.rows = 0
        self.groups: dict[str, CalibrationSink] | None = {} if grouped else None

    def reserve(self, rows: int) -> None:
        """Hint: about ``rows`` more rows are coming (sizes the column buffers)."""
        if not self.keep_columns:
            return
        if self.columns is None:
            self.columns = ColumnBuffer(rows)
        else:
            self.columns.reserve(rows)

    def _group(self, key: str) -> CalibrationSink:
        assert self.groups is not None
        sink = self.groups.get(key)
        if sink is None:
            sink = self.groups[key] = CalibrationSink(self.bins, self.keep_columns)
        return sink

    def add(self, cols: tuple, keys: list[str] | None, locate: Any) -> None:
        conf, corr = cols
        if conf.shape[0] == 0:
            return
        self._add(conf, corr)
        if self.groups is not None and keys is not None:
            for key, sel in group_indices(keys):
                self._group(key)._add(conf[sel], corr[sel])

    def _add(self, conf: np.ndarray, corr: np.ndarray) -> None:
        from calibcli.metrics.core import BinStats

        self.acc.add(BinStats.from_arrays(conf, corr, self.bins, validate=False))
        if self.keep_columns:
            if self.columns is None:
                self.columns = ColumnBuffer(1 << 16)
            self.columns.add(conf, corr)
        self.rows += conf.shape[0]

    def export(self, with_columns: bool = True) -> dict:
        """Picklable state, to merge a worker's (or a source's) share into another sink.

        ``with_columns=False`` leaves the top-level columns out; a worker sends them with
        :meth:`bulk` as raw bytes, which the parent receives in place (:meth:`claim_bulk`).
        """
        return {
            "stats": self.acc.result(),
            "columns": None if self.columns is None or not with_columns else self.columns.arrays(),
            "rows": self.rows,
            "groups": None
            if self.groups is None
            else {k: g.export() for k, g in self.groups.items()},
        }

    def absorb(self, state: dict, path: str = "", line_offset: int = 0) -> None:
        self.acc.add(state["stats"])
        if self.keep_columns and state["columns"] is not None:
            if self.columns is None:
                self.columns = ColumnBuffer(state["rows"])
            self.columns.extend(*state["columns"])
        self.rows += state["rows"]
        if self.groups is not None and state["groups"] is not None:
            for key, sub in state["groups"].items():
                self._group(key).absorb(sub)

    def bulk(self) -> list[np.ndarray]:
        """The arrays a worker sends raw: the confidences of right, then of wrong answers."""
        return [] if self.columns is None else list(self.columns.arrays())

    def claim_bulk(self, lengths: list[int]) -> list[np.ndarray]:
        """Room for the arrays of another sink's :meth:`bulk`, of these lengths, at the end of
        the column buffers (filled in place by the caller)."""
        if not lengths:
            return []
        if self.columns is None:
            self.columns = ColumnBuffer(sum(lengths))
        return [self.columns.claim(i, k) for i, k in enumerate(lengths)]

    def result(self, fmt: str) -> CalibrationData:
        import numpy as np

        from calibcli.metrics.core import PredictionColumns

        columns = None
        if self.keep_columns:
            if self.columns is None:
                columns = PredictionColumns(np.zeros(0), np.zeros(0))
            else:
                columns = PredictionColumns(*self.columns.arrays())
        groups = None
        if self.groups is not None:
            groups = {k: self.groups[k].result(fmt) for k in sorted(self.groups)}
        return CalibrationData(
            stats=self.acc.result(), columns=columns, groups=groups, rows=self.rows, fmt=fmt
        )


class PerplexitySink:
    """Folds perplexity blocks: exact integer totals; NLL summed per block, pooled with fsum.

    ``tokens``, ``bytes`` and ``words`` are totalled only when every row carries them; a row that
    breaks the pattern set by the first row is an error naming that row.
    """

    def __init__(self, spec: PerplexityRow, grouped: bool = False) -> None:
        self.spec = spec  # names the fields in messages
        self.nll_parts: list[float] = []
        self.sequences = 0
        self.totals = dict.fromkeys(PERPLEXITY_COUNTS, 0)
        self.present: dict[str, bool | None] = dict.fromkeys(PERPLEXITY_COUNTS)
        self.first_line: int | None = None
        self.nulls = 0
        self.sentinels = 0
        self.groups: dict[str, PerplexitySink] | None = {} if grouped else None

    def reserve(self, rows: int) -> None:
        pass

    def bulk(self) -> list:
        return []

    def claim_bulk(self, lengths: list[int]) -> list:
        return []

    def _group(self, key: str) -> PerplexitySink:
        assert self.groups is not None
        sink = self.groups.get(key)
        if sink is None:
            sink = self.groups[key] = PerplexitySink(self.spec)
        return sink

    def add(self, cols: tuple, keys: list[str] | None, locate: Any) -> None:
        """``locate(i)`` gives (path, line) of row i of the block, for error messages."""
        if cols[0].shape[0] == 0:
            return
        self._add(cols, locate)
        if self.groups is not None and keys is not None:
            for key, sel in group_indices(keys):
                part = tuple(None if c is None else c[sel] for c in cols)
                self._group(key)._add(part, lambda i, sel=sel: locate(_pick(sel, i)))

    def _mismatch(self, name: str, path: str, line: int, has_it: bool) -> InputError:
        return InputError(path, line, self.spec.pattern_broken(name, has_it=has_it))

    def _add(self, cols: tuple, where: Callable[[int], tuple[str, int]]) -> None:
        import numpy as np

        nll = cols[0]
        n = nll.shape[0]
        if self.first_line is None:
            self.first_line = where(0)[1]
        for name, col in zip(PERPLEXITY_COUNTS, cols[1:4], strict=True):
            state = self.present[name]
            if col is None:
                if state:
                    raise self._mismatch(name, *where(0), has_it=False)
                self.present[name] = False
                continue
            has = col >= 0
            if state is None:
                state = self.present[name] = bool(has[0])
            bad = ~has if state else has
            if bad.any():
                raise self._mismatch(name, *where(int(np.argmax(bad))), has_it=not state)
            if state:
                self.totals[name] += int(col.sum())
        if cols[4] is not None:
            self.nulls += int(cols[4].sum())
        if cols[5] is not None:
            self.sentinels += int(cols[5].sum())
        self.nll_parts.append(float(nll.sum()))
        self.sequences += n

    def export(self, with_columns: bool = True) -> dict:
        return {
            "nll_parts": list(self.nll_parts),
            "sequences": self.sequences,
            "totals": dict(self.totals),
            "present": dict(self.present),
            "first_line": self.first_line,
            "nulls": self.nulls,
            "sentinels": self.sentinels,
            "groups": None
            if self.groups is None
            else {k: g.export() for k, g in self.groups.items()},
        }

    def absorb(self, state: dict, path: str = "", line_offset: int = 0) -> None:
        if state["sequences"]:
            line = state["first_line"] + line_offset
            for name in PERPLEXITY_COUNTS:
                mine, theirs = self.present[name], state["present"][name]
                if mine is not None and mine != theirs:
                    raise self._mismatch(name, path, line, has_it=bool(theirs))
                self.present[name] = theirs
                self.totals[name] += state["totals"][name]
            if self.first_line is None:
                self.first_line = line
        self.nll_parts.extend(state["nll_parts"])
        self.sequences += state["sequences"]
        self.nulls += state["nulls"]
        self.sentinels += state["sentinels"]
        if self.groups is not None and state["groups"] is not None:
            for key, sub in state["groups"].items():
                self._group(key).absorb(sub, path, line_offset)

    def result(self, fmt: str) -> PerplexityData:
        def total(name: str) -> int | None:
            return self.totals[name] if self.present[name] else None

        groups = None
        if self.groups is not None:
            groups = {k: self.groups[k].result(fmt) for k in sorted(self.groups)}
        tokens = total("tokens")
        if self.sequences == 0 and fmt != "lm-eval":
            tokens = 0
        return PerplexityData(
            sequences=self.sequences,
            total_nll=math.fsum(self.nll_parts),
            total_tokens=tokens,
            total_bytes=total("bytes"),
            total_words=total("words"),
            null_logprobs=self.nulls,
            sentinel_logprobs=self.sentinels,
            groups=groups,
            fmt=fmt,
        )


def _pick(sel: Any, i: int) -> int:
    """Block row index of the i-th row of a group selection."""
    return i if isinstance(sel, slice) else int(sel[i])
