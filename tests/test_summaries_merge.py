"""Summaries merge to what one pass over the rows gives, whatever the split and the merge order.

Split any rows at any points, summarise the parts, merge them in any grouping and order: the
counts, the exact tables (to the last limb), the ranks and the thresholds are identical, the
binned figures bit-identical, and the figures computed from the kept rows (whose order follows
the merge order) agree to 1e-12. The CLI gives byte-identical reports with --workers 1 and 2.
"""

from __future__ import annotations

import json
import math
import pickle
import random

import numpy as np
import pytest
from harness import run, write_jsonl
from hypothesis import example, given, settings
from hypothesis import strategies as st

from calibcli.reports.calibrate import calibration_section
from calibcli.summaries import (
    CalibrationSettings,
    CalibrationSummary,
    SummaryError,
    SummaryMismatch,
    from_bytes,
    to_bytes,
)

BINNED = (
    "ece",
    "mce",
    "rmsce",
    "rmsce_debiased",
    "ece_1bin",
    "brier",
    "accuracy",
    "mean_confidence",
    "populated_bins",
    "bins_used",
    "n",
)

confidence = st.one_of(
    st.floats(0.0, 1.0),
    st.integers(0, 100).map(lambda k: k / 100),  # two decimals, many ties
    st.sampled_from([0.0, 1.0]),
)
rows = st.lists(st.tuples(confidence, st.booleans(), st.sampled_from("abc")), max_size=80)


def summary_of(part, settings, grouped):
    conf = np.array([c for c, _, _ in part], np.float64)
    corr = np.array([y for _, y, _ in part], bool)
    groups = [g for _, _, g in part] if grouped else None
    return CalibrationSummary.from_arrays(conf, corr, settings=settings, groups=groups)


def merge_randomly(parts, rng):
    """Merge in a random tree: repeatedly merge two random neighbours or strangers."""
    parts = list(parts)
    while len(parts) > 1:
        i, j = rng.sample(range(len(parts)), 2)
        merged = parts[i].merge(parts[j])
        parts = [p for k, p in enumerate(parts) if k not in (i, j)] + [merged]
    return parts[0]


def assert_same_tables(a, b):
    assert a.group_names == b.group_names
    for x, y in (
        (a.table.conf, b.table.conf),
        (a.table.conf_sq, b.table.conf_sq),
        (a.table.miss_sq, b.table.miss_sq),
    ):
        lo_x, limbs_x = x.trimmed()
        lo_y, limbs_y = y.trimmed()
        assert lo_x == lo_y or limbs_x.shape[1] == limbs_y.shape[1] == 0
        assert np.array_equal(limbs_x, limbs_y)
    cells = a.table.groups * a.table.bins
    assert np.array_equal(a.table.counts[:cells], b.table.counts[:cells])


def assert_same_figures(a, b):
    for key in BINNED:
        assert a[key] == b[key] or (a[key] is None and b[key] is None), key
    for key, value in a["brier_decomposition"].items():
        assert value == b["brier_decomposition"][key], key
    assert a["reliability"] == b["reliability"]
    for key in ("auroc", "nll", "smece", "smece_bandwidth"):
        x, y = a[key], b[key]
        if x is None or (isinstance(x, float) and math.isnan(x)):
            assert y is None or math.isnan(y)
        elif key == "auroc":
            assert x == y  # an exact count
        else:
            assert y == pytest.approx(x, rel=1e-12, abs=1e-15), key


@settings(max_examples=40)
@given(rows, st.integers(1, 12), st.booleans(), st.integers(0, 2**32), st.integers(1, 5))
def test_any_split_and_merge_order_gives_the_one_pass_summary(data, bins, grouped, seed, cuts):
    rng = random.Random(seed)
    settings_ = CalibrationSettings(bins=bins, by="g" if grouped else None)
    one = summary_of(data, settings_, grouped)
    points = sorted(rng.choice(range(len(data) + 1)) for _ in range(cuts))
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    merged = merge_randomly([summary_of(p, settings_, grouped) for p in pieces], rng)
    assert merged.n == one.n == len(data)
    assert_same_tables(merged, one)
    assert merged.fingerprint.same_rows(one.fingerprint)
    # every figure of the pooled rows and of each group
    for a, b in [
        (one.pooled(), merged.pooled()),
        *zip((one.by_group() or {}).values(), (merged.by_group() or {}).values(), strict=True),
    ]:
        x = calibration_section(a, bins=bins, strategy="uniform", min_bins=1, bootstrap=None)
        y = calibration_section(b, bins=bins, strategy="uniform", min_bins=1, bootstrap=None)
        assert_same_figures(x.figures, y.figures)
        if a.n:
            assert sorted(a.columns.conf_correct) == sorted(b.columns.conf_correct)


