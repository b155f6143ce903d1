"""Folding decoded blocks into what the reader returns: statistics, totals and column buffers.

A sink takes one decoded block at a time (:meth:`add`) and keeps only running results: compensated
per-bin statistics (:class:`~calibcli.metrics.core.StatsAccumulator`) for calibration rows, exact
integer totals and per-block NLL sums (pooled with ``math.fsum``) for perplexity rows, and with
``keep_columns`` the confidences, split by correctness, in preallocated float64 buffers (8 bytes
per row; unused capacity is never touched, so it costs no resident memory). With grouping, rows
get a dense group id (:class:`GroupIndex`) and each block is folded into per-group tables with
numpy (one row of ``bins`` statistics, or a few totals, per group), so many small groups cost no
Python object per group and no work per group per block; kept columns carry each row's group id
and are split by group once, at the end. Sinks of separate shares of the input (workers,
sources) merge with :meth:`export` and :meth:`absorb`, in input order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from calibcli.errors import InputError
from calibcli.io.data import CalibrationData, PerplexityData
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

    def __init__(self, capacity: int, dtype: str = "float64") -> None:
        import numpy as np

        cap = min(max(int(capacity), 4096), self.MAX_RESERVE)
        self._bufs = [np.empty(cap, dtype), np.empty(cap, dtype)]  # [right, wrong]
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
            grown = np.empty(max(2 * buf.shape[0], need), buf.dtype)
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


class GroupIndex:
    """Group names -> dense ids 0, 1, 2, ... in first-seen order."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str] = []

    def __len__(self) -> int:
        return len(self.names)

    def id(self, name: str) -> int:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = len(self.names)
            self.names.append(name)
        return found

    def of(self, keys: list[str]) -> np.ndarray:
        """The id of each row's group (intp)."""
        import numpy as np

        first = keys[0]
        if keys.count(first) == len(keys):
            return np.full(len(keys), self.id(first), np.intp)
        ids, new = self.ids, self.id
        return np.fromiter((ids[k] if k in ids else new(k) for k in keys), np.intp, len(keys))

    def remap(self, names: list[str]) -> np.ndarray:
        """Ids here of another index's names, in its id order."""
        import numpy as np

        return np.fromiter((self.id(k) for k in names), np.intp, len(names))


def _grown(array: np.ndarray, rows: int) -> np.ndarray:
    """``array`` with at least ``rows`` rows along axis 0 (doubling; new rows zero)."""
    import numpy as np

    if array.shape[0] >= rows:
        return array
    out = np.zeros((max(rows, 2 * array.shape[0]), *array.shape[1:]), array.dtype)
    out[: array.shape[0]] = array
    return out


def _two_sum_at(hi: np.ndarray, lo: np.ndarray, where: Any, x: np.ndarray) -> None:
    """Compensated ``hi[where] += x`` (``where`` selects distinct cells): TwoSum as in
    :class:`~calibcli.metrics.core.StatsAccumulator`."""
    from calibcli.metrics.core import two_sum

    h, low = hi[where], lo[where]
    two_sum(h, low, x)
    hi[where], lo[where] = h, low


