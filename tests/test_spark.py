"""calibcli.spark on a real Spark (local[2], started here once for the module): a DataFrame's
rows, or files read in the tasks, give the figures ``calibcli calibrate`` gives on the same
rows — counts, bins and AUROC bit for bit, sums to 1e-11 — with --by task, the Poisson
bootstrap keyed by id, Parquet input and Spark's JSON reader's, perplexity rows; bad values are
named; the README's example runs. Skipped without pyspark or Java, except under
CALIBCLI_REQUIRE_ENGINES=1."""

from __future__ import annotations

import json

import pytest
from conftest import require_engine, require_program
from engine_checks import (
    POISSON,
    TASK,
    assert_poisson,
    assert_same,
    assert_threshold,
    cli_json,
    cli_references,
    local_spark,
    readme_examples,
    readme_folder,
    rerun_pair,
    run_readme_example,
    shards,
)

require_program("java", "Spark runs on a JVM (Java 17)")
require_engine("pyspark", "spark")

from calibcli.errors import InputError  # noqa: E402
from calibcli.spark import summarize, summarize_files, summarize_perplexity  # noqa: E402


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return shards(tmp_path_factory.mktemp("shards"))


@pytest.fixture(scope="module")
def started(paths):
    """The CLI's reports of the shards, computed while the JVM starts."""
    return cli_references(paths)


@pytest.fixture(scope="module")
def workdir(paths, tmp_path_factory):
    """The JVM's working directory, where the README's examples run: Spark resolves a
    relative path against it, not against the Python process's current directory."""
    return readme_folder(tmp_path_factory.mktemp("readme"), paths)


@pytest.fixture(scope="module")
def spark(started, workdir):
    with local_spark(
        "calibcli-tests",
        memory="2g",
        workdir=workdir,
        configs={"spark.sql.shuffle.partitions": "4"},
    ) as session:
        yield session


@pytest.fixture(scope="module")
def cli(started):
    return {key: run.result() for key, run in started.items()}


@pytest.fixture(scope="module")
def parquet(paths, tmp_path_factory):
    """The shards as Parquet files, one per JSON Lines shard, in one folder."""
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("parquet")
    for i, path in enumerate(paths):
        pq.write_table(pj.read_json(path), folder / f"{i:02d}.parquet")
    return str(folder)


def test_parquet_dataframe_gives_the_cli_figures_of_its_jsonl(spark, parquet, cli, tmp_path):
    df = spark.read.parquet(parquet)
    pooled = summarize(df)
    assert_same(pooled.report(), cli[None], files=False)
    pooled.write(tmp_path / "all.cbs")
    assert_threshold(tmp_path / "all.cbs", cli["threshold"])
    # partitions cut another way (a shuffle), merged in a tree of another shape
    grouped = summarize(df.repartition(5), by="task", depth=3)
    assert_same(grouped.report(), cli["task"], files=False)


def test_spark_json_reader_dataframe_gives_the_cli_figures(spark, paths, cli):
    # Spark's own JSON reader parses the shards (schema inferred: confidence double, correct
    # boolean); the rows reach calibcli as Arrow batches, and their figures are the CLI's
    df = spark.read.json(paths)
    assert_same(summarize(df).report(), cli[None], files=False)
    assert_same(summarize(df, by="task").report(), cli["task"], files=False)


def test_files_give_the_cli_report(spark, paths, cli):
    assert_same(summarize_files(spark, paths).report(), cli[None])
    ranges = summarize_files(spark, paths, by="task", blocksize=1 << 20)
    assert_same(ranges.report(), cli["task"])


def test_poisson_bootstrap_keyed_by_id_gives_the_cli_intervals(spark, parquet, cli, tmp_path):
    result = summarize(spark.read.parquet(parquet), key="id", bootstrap_samples=200, seed=0)
    got = result.report(ci=0.95)
    assert_poisson(got, cli["poisson"])
    # the part written is what the CLI measures, to the bit
    result.write(tmp_path / "all.cbs")
    assert cli_json("calibrate", str(tmp_path / "all.cbs"), *POISSON[:4]) == got


def test_perplexity_rows_give_the_cli_totals(spark, tmp_path):
    import numpy as np

    rng = np.random.default_rng(3)
    rows = [
        {"nll": float(n), "tokens": int(t), "task": f"t{i % 3}"}
        for i, (n, t) in enumerate(
            zip(rng.gamma(3.0, 40.0, 5000), rng.integers(1, 400, 5000), strict=True)
        )
    ]
    path = tmp_path / "ppl.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    df = spark.createDataFrame(rows, "nll DOUBLE, tokens LONG, task STRING").repartition(4)
    assert summarize_perplexity(df).report() == cli_json("perplexity", str(path))
    grouped = summarize_perplexity(df, by="task").report()
    assert grouped == cli_json("perplexity", str(path), "--by", "task")
    assert summarize_files(spark, [str(path)]).report() == cli_json("perplexity", str(path))


def test_bad_values_name_the_column_the_count_and_the_first(spark):
    rows = [(0.5, True), (1.5, False), (None, True), (0.2, None), (-1.0, True), (0.9, True)]
    df = spark.createDataFrame(rows, "confidence DOUBLE, correct BOOLEAN").coalesce(1)
    with pytest.raises(InputError) as found:
        summarize(df)
    text = str(found.value)
    assert "column 'confidence': 3 bad values; the first is 1.5 (row 2 of partition 0)" in text
    assert "column 'correct': 1 bad value; the first is null (row 4 of partition 0)" in text
    with pytest.raises(ValueError, match="no column 'conf'"):
        summarize(df, confidence="conf")


