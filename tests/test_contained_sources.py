"""An input that holds part of another's rows (a file beside some of its shards, two files that
share many rows) is refused on every route that refuses copies, and pooled with --all-runs.

The rows: 1,000 rows of random doubles (every confidence distinct, drawn from
random.Random(1)), and files cut from their lines, so every count is known by construction: the
first 500 lines are all held by the whole file; lines 1-600 and 401-1000 share 200 rows, a
third of each; three line shards of 333, 333 and 334 rows. Honest inputs still read: two files
drawn apart (1,000 + 1,000 rows), the three shards without the whole, and coarse rows
(confidences of one decimal, or of two and four decimals drawn apart), whose values other rows
share by chance.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest
from harness import run

from calibcli.errors import InputError

REMEDY = "they would count twice (pass --all-runs to pool them on purpose, or give one of them)"


def rows(n, seed, decimals=None):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = rng.random()
        out.append(
            {
                "confidence": c if decimals is None else round(c, decimals),
                "correct": rng.random() < c,
            }
        )
    return out


def write(path, items):
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    d = tmp_path_factory.mktemp("contained")
    whole = rows(1000, 1)
    write(d / "preds.jsonl", whole)
    write(d / "preds-part1.jsonl", whole[:500])
    write(d / "early.jsonl", whole[:600])
    write(d / "late.jsonl", whole[400:])
    for k, (a, b) in enumerate([(0, 333), (333, 666), (666, 1000)]):
        write(d / f"s{k}.jsonl", whole[a:b])
    write(d / "other.jsonl", rows(1000, 2))
    coarse = rows(1000, 3, decimals=1)
    write(d / "coarse.jsonl", coarse)
    write(d / "coarse-half.jsonl", coarse[:500])
    for name, n, decimals, seed in [("d4a", 5000, 4, 4), ("d4b", 5000, 4, 5)]:
        write(d / f"{name}.jsonl", rows(n, seed, decimals))
    for seed in range(20):  # 100 rows of two decimals: often the same values by chance
        write(d / f"p2_{seed:02d}.jsonl", rows(100, 100 + seed, decimals=2))
    return d


def n_read(*args):
    result = run(["calibrate", *args, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["n"]


def refused(*args):
    result = run(["calibrate", *args, "--json"])
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    return line


def test_a_file_beside_its_first_half_is_refused(d):
    line = refused(d / "preds.jsonl", d / "preds-part1.jsonl", "--min-rows", "1200")
    assert line == (
        f"Error: {d / 'preds-part1.jsonl'}: its rows are held by {d / 'preds.jsonl'} too "
        f"(about 100% of them): {REMEDY}"
    )


def test_all_runs_pools_them(d):
    assert n_read(d / "preds.jsonl", d / "preds-part1.jsonl", "--all-runs") == 1500


def test_files_drawn_apart_read(d):
    assert n_read(d / "preds.jsonl", d / "other.jsonl") == 2000
    assert n_read(d / "s0.jsonl", d / "s1.jsonl", d / "s2.jsonl") == 1000


def test_a_file_beside_two_of_its_three_shards_is_refused(d):
    line = refused(d / "preds.jsonl", d / "s0.jsonl", d / "s2.jsonl", d / "other.jsonl")
    assert line.startswith(f"Error: {d / 's0.jsonl'}: its rows are held by {d / 'preds.jsonl'} too")


def test_files_sharing_a_third_of_their_rows_are_refused(d):
    """Lines 1-600 and 401-1000 share 200 rows, a third of each: a sizeable overlap counts
    them twice, so it is refused (the threshold is a fifth above chance)."""
    line = refused(d / "early.jsonl", d / "late.jsonl")
    share = int(line.split("(about ")[1].split("%")[0])
    assert 23 <= share <= 43  # 1/3, estimated on about 200 hashes


def test_coarse_rows_and_their_half_read(d):
    assert n_read(d / "coarse.jsonl", d / "coarse-half.jsonl") == 1500


def test_rows_of_few_decimals_drawn_apart_read(d):
    """Values of four decimals, 5,000 rows each: a third of each file's distinct values are
    the other's by chance, which the repeats within each file foretell."""
    assert n_read(d / "d4a.jsonl", d / "d4b.jsonl") == 10000
    small = sorted(d.glob("p2_*.jsonl"))
    for a, b in zip(small[::2], small[1::2], strict=True):
        assert n_read(a, b) == 200


