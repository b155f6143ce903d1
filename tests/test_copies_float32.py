"""Rows written again through a float32 column are copies of the rows they were written from.

A float32 column (Parquet written by pyarrow, or a CSV written from one: pandas writes float32's
shortest digits) is read as the double nearest its spelling, which differs from the original
double in the last digits; each calibration source also keeps the multiset hash of its rows
with every confidence rounded to float32, which tells them. Files, folders, summaries, merge,
``--part`` pieces and shards are refused as the exact copies are, the refusal saying
"(their confidences equal as float32)". Two inputs of other rows, and coarse values (a few
levels, which other rows share by chance), are read as before.

The files: sample_data/overconfident.jsonl (2,000 rows, every confidence distinct) and the CSV
of its confidences as float32 (each spelled by the shortest digits that give that float32).
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import numpy as np
import pytest
from harness import run

from calibcli.summaries.fingerprint import float32_hash_sum

DATA = Path(__file__).resolve().parent.parent / "sample_data"
NOTE = "(their confidences equal as float32)"
SAME = "(the same confidences and outcomes, in any order)"


def original_rows():
    text = (DATA / "overconfident.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 2000
    return rows


def float32_csv(rows):
    """A CSV of the rows with each confidence spelled as its float32 (shortest digits)."""
    out = ["confidence,correct\n"]
    for r in rows:
        out.append(f"{np.float32(r['confidence'])},{r['correct']}\n")
    return "".join(out)


def jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


def error_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def ok(args):
    result = run(args)
    assert result.exit_code == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("f32")
    rows = original_rows()
    (d / "preds.jsonl").write_text(jsonl(rows), encoding="utf-8")
    (d / "preds32.csv").write_text(float32_csv(rows), encoding="utf-8")
    (d / "half1.csv").write_text(float32_csv(rows[:1000]), encoding="utf-8")
    (d / "half2.csv").write_text(float32_csv(rows[1000:]), encoding="utf-8")
    return d


# ---- the hash


def _mix(x):
    m = (1 << 64) - 1
    x = (x * 0xBF58476D1CE4E5B9) & m
    x ^= x >> 29
    x = (x * 0x94D049BB133111EB) & m
    return x ^ (x >> 32)


def test_the_float32_hash_is_the_sum_of_each_rows_mix():
    # by hand: the float32's bits (struct), the outcome in bit 32, two multiply-xorshifts
    conf, correct = [0.1, 0.7, 1.0], [True, False, True]
    want = 0
    for c, y in zip(conf, correct, strict=True):
        bits = struct.unpack("<I", struct.pack("<f", c))[0]
        want = (want + _mix(bits | (int(y) << 32))) % (1 << 64)
    assert float32_hash_sum(np.array(conf), np.array(correct)) == want


def test_values_read_from_float32_spellings_hash_as_the_originals():
    rng = np.random.default_rng(5)
    conf = rng.random(1000)
    correct = rng.random(1000) < 0.5
    read = np.array([float(str(np.float32(c))) for c in conf])
    assert not np.array_equal(read, conf)  # other doubles
    assert float32_hash_sum(read, correct) == float32_hash_sum(conf, correct)
    assert float32_hash_sum(read, ~correct) != float32_hash_sum(conf, correct)


# ---- files and folders


def test_a_folder_of_jsonl_and_its_float32_parquet_is_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = original_rows()
    folder = tmp_path / "f32"
    folder.mkdir()
    (folder / "preds.jsonl").write_text(jsonl(rows), encoding="utf-8")
    table = pa.table(
        {
            "confidence": pa.array([r["confidence"] for r in rows], pa.float32()),
            "correct": pa.array([r["correct"] for r in rows], pa.bool_()),
        }
    )
    pq.write_table(table, folder / "preds.parquet")
    result = run(["calibrate", folder, "--min-rows", "3000", "-q"])
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert "preds.parquet: holds the rows of" in line and "preds.jsonl" in line
    assert f"{SAME} {NOTE}" in line


def test_a_jsonl_and_the_csv_of_its_float32_values_are_refused(files):
    result = run(["calibrate", files / "preds.jsonl", files / "preds32.csv", "-q"])
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert f"preds32.csv: holds the rows of {files / 'preds.jsonl'}" in line
    assert NOTE in line


def test_a_jsonl_beside_its_float32_shards_is_refused(files):
    args = [files / "half1.csv", files / "half2.csv", files / "preds.jsonl"]
    result = run(["calibrate", *args, "-q"])
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert "preds.jsonl: holds the rows of" in line and "together" in line and NOTE in line


# ---- summaries, merge and --part pieces


@pytest.fixture(scope="module")
def summaries(files):
    for name, source in (("a", "preds.jsonl"), ("b", "preds32.csv")):
        ok(["summarize", files / source, "-o", files / f"{name}.cbs", "-q"])
    for k in (1, 2):
        part = ["--part", f"{k}/2"]
        ok(["summarize", files / "preds.jsonl", "-o", files / f"p{k}.cbs", "-q", *part])
    return files


def test_the_summaries_of_both_are_refused(summaries):
    d = summaries
    result = run(["calibrate", d / "a.cbs", d / "b.cbs", "-q"])
    assert result.exit_code == 2, result.stdout
    assert NOTE in error_line(result)
    merged = run(["merge", d / "a.cbs", d / "b.cbs", "-o", d / "m.cbs"])
    assert merged.exit_code == 2
    line = error_line(merged)
    assert NOTE in line and line.endswith("merge each part once")
    assert not (d / "m.cbs").exists()


def test_the_float32_copy_beside_the_part_pieces_is_refused(summaries):
    d = summaries
    result = run(["calibrate", d / "p1.cbs", d / "p2.cbs", d / "b.cbs", "-q"])
    assert result.exit_code == 2, result.stdout
    assert NOTE in error_line(result)
    # the summary beside the file it was read from, by another route
    result = run(["calibrate", d / "a.cbs", d / "preds32.csv", "-q"])
    assert result.exit_code == 2, result.stdout
    assert NOTE in error_line(result)


def test_an_older_summary_without_the_float32_hash_is_refused_beside_other_rows(
    summaries, tmp_path
):
    from dataclasses import replace

    from calibcli.summaries import from_bytes, to_bytes

    d = summaries
    older = from_bytes((d / "b.cbs").read_bytes())
    sources = tuple(replace(s, float32_hash=None) for s in older.sources)
    (tmp_path / "old.cbs").write_bytes(to_bytes(replace(older, sources=sources)))
    # a float32 copy of a.cbs's rows that cannot be told to be one: refused, not counted twice
    result = run(["calibrate", d / "a.cbs", tmp_path / "old.cbs", "-q", "--json"])
    assert result.exit_code == 2
    assert "without recording their float32 hash" in result.stderr


def test_all_runs_pools_them_on_purpose(files):
    args = [files / "preds.jsonl", files / "preds32.csv", "--all-runs", "-q", "--json"]
    assert json.loads(ok(["calibrate", *args]).stdout)["n"] == 4000


# ---- what is still read


def _random_rows(seed, n=500):
    rng = random.Random(seed)
    return [{"confidence": rng.random(), "correct": rng.random() < 0.6} for _ in range(n)]


def test_two_files_of_other_random_rows_are_read(tmp_path):
    (tmp_path / "a.jsonl").write_text(jsonl(_random_rows(1)), encoding="utf-8")
    (tmp_path / "b.csv").write_text(float32_csv(_random_rows(2)), encoding="utf-8")
    result = ok(["calibrate", tmp_path / "a.jsonl", tmp_path / "b.csv", "-q", "--json"])
    assert json.loads(result.stdout)["n"] == 1000


def test_coarse_values_in_both_keep_the_rules_of_exact_rows(tmp_path):
    # 200 rows on 10 two-decimal levels: other rows share them by chance, so equal rows are
    # not taken for a copy, exact or as float32
    rows = [{"confidence": 0.05 + 0.1 * (i % 10), "correct": i % 3 == 0} for i in range(200)]
    rows = [{**r, "confidence": round(r["confidence"], 2)} for r in rows]
    (tmp_path / "a.jsonl").write_text(jsonl(rows), encoding="utf-8")
    (tmp_path / "b.csv").write_text(float32_csv(rows), encoding="utf-8")
    (tmp_path / "c.jsonl").write_text(jsonl(rows[::-1]), encoding="utf-8")
    for other in ("b.csv", "c.jsonl"):
        result = ok(["calibrate", tmp_path / "a.jsonl", tmp_path / other, "-q", "--json"])
        assert json.loads(result.stdout)["n"] == 400