@settings(max_examples=25)
@given(rows, st.booleans())
def test_bytes_round_trip_exactly(data, grouped):
    settings_ = CalibrationSettings(bins=7, by="g" if grouped else None)
    summary = summary_of(data, settings_, grouped)
    blob = to_bytes(summary)
    back = from_bytes(blob)
    assert to_bytes(back) == blob
    assert_same_tables(back, summary)
    assert np.array_equal(back.kept.right, summary.kept.right)
    assert np.array_equal(back.kept.wrong, summary.kept.wrong)
    assert back.settings == summary.settings


def test_merge_refuses_other_settings():
    a = summary_of([(0.5, True, "a")], CalibrationSettings(bins=10), False)
    b = summary_of([(0.5, True, "a")], CalibrationSettings(bins=15), False)
    with pytest.raises(SummaryMismatch, match=r"bins 10 != 15"):
        a.merge(b)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_refusal_keeps_its_part_when_pickled(protocol):
    """Worker processes (multiprocessing, Dask, Spark) send exceptions back pickled: the part a
    refusal is about, and the one-line message of parts refused when measured, survive."""
    from calibcli.errors import InputError
    from calibcli.io.parts import PartsError
    from calibcli.summaries import check_disjoint

    part = part_of([(0.5, True, "a")], CalibrationSettings(bins=10), False, 0)
    with pytest.raises(SummaryMismatch) as raised:
        check_disjoint([part, part], ["a.cbs", "b.cbs"])
    back = pickle.loads(pickle.dumps(raised.value, protocol=protocol))
    assert type(back) is SummaryMismatch
    assert (str(back), back.part) == (str(raised.value), "b.cbs")
    assert pickle.loads(pickle.dumps(SummaryMismatch("m"), protocol=protocol)).part is None
    refused = PartsError("b.cbs", None, "a.cbs and b.cbs both count x.jsonl")
    back = pickle.loads(pickle.dumps(refused, protocol=protocol))
    assert type(back) is PartsError and isinstance(back, InputError)
    assert (str(back), back.path) == ("a.cbs and b.cbs both count x.jsonl", "b.cbs")


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b"not a summary", "not a calibcli summary"),
        (b"CALIBCLI SUMMARY" + (6).to_bytes(4, "little") + bytes(12), "format version 6"),
        (b"CALIBCLI SUMMARY" + (0).to_bytes(4, "little") + bytes(12), "format version 0"),
        (
            b"CALIBCLI SUMMARY" + (1).to_bytes(4, "little") + bytes(4) + (99).to_bytes(8, "little"),
            "truncated",
        ),
    ],
)
def test_other_bytes_are_refused(blob, message):
    with pytest.raises(SummaryError, match=message):
        from_bytes(blob)


def test_a_summary_is_small_and_independent_of_the_rows():
    rng = np.random.default_rng(0)
    sizes = []
    for n in (1_000, 100_000):
        conf = rng.random(n)
        summary = CalibrationSummary.from_arrays(
            conf, rng.random(n) < conf, settings=CalibrationSettings(bins=100), keep_rows=False
        )
        sizes.append(len(to_bytes(summary)))
    assert sizes[1] <= sizes[0] + 1024  # a limb or two more for larger sums
    assert sizes[1] < 64 * 1024


@pytest.mark.parametrize("extra", [[], ["--ci", "0.9", "--bootstrap", "200"], ["--by", "g"]])
def test_workers_give_byte_identical_reports(tmp_path, extra):
    rng = random.Random(5)
    data = [
        {"confidence": rng.random(), "correct": rng.random() < 0.7, "g": rng.choice("xyz")}
        for _ in range(30_000)
    ]
    path = write_jsonl(tmp_path / "p.jsonl", data)
    out = []
    for workers in ("1", "2"):
        result = run(["calibrate", path, "--json", "-q", "--workers", workers, *extra])
        assert result.exit_code == 0, result.stderr
        out.append(result.stdout)
    assert out[0] == out[1]
    assert json.loads(out[0])["n"] == 30_000


def test_perplexity_workers_give_byte_identical_reports(tmp_path):
    rng = random.Random(6)
    data = [{"nll": rng.random() * 50, "tokens": rng.randrange(1, 40)} for _ in range(40_000)]
    path = write_jsonl(tmp_path / "p.jsonl", data)
    out = [run(["perplexity", path, "--json", "--workers", w]).stdout for w in ("1", "2")]
    assert out[0] == out[1]
    want = math.fsum(r["nll"] for r in data)  # correctly rounded, as the exact sum is
    assert json.loads(out[0])["total_nll"] == want