class GroupBinTable:
    """Per-group bin statistics: one row of ``bins`` per group in 2D arrays, compensated like
    :class:`~calibcli.metrics.core.StatsAccumulator` (counts exact, float sums with TwoSum)."""

    def __init__(self, bins: int) -> None:
        import numpy as np

        from calibcli.metrics.core import bin_edges

        self.edges = bin_edges(bins)
        self.m = m = self.edges.shape[0] - 1
        self.counts = np.zeros((0, m, 2), np.int64)  # count, sum_correct
        self.hi = np.zeros((0, m, 4))  # sum_conf, sum_conf_sq, sum_conf_correct, sum_sq_error
        self.lo = np.zeros((0, m, 4))

    def _room(self, groups: int) -> None:
        self.counts = _grown(self.counts, groups)
        self.hi = _grown(self.hi, groups)
        self.lo = _grown(self.lo, groups)

    def add(self, ids: np.ndarray, conf: np.ndarray, corr: np.ndarray, groups: int) -> None:
        """Fold one block's rows, ``ids`` giving each row's group (< ``groups``)."""
        import numpy as np

        from calibcli.metrics.core import bin_index

        self._room(groups)
        cells, inv = np.unique(ids * self.m + bin_index(conf, self.edges), return_inverse=True)
        k = cells.shape[0]
        g, b = np.divmod(cells, self.m)
        y = corr.astype(np.float64)
        self.counts[g, b, 0] += np.bincount(inv, minlength=k)
        self.counts[g, b, 1] += np.bincount(inv[corr], minlength=k)
        sums = np.stack(
            [
                np.bincount(inv, weights=conf, minlength=k),
                np.bincount(inv, weights=conf * conf, minlength=k),
                np.bincount(inv, weights=conf * y, minlength=k),
                np.bincount(inv, weights=(conf - y) ** 2, minlength=k),
            ],
            axis=1,
        )
        _two_sum_at(self.hi, self.lo, (g, b), sums)

    def export(self, groups: int) -> dict:
        return {"counts": self.counts[:groups], "hi": self.hi[:groups], "lo": self.lo[:groups]}

    def absorb(self, state: dict, ids: np.ndarray, groups: int) -> None:
        """Add another table's rows, its group j being group ``ids[j]`` here."""
        self._room(groups)
        self.counts[ids] += state["counts"]
        _two_sum_at(self.hi, self.lo, ids, state["hi"])
        _two_sum_at(self.hi, self.lo, ids, state["lo"])

    def stats(self, g: int) -> Any:
        from calibcli.metrics.core import BinStats

        floats = self.hi[g] + self.lo[g]
        return BinStats(
            self.edges.copy(),
            self.counts[g, :, 0].copy(),
            self.counts[g, :, 1].copy(),
            *(floats[:, j].copy() for j in range(4)),
        )


def _split_by_group(values: np.ndarray, ids: np.ndarray, groups: int) -> list[np.ndarray]:
    """``values`` split by group id (one sort): views of one sorted copy, in id order."""
    import numpy as np

    order = np.argsort(ids, kind="stable")
    ordered = values[order]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(ids, minlength=groups))))
    return [ordered[bounds[g] : bounds[g + 1]] for g in range(groups)]


