"""Under --by with kept rows, the rows carry the table: it is folded once, from every kept row,
when the summary is made, and a worker's share travels without it.

The reference is the table folded block by block as the rows are read (a summary that keeps
no rows is built that way): the same counts and the same exact sums, limb for limb. The
table is read back a range of groups at a time, and those ranges are the whole table's rows,
bit for bit; and a summary's group views do not hold the summary, so that dropping the
summary frees its arrays at once, not at the next garbage collection.
"""

from __future__ import annotations

import gc
import itertools
import math
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.metrics.grouped import _ascending_within, _sorted_within
from calibcli.summaries import CalibrationSettings, CalibrationSummary
from calibcli.summaries.calibration import CalibrationBuilder
from calibcli.summaries.encoding import (
    SummaryError,
    array_specs,
    assemble,
    encode,
    read_header,
)
from calibcli.summaries.group_views import SummaryGroupTables
from calibcli.summaries.sources import Source
from calibcli.summaries.tables import GroupReader

confidence = st.one_of(
    st.floats(0.0, 1.0),
    st.integers(0, 20).map(lambda k: k / 20),  # ties and bin edges
    st.sampled_from([0.0, 1.0, 5e-324, 1.0 - 2**-53]),
)
rows = st.lists(
    st.tuples(confidence, st.booleans(), st.sampled_from(["a", "b", "c", "d", "é", "0"])),
    min_size=1,
    max_size=120,
)


def _arrays(data):
    conf = np.array([c for c, _, _ in data], np.float64)
    corr = np.array([y for _, y, _ in data], bool)
    return conf, corr, [g for _, _, g in data]


def _summary(data, bins, keep_rows):
    conf, corr, groups = _arrays(data)
    return CalibrationSummary.from_arrays(
        conf,
        corr,
        settings=CalibrationSettings(bins=bins, by="g"),
        groups=groups,
        keep_rows=keep_rows,
    )


def _same_tables(a, b):
    assert a.group_names == b.group_names
    assert a.table.groups == b.table.groups
    for x, y in (
        (a.table.conf, b.table.conf),
        (a.table.conf_sq, b.table.conf_sq),
        (a.table.miss_sq, b.table.miss_sq),
    ):
        (lo_x, limbs_x), (lo_y, limbs_y) = x.trimmed(), y.trimmed()
        assert lo_x == lo_y or limbs_x.shape[1] == limbs_y.shape[1] == 0
        assert np.array_equal(limbs_x, limbs_y)
    cells = a.table.groups * a.table.bins
    assert np.array_equal(a.table.counts[:cells], b.table.counts[:cells])


def _bits(array):
    return np.ascontiguousarray(array, np.float64).view(np.int64)


@settings(max_examples=60, deadline=None)
@given(rows, st.sampled_from([1, 3, 10, 17]))
def test_the_table_of_the_kept_rows_is_the_table_folded_as_read(data, bins):
    carried = _summary(data, bins, keep_rows=True)
    folded = _summary(data, bins, keep_rows=False)
    assert carried.kept is not None and folded.kept is None
    _same_tables(carried, folded)
    assert carried.n == folded.n == len(data)


@settings(max_examples=30, deadline=None)
@given(rows, st.integers(0, 120))
def test_a_share_travels_without_its_table_and_the_parent_folds_it(data, cut):
    """A worker's share (rows and group names, an empty table) absorbed after the parent's
    own rows gives the one-pass table; an empty table with group names is refused as damaged
    anywhere but in a share."""
    settings_ = CalibrationSettings(bins=10, by="g")
    cut = min(cut, len(data))

    def builder():
        b = CalibrationBuilder(settings_, keep_rows=True, grouped=True)
        b.begin_source()
        return b

    def add(b, part):
        conf, corr, groups = _arrays(part)
        if part:
            b.add((conf, corr), groups, None)

    worker = builder()
    add(worker, data[cut:])
    share = worker.share()
    assert share.table.groups == 0
    header, arrays = encode(share)
    meta, _ = read_header(header)
    named = {name: array for (name, _, _), array in zip(array_specs(meta), arrays, strict=True)}
    parent = builder()
    add(parent, data[:cut])
    if data[cut:]:
        with pytest.raises(SummaryError, match="damaged"):
            assemble(meta, named)
    parent.absorb(assemble(meta, named, table_in_rows=True))
    parent.end_source(Source("<arrays>", "", None, 0))
    whole = parent.summary()
    assert whole.sources[0].rows == len(data)
    _same_tables(whole, _summary(data, 10, keep_rows=False))


