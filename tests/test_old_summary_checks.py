"""A summary file an earlier calibcli wrote, without the hashes and sketch of each file's rows
that tell whether other inputs hold the same rows (``rows_hash``, ``float32_hash``,
``rows_sketch`` in its header's sources), is read alone as before; beside other inputs of rows
it is refused (exit 2, naming it: summarize its files again), as a summary whose ids an earlier
calibcli hashed otherwise is, instead of counting rows the checks cannot see twice.

The old summaries are the current ones with those entries left out of the header, and format
version 2, as the writers before them wrote them; one test writes one with the calibcli of a
commit before the hashes were recorded (skipped where that commit is not at hand).
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys

import numpy as np
import pytest
from harness import calibcli_at, run, write_jsonl

EARLIER = "0bd0a53~1"  # the last commit whose summaries record no hash of a file's rows
REFUSED = "an earlier calibcli summarized without recording their"
AGAIN = "cannot be checked; summarize its files again"
RECORDS = ("rows_hash", "float32_hash", "rows_sketch")


def _rows(n, seed):
    rng = random.Random(seed)
    return [{"confidence": rng.random(), "correct": rng.random() < 0.7} for _ in range(n)]


ALL = _rows(400, 1)  # 400 rows, every confidence distinct: shards of it are told apart


def summarize(path, out, *args):
    done = run(["summarize", path, "-q", "-o", out, *args])
    assert done.exit_code == 0, done.stderr
    return out


def older(path, out, *, drop=RECORDS):
    """The summary at ``path`` as an earlier calibcli wrote it: its sources without the
    ``drop`` entries, the header still valid JSON padded to 8 bytes, format version 2."""
    data = path.read_bytes()
    length = struct.unpack_from("<Q", data, 24)[0]
    meta = json.loads(data[32 : 32 + length])
    held = [s for s in meta["sources"] if s["rows"]]
    assert held and all(name in s for s in held for name in RECORDS)  # a current summary
    for source in meta["sources"]:
        for name in drop:
            source.pop(name, None)
    text = json.dumps(meta, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    head = bytearray(data[:32])
    struct.pack_into("<I", head, 16, 2)
    struct.pack_into("<Q", head, 24, len(text))
    out.write_bytes(bytes(head) + text + data[32 + length :])
    return out


def error_line(result):
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def n_of(result):
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["n"]


@pytest.fixture
def d(tmp_path):
    write_jsonl(tmp_path / "all.jsonl", ALL)
    write_jsonl(tmp_path / "s01.jsonl", ALL[100:200])  # a shard of it
    write_jsonl(tmp_path / "half.jsonl", ALL[:200] + _rows(200, 2))  # shares half its rows
    write_jsonl(tmp_path / "other.jsonl", _rows(300, 3))  # shares none
    summarize(tmp_path / "all.jsonl", tmp_path / "all.cbs")
    summarize(tmp_path / "s01.jsonl", tmp_path / "s01.cbs")
    older(tmp_path / "all.cbs", tmp_path / "all_old.cbs")
    older(tmp_path / "s01.cbs", tmp_path / "s01_old.cbs")
    return tmp_path


def test_the_old_summary_beside_a_shard_of_its_rows_is_refused(d):
    # the current summary is refused for holding the shard's rows; the old one cannot tell
    current = run(["calibrate", d / "all.cbs", d / "s01.jsonl", "-q"])
    assert current.exit_code == 2 and "about 100%" in error_line(current)
    result = run(["calibrate", d / "all_old.cbs", d / "s01.jsonl", "--min-rows", "450", "-q"])
    assert result.exit_code == 2, result.stdout
    line = error_line(result)
    assert line.startswith(f"Error: {d / 'all_old.cbs'} holds rows of {d / 'all.jsonl'} that ")
    assert REFUSED in line and line.endswith(AGAIN)


def test_the_file_beside_an_old_summary_of_its_shard_is_refused(d):
    result = run(["calibrate", d / "all.jsonl", d / "s01_old.cbs", "-q"])
    assert result.exit_code == 2, result.stdout
    assert f"{d / 's01_old.cbs'} holds rows of {d / 's01.jsonl'}" in error_line(result)


def test_a_plain_file_sharing_rows_with_an_old_summary_is_refused(d):
    # half.jsonl holds 200 of all.jsonl's 400 rows
    assert run(["calibrate", d / "all.cbs", d / "half.jsonl", "-q"]).exit_code == 2
    result = run(["calibrate", d / "all_old.cbs", d / "half.jsonl", "-q"])
    assert result.exit_code == 2 and REFUSED in error_line(result)


def test_merge_refuses_an_old_part_beside_another(d):
    out = d / "m.cbs"
    result = run(["merge", d / "all_old.cbs", d / "s01.cbs", "-o", out])
    assert result.exit_code == 2
    line = error_line(result)
    assert line.startswith(f"Error: {d / 'all_old.cbs'} holds rows") and line.endswith(AGAIN)
    assert not out.exists()
    # two old parts of other rows: whether they share rows cannot be told either
    summarize(d / "other.jsonl", d / "other.cbs")
    other = older(d / "other.cbs", d / "other_old.cbs")
    assert run(["merge", d / "s01_old.cbs", other, "-o", out]).exit_code == 2
    assert not out.exists()


def test_summarize_refuses_an_old_summary_beside_a_file(d):
    out = d / "y.cbs"
    result = run(["summarize", d / "all_old.cbs", d / "s01.jsonl", "-o", out])
    assert result.exit_code == 2 and REFUSED in error_line(result)
    assert not out.exists()


def test_the_message_names_what_the_source_lacks(d):
    # a float32 copy of all.jsonl's rows beside a summary without the float32 hash alone
    text = "".join(f"{np.float32(r['confidence'])},{r['correct']}\n" for r in ALL)
    (d / "all32.csv").write_text("confidence,correct\n" + text, encoding="utf-8")
    assert run(["calibrate", d / "all.cbs", d / "all32.csv", "-q"]).exit_code == 2
    old32 = older(d / "all.cbs", d / "no32.cbs", drop=("float32_hash",))
    result = run(["calibrate", old32, d / "all32.csv", "-q"])
    assert result.exit_code == 2
    assert "without recording their float32 hash, so whether" in error_line(result)
    nosketch = older(d / "all.cbs", d / "nosketch.cbs", drop=("rows_sketch",))
    result = run(["calibrate", nosketch, d / "half.jsonl", "-q"])
    assert result.exit_code == 2
    assert "without recording their sketch, so whether" in error_line(result)
    result = run(["calibrate", d / "all_old.cbs", d / "other.jsonl", "-q"])
    assert "without recording their hash, float32 hash and sketch, so" in error_line(result)


def test_an_old_summary_read_alone_reads_as_before(d):
    assert n_of(run(["calibrate", d / "all_old.cbs", "--json", "-q"])) == 400
    # beside a file of no rows: nothing else holds rows
    (d / "empty.jsonl").write_text("", encoding="utf-8")
    assert n_of(run(["calibrate", d / "all_old.cbs", d / "empty.jsonl", "--json", "-q"])) == 400
    out = d / "again.cbs"
    assert run(["summarize", d / "all_old.cbs", "-q", "-o", out]).exit_code == 0


def test_all_runs_pools_them_on_purpose(d):
    args = [d / "all_old.cbs", d / "s01.jsonl", "--all-runs", "--json", "-q"]
    assert n_of(run(["calibrate", *args])) == 500


def test_old_perplexity_summaries_are_refused_alike(tmp_path):
    rng = np.random.default_rng(4)
    rows = [
        {"nll": float(x), "tokens": int(t)}
        for x, t in zip(rng.random(200) * 50, rng.integers(5, 90, 200), strict=True)
    ]
    write_jsonl(tmp_path / "p.jsonl", rows)
    write_jsonl(tmp_path / "q.jsonl", rows[:100])
    old = older(summarize(tmp_path / "p.jsonl", tmp_path / "p.cbs"), tmp_path / "p_old.cbs")
    assert run(["perplexity", old, "-q"]).exit_code == 0
    result = run(["perplexity", old, tmp_path / "q.jsonl", "-q"])
    assert result.exit_code == 2 and REFUSED in error_line(result)


def _earlier_calibcli(tmp_path):
    """A tree of the calibcli of ``EARLIER`` (None when git or that commit is not at hand)."""
    return calibcli_at(EARLIER, tmp_path / "earlier")


def test_a_summary_the_earlier_calibcli_wrote_is_refused_beside_a_shard(d, tmp_path):
    tree = _earlier_calibcli(tmp_path)
    if tree is None:
        pytest.skip(f"git archive {EARLIER} is not at hand")
    out = tmp_path / "written.cbs"
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    args = ["summarize", str(d / "all.jsonl"), "-q", "-o", str(out)]
    made = subprocess.run(
        [sys.executable, "-m", "calibcli", *args],
        env=env,
        cwd=tree,  # python -m looks in the working directory first
        capture_output=True,
        timeout=300,
    )
    if made.returncode != 0:
        pytest.skip(f"the calibcli of {EARLIER} does not run here: {made.stderr[-300:]!r}")
    assert struct.unpack_from("<I", out.read_bytes(), 16)[0] == 2
    assert n_of(run(["calibrate", out, "--json", "-q"])) == 400
    result = run(["calibrate", out, d / "s01.jsonl", "-q"])
    assert result.exit_code == 2 and REFUSED in error_line(result)