class CalibrationSink:
    """Folds calibration blocks into statistics (and columns), optionally per group."""

    def __init__(self, bins: int, keep_columns: bool, grouped: bool = False) -> None:
        from calibcli.metrics.core import StatsAccumulator

        self.bins = bins
        self.keep_columns = keep_columns
        self.acc = StatsAccumulator(bins)
        self.columns: ColumnBuffer | None = None
        self.rows = 0
        self.index: GroupIndex | None = GroupIndex() if grouped else None
        self.table = GroupBinTable(bins) if grouped else None
        self.group_ids: ColumnBuffer | None = None  # each kept row's group, beside the columns

    def reserve(self, rows: int) -> None:
        """Hint: about ``rows`` more rows are coming (sizes the column buffers)."""
        if not self.keep_columns:
            return
        if self.columns is None:
            self.columns = ColumnBuffer(rows)
        else:
            self.columns.reserve(rows)

    def add(self, cols: tuple, keys: list[str] | None, locate: Any) -> None:
        conf, corr = cols
        if conf.shape[0] == 0:
            return
        self._add(conf, corr)
        if self.index is not None and keys is not None:
            assert self.table is not None
            ids = self.index.of(keys)
            self.table.add(ids, conf, corr, len(self.index))
            if self.keep_columns:
                self._ids().extend(ids[corr], ids[~corr])

    def _ids(self) -> ColumnBuffer:
        if self.group_ids is None:
            self.group_ids = ColumnBuffer(1 << 12, "intp")
        return self.group_ids

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
        The group ids of the kept rows always travel in the state.
        """
        groups = None
        if self.index is not None and self.table is not None:
            n = len(self.index)
            groups = {
                "names": list(self.index.names),
                "table": self.table.export(n),
                "ids": None if self.group_ids is None else self.group_ids.arrays(),
            }
        return {
            "stats": self.acc.result(),
            "columns": None if self.columns is None or not with_columns else self.columns.arrays(),
            "rows": self.rows,
            "groups": groups,
        }

    def absorb(self, state: dict, path: str = "", line_offset: int = 0) -> None:
        self.acc.add(state["stats"])
        if self.keep_columns and state["columns"] is not None:
            if self.columns is None:
                self.columns = ColumnBuffer(state["rows"])
            self.columns.extend(*state["columns"])
        self.rows += state["rows"]
        sub = state["groups"]
        if self.index is not None and self.table is not None and sub is not None:
            remap = self.index.remap(sub["names"])
            self.table.absorb(sub["table"], remap, len(self.index))
            if self.keep_columns and sub["ids"] is not None:
                right, wrong = sub["ids"]
                self._ids().extend(remap[right], remap[wrong])

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
        return CalibrationData(
            stats=self.acc.result(),
            columns=columns,
            groups=self._groups(columns, fmt),
            rows=self.rows,
            fmt=fmt,
        )

    def _groups(self, columns: Any, fmt: str) -> dict[str, CalibrationData] | None:
        """One result per group, sorted by name; columns split by group with one sort."""
        if self.index is None or self.table is None:
            return None
        from calibcli.metrics.core import PredictionColumns

        n = len(self.index)
        parts: list[Any] = [None] * n
        if columns is not None and n:
            import numpy as np

            right_ids, wrong_ids = (
                self.group_ids.arrays()
                if self.group_ids is not None
                else (np.zeros(0, np.intp), np.zeros(0, np.intp))
            )
            rights = _split_by_group(columns.conf_correct, right_ids, n)
            wrongs = _split_by_group(columns.conf_wrong, wrong_ids, n)
            parts = [PredictionColumns(r, w) for r, w in zip(rights, wrongs, strict=True)]
        out = {}
        for name in sorted(self.index.names):
            g = self.index.ids[name]
            stats = self.table.stats(g)
            out[name] = CalibrationData(
                stats=stats, columns=parts[g], rows=int(stats.count.sum()), fmt=fmt
            )
        return out


_HALF = 31
_LOW = (1 << _HALF) - 1


def exact_sum(col: np.ndarray) -> int:
    """Σ of a column of counts in [0, 2**62] as an exact Python int (int64 sums can wrap)."""
    n = col.shape[0]
    if n == 0:
        return 0
    if int(col.max()) * n < 1 << 63:
        return int(col.sum())
    return (int((col >> _HALF).sum()) << _HALF) + int((col & _LOW).sum())


def _group_sums(ids: np.ndarray, col: np.ndarray, groups: int) -> np.ndarray:
    """Per-group Σ of a column of counts in [0, 2**62], as (high, low) 31-bit halves, int64.

    A block's halves sum exactly in float64 (bincount) while it has fewer than 2**22 rows."""
    import numpy as np

    if col.shape[0] >= 1 << 22:  # pragma: no cover - blocks are far smaller
        out = np.zeros((groups, 2), np.int64)
        np.add.at(out[:, 0], ids, col >> _HALF)
        np.add.at(out[:, 1], ids, col & _LOW)
        return out
    return np.stack(
        [
            np.bincount(ids, weights=col >> _HALF, minlength=groups),
            np.bincount(ids, weights=col & _LOW, minlength=groups),
        ],
        axis=1,
    ).astype(np.int64)


def _join(halves: Any) -> int:
    return (int(halves[0]) << _HALF) + int(halves[1])


