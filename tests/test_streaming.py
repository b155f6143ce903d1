"""Streaming invariants of calibcli.io: block size and worker count change nothing.

Results must agree (to 1e-12 relative) between the streaming reader with several block sizes,
the reader split across worker processes, and the all-in-memory path; counts are exact. A bad line
deep in a large file is reported with its exact line number by the single- and multi-process
paths alike.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import sys

import numpy as np
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st

from calibcli.io import InputError, read_calibration, read_perplexity
from calibcli.metrics.core import BinStats

FLOAT_FIELDS = ("sum_conf", "sum_conf_sq", "sum_conf_correct", "sum_sq_error")
CONFIGS = [  # (block_size, workers, small_block: below it json.loads decodes, else msgspec)
    (64, 1, 0),  # blocks shorter than a line
    (300, 1, 0),
    (1 << 20, 1, 0),
    (1 << 20, 1, 1 << 30),
    (300, 2, 0),
    (1 << 20, 3, 1 << 30),
]


@contextlib.contextmanager
def small_block(size: int):
    import calibcli.io.decode

    saved = calibcli.io.decode.SMALL_BLOCK
    calibcli.io.decode.SMALL_BLOCK = size
    try:
        yield
    finally:
        calibcli.io.decode.SMALL_BLOCK = saved


def assert_stats_close(a: BinStats, b: BinStats) -> None:
    assert a.count.tolist() == b.count.tolist()
    assert a.sum_correct.tolist() == b.sum_correct.tolist()
    for field in FLOAT_FIELDS:
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-12, atol=1e-300)


confidences = st.one_of(
    st.floats(0.0, 1.0, allow_nan=False),
    st.sampled_from([0.0, 0.1, 0.3, 0.7, 0.9, 1.0, 0, 1]),
)
rows_strategy = st.lists(
    st.tuples(confidences, st.sampled_from([True, False, 0, 1])), min_size=0, max_size=120
)


def render(rows, layout) -> bytes:
    """JSONL text for rows, with blank lines, CRLF and extra keys as drawn."""
    crlf, blank_every, extra = layout
    out = []
    for i, (c, y) in enumerate(rows):
        obj = {"id": i, "confidence": c, "correct": y} if extra else {"confidence": c, "correct": y}
        out.append(json.dumps(obj))
        if blank_every and i % blank_every == 0:
            out.append("  ")
    nl = "\r\n" if crlf else "\n"
    return (nl.join(out) + (nl if rows else "")).encode()


layouts = st.tuples(st.booleans(), st.sampled_from([0, 0, 1, 7]), st.booleans())


@contextlib.contextmanager
def stdin_bytes(data: bytes):
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))  # closable: forked workers close stdin
    try:
        yield
    finally:
        sys.stdin = saved


@settings(max_examples=25)
@given(rows=rows_strategy, layout=layouts, bins=st.sampled_from([1, 10, 15]))
def test_calibration_independent_of_blocks_and_workers(tmp_path_factory, rows, layout, bins):
    path = tmp_path_factory.mktemp("s") / "p.jsonl"
    path.write_bytes(render(rows, layout))
    gz = path.with_suffix(".jsonl.gz")
    gz.write_bytes(gzip.compress(path.read_bytes()))
    conf = np.array([float(c) for c, _ in rows], dtype=np.float64)
    corr = np.array([bool(y) for _, y in rows], dtype=bool)
    in_memory = BinStats.from_arrays(conf, corr, bins)
    counts = [0] * bins  # exact, from the plain-Python reference binning
    for c, _ in rows:
        counts[reference.bin_index(float(c), bins)] += 1
    assert in_memory.count.tolist() == counts
    for block_size, workers, small in CONFIGS:
        with small_block(small):
            data = read_calibration(
                [str(path)], bins=bins, keep_columns=True, block_size=block_size, workers=workers
            )
        assert data.rows == len(rows)
        assert_stats_close(data.stats, in_memory)
        assert sorted(data.columns.conf_correct.tolist()) == sorted(conf[corr].tolist())
        assert sorted(data.columns.conf_wrong.tolist()) == sorted(conf[~corr].tolist())
    # streams: this process reads, a worker decodes every other block
    with stdin_bytes(path.read_bytes()):
        piped = read_calibration(["-"], bins=bins, keep_columns=True, block_size=200, workers=2)
    zipped = read_calibration([str(gz)], bins=bins, keep_columns=True, block_size=200, workers=2)
    for data in (piped, zipped):
        assert data.rows == len(rows)
        assert_stats_close(data.stats, in_memory)
        assert sorted(data.columns.conf_wrong.tolist()) == sorted(conf[~corr].tolist())


@settings(max_examples=20)
@given(
    rows=st.lists(
        st.tuples(
            st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False),
            st.integers(1, 10_000),
        ),
        max_size=80,
    ),
    crlf=st.booleans(),
)
def test_perplexity_independent_of_blocks_and_workers(tmp_path_factory, rows, crlf):
    path = tmp_path_factory.mktemp("p") / "p.jsonl"
    nl = "\r\n" if crlf else "\n"
    path.write_bytes(
        "".join(json.dumps({"nll": n, "tokens": t, "bytes": 2 * t}) + nl for n, t in rows).encode()
    )
    expected_nll = math.fsum(n for n, _ in rows)
    for block_size, workers, small in CONFIGS:
        with small_block(small):
            data = read_perplexity([str(path)], block_size=block_size, workers=workers)
        assert data.sequences == len(rows)
        assert data.total_tokens == sum(t for _, t in rows)
        assert data.total_bytes == (2 * sum(t for _, t in rows) if rows else None)
        assert data.total_nll == pytest.approx(expected_nll, rel=1e-12, abs=0.0)


def test_grouped_results_independent_of_workers(tmp_path):
    rng = np.random.default_rng(7)
    n = 3000
    conf = rng.random(n)
    corr = rng.random(n) < conf
    groups = rng.choice(["x", "y", "z"], n)
    path = tmp_path / "g.jsonl"
    path.write_text(
        "".join(
            json.dumps({"confidence": c, "correct": bool(y), "meta": {"g": str(g)}}) + "\n"
            for c, y, g in zip(conf.tolist(), corr.tolist(), groups.tolist(), strict=True)
        )
    )
    one = read_calibration([str(path)], by="meta.g", workers=1, block_size=4096)
    two = read_calibration([str(path)], by="meta.g", workers=2, block_size=4096)
    assert list(one.groups) == list(two.groups) == ["x", "y", "z"]
    for key in one.groups:
        mask = groups == key
        assert_stats_close(one.groups[key].stats, BinStats.from_arrays(conf[mask], corr[mask]))
        assert_stats_close(two.groups[key].stats, one.groups[key].stats)


def test_identical_from_run_to_run(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "r.jsonl"
    path.write_text(
        "".join(
            f'{{"confidence": {c!r}, "correct": {int(c > 0.4)}}}\n'
            for c in rng.random(5000).tolist()
        )
    )
    a = read_calibration([str(path)], workers=2, block_size=2048)
    b = read_calibration([str(path)], workers=2, block_size=2048)
    for field in ("count", "sum_correct", *FLOAT_FIELDS):
        assert getattr(a.stats, field).tobytes() == getattr(b.stats, field).tobytes()


# --------------------------------------------------------------------------- a bad line deep down

N_ROWS = 200_000


@pytest.fixture(scope="module")
def large_rows() -> list[str]:
    conf = np.random.default_rng(3).random(N_ROWS).tolist()
    return [f'{{"confidence": {c!r}, "correct": {"true" if c > 0.5 else "false"}}}' for c in conf]


def _write_with_bad(tmp_path, rows, bad_line: int, bad: str, blank_at=()) -> str:
    lines = list(rows)
    for k in sorted(blank_at, reverse=True):
        lines.insert(k - 1, "")
    lines[bad_line - 1] = bad
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("bad_line", [123_457, 7])
def test_bad_line_deep_in_large_file(tmp_path, large_rows, workers, bad_line):
    bad = '{"confidence": 1.5, "correct": true}'
    path = _write_with_bad(tmp_path, large_rows, bad_line, bad, blank_at=(3, 100_001))
    with pytest.raises(InputError) as info:
        read_calibration([path], workers=workers, block_size=64 * 1024)
    assert str(info.value) == f"{path}:{bad_line}: confidence 1.5 is outside [0, 1]"


def test_earliest_bad_line_wins_across_workers(tmp_path, large_rows):
    lines = list(large_rows)
    lines[150_000 - 1] = '{"confidence": 0.5}'
    lines[190_000 - 1] = "[]"
    path = tmp_path / "two_bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for workers in (1, 2, 3):
        with pytest.raises(InputError, match=r':150000: missing field "correct"$'):
            read_calibration([str(path)], workers=workers, block_size=64 * 1024)


def test_perplexity_field_pattern_checked_across_workers(tmp_path):
    n = 20_000
    lines = [json.dumps({"nll": 1.0, "tokens": 2, "bytes": 5}) for _ in range(n)]
    for k in range(n // 2, n):
        lines[k] = json.dumps({"nll": 1.0, "tokens": 2})
    path = tmp_path / "pp.jsonl"
    path.write_text("\n".join(lines) + "\n")
    for workers in (1, 2):
        with pytest.raises(InputError, match=rf':{n // 2 + 1}: missing field "bytes"'):
            read_perplexity([str(path)], workers=workers, block_size=8192)


def test_columns_from_workers_larger_than_a_pipe_buffer(large_rows, tmp_path, monkeypatch):
    import calibcli.io.parallel

    monkeypatch.setattr(calibcli.io.parallel, "PIPE_CHUNK", 1000)  # many chunks per column
    path = tmp_path / "cols.jsonl"
    path.write_text("\n".join(large_rows[:50_000]) + "\n")
    one = read_calibration([str(path)], keep_columns=True, workers=1)
    two = read_calibration([str(path)], keep_columns=True, workers=2, block_size=1 << 16)
    assert two.columns.n == one.columns.n == 50_000
    assert np.array_equal(np.sort(two.columns.conf_correct), np.sort(one.columns.conf_correct))
    assert np.array_equal(np.sort(two.columns.conf_wrong), np.sort(one.columns.conf_wrong))
    assert_stats_close(two.stats, one.stats)


@pytest.mark.parametrize("bad_line", [123_457, 7, 60_001])
def test_bad_line_in_gzip_read_with_a_worker(tmp_path, large_rows, bad_line):
    lines = list(large_rows)
    lines[bad_line - 1] = '{"confidence": 0.5, "correct": "no"}'
    path = tmp_path / "big.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=1))
    for block_size in (64 * 1024, 1 << 20):
        with pytest.raises(InputError) as info:
            read_calibration([str(path)], workers=2, block_size=block_size)
        assert str(info.value) == f'{path}:{bad_line}: correct "no" is not true/false/0/1'


def test_earliest_error_wins_between_reader_and_worker(tmp_path):
    # blocks of ~100 lines alternate between this process and the worker
    good = '{"confidence": 0.5, "correct": true}'
    lines = [good] * 2000
    lines[1000 - 1] = "[]"
    lines[1050 - 1] = "{}"
    lines[1500 - 1] = '{"confidence": 7, "correct": true}'
    data = ("\n".join(lines) + "\n").encode()
    for block_size in (1000, 2048, 3000, 4096):
        with stdin_bytes(data), pytest.raises(InputError, match=r"^<stdin>:1000: "):
            read_calibration(["-"], workers=2, block_size=block_size)


def test_gzip_with_a_worker_perplexity_and_groups(tmp_path):
    n = 30_000
    rows = [
        json.dumps({"nll": float(i % 7), "tokens": 1 + i % 5, "words": 1, "g": f"k{i % 3}"})
        for i in range(n)
    ]
    path = tmp_path / "p.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    one = read_perplexity([str(path)], by="g", workers=1)
    two = read_perplexity([str(path)], by="g", workers=2, block_size=8192)
    assert (two.sequences, two.total_tokens, two.total_words) == (n, one.total_tokens, n)
    assert two.total_nll == pytest.approx(one.total_nll, rel=1e-12)
    assert list(two.groups) == ["k0", "k1", "k2"]
    for key in two.groups:
        assert two.groups[key].total_tokens == one.groups[key].total_tokens
    rows[20_000] = json.dumps({"nll": 1.0, "tokens": 1})  # lacks "words"
    path.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    for block_size in (4096, 8192, 1 << 20):
        with pytest.raises(InputError, match=r':20001: missing field "words"'):
            read_perplexity([str(path)], workers=2, block_size=block_size)


def test_workers_automatic_and_explicit(tmp_path, monkeypatch):
    import calibcli.io.parallel
    import calibcli.io.reader

    path = tmp_path / "w.jsonl"
    path.write_text('{"confidence": 0.5, "correct": true}\n' * 5000)
    calls = []
    real = calibcli.io.parallel.read

    def spy(reader, src, sink, parts):
        calls.append(parts)
        return real(reader, src, sink, parts)

    monkeypatch.setattr(calibcli.io.parallel, "read", spy)
    monkeypatch.setenv("CALIBCLI_WORKERS", "2")  # the library never reads the environment
    assert read_calibration([str(path)]).rows == 5000
    assert calls == []  # automatic: a small file is read by this process alone
    assert read_calibration([str(path)], workers=2).rows == 5000
    assert calls == [2]
    monkeypatch.setattr(calibcli.io.reader, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(calibcli.io.reader, "_cpus", lambda: 2)
    assert read_calibration([str(path)]).rows == 5000
    assert calls == [2, 2]
    assert read_calibration([str(path)], workers=1).rows == 5000
    assert calls == [2, 2]


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_workers_must_be_a_whole_number_from_one(tmp_path, workers):
    path = tmp_path / "w.jsonl"
    path.write_text('{"nll": 1.0, "tokens": 2}\n')
    with pytest.raises(ValueError, match=r"workers must be a whole number >= 1"):
        read_calibration([str(path)], workers=workers)
    with pytest.raises(ValueError, match=r"workers must be a whole number >= 1"):
        read_perplexity([str(path)], workers=workers)
