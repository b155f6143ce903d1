"""The engine-free half of the Spark and Dask integrations (calibcli.engines), run in this
process: partitions of Arrow batches folded into parts and merged in any tree give the report
``calibcli calibrate`` gives on the same rows as JSON Lines; a table of distinct confidences
merged past the cap is dropped with the reason, so AUROC is null and says why; bad values
add up across partitions whatever the merge order; byte ranges tile each file. No engine is
started: pyarrow, in the test group, is all these need."""

from __future__ import annotations

import json
from functools import reduce
from itertools import pairwise

import numpy as np
import pytest
from engine_checks import assert_same, cli_json

pa = pytest.importorskip("pyarrow")

from calibcli.engines import (  # noqa: E402
    file_jobs,
    finish,
    frame_spec,
    frame_task,
    merge_all,
    merge_tasks,
)
from calibcli.errors import InputError  # noqa: E402

ROWS = 4000


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """Rows with repeated confidences (ties) in three tasks, as columns and as a file."""
    rng = np.random.default_rng(7)
    conf = np.round(rng.beta(5, 2, ROWS), 3)
    correct = rng.random(ROWS) < conf
    task = np.array(["a", "b", "c"])[rng.integers(0, 3, ROWS)]
    path = tmp_path_factory.mktemp("rows") / "rows.jsonl"
    path.write_text(
        "".join(
            json.dumps({"confidence": float(c), "correct": bool(k), "task": str(t)}) + "\n"
            for c, k, t in zip(conf, correct, task, strict=True)
        )
    )
    batch = pa.RecordBatch.from_pydict(
        {"confidence": conf, "correct": correct, "task": task.tolist()}
    )
    return batch, str(path)


def parts(batch, spec, table, cuts):
    """One task result per partition, the batch cut at ``cuts``."""
    edges = [0, *cuts, batch.num_rows]
    return [
        frame_task(spec, table, i, [batch.slice(a, b - a)])
        for i, (a, b) in enumerate(pairwise(edges))
    ]


@pytest.mark.parametrize("by", [None, "task"])
def test_partitions_merged_in_any_tree_give_the_cli_report(rows, by):
    batch, path = rows
    want = cli_json("calibrate", path, *(["--by", by] if by else []))
    spec, table = frame_spec("calibration", ("confidence", "correct"), label="t", by=by)
    results = parts(batch, spec, table, [1, 999, 1000, 2500])
    trees = [
        merge_all(results, table),  # one merge of all
        reduce(lambda a, b: merge_tasks(a, b, table), results),  # left to right
        reduce(lambda a, b: merge_tasks(b, a, table), results[::-1]),  # right to left
        merge_tasks(merge_all(results[3:], table), merge_all(results[:3], table), table),
    ]
    for tree in trees:
        assert_same(finish(tree).report(), want, files=False)