def total_nll(parts: list[float]) -> float:
    """``math.fsum`` of non-negative NLL parts; +inf when the sum overflows a double."""
    try:
        return math.fsum(parts)
    except OverflowError:  # finite parts whose sum exceeds the largest double
        return math.inf


class GroupTotals:
    """Per-group perplexity totals in arrays: sequences, NLL (compensated), NLL rows that are
    infinite as given, counts (exact, as 31-bit halves), null and sentinel logprobs."""

    def __init__(self) -> None:
        import numpy as np

        self.ints = np.zeros((0, 4), np.int64)  # sequences, infinite, nulls, sentinels
        self.counts = np.zeros((0, len(PERPLEXITY_COUNTS), 2), np.int64)
        self.hi = np.zeros(0)
        self.lo = np.zeros(0)

    def _room(self, groups: int) -> None:
        self.ints = _grown(self.ints, groups)
        self.counts = _grown(self.counts, groups)
        self.hi = _grown(self.hi, groups)
        self.lo = _grown(self.lo, groups)

    def add(self, ids: np.ndarray, cols: tuple, infinite: np.ndarray, groups: int) -> None:
        import numpy as np

        self._room(groups)
        nll = cols[0]
        present = np.flatnonzero(np.bincount(ids, minlength=groups))
        self.ints[:groups, 0] += np.bincount(ids, minlength=groups)
        self.ints[:groups, 1] += np.bincount(ids[infinite], minlength=groups)
        for j, col in ((2, cols[4]), (3, cols[5])):
            if col is not None:
                self.ints[:groups, j] += np.bincount(ids, weights=col, minlength=groups).astype(
                    np.int64
                )
        for k, col in enumerate(cols[1:4]):
            if col is not None and col.shape[0] and col[0] >= 0:  # the pooled check: all or none
                self.counts[:groups, k] += _group_sums(ids, col, groups)
        with np.errstate(all="ignore"):  # +inf parts make the error term NaN; result() knows
            sums = np.bincount(ids, weights=nll, minlength=groups)[present]
            _two_sum_at(self.hi, self.lo, present, sums)

    def export(self, groups: int) -> dict:
        return {
            "ints": self.ints[:groups],
            "counts": self.counts[:groups],
            "hi": self.hi[:groups],
            "lo": self.lo[:groups],
        }

    def absorb(self, state: dict, ids: np.ndarray, groups: int) -> None:
        import numpy as np

        self._room(groups)
        self.ints[ids] += state["ints"]
        self.counts[ids] += state["counts"]
        with np.errstate(all="ignore"):
            _two_sum_at(self.hi, self.lo, ids, state["hi"])
            _two_sum_at(self.hi, self.lo, ids, state["lo"])