@settings(max_examples=30, deadline=None)
@given(rows, st.data())
def test_a_range_of_groups_reads_back_as_those_rows_of_the_whole(data, draw):
    summary = _summary(data, 7, keep_rows=False)
    groups = summary.table.groups
    start = draw.draw(st.integers(0, groups))
    stop = draw.draw(st.integers(start, groups))
    whole = summary.table.group_tables()
    part = GroupReader(summary.table).rows(start, stop)
    for field in whole.FIELDS:
        assert np.array_equal(_bits(getattr(part, field)), _bits(getattr(whole, field)[start:stop]))
    lazy = SummaryGroupTables(summary.table)
    before = lazy.rows(start, stop)  # made from the exact sums
    assert np.array_equal(_bits(lazy.sum_sq_error), _bits(whole.sum_sq_error))  # read whole
    after = lazy.rows(start, stop)  # sliced from what was read
    for field in whole.FIELDS:
        want = _bits(getattr(whole, field)[start:stop])
        assert np.array_equal(_bits(getattr(before, field)), want)
        assert np.array_equal(_bits(getattr(after, field)), want)


def test_the_views_do_not_keep_the_summary_alive():
    rng = np.random.default_rng(2)
    conf = rng.random(500)
    summary = CalibrationSummary.from_arrays(
        conf,
        rng.random(500) < conf,
        settings=CalibrationSettings(by="g"),
        groups=[f"g{k}" for k in rng.integers(0, 40, 500)],
    )
    views = summary.by_group()
    assert len(views) == 40
    gone = weakref.ref(summary)
    enabled = gc.isenabled()
    gc.disable()  # freed by its reference count alone, not by a collection
    try:
        del summary
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
    assert views.view(3).n == int(views.tables.count[3].sum())


runs = st.lists(st.lists(st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, 0.75]), max_size=6))


@settings(max_examples=200, deadline=None)
@given(runs)
def test_values_are_sorted_within_their_runs_in_place(groups):
    values = np.array([v for run in groups for v in run], np.float64)
    starts = np.zeros(len(groups) + 1, np.int64)
    np.cumsum([len(run) for run in groups], out=starts[1:])
    ids = np.repeat(np.arange(len(groups)), np.diff(starts))
    ascending = all(all(a <= b for a, b in itertools.pairwise(run)) for run in groups)
    assert _ascending_within(values, starts) == ascending
    _sorted_within(values, ids, starts)
    assert values.tolist() == [v for run in groups for v in sorted(run)]


def test_read_only_rows_are_sorted_in_a_copy():
    from calibcli.metrics.grouped import grouped_rows_of

    right = np.array([0.9, 0.2, 0.7, 0.4])
    wrong = np.array([0.8, 0.1, 0.3])
    right.setflags(write=False)
    wrong.setflags(write=False)
    starts_r, starts_w = np.array([0, 2, 4]), np.array([0, 1, 3])
    nll, auroc = grouped_rows_of(right, starts_r, wrong, starts_w, sorted_rows=True)
    assert right.tolist() == [0.9, 0.2, 0.7, 0.4] and wrong.tolist() == [0.8, 0.1, 0.3]
    assert auroc == [0.5, 1.0]  # (0.9 > 0.8, 0.2 < 0.8); both right ones above 0.1 and 0.3
    want = (-math.log(0.9) - math.log(0.2) - math.log1p(-0.8)) / 3
    assert nll[0] == pytest.approx(want, rel=1e-15)
