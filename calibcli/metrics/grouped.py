"""The calibration estimators of many groups at once, from (groups × bins) tables.

Each function returns, for every group, exactly the value the one-group estimator of
:mod:`calibcli.metrics.estimators` returns for that group's rows (the same float, bit for bit):
the per-bin terms are computed elementwise on the whole table, each group's correctly rounded
sum (``math.fsum``) is taken over its row of terms (:func:`~calibcli.metrics.row_sums.fsum_rows`,
for all rows at once), the rank-sum AUROC counts exact integers, and each group's log loss sums
the same contiguous run of per-row losses with numpy's own arithmetic
(:func:`~calibcli.metrics.row_sums.run_sums`). Thousands of groups then cost a few numpy
passes, not thousands of calls on ten-element arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.estimators import _CHUNK, _loss_total, _sort_in_place
from calibcli.metrics.row_sums import fsum_rows, run_sums


@dataclass(frozen=True, eq=False)
class GroupTables:
    """Per-bin statistics of every group as (groups × bins) arrays (the fields of
    :class:`~calibcli.metrics.core.BinStats`, one row per group)."""

    count: np.ndarray  # int64
    sum_correct: np.ndarray  # int64
    sum_conf: np.ndarray
    sum_conf_sq: np.ndarray
    sum_conf_correct: np.ndarray
    sum_sq_error: np.ndarray
    # each group's Brier score from its exact total, where known: the double nearest
    # Σ(c − y)² / N, each row's squared error a double summed exactly, as one group's exact
    # sums give it (None: the per-bin sums' compensated total, within an ulp)
    brier: np.ndarray | None = None

    FIELDS: ClassVar[tuple[str, ...]] = (
        "count",
        "sum_correct",
        "sum_conf",
        "sum_conf_sq",
        "sum_conf_correct",
        "sum_sq_error",
    )

    @classmethod
    def stack(cls, stats: list) -> GroupTables:
        """The tables of a list of :class:`~calibcli.metrics.core.BinStats` on the same edges."""
        m = stats[0].count.shape[0] if stats else 0
        exact = all(s.sq_error_total is not None for s in stats)
        return cls(
            *(
                np.concatenate([getattr(s, f) for s in stats]).reshape(len(stats), m)
                for f in cls.FIELDS
            ),
            brier=np.array([s.brier() for s in stats], np.float64) if exact else None,
        )

    def rows(self, start: int, stop: int) -> GroupTables:
        """The tables of groups ``start`` to ``stop`` (views of these arrays). A summary's
        tables (``SummaryGroupTables``) give the same slices, made from the exact sums."""
        brier = None if self.brier is None else self.brier[start:stop]
        return GroupTables(*(getattr(self, f)[start:stop] for f in self.FIELDS), brier=brier)


def sorted_columns(columns: PredictionColumns) -> PredictionColumns:
    """The columns with each class sorted ascending, in place where the arrays allow it (as
    :func:`~calibcli.metrics.estimators.calibration_estimates` sorts them with
    ``reorder_ok``)."""
    return PredictionColumns(
        _sort_in_place(columns.conf_correct), _sort_in_place(columns.conf_wrong)
    )


def smooth_of(columns: list[PredictionColumns]) -> tuple[list[float], list[float]]:
    """The smooth ECE and the bandwidth of each group's rows, as the one-group estimators
    compute them (the same floats); the groups' bandwidth searches run together."""
    from calibcli.metrics.smooth_groups import smooth_ece_groups

    return smooth_ece_groups([(c.conf_correct, c.conf_wrong) for c in columns])