class PerplexitySink:
    """Folds perplexity blocks: exact integer totals; NLL summed per block, pooled with fsum.

    ``tokens``, ``bytes`` and ``words`` are totalled only when every row carries them; a row that
    breaks the pattern set by the first row is an error naming that row. Totals are Python ints,
    exact whatever their size. A total NLL that exceeds the largest double though no row's NLL
    is infinite as given is flagged (``nll_overflow``) rather than blamed on a row.
    """

    def __init__(self, spec: PerplexityRow, grouped: bool = False) -> None:
        self.spec = spec  # names the fields in messages
        self.nll_parts: list[float] = []
        self.sequences = 0
        self.infinite = 0  # rows whose NLL is infinite as given (a zero-probability token)
        self.totals = dict.fromkeys(PERPLEXITY_COUNTS, 0)
        self.present: dict[str, bool | None] = dict.fromkeys(PERPLEXITY_COUNTS)
        self.first_line: int | None = None
        self.nulls = 0
        self.sentinels = 0
        self.index: GroupIndex | None = GroupIndex() if grouped else None
        self.table = GroupTotals() if grouped else None

    def reserve(self, rows: int) -> None:
        pass

    def bulk(self) -> list:
        return []

    def claim_bulk(self, lengths: list[int]) -> list:
        return []

    def add(self, cols: tuple, keys: list[str] | None, locate: Any) -> None:
        """``locate(i)`` gives (path, line) of row i of the block, for error messages."""
        import numpy as np

        if cols[0].shape[0] == 0:
            return
        infinite = np.isinf(cols[0])
        if cols[6] is not None:
            infinite &= cols[6] == 0  # a row whose own sum overflowed is not a given infinity
        self._add(cols, locate, infinite)
        if self.index is not None and self.table is not None and keys is not None:
            self.table.add(self.index.of(keys), cols, infinite, len(self.index))

    def _mismatch(self, name: str, path: str, line: int, has_it: bool) -> InputError:
        return InputError(path, line, self.spec.pattern_broken(name, has_it=has_it))

    def _add(self, cols: tuple, where: Callable[[int], tuple[str, int]], infinite: Any) -> None:
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
                self.totals[name] += exact_sum(col)
        if cols[4] is not None:
            self.nulls += int(cols[4].sum())
        if cols[5] is not None:
            self.sentinels += int(cols[5].sum())
        self.infinite += int(np.count_nonzero(infinite))
        with np.errstate(over="ignore"):  # an overflowing sum is +inf, reported by result()
            self.nll_parts.append(float(nll.sum()))
        self.sequences += n

    def export(self, with_columns: bool = True) -> dict:
        groups = None
        if self.index is not None and self.table is not None:
            groups = {
                "names": list(self.index.names),
                "table": self.table.export(len(self.index)),
            }
        return {
            "nll_parts": list(self.nll_parts),
            "sequences": self.sequences,
            "infinite": self.infinite,
            "totals": dict(self.totals),
            "present": dict(self.present),
            "first_line": self.first_line,
            "nulls": self.nulls,
            "sentinels": self.sentinels,
            "groups": groups,
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
        self.infinite += state["infinite"]
        self.nulls += state["nulls"]
        self.sentinels += state["sentinels"]
        sub = state["groups"]
        if self.index is not None and self.table is not None and sub is not None:
            remap = self.index.remap(sub["names"])
            self.table.absorb(sub["table"], remap, len(self.index))

    def _data(self, fmt: str, **fields: Any) -> PerplexityData:
        def total(name: str, value: int) -> int | None:
            return value if self.present[name] else None

        tokens = total("tokens", fields.pop("tokens"))
        if fields["sequences"] == 0 and fmt != "lm-eval":
            tokens = 0
        nll = fields.pop("nll")
        infinite = fields.pop("infinite")
        return PerplexityData(
            total_nll=nll,
            total_tokens=tokens,
            total_bytes=total("bytes", fields.pop("nbytes")),
            total_words=total("words", fields.pop("words")),
            nll_overflow=math.isinf(nll) and infinite == 0,
            fmt=fmt,
            **fields,
        )

    def result(self, fmt: str) -> PerplexityData:
        groups = None
        if self.index is not None and self.table is not None:
            t = self.table
            groups = {}
            for name in sorted(self.index.names):
                g = self.index.ids[name]
                sequences, infinite, nulls, sentinels = (int(v) for v in t.ints[g])
                hi = float(t.hi[g])
                tokens, nbytes, words = (_join(t.counts[g, k]) for k in range(3))
                groups[name] = self._data(
                    fmt,
                    sequences=sequences,
                    nll=hi if math.isinf(hi) else hi + float(t.lo[g]),
                    infinite=infinite,
                    tokens=tokens,
                    nbytes=nbytes,
                    words=words,
                    null_logprobs=nulls,
                    sentinel_logprobs=sentinels,
                )
        return self._data(
            fmt,
            sequences=self.sequences,
            nll=total_nll(self.nll_parts),
            infinite=self.infinite,
            tokens=self.totals["tokens"],
            nbytes=self.totals["bytes"],
            words=self.totals["words"],
            null_logprobs=self.nulls,
            sentinel_logprobs=self.sentinels,
            groups=groups,
        )
