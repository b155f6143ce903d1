"""float32 and float16 values are read as written: as the float64 nearest to their shortest
decimal spelling (``str(numpy.float32(x))``, what pandas' ``to_csv`` writes), not as their
binary value widened. A Parquet or Arrow table, a float32 array given to the Python API and a
Spark or Dask DataFrame of float32 columns give the report the same rows give as CSV.

The reference rows: confidences 0.5 .. 1.0 in steps of 0.1, 200 rows each, with 100, 130, 130,
170, 170 and 200 right answers. Read as written, bins 5, 6, 7 and 8 of 10 hold 200 rows each
(accuracy 0.5, 0.65, 0.65, 0.85 against confidence 0.5, 0.6, 0.7, 0.8) and bin 9 the 400 rows of
0.9 and 1.0 (accuracy 370/400 = 0.925 against 0.95), so by hand
ECE = (0 + 3 * 200 * 0.05 + 400 * 0.025) / 1200 = 1/30, MCE = 0.05, 5 populated bins. Widened,
float32(0.7) = 0.69999998... joins bin 6 and float32(0.9) bin 8: ECE ~ 0 over 4 bins.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run, write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

pd = pytest.importorskip("pandas", reason="pandas is not installed")
pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (calibcli[parquet])")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")
feather = pytest.importorskip("pyarrow.feather", reason="pyarrow is not installed")

from calibcli.io.narrow import written_columns, written_floats  # noqa: E402

LEVELS = [(0.5, 100), (0.6, 130), (0.7, 130), (0.8, 170), (0.9, 170), (1.0, 200)]
ECE = 1 / 30  # by hand, see the module docstring
MCE = 0.05


def frame(dtype: str = "float64"):
    rows = [(c, i < k) for c, k in LEVELS for i in range(200)]
    df = pd.DataFrame(rows, columns=["confidence", "correct"])
    return df.astype({"confidence": dtype})


def report(path, *extra):
    result = run(["calibrate", str(path), "--json", "-q", *extra])
    return result.exit_code, result.stdout


def assert_by_hand(body: dict) -> None:
    assert body["n"] == 1200
    assert body["populated_bins"] == 5
    assert body["ece"] == pytest.approx(ECE, rel=1e-12)
    assert body["mce"] == pytest.approx(MCE, rel=1e-12)
    assert body["accuracy"] == pytest.approx(0.75, rel=1e-12)
    assert body["mean_confidence"] == pytest.approx(0.75, rel=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_a_narrow_table_gives_the_csv_report(tmp_path, dtype, suffix):
    csv = tmp_path / "rows.csv"
    frame().to_csv(csv, index=False)
    table = tmp_path / f"rows{suffix}"
    narrow = frame(dtype)
    if suffix == ".parquet":
        narrow.to_parquet(table)
    else:
        narrow.to_feather(table)
    if suffix == ".parquet":
        kind = pq.read_schema(table).field("confidence").type
        assert kind == (pa.float32() if dtype == "float32" else pa.float16())
    code_csv, out_csv = report(csv, "--max-ece", "0.03")
    code_table, out_table = report(table, "--max-ece", "0.03")
    assert out_table == out_csv  # byte for byte: the report names no file
    assert code_csv == code_table == 1  # 1/30 > 0.03: the gate fails on both
    assert_by_hand(json.loads(out_table))


def test_a_float32_value_out_of_range_is_named_as_written(tmp_path):
    path = tmp_path / "bad.parquet"
    pd.DataFrame(
        {"confidence": np.array([0.5, 0.6, 1.2], np.float32), "correct": [True, False, True]}
    ).to_parquet(path)
    result = run(["calibrate", str(path)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"Error: {path}: row 3: confidence 1.2 is outside [0, 1]"


def test_float32_nll_and_logprobs_give_the_jsonl_report(tmp_path):
    nll = np.array([0.7, 1.3, 2.9, 0.1], np.float32)
    rows = [{"nll": float(str(v)), "tokens": 3 + i} for i, v in enumerate(nll)]
    jsonl = write_jsonl(tmp_path / "p.jsonl", rows)
    table = tmp_path / "p.parquet"
    pq.write_table(pa.table({"nll": pa.array(nll), "tokens": [r["tokens"] for r in rows]}), table)
    text = run(["perplexity", str(jsonl), "--json", "-q"])
    assert run(["perplexity", str(table), "--json", "-q"]).stdout == text.stdout
    # the per-token lists of --format logprobs, float32 values in a list column
    tokens = [np.array([-0.7, -0.1, -2.3], np.float32), np.array([-0.3, -1.9], np.float32)]
    jsonl = write_jsonl(
        tmp_path / "l.jsonl", [{"logprobs": [float(str(v)) for v in t]} for t in tokens]
    )
    table = tmp_path / "l.parquet"
    pq.write_table(pa.table({"logprobs": pa.array(tokens, pa.list_(pa.float32()))}), table)
    text = run(["perplexity", str(jsonl), "--format", "logprobs", "--json", "-q"])
    got = run(["perplexity", str(table), "--format", "logprobs", "--json", "-q"])
    assert got.exit_code == 0, got.stderr
    assert got.stdout == text.stdout
    # by hand: 0.7 + 0.1 + 2.3 + 0.3 + 1.9 = 5.3 nats over 5 tokens
    assert json.loads(got.stdout)["total_nll"] == pytest.approx(5.3, rel=1e-15)


def test_list_and_struct_columns_and_nulls_are_read_as_written():
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array([0.7, None, 0.1], pa.float32()),
            pa.array([[0.7, None], None, [0.1]], pa.list_(pa.float32())),
            pa.array(
                [{"p": 0.3, "s": "a"}, None, {"p": None, "s": "b"}],
                pa.struct([("p", pa.float32()), ("s", pa.string())]),
            ),
            pa.array([0.7, 0.3, None], pa.float64()),
        ],
        names=["c", "l", "s", "wide"],
    )
    expected = [
        {"c": 0.7, "l": [0.7, None], "s": {"p": 0.3, "s": "a"}, "wide": 0.7},
        {"c": None, "l": None, "s": None, "wide": 0.3},
        {"c": 0.1, "l": [0.1], "s": {"p": None, "s": "b"}, "wide": None},
    ]
    assert written_columns(batch).to_pylist() == expected
    assert written_columns(batch.slice(1)).to_pylist() == expected[1:]
    wide = pa.RecordBatch.from_arrays([pa.array([0.1, 0.7])], names=["c"])
    assert written_columns(wide) is wide  # a table without narrow floats is left as it is


def test_fixed_size_list_and_dictionary_columns_are_read_as_written():
    pairs = pa.array([[0.7, 0.3], None, [0.1, None]], pa.list_(pa.float32(), 2))
    # built from its parts: older pyarrow cannot dictionary-encode float16
    repeated = pa.DictionaryArray.from_arrays(
        pa.array([0, 0, None], pa.int32()), pa.array([0.7], pa.float16())
    )
    nested = pa.array([[[0.9]], None, [[0.6], None]], pa.list_(pa.list_(pa.float32(), 1)))
    batch = pa.RecordBatch.from_arrays([pairs, repeated, nested], names=["p", "d", "n"])
    expected = [
        {"p": [0.7, 0.3], "d": 0.7, "n": [[0.9]]},
        {"p": None, "d": 0.7, "n": None},
        {"p": [0.1, None], "d": None, "n": [[0.6], None]},
    ]
    assert written_columns(batch).to_pylist() == expected
    assert written_columns(batch.slice(1)).to_pylist() == expected[1:]


def test_a_dictionary_column_of_float32_gives_the_csv_report(tmp_path):
    csv = tmp_path / "rows.csv"
    frame().to_csv(csv, index=False)
    narrow = frame("float32")
    table = tmp_path / "rows.arrow"  # an Arrow file keeps the column's dictionary type
    confidence = pa.array(narrow["confidence"].to_numpy()).dictionary_encode()
    feather.write_feather(pa.table({"confidence": confidence, "correct": narrow["correct"]}), table)
    assert pa.types.is_dictionary(feather.read_table(table).schema.field("confidence").type)
    code_csv, out_csv = report(csv)
    code_table, out_table = report(table)
    assert code_csv == code_table == 0
    assert out_table == out_csv
    assert_by_hand(json.loads(out_table))


def test_a_fixed_size_list_of_float32_logprobs_gives_the_jsonl_report(tmp_path):
    tokens = np.array([[-0.7, -0.1, -2.3], [-0.3, -1.9, -0.2]], np.float32)
    jsonl = write_jsonl(
        tmp_path / "l.jsonl", [{"logprobs": [float(str(v)) for v in t]} for t in tokens]
    )
    table = tmp_path / "l.parquet"
    column = pa.FixedSizeListArray.from_arrays(pa.array(tokens.reshape(-1)), 3)
    pq.write_table(pa.table({"logprobs": column}), table)
    assert pa.types.is_fixed_size_list(pq.read_schema(table).field("logprobs").type)
    text = run(["perplexity", str(jsonl), "--format", "logprobs", "--json", "-q"])
    got = run(["perplexity", str(table), "--format", "logprobs", "--json", "-q"])
    assert got.exit_code == 0, got.stderr
    assert got.stdout == text.stdout
    # by hand: 0.7 + 0.1 + 2.3 + 0.3 + 1.9 + 0.2 = 5.5 nats over 6 tokens
    assert json.loads(got.stdout)["total_nll"] == pytest.approx(5.5, rel=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_the_api_reads_a_float32_array_as_written(dtype):
    import calibcli

    df = frame()
    wide = calibcli.calibrate(df["confidence"].to_numpy(), df["correct"].to_numpy())
    narrow = calibcli.calibrate(df["confidence"].to_numpy().astype(dtype), df["correct"].to_numpy())
    series = calibcli.calibrate(df["confidence"].astype(dtype), df["correct"])
    assert narrow.to_json() == wide.to_json() == series.to_json()
    assert_by_hand(narrow.to_dict())


def test_the_engines_partition_task_reads_float32_as_written():
    """What a Spark or Dask task runs on its partition's Arrow batches (engine-free)."""
    from calibcli.engines import finish, frame_spec, frame_task

    df = frame("float32")
    batch = pa.RecordBatch.from_pandas(df, preserve_index=False)
    assert batch.schema.field("confidence").type == pa.float32()
    spec, table = frame_spec("calibration", ("confidence", "correct"), label="t")
    body = finish(frame_task(spec, table, 0, [batch[:500], batch[500:]])).report()
    assert_by_hand(body)


