"""An id's hash is a function of the id alone, not of the ids hashed beside it: rows are matched
(compare), and repeats found (--id-field, --all-runs), by these hashes, and the batches they are
hashed in follow the file's layout (its first row alone, then blocks of about 1 MiB), so a hash
that depended on its batch paired rows by where they sat in the file."""

from __future__ import annotations

import json
import random
import struct

import numpy as np
import pytest
from harness import run, write_jsonl

from calibcli.io.keys import hash_ids


def test_an_id_hashes_the_same_alone_and_among_others():
    rng = random.Random(5)
    ids = [
        b'"'
        + bytes(rng.choice(b"abcdefghij0123456789-_") for _ in range(rng.randint(0, 70)))
        + b'"'
        for _ in range(400)
    ] + [str(rng.randint(0, 10**15)).encode() for _ in range(100)]
    together = hash_ids(ids)
    shuffled = list(range(len(ids)))
    rng.shuffle(shuffled)
    mixed = hash_ids([ids[i] for i in shuffled])
    for k, i in enumerate(shuffled):
        alone = hash_ids([ids[i]])
        assert (alone[0][0], alone[1][0]) == (together[0][i], together[1][i])
        assert (mixed[0][k], mixed[1][k]) == (together[0][i], together[1][i])


def two_models(tmp_path, first_wrong=100, n=2100):
    """BASE and NEW on the same questions in the same order, ids ``item0``... of growing length,
    NEW's outputs longer than BASE's (its first block of rows ends before item100, BASE's far
    after it); NEW gets the first ``first_wrong`` questions wrong."""
    rng = np.random.default_rng(3)
    conf = rng.uniform(0.3, 0.95, n)
    right = rng.random(n) < conf
    base = [
        {"id": f"item{i}", "confidence": float(conf[i]), "correct": bool(right[i]), "output": "b"}
        for i in range(n)
    ]
    new = [
        {
            "id": f"item{i}",
            "confidence": float(conf[i]),
            "correct": bool(right[i]) and i >= first_wrong,
            # the first hundred outputs long: NEW's first block of 1 MiB ends among them
            "output": "n" * (12_000 if i < 100 else 400),
        }
        for i in range(n)
    ]
    return base, new


def test_a_paired_compare_matches_every_row_whatever_the_lines_lengths(tmp_path):
    base, new = two_models(tmp_path)
    drop = sum(r["correct"] for r in base[:100]) / len(base)  # NEW loses these right answers
    assert drop > 0.02
    paths = write_jsonl(tmp_path / "b.jsonl", base), write_jsonl(tmp_path / "n.jsonl", new)
    result = run(["compare", *paths, "--max-decrease", "accuracy=0.02", "--json", "-q"])
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    assert body["matched"] == 2100 and body["unmatched_base"] == body["unmatched_new"] == 0
    assert body["figures"]["accuracy"]["difference"] == pytest.approx(-drop, abs=1e-15)


def test_a_shuffled_copy_pairs_every_row(tmp_path):
    base, _ = two_models(tmp_path, n=300)
    shuffled = list(base)
    random.Random(2).shuffle(shuffled)
    paths = write_jsonl(tmp_path / "b.jsonl", base), write_jsonl(tmp_path / "s.jsonl", shuffled)
    result = run(["compare", *paths, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["matched"] == 300


def test_an_id_repeated_in_a_second_file_is_found_whatever_the_ids_lengths(tmp_path):
    rows = [{"id": f"item{i}", "confidence": 0.7, "correct": i % 3 > 0} for i in range(200)]
    folder = tmp_path / "runs"
    folder.mkdir()
    write_jsonl(folder / "a.jsonl", rows)
    write_jsonl(folder / "b.jsonl", rows[:100])
    result = run(["calibrate", str(folder), "--id-field", "id", "-q"])
    assert result.exit_code == 2
    assert "the row of id 'item0' was read before, at " in result.stderr
    others = [{"id": f"q{i}", "confidence": 0.7, "correct": i % 3 > 0} for i in range(300)]
    base = write_jsonl(tmp_path / "base.jsonl", others)
    args = ["compare", base, str(folder), "--unpaired", "--id-field", "id", "-q"]
    refused = run(args)
    assert refused.exit_code == 2 and "'item0' was read before" in refused.stderr
    pooled = run([*args, "--all-runs", "--min-rows", "250", "--json"])
    assert pooled.exit_code == 1  # 300 rows of 200 questions
    (check,) = json.loads(pooled.stdout)["gate"]["checks"]
    assert check["questions"] == 200 and check["questions_exact"] is True


def test_a_summary_an_earlier_calibcli_wrote_with_ids_stands_alone(tmp_path):
    rows = [{"id": f"item{i}", "confidence": 0.7, "correct": i % 3 > 0} for i in range(200)]
    path = write_jsonl(tmp_path / "a.jsonl", rows)
    other = write_jsonl(tmp_path / "b.jsonl", [{**r, "id": f"x{r['id']}"} for r in rows])
    for source, summary in ((path, "a.cbs"), (other, "b.cbs")):
        made = run(["summarize", source, "--id-field", "id", "-o", str(tmp_path / summary)])
        assert made.exit_code == 0, made.stderr
    old = tmp_path / "a.cbs"
    data = bytearray(old.read_bytes())
    assert struct.unpack_from("<I", data, 16)[0] == 5
    struct.pack_into("<I", data, 16, 2)  # the format version an earlier calibcli wrote
    old.write_bytes(bytes(data))
    alone = run(["calibrate", str(old), "--json", "-q"])
    assert alone.exit_code == 0 and json.loads(alone.stdout)["n"] == 200
    both = run(["calibrate", str(old), str(tmp_path / "b.cbs"), "-q"])
    assert both.exit_code == 2
    assert "was written by an earlier calibcli, whose hash of a row's id" in both.stderr
