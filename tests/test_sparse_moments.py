"""The smooth ECE's grid histograms held sparse: the same floats as the dense (groups, 2, m)
arrays they stand for, added one cell at a time as ``np.add.at`` adds, and summaries that grow
with their rows rather than with their groups times the grid.

References are computed here cell by cell in plain Python floats (one rounding per addition,
in the order the additions happen), never by the code under test."""

from __future__ import annotations

import json
import struct

import numpy as np
from harness import run, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.summaries.moments import SparseGrids

M = 3  # grid points: a group's histogram has 2 * M cells

cell_values = st.one_of(
    st.just(0.0),
    st.just(-0.0),
    st.floats(-4.0, 4.0, allow_nan=False, allow_subnormal=True),
    st.sampled_from([1e-300, -1e-300, 5e-324, 0.1, -0.1, 1.0, -1.0, 2.0**53]),
)


def grids(groups: int):
    return st.lists(
        st.lists(cell_values, min_size=2 * M, max_size=2 * M), min_size=groups, max_size=groups
    )


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def dense_of(rows: list[list[float]]) -> np.ndarray:
    return np.array(rows, dtype=np.float64).reshape(len(rows), 2, M)


def reference_sum(parts, groups: int) -> list[list[float]]:
    """Zeros, then every part's group j added into group at[j], cell by cell, in order."""
    out = [[0.0] * (2 * M) for _ in range(groups)]
    for rows, at in parts:
        for j, row in enumerate(rows):
            for k, v in enumerate(row):
                out[at[j]][k] = out[at[j]][k] + v
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda groups: st.tuples(
            st.just(groups),
            st.lists(
                st.integers(1, 4).flatmap(
                    lambda n: st.tuples(
                        grids(n), st.lists(st.integers(0, groups - 1), min_size=n, max_size=n)
                    )
                ),
                min_size=1,
                max_size=4,
            ),
        )
    )
)
def test_adding_parts_gives_the_dense_sums_bit_for_bit(case):
    groups, parts = case
    out = SparseGrids(M, groups)
    for rows, at in parts:
        out.add(SparseGrids.of_dense(dense_of(rows)), np.array(at))
    expected = reference_sum(parts, groups)
    for g in range(groups):
        got = out.dense(g).reshape(-1).tolist()
        assert [bits(v) for v in got] == [bits(v) for v in expected[g]]
    _, values, _ = out.arrays()
    assert not np.any(values.view(np.uint64) == 0)  # +0.0 is never kept


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 5).flatmap(grids))
def test_a_group_alone_keeps_every_value_and_sign(rows):
    sparse = SparseGrids.of_dense(dense_of(rows))
    for g, row in enumerate(rows):
        alone = sparse.group(g)
        assert [bits(v) for v in alone.dense(0).reshape(-1).tolist()] == [bits(v) for v in row]
        assert [bits(v) for v in sparse.dense(g).reshape(-1).tolist()] == [bits(v) for v in row]


def test_negative_zero_is_kept_alone_and_gone_once_added():
    rows = [[-0.0, 0.0, 1.5, -0.0, 0.0, 0.0]]
    sparse = SparseGrids.of_dense(dense_of(rows))
    cells, values, offsets = sparse.arrays()
    assert cells.tolist() == [0, 2, 3] and offsets.tolist() == [0, 3]
    assert [bits(v) for v in values.tolist()] == [bits(-0.0), bits(1.5), bits(-0.0)]
    added = SparseGrids(M, 1)
    added.add(sparse, np.array([0]))
    # 0.0 + -0.0 is +0.0: the dense sum's cell, which the sparse form leaves out
    assert added.arrays()[0].tolist() == [2]