def _engine(module: str, extra: str):
    from conftest import require_engine

    return require_engine(module, extra)


def test_dask_reads_a_float32_column_as_written():
    dask = _engine("dask", "dask")
    _engine("dask.dataframe", "dask")
    import dask.dataframe as dd

    from calibcli.dask import summarize

    ddf = dd.from_pandas(frame("float32"), npartitions=3)
    (result,) = dask.compute(summarize(ddf), scheduler="sync")
    assert_by_hand(result.report())


# ----- the conversion itself, against numpy's shortest spelling of each value


def spelled(values: np.ndarray) -> np.ndarray:
    return np.array([float(str(v)) for v in values], np.float64).reshape(values.shape)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal value for value, NaN to NaN (of either sign: every NaN is refused alike) and -0.0
    to -0.0."""
    signs = ~np.isnan(a)
    return np.array_equal(a, b, equal_nan=True) and np.array_equal(
        np.signbit(a[signs]), np.signbit(b[signs])
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(width=32), min_size=1, max_size=50))
def test_float32_reads_as_its_shortest_spelling(values):
    x = np.array(values, np.float32)
    got = written_floats(x)
    assert got.dtype == np.float64
    assert same(got, spelled(x))
    assert same(got.astype(np.float32), x)  # the float32 itself is unchanged


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(width=32), min_size=1, max_size=50))
def test_float32_without_pyarrow_reads_the_same(values):
    import sys

    x = np.array(values, np.float32)
    saved = sys.modules.get("pyarrow")
    sys.modules["pyarrow"] = None  # import pyarrow raises ImportError: numpy's casts
    try:
        got = written_floats(x)
    finally:
        sys.modules["pyarrow"] = saved
    assert same(got, spelled(x))


def test_every_float32_bit_pattern_class_and_every_float16():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array(
        [0.7, 0.1, 1e-45, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, 99999992, 2**25],
        np.float32,
    )
    x = np.concatenate([x, edges])
    assert same(written_floats(x), spelled(x))
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    assert same(written_floats(halves), spelled(halves))
    assert written_floats(np.array([0.7], np.float32)).tolist() == [0.7]
    assert float(np.float32(0.7)) != 0.7  # what widening gave


def test_float64_and_other_arrays_are_left_as_they_are():
    x = np.array([0.1, 0.7])
    assert written_floats(x) is x
    ints = np.array([1, 2])
    assert written_floats(ints) is ints
    assert math.isnan(written_floats(np.array([np.nan], np.float32))[0])