def test_summary_files_workers_and_merge(d, tmp_path):
    for name in ("preds", "preds-part1"):
        assert (
            run(["summarize", d / f"{name}.jsonl", "-o", tmp_path / f"{name}.cbs", "-q"]).exit_code
            == 0
        )
    for k in (1, 2):
        out = tmp_path / f"q{k}.cbs"
        assert (
            run(["summarize", d / "preds.jsonl", "--part", f"{k}/2", "-o", out, "-q"]).exit_code
            == 0
        )
    held = f"{d / 'preds-part1.jsonl'}"
    line = refused(tmp_path / "preds.cbs", tmp_path / "preds-part1.cbs")
    assert f"{held} (in {tmp_path / 'preds-part1.cbs'}): its rows are held by" in line
    assert "too (about 100% of them): they would count twice" in line
    line = refused(tmp_path / "preds.cbs", d / "preds-part1.jsonl")
    assert f"{held}: its rows are held by {d / 'preds.jsonl'} (in " in line
    assert n_read(tmp_path / "preds.cbs", tmp_path / "preds-part1.cbs", "--all-runs") == 1500
    merged = run(
        [
            "merge",
            tmp_path / "q1.cbs",
            tmp_path / "q2.cbs",
            tmp_path / "preds-part1.cbs",
            "-o",
            tmp_path / "m.cbs",
        ]
    )
    assert merged.exit_code == 2 and "its rows are held by" in merged.stderr
    assert (
        run(["merge", tmp_path / "q1.cbs", tmp_path / "q2.cbs", "-o", tmp_path / "m.cbs"]).exit_code
        == 0
    )
    line = refused(d / "preds.jsonl", d / "preds-part1.jsonl", "--workers", "2")
    assert line.endswith(
        f"its rows are held by {d / 'preds.jsonl'} too (about 100% of them): {REMEDY}"
    )
    result = run(
        ["summarize", d / "preds.jsonl", d / "preds-part1.jsonl", "-o", tmp_path / "x.cbs"]
    )
    assert result.exit_code == 2 and not (tmp_path / "x.cbs").exists()


def test_a_summary_file_keeps_the_sketch_of_each_source(d, tmp_path):
    """The sketch is the 256 smallest distinct row hashes (base64 of little-endian uint64s),
    the same whether read whole or by two workers."""
    import base64

    import numpy as np

    from calibcli.summaries import calibration_hashes, from_bytes

    whole = [json.loads(line) for line in (d / "preds.jsonl").read_text().splitlines()]
    conf = np.array([r["confidence"] for r in whole])
    correct = np.array([r["correct"] for r in whole])
    want = np.sort(np.unique(calibration_hashes(conf, correct)))[:256]
    for extra in ([], ["--workers", "2"]):
        out = tmp_path / "p.cbs"
        assert run(["summarize", d / "preds.jsonl", "-o", out, "-q", *extra]).exit_code == 0
        (source,) = from_bytes(out.read_bytes()).sources
        assert np.array_equal(source.rows_sketch[0], want)
        assert source.rows_sketch[1].shape == (0,)  # no value repeats
    raw = base64.b64encode(want.astype("<u8").tobytes()).decode()
    assert raw.encode() in (tmp_path / "p.cbs").read_bytes()


def test_the_api_refuses_them(d):
    import calibcli

    with pytest.raises(InputError, match=r"its rows are held by .*preds\.jsonl too"):
        calibcli.read_predictions([str(d / "preds.jsonl"), str(d / "preds-part1.jsonl")])
    pooled = calibcli.read_predictions(
        [str(d / "preds.jsonl"), str(d / "preds-part1.jsonl")], all_runs=True
    )
    assert len(pooled) == 1500


def test_apply_refuses_them_and_writes_nothing(d, tmp_path):
    fitted = tmp_path / "cal.json"
    assert run(["fit", d / "preds.jsonl", "--method", "platt", "-o", fitted]).exit_code == 0
    out = tmp_path / "out.jsonl"
    result = run(["apply", fitted, d / "preds.jsonl", d / "preds-part1.jsonl", "-o", out])
    assert result.exit_code == 2 and not out.exists()
    assert f"its rows are held by {d / 'preds.jsonl'} too (about 100% of them)" in result.stderr
    # pooled on purpose; they are the rows the calibrator was fitted on, written all the same
    both = [d / "preds.jsonl", d / "preds-part1.jsonl", "--all-runs", "--allow-in-sample"]
    assert run(["apply", fitted, *both]).exit_code == 0


def test_dask_reads_judge_them(d):
    from conftest import require_engine

    require_engine("dask.dataframe", "dask")
    import dask

    from calibcli.dask import summarize_files

    files = [str(d / "preds.jsonl"), str(d / "preds-part1.jsonl")]
    with pytest.raises(InputError, match=r"preds-part1\.jsonl: its rows are held by"):
        dask.compute(summarize_files(files, blocksize=10_000), scheduler="synchronous")
    (pooled,) = dask.compute(summarize_files(files, all_runs=True), scheduler="synchronous")
    assert pooled.n == 1500


def _skewed_subjects(seed: int, files: int) -> list[tuple[Any, Any]]:
    """Per-subject files of a 4-choice model's top softmax probability (mostly near 1),
    rounded to 2 decimals: few likely values, which every file holds by chance."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(30, 100, files)
    out = []
    for n in sizes.tolist():
        z = rng.normal(0, 1, (n, 4))
        z[:, 0] += rng.normal(3, 2, n)
        p = np.exp(z - z.max(1, keepdims=True))
        conf = (p / p.sum(1, keepdims=True)).max(1)
        out.append((np.round(conf, 2), rng.random(n) < conf))
    return out


def test_files_of_rounded_values_drawn_apart_are_read(tmp_path):
    # two of these 200 files drawn apart share 19 of the smaller's 22 distinct values by
    # chance (the likely ones: 1.0, 0.96, ...); values that repeat so much are not compared
    data = _skewed_subjects(2262, 200)
    paths = []
    for k in (17, 185):
        conf, right = data[k]
        path = tmp_path / f"subject_{k}.jsonl"
        path.write_text(
            "".join(
                json.dumps({"confidence": float(c), "correct": bool(r)}) + "\n"
                for c, r in zip(conf.tolist(), right.tolist(), strict=True)
            )
        )
        paths.append(path)
    result = run(["calibrate", *paths, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == len(data[17][0]) + len(data[185][0]) == 103