def _bin_terms(tables: GroupTables, count: np.ndarray, sy_int: np.ndarray, obar: np.ndarray):
    """The per-bin terms each figure sums (zero in empty bins), elementwise as the one-group
    estimators compute them on the populated bins."""
    sc = tables.sum_conf
    pop = count > 0
    nk = np.where(pop, count, 1).astype(np.float64)
    sy = sy_int.astype(np.float64)
    diff = sc - sy
    sq_over_n = np.where(pop, diff**2 / nk, 0.0)
    mce = np.where(pop, np.abs(diff) / nk, -np.inf).max(axis=1)
    acc = sy / nk
    debiased = np.where(count >= 2, nk * ((diff / nk) ** 2 - acc * (1.0 - acc) / (nk - 1.0)), 0.0)
    resolution = np.where(pop, nk * (sy / nk - obar[:, None]) ** 2, 0.0)
    variance = np.where(pop, tables.sum_conf_sq - sc * sc / nk, 0.0)
    covariance = np.where(pop, tables.sum_conf_correct - sc * sy / nk, 0.0)
    return diff, sq_over_n, mce, debiased, resolution, variance, covariance


_GROUPS_AT_ONCE = 2048  # groups whose per-bin terms are alive at once: small temporaries


def grouped_binned(tables: GroupTables) -> dict[str, np.ndarray | list]:
    """Every binned figure of every group: ``n`` and ``populated_bins`` as lists of ints, the
    scalars of :func:`~calibcli.metrics.estimators.binned_scalars` and the Brier
    decomposition's terms (keyed ``brier_decomposition.<term>``) as float64 arrays (each
    element the one-group estimator's float); 0.0 for a group without rows, as for none.
    Computed a slice of groups at a time: every figure of a group depends on its own row of
    the tables only."""
    groups = tables.count.shape[0]
    out: dict[str, np.ndarray | list] = {}
    n_all = tables.count.sum(axis=1)
    # one slice at least: no groups fails in the reductions, as the whole tables always did
    for a in range(0, max(groups, 1), _GROUPS_AT_ONCE):
        b = min(a + _GROUPS_AT_ONCE, groups)
        for key, values in _binned_figures(tables.rows(a, b), n_all[a:b]).items():
            if key not in out:
                out[key] = np.empty(groups)
            out[key][a:b] = values
    out["n"] = n_all.tolist()
    out["populated_bins"] = np.count_nonzero(tables.count, axis=1).tolist()
    return out


