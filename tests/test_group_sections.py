"""The vectorised --by sections equal the one-group estimators' sections, value for value.

calibcli.reports.calibrate_groups computes every group's figures at once from the (groups ×
bins) tables; the reference here is calibration_section (calibration_estimates and the
one-group metric functions) called group by group on the same rows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.reports.calibrate import calibration_section
from calibcli.reports.calibrate_groups import batchable, group_sections
from calibcli.summaries.calibration import CalibrationSettings, CalibrationSummary


def _summary(conf: np.ndarray, correct: np.ndarray, groups: list[str], bins: int):
    return CalibrationSummary.from_arrays(
        conf, correct, settings=CalibrationSettings(bins=bins, by="g"), groups=groups
    )


def _rows(seed: int, n_groups: int, rows: int):
    """Rows in many small groups: ties, confidences of exactly 0 and 1 (infinite NLL), groups
    of one row, groups all right or all wrong, empty bins."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 2, 3, 5, 20, 200], size=n_groups)
    sizes[: min(3, n_groups)] = 1
    ids = np.repeat(np.arange(n_groups), sizes)[:rows]
    n = ids.shape[0]
    conf = rng.beta(3.0, 1.5, n)
    tie = rng.random(n) < 0.3
    conf[tie] = np.round(conf[tie], 1)
    edge = rng.random(n) < 0.02
    conf[edge] = rng.choice([0.0, 1.0], size=int(edge.sum()))
    correct = rng.random(n) < conf
    mode = rng.integers(0, 6, n_groups)
    correct[mode[ids] == 0] = True
    correct[mode[ids] == 1] = False
    perm = rng.permutation(n)  # groups interleaved in the input, as in a file
    return conf[perm], correct[perm], [f"g{k}" for k in ids[perm]]


def _json(a) -> str:
    return json.dumps(a, allow_nan=True)


def _compare(summary, *, bins, min_bins, reorder_ok, smooth, reference_summary):
    views = summary.by_group()
    assert batchable(views, bins=bins, strategy="uniform", bootstrap=None)
    batch = group_sections(
        views,
        bins=bins,
        strategy="uniform",
        min_bins=min_bins,
        reorder_ok=reorder_ok,
        smooth=smooth,
    )
    reference_views = reference_summary.by_group()
    assert list(batch) == list(reference_views)
    for name, view in reference_views.items():
        expected = calibration_section(
            view,
            bins=bins,
            strategy="uniform",
            min_bins=min_bins,
            bootstrap=None,
            reorder_ok=reorder_ok,
            smooth=smooth,
        )
        got = batch[name]
        assert _json(dict(got.figures)) == _json(expected.figures), name
        assert got.notes == expected.notes, name
        assert got.closed == expected.closed, name


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_groups=st.integers(1, 60),
    bins=st.sampled_from([1, 2, 7, 10, 15]),
    min_bins=st.integers(1, 6),
    reorder_ok=st.booleans(),
    smooth=st.booleans(),
)
def test_group_sections_equal_the_one_group_path(
    seed, n_groups, bins, min_bins, reorder_ok, smooth
):
    conf, correct, groups = _rows(seed, n_groups, 4000)
    min_bins = min(min_bins, bins)
    _compare(
        _summary(conf, correct, groups, bins),
        bins=bins,
        min_bins=min_bins,
        reorder_ok=reorder_ok,
        smooth=smooth,
        reference_summary=_summary(conf, correct, groups, bins),
    )


@pytest.mark.parametrize("reorder_ok", [False, True])
def test_groups_larger_than_a_loss_chunk(reorder_ok):
    """Groups with more than 2**16 rows of a class sum their losses in chunks."""
    rng = np.random.default_rng(7)
    n = 150_000
    conf = rng.beta(4.0, 1.5, n)
    correct = rng.random(n) < conf
    groups = [f"t{k}" for k in rng.integers(0, 2, n)]
    _compare(
        _summary(conf, correct, groups, 10),
        bins=10,
        min_bins=3,
        reorder_ok=reorder_ok,
        smooth=False,
        reference_summary=_summary(conf, correct, groups, 10),
    )


