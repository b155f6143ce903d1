"""Perplexity rows written again through a float32 column are copies of the rows they came from.

A script that writes ``json.dumps(loss.item())`` of a float32 loss puts the float32's exact
value at full double precision (63.6961669921875); a float32 Parquet column of the same losses
is read as their shortest digits (63.696167), and so is a CSV written from it: other doubles,
the same float32. Each perplexity source keeps the multiset hash of its rows with every NLL
rounded to float32 (token counts exact), which tells them: files named together, a folder,
shards, summaries, merge and ``--part`` pieces are refused as exact copies are, the refusal
saying "(their NLLs equal as float32)". Two models' runs on one corpus (the same token counts,
other NLLs), and coarse rows (a few levels, which other rows share by chance), are read.

The rows: 200, drawn from numpy's default_rng(0) (NLL = float32(100 u), tokens in [10, 500));
their token counts add up to 51,750 (held by hand below and checked against a plain sum).
"""

from __future__ import annotations

import json
import struct
from dataclasses import replace

import numpy as np
import pytest
from harness import run

from calibcli.errors import InputError
from calibcli.io import read_perplexity

NOTE = "(their NLLs equal as float32)"
SAME = "(the same NLLs and token counts, in any order)"
ROWS, TOKENS = 200, 51_750  # one file's rows, counted once


def losses(seed=0, n=ROWS):
    """(NLLs as float32, token counts) as a script's float32 losses would give them."""
    rng = np.random.default_rng(seed)
    return (rng.random(n) * 100).astype(np.float32), rng.integers(10, 500, n)


def jsonl_text(nll, tokens):
    # float(float32) is its exact value: json writes all of its digits, as loss.item() would
    return "".join(
        json.dumps({"nll": float(a), "tokens": int(b)}) + "\n"
        for a, b in zip(nll, tokens, strict=True)
    )


def csv_text(nll, tokens):
    # each NLL by the shortest digits that give its float32, as a float32 column is written
    # (str: an f-string would widen the float32 to a Python float, all of its digits)
    return "nll,tokens\n" + "".join(f"{a!s},{b}\n" for a, b in zip(nll, tokens, strict=True))


def write_parquet(path, nll, tokens, kind="float32"):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    values = pa.array(nll.astype(kind), getattr(pa, kind)())
    pq.write_table(pa.table({"nll": values, "tokens": pa.array(tokens)}), path)
    return path


def error_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def ok(args):
    result = run(args)
    assert result.exit_code == 0, result.stderr
    return result