def test_a_table_past_the_cap_is_dropped_and_auroc_says_why(rows, monkeypatch):
    import calibcli.summaries

    batch, _ = rows
    distinct = len(np.unique(batch.column(0).to_numpy()))
    # each half under the cap, the two together above it: the merge drops the table
    monkeypatch.setattr(calibcli.summaries, "MAX_DISTINCT", distinct - 1)
    spec, table = frame_spec("calibration", ("confidence", "correct"), label="t")
    halves = parts(batch, spec, table, [batch.num_rows // 2])
    report = finish(merge_tasks(*halves, table=table)).report()
    assert report["auroc"] is None
    assert report["n"] == ROWS and report["ece"] is not None
    assert any(f"exceed the {distinct - 1:,}" in w for w in report["warnings"])
    kept = frame_spec("calibration", ("confidence", "correct"), label="t", table="always")
    whole = finish(merge_all(parts(batch, *kept, [batch.num_rows // 2]), "always")).report()
    assert whole["auroc"] is not None


def test_bad_values_add_up_in_partition_order_whatever_the_merge_order():
    spec, table = frame_spec("calibration", ("confidence", "correct"), label="t")
    batches = [
        pa.RecordBatch.from_pydict({"confidence": [0.5, 2.0, 0.1], "correct": [1, 1, 0]}),
        pa.RecordBatch.from_pydict({"confidence": [-0.5, 0.5, None], "correct": [1, 7, 0]}),
    ]
    results = [frame_task(spec, table, i, [b]) for i, b in enumerate(batches)]
    messages = set()
    for ordered in (results, results[::-1]):
        with pytest.raises(InputError) as found:
            finish(reduce(lambda a, b: merge_tasks(a, b, table), ordered), "the DataFrame")
        messages.add(str(found.value))
    (message,) = messages
    assert "column 'confidence': 3 bad values; the first is 2.0 (row 2 of partition 0)" in message
    assert "column 'correct': 1 bad value; the first is 7 (row 2 of partition 1)" in message


@pytest.mark.parametrize("column", ["nll", "tokens", "bytes"])
def test_a_boolean_perplexity_column_is_refused_not_read_as_ones(column):
    # as in JSON rows, true is neither one token nor an NLL of 1
    spec, table = frame_spec("perplexity", ("nll", "tokens", "bytes", None), label="t")
    data = {"nll": [1.0, 2.0], "tokens": [1, 2], "bytes": [4, 8]}
    data[column] = [True, True]
    result = frame_task(spec, table, 0, [pa.RecordBatch.from_pydict(data)])
    with pytest.raises(InputError) as found:
        finish(result, "the DataFrame")
    what = "a number" if column == "nll" else "a count"
    assert str(found.value).endswith(
        f"column {column!r}: 2 bad values; the first is true (row 1 of partition 0): "
        f"a boolean, not {what}"
    )


@pytest.mark.parametrize(
    ("values", "said"),
    [([True, False], "true (row 1 of partition 0): a boolean"), (["0.5", "1"], '"0.5" (row 1')],
)
def test_a_boolean_or_text_confidence_column_is_refused_not_converted(values, said):
    # as in JSON rows, true is not a confidence of 1 and "0.5" is text
    spec, table = frame_spec("calibration", ("confidence", "correct"), label="t")
    data = {"confidence": values, "correct": [True, False]}
    result = frame_task(spec, table, 0, [pa.RecordBatch.from_pydict(data)])
    with pytest.raises(InputError) as found:
        finish(result, "the DataFrame")
    assert f"column 'confidence': 2 bad values; the first is {said}" in str(found.value)
    assert str(found.value).endswith("not a number")


def test_a_text_count_column_is_refused_not_parsed():
    spec, table = frame_spec("perplexity", ("nll", "tokens", None, None), label="t")
    data = {"nll": [1.0, 2.0], "tokens": ["3", "4"]}
    result = frame_task(spec, table, 0, [pa.RecordBatch.from_pydict(data)])
    with pytest.raises(InputError) as found:
        finish(result, "the DataFrame")
    assert str(found.value).endswith(
        "column 'tokens': 2 bad values; the first is \"3\" (row 1 of partition 0): a string, "
        "not a count"
    )


def test_byte_ranges_tile_each_file_with_absolute_paths(tmp_path, monkeypatch):
    (tmp_path / "a.jsonl").write_text('{"confidence": 0.25, "correct": true}\n' * 1000)
    monkeypatch.chdir(tmp_path)
    jobs = file_jobs(["a.jsonl"], "auto", 5000)
    assert {job.path for job in jobs} == {str(tmp_path / "a.jsonl")}
    spans = [job.span for job in jobs]
    size = (tmp_path / "a.jsonl").stat().st_size
    assert spans[0][0] == 0 and spans[-1][1] == size
    assert all(a[1] == b[0] for a, b in pairwise(spans))
    with pytest.raises(ValueError, match="blocksize"):
        file_jobs(["a.jsonl"], "auto", 0)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_ranges_read_in_any_order_by_one_process_number_lines_in_the_whole_file(tmp_path, newline):
    # a worker reading many ranges of one file remembers the newlines before the offsets it
    # has seen: whatever order its ranges come in, a bad line keeps its number in the file
    from calibcli.engines import file_task
    from calibcli.io import reader

    rng = np.random.default_rng(5)
    lines = []
    for _ in range(2000):
        lines.append(json.dumps({"confidence": float(rng.random()), "correct": True}))
        if rng.random() < 0.1:
            lines.append("")  # blank lines are numbered too
    bad = len(lines) - 300
    lines[bad] = '{"confidence": 3, "correct": true}'
    path = tmp_path / "rows.jsonl"
    path.write_bytes(newline.join(lines).encode())  # no newline after the last line
    jobs = file_jobs([str(path)], "calibration", 1500)
    errors = set()
    for order in (jobs, jobs[::-1], jobs[1::2] + jobs[::2]):
        reader._known_newlines.clear()  # a fresh worker
        results = [file_task(job) for job in order]
        failed = [r.error for r in results if r.error is not None]
        assert len(failed) == 1
        errors.add(failed[0][1:])
    assert errors == {(str(path), bad + 1, "confidence 3 is outside [0, 1]")}


def test_a_group_of_ranges_read_in_one_task_gives_the_merge_of_their_tasks(tmp_path):
    # the Dask files path reads the tree's first-level groups in one task each: its part must
    # be the bytes the group's separate tasks give once merged, and a group with a bad line
    # must report that line (the first one, as the merge of the separate results does)
    from calibcli.engines import file_group_task, file_task
    from calibcli.io import reader

    rng = np.random.default_rng(11)
    paths = []
    for k in range(2):
        lines = [
            json.dumps({"confidence": float(c), "correct": bool(rng.random() < c), "task": t})
            for c, t in zip(rng.random(3000), rng.choice(["x", "y"], 3000), strict=True)
        ]
        paths.append(tmp_path / f"{k}.jsonl")
        paths[-1].write_text("\n".join(lines) + "\n")
    for by in (None, "task"):
        jobs = file_jobs([str(p) for p in paths], "calibration", 20_000, by=by)
        assert len(jobs) > 8
        for group in (jobs[:8], jobs[8:]):
            reader._known_newlines.clear()
            want = merge_all([file_task(job) for job in group])
            reader._known_newlines.clear()
            got = file_group_task(group)
            assert got.payload == want.payload and got.payload is not None
    bad = tmp_path / "bad.jsonl"
    text = paths[0].read_text().splitlines()
    text[2000] = text[2500] = '{"confidence": 2, "correct": true}'
    bad.write_text("\n".join(text) + "\n")
    jobs = file_jobs([str(bad)], "calibration", 20_000)
    reader._known_newlines.clear()
    want = merge_all([file_task(job) for job in jobs])
    reader._known_newlines.clear()
    got = file_group_task(jobs)
    assert got.error == want.error
    assert got.error[1:] == (str(bad), 2001, "confidence 2 is outside [0, 1]")


@pytest.mark.parametrize(
    ("options", "cap"),
    [
        ({}, None),
        ({"table": "always"}, None),
        ({"table": "never"}, None),
        ({"by": "task", "id_field": "id", "bootstrap_samples": 200, "seed": 4}, None),
        ({}, 1500),  # more than a range's rows, less than the group's: its table dropped
        ({"by": "task"}, 300),  # less than a range's rows: each range's table dropped
        ({"table": "always"}, 300),
    ],
)
def test_a_group_s_one_table_gives_the_bytes_of_its_ranges_parts_merged(
    tmp_path, monkeypatch, options, cap
):
    # a group of calibration ranges builds one table of distinct confidences from all its
    # rows, each range's float sums and bootstrap sums its own: the part must be the bytes of
    # the ranges' parts merged, whatever the table mode, the grouping and the cap
    import calibcli.summaries
    from calibcli.engines import file_group_task, file_task
    from calibcli.io import reader
    from calibcli.summaries import from_bytes

    if cap is not None:
        monkeypatch.setattr(calibcli.summaries, "MAX_DISTINCT", cap)
    rng = np.random.default_rng(13)
    conf = np.round(rng.random(4000), 3)  # ties, within a range and across ranges
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "confidence": float(c), "correct": bool(rng.random() < c)})[
                :-1
            ]
            + f', "task": "{"xyz"[i % 3]}"}}\n'
            for i, c in enumerate(conf)
        )
    )
    jobs = file_jobs([str(path)], "calibration", 40_000, **options)
    assert 5 <= len(jobs) <= 8
    reader._known_newlines.clear()
    want = merge_all([file_task(job) for job in jobs], jobs[0].table)
    reader._known_newlines.clear()
    got = file_group_task(jobs, jobs[0].table)
    assert got.payload is not None and got.payload == want.payload
    dropped = options.get("table") == "never" or (cap is not None and "table" not in options)
    assert (from_bytes(got.payload).distinct is None) is dropped


def test_a_merge_past_the_cap_counts_the_table_and_leaves_what_building_it_leaves(
    rows, monkeypatch
):
    # merge_all counts the merged table's entries without building it when the parts' tables
    # add up past the cap: at a cap of exactly the merged entries the table is built and
    # kept, one below it dropped; either way the part is the bytes of the table built and
    # then capped
    import calibcli.summaries
    from calibcli.engines.tasks import capped
    from calibcli.summaries import from_bytes, merge_parts, to_bytes

    batch, _ = rows
    conf = batch.column(0).to_numpy()
    correct = batch.column(1).to_numpy(zero_copy_only=False)
    entries = len(np.unique(conf[correct])) + len(np.unique(conf[~correct]))
    spec, _ = frame_spec("calibration", ("confidence", "correct"), label="t")
    results = parts(batch, spec, "always", [1000, 2000, 3000])
    tables = [from_bytes(r.payload).distinct.distinct for r in results]
    assert max(tables) < entries - 1 < sum(tables)  # the parts overlap: only a count tells
    for cap, kept in ((entries, True), (entries - 1, False)):
        monkeypatch.setattr(calibcli.summaries, "MAX_DISTINCT", cap)
        loaded = [from_bytes(r.payload) for r in results]
        want = to_bytes(capped(merge_parts(loaded, ["t"] * 4), "auto"))
        got = merge_all(results, "auto").payload
        assert got == want
        assert (from_bytes(got).distinct is not None) is kept


def _jobs(*ranges_per_file):
    """File jobs as file_jobs makes them: whole files (0) or files cut into that many ranges."""
    from calibcli.engines.tasks import FileJob

    jobs = []
    for k, count in enumerate(ranges_per_file):
        spans = [None] if count == 0 else [(i * 10, (i + 1) * 10) for i in range(count)]
        for span in spans:
            jobs.append(FileJob(len(jobs), f"/data/{k}.jsonl", span, "calibration"))
    return jobs


def _shape(groups):
    """Each group as (file, first byte) of its jobs."""
    return [[(j.path[-7], 0 if j.span is None else j.span[0]) for j in g] for g in groups]


def test_job_groups_keep_a_file_s_ranges_together_and_pack_whole_files():
    from calibcli.engines import job_groups

    # eight files of seven ranges: a group per file, each starting at the file's first byte
    groups = job_groups(_jobs(*[7] * 8), 8)
    assert [len(g) for g in groups] == [7] * 8
    assert all(g[0].span[0] == 0 and len({j.path for j in g}) == 1 for g in groups)
    # whole files are packed eight to a group, in order
    assert [len(g) for g in job_groups(_jobs(*[0] * 20), 8)] == [8, 8, 4]
    # files of few ranges are packed while they fit; a long file fills groups of its own and
    # its last one takes the files after it
    assert _shape(job_groups(_jobs(3, 3, 3, 10, 2, 0), 8)) == [
        [("0", 0), ("0", 10), ("0", 20), ("1", 0), ("1", 10), ("1", 20)],
        [("2", 0), ("2", 10), ("2", 20)],
        [("3", k * 10) for k in range(8)],
        [("3", 80), ("3", 90), ("4", 0), ("4", 10), ("5", 0)],
    ]
    # every job once, in order
    jobs = _jobs(3, 0, 9, 1, 0, 17, 2)
    for size in (1, 2, 5, 8, 30):
        flat = [j.index for g in job_groups(jobs, size) for j in g]
        assert flat == list(range(len(jobs)))
        assert all(len(g) <= size for g in job_groups(jobs, size))
    with pytest.raises(ValueError, match="at least one job"):
        job_groups(jobs, 0)


def test_dask_files_path_gives_the_same_bytes_whether_a_task_reads_a_group_or_a_job(
    tmp_path, monkeypatch
):
    # the graph reads a group of jobs in one task only when the groups keep every core busy;
    # either graph makes the same merges in the same order
    dask = pytest.importorskip("dask")
    import calibcli.dask as cdask

    rng = np.random.default_rng(5)
    paths = []
    for k, n in enumerate((2500, 400, 3000)):
        lines = [
            json.dumps({"confidence": float(c), "correct": bool(rng.random() < c)})
            for c in rng.random(n)
        ]
        paths.append(str(tmp_path / f"{k}.jsonl"))
        (tmp_path / f"{k}.jsonl").write_text("\n".join(lines) + "\n")
    payloads = []
    for cores in (1, 10**6):
        monkeypatch.setattr(cdask, "_cores", lambda cores=cores: cores)
        lazy = cdask.summarize_files(paths, blocksize=12_000, split_every=4)
        (result,) = dask.compute(lazy, scheduler="sync")
        payloads.append(result.to_bytes())
    assert payloads[0] == payloads[1]
    assert result.n == 5900


def test_a_csv_file_is_one_job_read_whole_and_gives_the_cli_report(tmp_path):
    # a table is never cut into byte ranges (a record may hold line breaks, and every range
    # but the first would lack the header): the engines' tasks read it whole
    from calibcli.engines import file_task

    rng = np.random.default_rng(11)
    path = tmp_path / "rows.csv"
    path.write_text(
        "confidence,correct\n"
        + "".join(
            f"{float(c)!r},{str(bool(k)).lower()}\n"
            for c, k in zip(rng.random(3000), rng.random(3000) < 0.6, strict=True)
        )
    )
    jobs = file_jobs([str(path)], "auto", 4096)  # 74 KB: 19 ranges were it JSON Lines
    assert [job.span for job in jobs] == [None]
    report = finish(merge_all([file_task(job) for job in jobs])).report()
    assert_same(report, cli_json("calibrate", str(path)))
    bad = tmp_path / "bad.csv"
    bad.write_text("confidence,correct\n0.5,true\n1.5,true\n")
    (job,) = file_jobs([str(bad)], "auto", 16)
    assert file_task(job).error[1:] == (str(bad), 3, "confidence 1.5 is outside [0, 1]")


@pytest.mark.parametrize("suffix", [".gz", ".zst", ".xz", ".bz2"])
def test_a_compressed_file_is_one_job_read_whole_and_gives_the_cli_report(tmp_path, suffix):
    # a compressed stream cannot be cut by position: one job reads it whole, and a truncated
    # one is that job's error, not fewer rows
    from harness import pack

    from calibcli.engines import file_task

    rng = np.random.default_rng(12)
    text = "".join(
        f'{{"confidence": {float(c)!r}, "correct": {str(bool(k)).lower()}}}\n'
        for c, k in zip(rng.random(3000), rng.random(3000) < 0.6, strict=True)
    ).encode()
    path = tmp_path / f"rows.jsonl{suffix}"
    path.write_bytes(pack(suffix, text))
    jobs = file_jobs([str(path)], "auto", 4096)
    assert [job.span for job in jobs] == [None]
    report = finish(merge_all([file_task(job) for job in jobs])).report()
    assert_same(report, cli_json("calibrate", str(path)))
    plain = tmp_path / "rows.jsonl"
    plain.write_bytes(text)
    assert_same(report, cli_json("calibrate", str(plain)))
    cut = tmp_path / f"cut.jsonl{suffix}"
    whole = pack(suffix, text)
    cut.write_bytes(whole[: len(whole) // 2])
    (job,) = file_jobs([str(cut)], "auto", 4096)
    error = file_task(job).error
    assert error[1:3] == (str(cut), None)
    assert error[3].endswith("Compressed file ended before the end-of-stream marker was reached")
