"""calibcli.dask on a real Dask cluster (two worker processes on loopback, started here once for
the module): DataFrames of 1, 8 and 24 partitions and files read whole or in byte ranges give
the figures ``calibcli calibrate`` gives on the same rows — counts, bins and AUROC bit for bit,
sums to 1e-11 — with --by task, the Poisson bootstrap keyed by id and perplexity rows; the
lazy results compose in one ``dask.compute``; bad values are named; the README's examples run.
Skipped without dask, except under CALIBCLI_REQUIRE_ENGINES=1."""

from __future__ import annotations

import json

import pytest
from conftest import require_engine
from engine_checks import (
    POISSON,
    TASK,
    assert_poisson,
    assert_same,
    assert_threshold,
    cli_json,
    cli_references,
    readme_examples,
    readme_folder,
    rerun_pair,
    run_readme_example,
    shards,
)

require_engine("dask.distributed", "dask")
require_engine("dask.dataframe", "dask")

import dask  # noqa: E402
import dask.dataframe as dd  # noqa: E402

from calibcli.dask import summarize, summarize_files, summarize_perplexity  # noqa: E402
from calibcli.errors import InputError  # noqa: E402


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return shards(tmp_path_factory.mktemp("shards"))


@pytest.fixture(scope="module")
def started(paths):
    """The CLI's reports of the shards, computed while the cluster starts."""
    return cli_references(paths)


@pytest.fixture(scope="module")
def client(started):
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
def frame(paths):
    """The shards' rows as one pandas DataFrame, each float parsed exactly (pyarrow's JSON
    reader; pandas' own read_json rounds the last bits of some by default)."""
    import pyarrow as pa
    import pyarrow.json as pj

    return pa.concat_tables([pj.read_json(p) for p in paths]).to_pandas()


@pytest.fixture(scope="module")
def cli(started):
    return {key: run.result() for key, run in started.items()}


@pytest.mark.parametrize("partitions", [1, 8, 24])
def test_dataframe_gives_the_cli_figures(client, frame, cli, partitions, tmp_path):
    ddf = dd.from_pandas(frame, npartitions=partitions, sort=False)
    pooled, grouped = dask.compute(summarize(ddf), summarize(ddf, by="task", split_every=3))
    assert_same(pooled.report(), cli[None], files=False)
    assert_same(grouped.report(), cli["task"], files=False)
    if partitions == 24:  # the most merges: the threshold CLI on the part, once
        pooled.write(tmp_path / "all.cbs")
        assert_threshold(tmp_path / "all.cbs", cli["threshold"])


@pytest.mark.parametrize("blocksize", [None, 8 << 20, 300_000], ids=["whole", "8MiB", "300kB"])
def test_files_give_the_cli_report(client, paths, cli, blocksize, tmp_path):
    lazy = [summarize_files(paths, blocksize=blocksize, by=by) for by in (None, "task")]
    pooled, grouped = dask.compute(*lazy)
    assert_same(pooled.report(), cli[None])
    assert_same(grouped.report(), cli["task"])
    if blocksize == 300_000:  # the most ranges: the threshold CLI on the part, once
        pooled.write(tmp_path / "all.cbs")
        assert_threshold(tmp_path / "all.cbs", cli["threshold"])


def test_poisson_bootstrap_keyed_by_id_gives_the_cli_intervals(client, frame, paths, cli, tmp_path):
    ddf = dd.from_pandas(frame, npartitions=8, sort=False)
    lazy = summarize(ddf, key="id", bootstrap_samples=200)
    files = summarize_files(paths, blocksize=1 << 20, id_field="id", bootstrap_samples=200)
    for result in dask.compute(lazy, files):
        got = result.report(ci=0.95)
        assert_poisson(got, cli["poisson"])
    # the part written is what the CLI measures, to the bit
    result.write(tmp_path / "all.cbs")
    assert cli_json("calibrate", str(tmp_path / "all.cbs"), *POISSON[:4]) == got


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


@pytest.fixture(scope="module")
def workdir(paths, tmp_path_factory):
    return readme_folder(tmp_path_factory.mktemp("readme"), paths)


@pytest.mark.parametrize("example", readme_examples("dask"))
def test_readme_example_runs_as_printed(client, workdir, example, capsys):
    run_readme_example(example, workdir, capsys)


def test_the_newest_of_an_lm_eval_task_s_re_runs_is_read(client, tmp_path):
    """Re-runs of one task in one folder: the newest is read and the older named, as the
    command line reads them (they used to be refused as a row in two parts)."""
    older, newer = rerun_pair(tmp_path)
    body = dask.compute(summarize_files([str(older), str(newer)]))[0].report()
    assert body == cli_json("calibrate", str(older), str(newer))
    assert body["warnings"][0].startswith(f"re-runs of 1 task(s) ('{TASK}') in one folder")
