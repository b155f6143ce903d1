"""calibcli.dask on decimal columns, as ``dd.read_parquet`` gives them (pandas' ArrowDtype
``decimal128(4, 2)[pyarrow]``): read through their digits, with the figures ``calibcli
calibrate`` and ``calibcli perplexity`` give on the same Parquet file; a decimal outcome that
is not exactly 0 or 1 is refused naming it as written. Skipped without dask, except under
CALIBCLI_REQUIRE_ENGINES=1."""

from __future__ import annotations

from decimal import Decimal

import pytest
from conftest import require_engine
from engine_checks import assert_same, cli_json

require_engine("dask.dataframe", "dask")

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from calibcli.dask import summarize, summarize_perplexity  # noqa: E402
from calibcli.errors import InputError  # noqa: E402

CELLS = [("0.35", 10, 3), ("0.55", 10, 6), ("0.90", 20, 17), ("0.95", 10, 10)]
"""(confidence as written, rows, rows answered right): 36 of 50 right."""


def computed(lazy):
    (result,) = dask.compute(lazy, scheduler="synchronous")
    return result


def test_decimal_confidences_give_the_command_lines_figures(tmp_path):
    conf = [Decimal(text) for text, n, _ in CELLS for _ in range(n)]
    right = [i < k for _, n, k in CELLS for i in range(n)]
    task = [f"t{i % 2}" for i in range(len(conf))]
    path = tmp_path / "rows.parquet"
    table = {"confidence": pa.array(conf, pa.decimal128(4, 2)), "correct": right, "task": task}
    pq.write_table(pa.table(table), path)
    ddf = dd.read_parquet(str(path))
    assert str(ddf.dtypes["confidence"]) == "decimal128(4, 2)[pyarrow]"
    got = computed(summarize(ddf.repartition(npartitions=3), by="task")).report()
    assert got["n"] == 50 and got["accuracy"] == 36 / 50
    assert_same(got, cli_json("calibrate", str(path), "--by", "task"), files=False)


def test_decimal_nlls_and_counts_give_the_command_lines_figures(tmp_path):
    nll = [Decimal("1.2500"), Decimal("0.0000"), Decimal("7.1000")]
    tokens = [Decimal(3), Decimal(0), Decimal(9)]
    path = tmp_path / "rows.parquet"
    table = {"nll": pa.array(nll, pa.decimal128(10, 4)), "tokens": pa.array(tokens)}
    pq.write_table(pa.table(table), path)
    got = computed(summarize_perplexity(dd.read_parquet(str(path)))).report()
    assert got["total_tokens"] == 12
    assert got == cli_json("perplexity", str(path)) | {"format": got["format"]}


def test_a_decimal_outcome_with_digits_after_the_point_is_refused(tmp_path):
    """An outcome at scale 30 is refused whole, as `calibcli calibrate` refuses the same
    Parquet file (its first row's 1, written at scale 30, reads as 1.0)."""
    nines = Decimal("0." + "9" * 30)
    values = [Decimal(1), Decimal(0), nines, Decimal(0), nines]
    path = tmp_path / "rows.parquet"
    conf = [0.9, 0.2, 0.8, 0.3, 0.7]
    pq.write_table(
        pa.table({"confidence": conf, "correct": pa.array(values, pa.decimal128(38, 30))}), path
    )
    with pytest.raises(InputError) as found:
        computed(summarize(dd.read_parquet(str(path))))
    assert (
        f"column 'correct': 5 bad values; the first is 1.{'0' * 30} "
        "(row 1 of partition 0): not true, false, 0 or 1 (a column of floats: cast it to booleans "
        "or integers)"
    ) in str(found.value)
    assert "row 1: correct 1.0 is not true/false/0/1" in cli_error(path)


@pytest.mark.parametrize("kind", ["float64", "float32"])
def test_an_outcome_column_of_floats_is_refused_as_the_command_refuses_it(tmp_path, kind):
    path = tmp_path / "rows.parquet"
    table = {"confidence": [0.9, 0.2, 0.8], "correct": pa.array([1.0, 0.0, 1.0], kind)}
    pq.write_table(pa.table(table), path)
    with pytest.raises(InputError) as found:
        computed(summarize(dd.read_parquet(str(path))))
    assert (
        "column 'correct': 3 bad values; the first is 1.0 (row 1 of partition 0): not true, "
        "false, 0 or 1 (a column of floats: cast it to booleans or integers)"
    ) in str(found.value)
    assert "row 1: correct 1.0 is not true/false/0/1" in cli_error(path)
    integers = {"confidence": [0.9, 0.2, 0.8], "correct": pa.array([1, 0, 1], "int8")}
    pq.write_table(pa.table(integers), path)
    assert computed(summarize(dd.read_parquet(str(path)))).report()["accuracy"] == 2 / 3


def cli_error(path) -> str:
    """What `calibcli calibrate` says of ``path``, which it refuses (exit 2)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "calibcli", "calibrate", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    return done.stderr


def test_an_object_column_of_booleans_names_the_cast_to_make():
    """pandas keeps True/False that met a None as Python objects, which Dask turns into
    strings: the refusal says so and names the casts that Dask reads as outcomes."""
    import pandas as pd

    frame = pd.DataFrame(
        {
            "confidence": [0.9, 0.2, 0.7, 0.4],
            "correct": pd.Series([True, False, True, False], dtype=object),
        }
    )
    ddf = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(ValueError) as caught:
        computed(summarize(ddf))
    message = str(caught.value)
    assert message.startswith("column 'correct' is string")
    assert '.astype("boolean")' in message and '.astype("Int64")' in message
    cast = frame.astype({"correct": "boolean"})
    got = computed(summarize(dd.from_pandas(cast, npartitions=2))).report()
    assert got["n"] == 4 and got["accuracy"] == 0.5


def test_a_confidence_read_from_the_outcome_column_is_refused():
    """Each row's confidence would be its own outcome: ECE 0 and AUROC 1 whatever the model
    answered, so every gate would pass; refused as the command line refuses it."""
    import pandas as pd

    frame = pd.DataFrame({"correct": [1, 0, 1, 0] * 10})
    with pytest.raises(ValueError, match="confidence='correct' is the correct column"):
        summarize(dd.from_pandas(frame, npartitions=2), confidence="correct")


def test_the_cast_hint_is_for_the_outcome_column_only():
    import pandas as pd

    frame = pd.DataFrame({"confidence": ["0.9", "0.2"], "correct": [True, False]})
    with pytest.raises(ValueError) as caught:
        computed(summarize(dd.from_pandas(frame, npartitions=1)))
    assert str(caught.value).startswith("column 'confidence' is string")
    assert "astype" not in str(caught.value)