def test_checked_figures_strict_matches_the_full_walk():
    """strict() of figures marked checked gives the same JSON and the same non-finite paths,
    in the same order, as its walk over the same figures as a plain dict."""
    from calibcli.reports.report import CheckedFigures, strict

    items = [
        ("n", 3),
        ("ece", 0.25),
        ("smece", float("nan")),
        ("nll", float("inf")),
        ("auroc", 0.5),
        ("reliability", {"count": [1, 0, 2], "confidence": [0.1, None, 0.9]}),
    ]
    loose = ("smece", "nll", "auroc")
    checked = {"groups": {"a|b": CheckedFigures(items, loose=loose)}}
    plain = {"groups": {"a|b": dict(items)}}
    bad_checked: list = []
    bad_plain: list = []
    got = strict(checked, "", bad_checked)
    want = strict(plain, "", bad_plain)
    assert json.dumps(got, allow_nan=False) == json.dumps(want, allow_nan=False)
    assert [p for p, _ in bad_checked] == ["groups.a|b.smece", "groups.a|b.nll"]
    assert repr(bad_checked) == repr(bad_plain)


def _report_text(summary, monkeypatch, *, batched: bool, **options):
    """The calibrate report's JSON and warnings, its groups built at once or (``batched``
    False) group by group with calibration_section, the one-group path."""
    import calibcli.reports.calibrate as calibrate

    with monkeypatch.context() as m:
        if not batched:
            m.setattr(calibrate, "_group_sections", lambda views, **_: None)
        report = calibrate.calibrate_report(summary, reorder_ok=True, **options)
    return report.to_json(), report.warnings, report.failures


@pytest.mark.parametrize("n_groups", [40, 1500])  # smece per group, and left out above 1,000
def test_group_table_report_equals_the_one_group_path(n_groups, monkeypatch):
    """The whole report written from the group table (its JSON text, the strict-JSON nulls and
    their warnings, the non_finite map) equals the report of per-group sections, byte for
    byte; group names with quotes, backslashes, '|', '%' and non-ASCII letters included."""
    from calibcli.reports.gate import Gate

    conf, correct, groups = _rows(11, n_groups, 40 * n_groups)
    odd = {
        "g0": 'quo"te',
        "g1": "back\\slash",
        "g2": "a|b %s",
        "g3": "\u00e9t\u00e9 \u65e5",
        "g4": "None",
    }
    groups = [odd.get(g, g) for g in groups]
    for gate in (None, Gate({"ece": 0.2}, "estimate", True)):
        want = _report_text(
            _summary(conf, correct, groups, 10), monkeypatch, batched=False, gate=gate
        )
        got = _report_text(
            _summary(conf, correct, groups, 10), monkeypatch, batched=True, gate=gate
        )
        assert got == want
        body = json.loads(got[0])
        assert "non_finite" in body  # confidences of 0 and 1: infinite NLL in some groups


def test_group_table_maps_names_to_figures():
    """The table reads as the dict of every group's figures: the same keys, in order, and the
    same values as json.loads of its own text."""
    from calibcli.reports.group_table import GroupTable

    conf, correct, groups = _rows(3, 30, 3000)
    summary = _summary(conf, correct, groups, 7)
    views = summary.by_group()
    batch = group_sections(
        views, bins=7, strategy="uniform", min_bins=3, reorder_ok=False, smooth=True
    )
    table = batch.table
    assert isinstance(table, GroupTable)
    assert list(table) == list(views)
    parsed = json.loads(table.strict("groups", []).to_json())
    assert list(parsed) == list(table)
    for name in table:
        assert json.loads(json.dumps(table.strict("groups", [])[name])) == parsed[name]
        assert list(table[name]) == list(parsed[name])


def test_figures_made_a_few_groups_at_a_time_equal_the_one_group_path(monkeypatch):
    """Every pass that treats the groups a slice at a time (the binned figures, the bins'
    intervals, the medians, the AUROC searches and the JSON chunks) gives, with slices of a
    few groups or rows, the one-group report byte for byte."""
    import calibcli.metrics.grouped as grouped
    import calibcli.reports.calibrate_groups as calibrate_groups
    import calibcli.reports.group_table as group_table

    conf, correct, groups = _rows(19, 300, 12_000)
    want = _report_text(_summary(conf, correct, groups, 10), monkeypatch, batched=False)
    with monkeypatch.context() as m:
        m.setattr(grouped, "_GROUPS_AT_ONCE", 7)
        m.setattr(grouped, "_SEARCH_SLICE", 53)
        m.setattr(group_table, "CHUNK", 5)
        m.setattr(calibrate_groups, "CHUNK", 3)
        got = _report_text(_summary(conf, correct, groups, 10), monkeypatch, batched=True)
    assert got == want