def test_a_bad_line_in_a_file_keeps_its_file_and_line(spark, tmp_path):
    good = tmp_path / "a.jsonl"
    good.write_text('{"confidence": 0.4, "correct": true}\n' * 3)
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"confidence": 0.4, "correct": true}\n{"confidence": 2, "correct": true}\n')
    with pytest.raises(InputError, match=r"b\.jsonl:2: confidence 2 is outside \[0, 1\]"):
        summarize_files(spark, [str(good), str(bad)])


@pytest.mark.parametrize("example", readme_examples("spark"))
def test_readme_example_runs_as_printed(spark, workdir, example, capsys):
    run_readme_example(example, workdir, capsys)


def test_a_float32_column_is_read_as_written(spark):
    """A FloatType column reaches the partition task as Arrow float32: its values are read as
    their shortest spelling (0.7, not 0.699999988), so the figures are the hand-computed ones
    of the rows as CSV gives them."""
    from pyspark.sql import types as T
    from test_narrow_floats import assert_by_hand, frame

    schema = T.StructType(
        [T.StructField("confidence", T.FloatType()), T.StructField("correct", T.BooleanType())]
    )
    rows = [(float(c), bool(y)) for c, y in frame().itertuples(index=False)]
    df = spark.createDataFrame(rows, schema).repartition(3)
    assert_by_hand(summarize(df).report())


def test_a_decimal_column_is_read_by_its_digits(spark):
    """A DecimalType(38, 6) column (the scale Spark gives a division) reaches the partition
    task as Arrow decimals: 0.900000 is read as 0.9, in the bin [0.9, 1.0), so the ECE is the
    hand-computed 0.05 (test_table_values), not the 0 of bins whose errors cancel. A decimal
    --by column names its groups by the numbers its digits spell."""
    from decimal import Decimal

    from pyspark.sql import types as T
    from test_table_values import CELLS, by_hand_ece

    schema = T.StructType(
        [
            T.StructField("confidence", T.DecimalType(38, 6)),
            T.StructField("correct", T.BooleanType()),
            T.StructField("level", T.DecimalType(10, 1)),
        ]
    )
    rows = [
        (Decimal(text).quantize(Decimal("0.000001")), i < right, Decimal(text[:3]))
        for text, n, right in CELLS
        for i in range(n)
    ]
    df = spark.createDataFrame(rows, schema).repartition(3)
    body = summarize(df, by="level").report(limits={"ece": 0.04})
    assert body["ece"] == pytest.approx(float(by_hand_ece()), abs=1e-15)
    assert body["gate"]["passed"] is False
    assert body["reliability"]["count"] == [0, 0, 0, 100, 0, 100, 0, 0, 100, 100]
    assert sorted(body["groups"]) == ["0.3", "0.5", "0.8", "0.9"]


def test_the_rows_of_a_file_in_another_order_are_refused(spark, tmp_path):
    """Two files of the same 100 rows, one reversed, read in two tasks: refused as the command
    line refuses them (their rows would count twice), pooled with all_runs."""
    rows = [{"confidence": (i + 0.5) / 100, "correct": i % 3 == 0} for i in range(100)]
    first, again = tmp_path / "h.jsonl", tmp_path / "h_reversed.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in rows))
    again.write_text("".join(json.dumps(r) + "\n" for r in rows[::-1]))
    with pytest.raises(InputError, match=r"h_reversed\.jsonl: holds the rows of .*h\.jsonl"):
        summarize_files(spark, [str(first), str(again)])
    assert summarize_files(spark, [str(first), str(again)], all_runs=True).n == 200


@pytest.mark.parametrize("partitions", [1, 2])
def test_a_repeated_id_is_refused_whatever_the_partitions(spark, partitions):
    rows = [(f"i{i}", (i + 0.5) / 300, i % 2 == 0) for i in range(300)]
    rows[250] = ("i10", *rows[250][1:])
    df = spark.createDataFrame(rows, "id STRING, confidence DOUBLE, correct BOOLEAN")
    df = df.coalesce(1) if partitions == 1 else df.repartition(2)
    with pytest.raises(InputError) as found:
        summarize(df, key="id")
    text = str(found.value)
    assert "column 'id': " in text and "each row's id must be its own" in text
    if partitions == 1:  # the rows in their order: the repeat is row 251, its id row 11's
        assert "the first is 'i10' (row 251 of partition 0): the id of the row at row 11" in text
    assert text.count("spark-dataframe") == 1  # the DataFrame named once


def test_the_newest_of_an_lm_eval_task_s_re_runs_is_read(spark, tmp_path):
    """Re-runs of one task in one folder: the newest is read and the older named, as the
    command line reads them (they used to be refused as a row in two parts)."""
    older, newer = rerun_pair(tmp_path)
    body = summarize_files(spark, [str(older), str(newer)]).report()
    assert body == cli_json("calibrate", str(older), str(newer))
    assert body["warnings"][0].startswith(f"re-runs of 1 task(s) ('{TASK}') in one folder")
