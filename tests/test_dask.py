"""calibcli.dask on a real Dask cluster (two worker processes on loopback, started here once for
the module): DataFrames of 1, 8 and 24 partitions and files read whole or in byte ranges give
the figures ``calibcli calibrate`` gives on the same rows — counts, bins and AUROC bit for bit,
sums to 1e-12 — with --by task, the Poisson bootstrap keyed by id and perplexity rows; the
lazy results compose in one ``dask.compute``; bad values are named; the README's examples run.
Skipped without dask, except under CALIBCLI_REQUIRE_ENGINES=1."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from conftest import require_engine
from engine_checks import assert_same, cli_json, readme_examples, shards

require_engine("dask.distributed", "dask")
require_engine("dask.dataframe", "dask")

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402

from calibcli.dask import summarize, summarize_files, summarize_perplexity  # noqa: E402
from calibcli.errors import InputError  # noqa: E402


@pytest.fixture(scope="module")
def client():
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    )
    with Client(cluster) as running:
        yield running
    cluster.close()


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return shards(tmp_path_factory.mktemp("shards"))


@pytest.fixture(scope="module")
def frame(paths):
    import pandas as pd

    return pd.concat([pd.read_json(p, lines=True) for p in paths], ignore_index=True)


@pytest.fixture(scope="module")
def cli(paths):
    return {
        None: cli_json("calibrate", *paths),
        "task": cli_json("calibrate", *paths, "--by", "task"),
    }


@pytest.mark.parametrize("partitions", [1, 8, 24])
def test_dataframe_gives_the_cli_figures(client, frame, cli, partitions):
    ddf = dd.from_pandas(frame, npartitions=partitions, sort=False)
    pooled, grouped = dask.compute(summarize(ddf), summarize(ddf, by="task", split_every=3))
    assert_same(pooled.report(), cli[None], files=False)
    assert_same(grouped.report(), cli["task"], files=False)


@pytest.mark.parametrize("blocksize", [None, 8 << 20, 300_000], ids=["whole", "8MiB", "300kB"])
def test_files_give_the_cli_report(client, paths, cli, blocksize):
    lazy = [summarize_files(paths, blocksize=blocksize), summarize_files(paths, by="task")]
    pooled, grouped = dask.compute(*lazy)
    assert_same(pooled.report(), cli[None])
    assert_same(grouped.report(), cli["task"])


def test_poisson_bootstrap_keyed_by_id_gives_the_cli_intervals(client, frame, paths, tmp_path):
    options = ["--ci", "0.95", "--bootstrap-scheme", "poisson", "--bootstrap", "200"]
    want = cli_json("calibrate", *paths, *options, "--id-field", "id")
    ddf = dd.from_pandas(frame, npartitions=8, sort=False)
    lazy = summarize(ddf, key="id", bootstrap_samples=200)
    files = summarize_files(paths, blocksize=300_000, id_field="id", bootstrap_samples=200)
    for result in dask.compute(lazy, files):
        got = result.report(ci=0.95)
        for figure, interval in want["ci"].items():
            if figure in ("auroc", "smece", "smece_bandwidth"):  # they need every row's key
                assert got["ci"][figure] == [None, None]
            else:
                assert_same({figure: got["ci"][figure]}, {figure: interval})
    result.write(tmp_path / "all.cbs")
    assert cli_json("calibrate", str(tmp_path / "all.cbs"), *options[:4]) == got


def test_perplexity_rows_give_the_cli_totals(client, tmp_path):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(3)
    rows = pd.DataFrame(
        {
            "nll": rng.gamma(3.0, 40.0, 5000),
            "tokens": rng.integers(1, 400, 5000),
            "bytes": rng.integers(400, 2000, 5000),
            "task": [f"t{i % 3}" for i in range(5000)],
        }
    )
    path = tmp_path / "ppl.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows.to_dict("records")))
    ddf = dd.from_pandas(rows, npartitions=5, sort=False)
    pooled, grouped, files = dask.compute(
        summarize_perplexity(ddf, bytes="bytes"),
        summarize_perplexity(ddf, bytes="bytes", by="task"),
        summarize_files([str(path)], blocksize=50_000),
    )
    assert pooled.report() == cli_json("perplexity", str(path))
    assert grouped.report() == cli_json("perplexity", str(path), "--by", "task")
    assert files.report() == cli_json("perplexity", str(path))


def test_bad_values_name_the_column_the_count_and_the_first(client):
    import pandas as pd

    frame = pd.DataFrame(
        {"confidence": [0.5, 0.2, 0.7, 1.5, float("nan"), 0.1], "correct": [1, 0, 1, 1, 0, 3]}
    )
    ddf = dd.from_pandas(frame, npartitions=2, sort=False)
    with pytest.raises(InputError) as found:
        dask.compute(summarize(ddf))
    text = str(found.value)
    assert "column 'confidence': 2 bad values; the first is 1.5 (row 1 of partition 1)" in text
    assert "column 'correct': 1 bad value; the first is 3 (row 3 of partition 1)" in text


def test_a_bad_line_in_a_file_keeps_its_file_and_line(client, tmp_path):
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"confidence": 0.4, "correct": true}\n' * 5000 + '{"confidence": 0.4}\n')
    with pytest.raises(InputError, match=r"b\.jsonl:5001: "):
        dask.compute(summarize_files([str(bad)], blocksize=10_000))


@pytest.mark.parametrize("example", readme_examples("dask"))
def test_readme_example_runs_as_printed(client, paths, example, tmp_path, monkeypatch, capsys):
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    (tmp_path / "shards").mkdir()
    for path in paths:
        shutil.copy(path, tmp_path / "shards" / os.path.basename(path))
    pq.write_table(pj.read_json(paths[0]), tmp_path / "predictions.parquet")
    monkeypatch.chdir(tmp_path)
    exec(compile(example, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip()
