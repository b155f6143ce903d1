"""Parquet and Arrow tables: a column name the table holds twice is refused (as a CSV header
naming a column twice is), whether the column is read or not; a struct field named twice too.
An Arrow IPC stream (what Hugging Face ``datasets`` writes as ``.arrow``) and a compressed table
(``rows.parquet.gz``) are read, with the figures computed by hand from the columns written."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import numpy as np
import pytest
from harness import run

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed (calibcli[parquet])")
pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is not installed")

N = 400
TABLE_KINDS = ["parquet", "arrow-file", "arrow-stream"]


def columns(seed: int = 11):
    rng = np.random.default_rng(seed)
    confidence = rng.uniform(0.05, 0.99, N)
    correct = rng.random(N) < confidence**1.5
    return confidence, correct


def by_hand(confidence, correct, bins: int = 10) -> dict[str, float]:
    """n, accuracy, mean confidence, 10-bin equal-width ECE and Brier score, in numpy."""
    y = correct.astype(float)
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    ece = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            gap = abs(confidence[inside].mean() - y[inside].mean())
            ece += inside.sum() / len(y) * gap
    return {
        "n": len(y),
        "accuracy": y.mean(),
        "mean_confidence": confidence.mean(),
        "ece": ece,
        "brier": ((confidence - y) ** 2).mean(),
    }


def write(path, arrays, names, kind: str):
    """The columns as a table of ``kind``: Parquet, an Arrow IPC file or an Arrow IPC stream
    (pyarrow writes repeated names as given)."""
    table = pa.Table.from_arrays(arrays, names=names)
    if kind == "parquet":
        pq.write_table(table, path)
    elif kind == "arrow-file":
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=150)
    else:
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=150)
    return path


def suffix(kind: str) -> str:
    return ".parquet" if kind == "parquet" else ".arrow"


def figures(args) -> dict:
    result = run(["calibrate", *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def assert_by_hand(body: dict, confidence, correct) -> None:
    for key, value in by_hand(confidence, correct).items():
        assert body[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


def refused(args) -> str:
    result = run(args)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr


# --------------------------------------------------------------------------- repeated names


@pytest.mark.parametrize("kind", TABLE_KINDS)
@pytest.mark.parametrize("repeated", ["confidence", "correct", "note"])
def test_a_column_named_twice_is_refused(tmp_path, kind, repeated):
    confidence, correct = columns()
    arrays = {
        "confidence": [pa.array(confidence), pa.array(1 - confidence)],
        "correct": [pa.array(correct), pa.array(~correct)],
        "note": [pa.array(["a"] * N), pa.array(["b"] * N)],
    }
    names, data = [], []
    for name in ("confidence", "correct", "note"):
        copies = arrays[name] if name == repeated else arrays[name][:1]
        names += [name] * len(copies)
        data += copies
    table = write(tmp_path / f"dup{suffix(kind)}", data, names, kind)
    stderr = refused(["calibrate", str(table)])
    assert stderr == f"Error: {table}: the table names column {repeated!r} twice\n"


def test_perplexity_and_compare_refuse_a_column_named_twice(tmp_path):
    nll = np.linspace(0.5, 3.0, N)
    table = write(
        tmp_path / "p.parquet",
        [pa.array(nll), pa.array(2 * nll), pa.array(np.full(N, 4))],
        ["nll", "nll", "tokens"],
        "parquet",
    )
    stderr = refused(["perplexity", str(table)])
    assert stderr == f"Error: {table}: the table names column 'nll' twice\n"

    confidence, correct = columns()
    ids = pa.array(np.arange(N))
    base = write(
        tmp_path / "base.parquet",
        [ids, pa.array(confidence), pa.array(correct)],
        ["id", "confidence", "correct"],
        "parquet",
    )
    new = write(
        tmp_path / "new.arrow",
        [ids, pa.array(confidence), pa.array(correct), pa.array(1 - confidence)],
        ["id", "confidence", "correct", "confidence"],
        "arrow-stream",
    )
    stderr = refused(["compare", str(base), str(new)])
    assert stderr == f"Error: {new}: the table names column 'confidence' twice\n"


@pytest.mark.parametrize("in_list", [False, True])
def test_a_struct_field_named_twice_is_refused(tmp_path, in_list):
    confidence, correct = columns()
    fields = [pa.field("p", pa.float64()), pa.field("p", pa.float64())]
    pred = pa.StructArray.from_arrays(
        [pa.array(confidence), pa.array(1 - confidence)], fields=fields
    )
    if in_list:  # one struct per row, inside a list
        pred = pa.ListArray.from_arrays(pa.array(np.arange(N + 1, dtype=np.int32)), pred)
    table = write(tmp_path / "s.parquet", [pa.array(correct), pred], ["correct", "pred"], "parquet")
    field = "pred.0.p" if in_list else "pred.p"
    stderr = refused(["calibrate", str(table), "--confidence-field", field])
    assert stderr == f"Error: {table}: column 'pred' names field 'p' twice\n"


# --------------------------------------------------------------------------- Arrow streams


@pytest.mark.parametrize("kind", TABLE_KINDS)
def test_each_table_kind_gives_the_figures_by_hand(tmp_path, kind):
    confidence, correct = columns()
    table = write(
        tmp_path / f"t{suffix(kind)}",
        [pa.array(confidence), pa.array(correct)],
        ["confidence", "correct"],
        kind,
    )
    assert_by_hand(figures([str(table)]), confidence, correct)


def test_a_datasets_folder_of_arrow_streams_is_read(tmp_path):
    confidence, correct = columns(seed=4)
    folder = tmp_path / "train"
    folder.mkdir()
    for i, part in enumerate((slice(0, 150), slice(150, N))):
        write(
            folder / f"data-{i:05d}-of-00002.arrow",
            [pa.array(confidence[part]), pa.array(correct[part])],
            ["confidence", "correct"],
            "arrow-stream",
        )
    assert_by_hand(figures([str(folder)]), confidence, correct)


# --------------------------------------------------------------------------- compressed tables


def zstd(data: bytes) -> bytes:
    from calibcli.io.compression import ZSTD, compressing

    out: list[bytes] = []
    write, finish = compressing(out.append, ZSTD)
    write(data)
    finish()
    return b"".join(out)


CODECS = {".gz": gzip.compress, ".xz": lzma.compress, ".bz2": bz2.compress, ".zst": zstd}


@pytest.mark.parametrize("kind", TABLE_KINDS)
@pytest.mark.parametrize("codec", sorted(CODECS))
def test_a_compressed_table_is_read(tmp_path, kind, codec):
    confidence, correct = columns(seed=7)
    plain = write(
        tmp_path / f"t{suffix(kind)}",
        [pa.array(confidence), pa.array(correct)],
        ["confidence", "correct"],
        kind,
    )
    packed = tmp_path / f"packed{suffix(kind)}{codec}"
    packed.write_bytes(CODECS[codec](plain.read_bytes()))
    plain.unlink()
    assert_by_hand(figures([str(packed)]), confidence, correct)


def test_a_folder_of_compressed_tables_is_read(tmp_path):
    confidence, correct = columns(seed=8)
    folder = tmp_path / "parts"
    folder.mkdir()
    for name, kind, part in (("a", "parquet", slice(0, 100)), ("b", "arrow-stream", slice(100, N))):
        plain = write(
            tmp_path / f"{name}{suffix(kind)}",
            [pa.array(confidence[part]), pa.array(correct[part])],
            ["confidence", "correct"],
            kind,
        )
        (folder / f"{plain.name}.gz").write_bytes(gzip.compress(plain.read_bytes()))
    assert_by_hand(figures([str(folder)]), confidence, correct)


def test_a_compressed_table_named_twice_in_a_column_is_refused(tmp_path):
    confidence, correct = columns()
    plain = write(
        tmp_path / "t.parquet",
        [pa.array(confidence), pa.array(correct), pa.array(1 - confidence)],
        ["confidence", "correct", "confidence"],
        "parquet",
    )
    packed = tmp_path / "t.parquet.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    stderr = refused(["calibrate", str(packed)])
    assert stderr == f"Error: {packed}: the table names column 'confidence' twice\n"


def test_a_compressed_table_past_the_limit_is_refused(tmp_path):
    rng = np.random.default_rng(3)
    n = 200_000  # over 1.6 MB of float64 confidences, stored uncompressed
    table = pa.table({"confidence": rng.random(n), "correct": rng.random(n) < 0.5})
    plain = tmp_path / "big.parquet"
    pq.write_table(table, plain, compression="none")
    assert plain.stat().st_size > 1 << 20
    packed = tmp_path / "big.parquet.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    stderr = refused(["calibrate", str(packed), "--max-document-mb", "1"])
    assert stderr == (
        f"Error: {packed}: decompresses to more than 1 MiB, calibcli's limit for one "
        "compressed document or archive member\n"
    )


def test_a_compressed_table_cut_short_is_refused(tmp_path):
    confidence, correct = columns()
    plain = write(
        tmp_path / "t.parquet",
        [pa.array(confidence), pa.array(correct)],
        ["confidence", "correct"],
        "parquet",
    )
    packed = tmp_path / "t.parquet.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes())[:-30])
    stderr = refused(["calibrate", str(packed)])
    assert stderr.startswith(f"Error: {packed}: cannot decompress: ")