def counted(args):
    """(sequences, total tokens) of a perplexity report."""
    got = json.loads(ok(["perplexity", *args, "-q", "--json"]).stdout)
    return got["sequences"], got["total_tokens"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pf32")
    nll, tokens = losses()
    assert int(sum(int(t) for t in tokens)) == TOKENS
    assert sum(float(str(a)) != float(a) for a in nll) > ROWS // 2  # the CSV's: other doubles
    (d / "orig.jsonl").write_text(jsonl_text(nll, tokens), encoding="utf-8")
    (d / "copy32.csv").write_text(csv_text(nll, tokens), encoding="utf-8")
    (d / "half1.csv").write_text(csv_text(nll[:100], tokens[:100]), encoding="utf-8")
    (d / "half2.csv").write_text(csv_text(nll[100:], tokens[100:]), encoding="utf-8")
    return d


# ---- the hash


def _mix(x):
    m = (1 << 64) - 1
    x = (x * 0xBF58476D1CE4E5B9) & m
    x ^= x >> 29
    x = (x * 0x94D049BB133111EB) & m
    return x ^ (x >> 32)


def _bits(value):
    return struct.unpack("<I", struct.pack("<f", value))[0]


def test_the_hash_is_the_sum_of_each_rows_mix():
    from calibcli.summaries.fingerprint import perplexity_float32_sum

    # by hand: the float32's bits (struct), the token count's low 32 bits above them
    nll, tokens = [63.6961669921875, 0.1, 2.5], [17, 3, (1 << 32) + 5]
    want = 0
    for a, t in zip(nll, tokens, strict=True):
        want = (want + _mix(_bits(a) | (t % (1 << 32)) << 32)) % (1 << 64)
    assert perplexity_float32_sum(np.array(nll), np.array(tokens, np.int64)) == want
    # no token counts: each row as a count of -1; an NLL beyond float32 as its infinity
    want = 0
    for bits in (_bits(0.1), 0x7F800000):
        want = (want + _mix(bits | 0xFFFFFFFF << 32)) % (1 << 64)
    assert perplexity_float32_sum(np.array([0.1, 1e39]), None) == want


def test_nlls_read_from_float32_spellings_hash_as_the_originals():
    from calibcli.summaries.fingerprint import perplexity_float32_sum

    nll, tokens = losses(3, 1000)
    exact = nll.astype(np.float64)
    read = np.array([float(str(a)) for a in nll])
    assert not np.array_equal(read, exact)  # other doubles
    assert perplexity_float32_sum(read, tokens) == perplexity_float32_sum(exact, tokens)
    assert perplexity_float32_sum(read, tokens + 1) != perplexity_float32_sum(exact, tokens)


# ---- files, folders and shards


def test_the_rows_alone_count_once(files):
    assert counted([files / "orig.jsonl"]) == (ROWS, TOKENS)
    assert counted([files / "copy32.csv"]) == (ROWS, TOKENS)


def test_the_float32_parquet_beside_its_jsonl_is_refused(files, tmp_path):
    nll, tokens = losses()
    copy = write_parquet(tmp_path / "copy32.parquet", nll, tokens)
    args = [files / "orig.jsonl", copy, "--min-rows", "400", "--min-tokens", "100000"]
    result = run(["perplexity", *args, "-q"])
    assert result.exit_code == 2, result.stdout
    assert error_line(result) == (
        f"Error: {copy}: holds the rows of {files / 'orig.jsonl'} {SAME} {NOTE}: its rows "
        "would count twice (pass --all-runs to pool them on purpose, or give one of them)"
    )
    assert result.stdout == ""


def test_the_float64_parquet_is_refused_as_an_exact_copy(files, tmp_path):
    nll, tokens = losses()
    copy = write_parquet(tmp_path / "copy64.parquet", nll, tokens, "float64")
    result = run(["perplexity", files / "orig.jsonl", copy, "-q"])
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert f"{SAME}:" in line and NOTE not in line


def test_the_csv_pandas_writes_from_the_float32_column_is_refused(files, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    pytest.importorskip("pandas")
    nll, tokens = losses()
    column = write_parquet(tmp_path / "copy32.parquet", nll, tokens)
    pq.read_table(column).to_pandas().to_csv(tmp_path / "copy32.csv", index=False)
    assert "63.696167," in (tmp_path / "copy32.csv").read_text(encoding="utf-8")
    result = run(["perplexity", files / "orig.jsonl", tmp_path / "copy32.csv", "-q"])
    assert result.exit_code == 2, result.stdout
    assert NOTE in error_line(result)


def test_a_folder_of_the_jsonl_and_its_float32_parquet_is_refused(files, tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "orig.jsonl").write_bytes((files / "orig.jsonl").read_bytes())
    write_parquet(folder / "orig32.parquet", *losses())
    result = run(["perplexity", folder, "-q"])
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert "holds the rows of" in line and "orig32.parquet" in line and "orig.jsonl" in line
    assert f"{SAME} {NOTE}" in line


def test_the_jsonl_beside_its_float32_shards_is_refused(files):
    args = [files / "half1.csv", files / "half2.csv", files / "orig.jsonl"]
    result = run(["perplexity", *args, "-q"])
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert line.startswith(f"Error: {files / 'orig.jsonl'}: holds the rows of ")
    assert f"together {SAME} {NOTE}" in line


def test_the_hash_is_the_same_whatever_the_workers(tmp_path):
    nll, tokens = losses(4, 20_000)
    a = tmp_path / "a.jsonl"
    a.write_text(jsonl_text(nll, tokens), encoding="utf-8")
    b = tmp_path / "b.csv"
    b.write_text(csv_text(nll[::-1], tokens[::-1]), encoding="utf-8")
    hashes = set()
    for workers in (1, 2):
        summary = read_perplexity([str(a)], workers=workers, block_size=8192)
        assert sum(s.rows for s in summary.sources) == 20_000
        hashes |= {s.float32_hash for s in summary.sources}
        held = r"holds the rows of .*a\.jsonl \(the same NLLs.*\) \(their NLLs equal as float32\)"
        with pytest.raises(InputError, match=held):
            read_perplexity([str(a), str(b)], workers=workers, block_size=8192)
    assert len(hashes) == 1 and None not in hashes


def test_all_runs_pools_them_on_purpose(files):
    args = [files / "orig.jsonl", files / "copy32.csv", "--all-runs"]
    assert counted(args) == (2 * ROWS, 2 * TOKENS)


# ---- summaries, merge and --part pieces


@pytest.fixture(scope="module")
def summaries(files):
    d = files
    ok(["summarize", d / "orig.jsonl", "-o", d / "a.cbs", "-q"])
    ok(["summarize", d / "copy32.csv", "--kind", "perplexity", "-o", d / "b.cbs", "-q"])
    for k in (1, 2):
        ok(["summarize", d / "orig.jsonl", "-o", d / f"p{k}.cbs", "-q", "--part", f"{k}/2"])
    return d


def test_the_summaries_of_both_are_refused(summaries):
    d = summaries
    result = run(["perplexity", d / "a.cbs", d / "b.cbs", "-q"])
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert f"{d / 'copy32.csv'} (in {d / 'b.cbs'}) holds the rows of" in line
    assert f"{SAME} {NOTE}" in line
    merged = run(["merge", d / "a.cbs", d / "b.cbs", "-o", d / "m.cbs"])
    assert merged.exit_code == 2
    line = error_line(merged)
    assert NOTE in line and line.endswith("merge each part once")
    assert not (d / "m.cbs").exists()


def test_a_summary_beside_the_float32_copy_of_its_file_is_refused(summaries):
    d = summaries
    result = run(["perplexity", d / "a.cbs", d / "copy32.csv", "-q"])
    assert result.exit_code == 2, result.stdout
    assert NOTE in error_line(result)


def test_the_float32_copy_beside_the_part_pieces_is_refused(summaries):
    d = summaries
    assert counted([d / "p1.cbs", d / "p2.cbs"]) == (ROWS, TOKENS)
    result = run(["perplexity", d / "p1.cbs", d / "p2.cbs", d / "b.cbs", "-q"])
    assert result.exit_code == 2, result.stdout
    assert NOTE in error_line(result)
    merged = run(["merge", d / "p1.cbs", d / "p2.cbs", d / "b.cbs", "-o", d / "pm.cbs"])
    assert merged.exit_code == 2
    assert NOTE in error_line(merged)
    assert not (d / "pm.cbs").exists()


def test_an_older_summary_without_the_float32_hash_is_refused_beside_other_rows(
    summaries, tmp_path
):
    from calibcli.summaries import from_bytes, to_bytes

    d = summaries
    newer = from_bytes((d / "b.cbs").read_bytes())
    assert all(s.float32_hash is not None for s in newer.sources)
    sources = tuple(replace(s, float32_hash=None) for s in newer.sources)
    (tmp_path / "old.cbs").write_bytes(to_bytes(replace(newer, sources=sources)))
    result = run(["perplexity", d / "a.cbs", tmp_path / "old.cbs", "-q", "--json"])
    assert result.exit_code == 2
    assert "without recording their float32 hash" in result.stderr


# ---- what is still read


def test_two_models_on_one_corpus_are_read(files, tmp_path):
    # the same token counts, other NLLs: another model's, and one a tenth of a percent off
    nll, tokens = losses()
    other = (np.random.default_rng(1).random(ROWS) * 100).astype(np.float32)
    near = (nll.astype(np.float64) * 1.001).astype(np.float32)
    for name, values in (("other", other), ("near", near)):
        (tmp_path / f"{name}.jsonl").write_text(jsonl_text(values, tokens), encoding="utf-8")
        copy = write_parquet(tmp_path / f"{name}32.parquet", values, tokens)
        for given in (tmp_path / f"{name}.jsonl", copy):
            assert counted([files / "orig.jsonl", given]) == (2 * ROWS, 2 * TOKENS)


def test_coarse_rows_keep_the_rules_of_exact_rows(tmp_path):
    # 200 rows on 8 (NLL, tokens) levels: other rows share them by chance, so equal rows are
    # not taken for a copy, exact or as float32
    nll = np.array([1.1 + 0.3 * (i % 8) for i in range(200)], np.float32)
    tokens = np.array([10 + i % 8 for i in range(200)])
    (tmp_path / "a.jsonl").write_text(jsonl_text(nll, tokens), encoding="utf-8")
    (tmp_path / "b.csv").write_text(csv_text(nll, tokens), encoding="utf-8")
    want = 2 * sum(10 + i % 8 for i in range(200))
    assert counted([tmp_path / "a.jsonl", tmp_path / "b.csv"]) == (400, want)