# --------------------------------------------------------------------------- parts (summary files)


def part_of(piece, settings, grouped, k, table="auto"):
    """The part summarize would write for ``piece``: a named source of its own content."""
    from dataclasses import replace

    from calibcli.summaries import Source, to_part

    summary = summary_of(piece, settings, grouped)
    source = Source(f"shard{k:02d}.jsonl", f"content-{k}", "jsonl", len(piece))
    part, _ = to_part(replace(summary, sources=(source,)), table)
    return from_bytes(to_bytes(part))


def merge_tree(parts, rng):
    """Merge parts in a random tree, each merge through bytes as `calibcli merge` does."""
    from calibcli.summaries import merge_parts

    parts = list(parts)
    while len(parts) > 1:
        i, j = rng.sample(range(len(parts)), 2)
        merged = merge_parts([parts[i], parts[j]], ["a", "b"])
        parts = [p for k, p in enumerate(parts) if k not in (i, j)]
        parts.append(from_bytes(to_bytes(merged)))
    return parts[0]


@settings(max_examples=30)
@given(rows, st.integers(1, 12), st.booleans(), st.integers(0, 2**32), st.integers(1, 5))
@example([(0.0, True, "b"), (1.0, True, "a")], 1, True, 0, 1)  # groups out of name order
def test_parts_merged_in_any_tree_give_the_one_pass_figures(data, bins, grouped, seed, cuts):
    """Parts written as files and merged in any grouping: the distinct table is the one pass's
    exactly, the rows it gives back are the one pass's rows (sorted), and every figure from it
    is the one pass's under the rules above; the sums without the table too."""
    from dataclasses import replace

    from calibcli.summaries import rows_of

    rng = random.Random(seed)
    settings_ = CalibrationSettings(bins=bins, by="g" if grouped else None)
    one = summary_of(data, settings_, grouped)
    points = sorted(rng.choice(range(len(data) + 1)) for _ in range(cuts))
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    merged = merge_tree([part_of(p, settings_, grouped, k) for k, p in enumerate(pieces)], rng)
    assert merged.n == len(data)
    assert_same_tables(merged, one)
    assert merged.distinct.n == len(data)
    expanded = replace(merged, kept=rows_of(merged), _views={})
    groups_one, groups_expanded = one.by_group() or {}, expanded.by_group() or {}
    assert sorted(groups_one) == sorted(groups_expanded)
    for a, b in [
        (one.pooled(), expanded.pooled()),
        *((groups_one[g], groups_expanded[g]) for g in sorted(groups_one)),
    ]:
        # rows come back value by value within each group, so compare them as multisets
        assert np.array_equal(np.sort(a.columns.conf_correct), np.sort(b.columns.conf_correct))
        assert np.array_equal(np.sort(a.columns.conf_wrong), np.sort(b.columns.conf_wrong))
        x = calibration_section(a, bins=bins, strategy="uniform", min_bins=1, bootstrap=None)
        y = calibration_section(b, bins=bins, strategy="uniform", min_bins=1, bootstrap=None)
        assert_same_figures(x.figures, y.figures)
    # without the table: the binned figures, NLL and smooth ECE from the sums
    bare = merge_tree(
        [part_of(p, settings_, grouped, k, "never") for k, p in enumerate(pieces)], rng
    )
    assert bare.distinct is None and bare.missing
    for a, b in [
        (one.pooled(), bare.pooled()),
        *zip((one.by_group() or {}).values(), (bare.by_group() or {}).values(), strict=True),
    ]:
        x = calibration_section(a, bins=bins, strategy="uniform", min_bins=1, bootstrap=None)
        y = calibration_section(b, bins=bins, strategy="uniform", min_bins=1, bootstrap=None)
        if not a.n:
            continue
        figures = dict(y.figures, auroc=x.figures["auroc"])  # the sums hold no ranks
        assert y.figures["auroc"] is None
        assert_same_figures(x.figures, figures)


def test_parts_merged_in_any_order_give_the_same_bytes():
    from calibcli.summaries import merge_parts

    rng = np.random.default_rng(3)
    data = [
        (float(c), bool(y), "ab"[i % 2])
        for i, (c, y) in enumerate(zip(rng.random(3000), rng.random(3000) < 0.6, strict=True))
    ]
    settings_ = CalibrationSettings(bins=10, by="g")
    parts = [part_of(data[k::7], settings_, True, k) for k in range(7)]
    orders = [list(range(7))] + [list(rng.permutation(7)) for _ in range(19)]
    blobs = {to_bytes(merge_parts([parts[i] for i in o], [str(i) for i in o])) for o in orders}
    assert len(blobs) == 1