def _v1_bytes(blob: bytes) -> bytes:
    """The same summary in format version 1, whose smooth-ECE grids were dense (groups, 2, m)
    float64 arrays, written from the layout the format's documentation gives."""
    prefix = struct.Struct("<16sIIQ")
    magic, _, reserved, length = prefix.unpack(blob[: prefix.size])
    meta = json.loads(blob[prefix.size : prefix.size + length])
    arrays, at = {}, prefix.size + length
    for spec in meta["arrays"]:
        dtype = np.dtype(spec["dtype"])
        count = int(np.prod(spec["shape"], dtype=np.int64))
        arrays[spec["name"]] = np.frombuffer(blob, dtype, count, at).reshape(spec["shape"])
        at += -(-(count * dtype.itemsize) // 8) * 8
    moments = meta["moments"]
    groups = moments["groups"]
    for key, names in list(moments["grids"].items()):
        m = int(key)
        dense = np.zeros((groups, 2 * m))
        offsets = arrays.pop(names["offsets"])
        cells, values = arrays.pop(names["cells"]), arrays.pop(names["values"])
        for g in range(groups):
            a, b = int(offsets[g]), int(offsets[g + 1])
            dense[g, cells[a:b]] = values[a:b]
        arrays[f"moments.grid.{m}"] = dense.reshape(groups, 2, m)
        moments["grids"][key] = f"moments.grid.{m}"
    meta["arrays"] = [
        {"name": name, "dtype": a.dtype.str, "shape": list(a.shape)} for name, a in arrays.items()
    ]
    text = json.dumps(meta, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    out = [prefix.pack(magic, 1, reserved, len(text)), text]
    for a in arrays.values():
        raw = np.ascontiguousarray(a).tobytes()
        out.append(raw + b"\0" * (-len(raw) % 8))
    return b"".join(out)


def _rows(n: int, groups: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    conf = rng.random(n)
    conf[:5] = [0.0, 1.0, 0.5, 0.25, 0.125]  # on grid points: zero weights beside them
    return [
        {"confidence": float(c), "correct": bool(y), "task": f"t{k}"}
        for c, y, k in zip(conf, rng.random(n) < conf, rng.integers(0, groups, n), strict=True)
    ]


def test_a_version_1_summary_reads_to_the_same_figures(tmp_path):
    data = write_jsonl(tmp_path / "rows.jsonl", _rows(600, 7))
    summary = tmp_path / "rows.summary"
    r = run(["summarize", str(data), "--by", "task", "--table", "never", "-o", str(summary)])
    assert r.exit_code == 0, r.output
    old = tmp_path / "old.summary"
    old.write_bytes(_v1_bytes(summary.read_bytes()))
    new_report = run(["calibrate", str(summary), "--by", "task", "--json"])
    old_report = run(["calibrate", str(old), "--by", "task", "--json"])
    assert new_report.exit_code == old_report.exit_code == 0
    assert new_report.stdout == old_report.stdout
    assert json.loads(new_report.stdout)["groups"]["t0"]["smece"] is not None
    # a version-1 part merged with a version-2 part: the merge of two version-2 parts
    halves = []
    for k in (1, 2):
        part = tmp_path / f"part{k}.summary"
        argv = ["summarize", str(data), "--by", "task", "--table", "never", "--part", f"{k}/2"]
        r = run([*argv, "-o", str(part)])
        assert r.exit_code == 0, r.output
        halves.append(part)
    old_half = tmp_path / "old_part1.summary"
    old_half.write_bytes(_v1_bytes(halves[0].read_bytes()))
    reports = []
    for first in (halves[0], old_half):
        merged = tmp_path / f"merged_{first.stem}.summary"
        r = run(["merge", str(first), str(halves[1]), "-o", str(merged)])
        assert r.exit_code == 0, r.output
        reports.append(run(["calibrate", str(merged), "--by", "task", "--json"]).stdout)
    assert reports[0] == reports[1]


def test_a_summary_grows_with_its_rows_not_its_groups_times_the_grid(tmp_path):
    # 2,000 groups of 2 rows: dense grids alone were 2,000 x 2 x 18,966 doubles (607 MB)
    data = write_jsonl(tmp_path / "rows.jsonl", _rows(4_000, 2_000))
    summary = tmp_path / "rows.summary"
    r = run(["summarize", str(data), "--by", "task", "-o", str(summary)])
    assert r.exit_code == 0, r.output
    assert summary.stat().st_size < 4_000 * 1_000  # under 1 KB a row, all grids included