def _binned_figures(tables: GroupTables, n: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`grouped_binned`'s float figures of the groups of ``tables`` (``n`` their rows)."""
    count, sy_int, sc = tables.count, tables.sum_correct, tables.sum_conf
    sy = sy_int.astype(np.float64)
    correct = sy_int.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # groups without rows, masked bins
        obar = correct / n
        terms = _bin_terms(tables, count, sy_int, obar)
    diff, sq_over_n, mce, debiased_terms, resolution_terms, variance_terms, covariance_terms = terms
    # each group's one-bin ECE sums its Σc and its −Σy together, as the one-group estimator
    one_bin = fsum_rows(np.concatenate([sc, -sy], axis=1))
    sum_sq = fsum_rows(sq_over_n)
    # the one-group arithmetic on each group's sums, elementwise: numpy's float64 operations
    # round as Python's float ones do (counts below 2**53 convert exactly)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = n.astype(np.float64)
        brier = fsum_rows(tables.sum_sq_error) / total if tables.brier is None else tables.brier
        debiased = fsum_rows(debiased_terms) / total
        variance = fsum_rows(variance_terms) / total
        figures = {
            "ece": fsum_rows(np.abs(diff)) / total,
            "mce": mce,
            "rmsce": np.sqrt(sum_sq / total),
            "rmsce_debiased": np.sqrt(np.where(debiased > 0.0, debiased, 0.0)),
            "ece_1bin": np.abs(one_bin) / total,
            "brier": brier,
            "accuracy": correct / n,
            "mean_confidence": fsum_rows(sc) / total,
            "brier_decomposition.reliability": sum_sq / total,
            "brier_decomposition.resolution": fsum_rows(resolution_terms) / total,
            "brier_decomposition.uncertainty": obar * (1.0 - obar),
            "brier_decomposition.within_bin_variance": np.where(variance > 0.0, variance, 0.0),
            "brier_decomposition.within_bin_covariance": 2.0 * fsum_rows(covariance_terms) / total,
            "brier_decomposition.brier": brier,
        }
    empty = n == 0  # a group without rows: 0.0 for every figure
    return {key: np.where(empty, 0.0, values) for key, values in figures.items()}


def _concat(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arrays end to end, each element's group id and each group's start."""
    lengths = np.fromiter((p.shape[0] for p in parts), dtype=np.int64, count=len(parts))
    values = np.concatenate(parts) if parts else np.zeros(0)
    ids = np.repeat(np.arange(len(parts)), lengths)
    starts = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=starts[1:])
    return values.astype(np.float64, copy=False), ids, starts


def _ascending_within(values: np.ndarray, starts: np.ndarray) -> bool:
    """Whether ``values`` ascend within each run that ``starts`` delimits."""
    if values.shape[0] < 2:
        return True
    falls = values[1:] < values[:-1]  # falls[i]: values[i + 1] < values[i]
    inner = starts[(starts > 0) & (starts < values.shape[0])]
    falls[inner - 1] = False  # a run may start lower than the last one ends
    return not falls.any()


def _sorted_within(values: np.ndarray, ids: np.ndarray, starts: np.ndarray) -> None:
    """Sort ``values`` ascending within each run of equal ids (ids ascending), in place (the
    one-group estimators may have sorted every group already)."""
    if _ascending_within(values, starts):
        return
    keys = _keys(ids, values)
    keys.sort()  # one sort of (group, value) pairs: a sixth of a two-key lexsort's time
    values[:] = keys.imag


def _keys(ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """(group, value) pairs as complex numbers, which numpy orders by real part, then by
    imaginary part: searching and sorting them compares within a group only."""
    keys = np.empty(ids.shape[0], dtype=np.complex128)
    keys.real = ids
    keys.imag = values
    return keys


def grouped_rows(
    right: list[np.ndarray], wrong: list[np.ndarray], *, sorted_rows: bool = False
) -> tuple[list[float], list[float]]:
    """Each group's log loss (:func:`~calibcli.metrics.estimators.log_loss`) and rank-sum
    AUROC (:func:`~calibcli.metrics.estimators.auroc`), from the confidences of its right and
    of its wrong answers. Each group's losses are summed over its rows sorted ascending, as
    the one-group log loss sums them; ``sorted_rows=True`` lets the rows be sorted in place
    (``reorder_ok``), else they are sorted in a copy."""
    r, _, r_starts = _concat(right)
    w, _, w_starts = _concat(wrong)
    return grouped_rows_of(r, r_starts, w, w_starts, sorted_rows=sorted_rows)


def grouped_rows_of(
    r: np.ndarray,
    r_starts: np.ndarray,
    w: np.ndarray,
    w_starts: np.ndarray,
    *,
    sorted_rows: bool = False,
) -> tuple[list[float], list[float]]:
    """:func:`grouped_rows` of every group's right and wrong answers given end to end, group
    ``g``'s from ``starts[g]`` to ``starts[g + 1]``. With ``sorted_rows`` each group's rows
    are sorted in place (writable float64 arrays; others are copied first), else in a copy."""
    groups = r_starts.shape[0] - 1
    # each row's group, 32-bit where the groups allow it (half the memory)
    id_type = np.int32 if groups < 2**31 else np.intp
    r_ids = np.repeat(np.arange(groups, dtype=id_type), np.diff(r_starts))
    w_ids = np.repeat(np.arange(groups, dtype=id_type), np.diff(w_starts))
    # the AUROC's counts do not depend on the order; the log loss sums each run sorted
    r, w = (
        v
        if sorted_rows and v.dtype == np.float64 and v.flags.writeable
        else np.array(v, np.float64)
        for v in (r, w)
    )
    _sorted_within(r, r_ids, r_starts)
    _sorted_within(w, w_ids, w_starts)
    n_right = np.diff(r_starts)
    n_wrong = np.diff(w_starts)

    twice_u = np.asarray(_twice_u(r, r_ids, r_starts, w, w_ids, w_starts), np.float64)
    pairs = 2 * n_right * n_wrong
    if int(pairs.max(initial=0)) < 2**53:  # both operands exact: one correctly rounded quotient
        with np.errstate(divide="ignore", invalid="ignore"):
            areas = np.where(pairs > 0, twice_u / pairs, math.nan).tolist()
    else:
        areas = [
            int(tu) / p if p else math.nan
            for tu, p in zip(twice_u.tolist(), pairs.tolist(), strict=True)
        ]

    # log loss: each group's run of losses summed as the one-group estimator sums it
    with np.errstate(divide="ignore"):
        r_loss = -np.log(r)
        w_loss = -np.log1p(-w)
    right_total = run_sums(r_loss, r_starts)
    wrong_total = run_sums(w_loss, w_starts)
    right_total[r_ids[np.isinf(r_loss)]] = math.inf
    wrong_total[w_ids[np.isinf(w_loss)]] = math.inf
    for g in np.flatnonzero((n_right > _CHUNK) | (n_wrong > _CHUNK)).tolist():
        # summed in chunks: the one-group sum itself
        right_total[g] = _loss_total(r[r_starts[g] : r_starts[g + 1]], None, True)
        wrong_total[g] = _loss_total(w[w_starts[g] : w_starts[g + 1]], None, False)
    rows = (n_right + n_wrong).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        losses = np.where(rows > 0, (right_total + wrong_total) / rows, math.nan).tolist()
    return losses, areas


# Rows per group from which each group's AUROC counts take their own two searches: a search of
# float keys in one group's rows costs a few microseconds of call overhead, one of (group,
# value) complex keys over all the rows about 0.1 µs more per row.
_SEARCH_EACH = 256
_SEARCH_SLICE = 1 << 16  # right answers searched at once


def _twice_u(
    r: np.ndarray,
    r_ids: np.ndarray,
    r_starts: np.ndarray,
    w: np.ndarray,
    w_ids: np.ndarray,
    w_starts: np.ndarray,
) -> list[float]:
    """Each group's 2U = Σ over its right answers c of #{its wrong < c} + #{its wrong ≤ c}, as
    a float (an exact integer below 2**53)."""
    groups = r_starts.shape[0] - 1
    w_sorted = _ascending_within(w, w_starts)
    if groups and r.shape[0] + w.shape[0] >= _SEARCH_EACH * groups:
        rs, ws = r_starts.tolist(), w_starts.tolist()
        out = []
        for g in range(groups):
            right, wrong = r[rs[g] : rs[g + 1]], w[ws[g] : ws[g + 1]]
            if not (right.shape[0] and wrong.shape[0]):
                out.append(0.0)
                continue
            if not w_sorted:
                wrong = np.sort(wrong)
            below = np.searchsorted(wrong, right, side="left")
            not_above = np.searchsorted(wrong, right, side="right")
            out.append(float(int(below.sum()) + int(not_above.sum())))
        return out
    # searches of (group, c) keys into the sorted (group, wrong) keys, a slice of right
    # answers at a time (small temporaries); each group's counts summed exactly below 2**53
    w_keys = _keys(w_ids, w)
    if not w_sorted:
        w_keys.sort()
    out = np.zeros(groups)
    for a in range(0, r.shape[0], _SEARCH_SLICE):
        ids = r_ids[a : a + _SEARCH_SLICE]
        r_keys = _keys(ids, r[a : a + _SEARCH_SLICE])
        twice_u = np.searchsorted(w_keys, r_keys, side="left")
        twice_u += np.searchsorted(w_keys, r_keys, side="right")
        twice_u -= 2 * w_starts[ids]
        out += np.bincount(ids, weights=twice_u, minlength=groups)
    return out.tolist()
