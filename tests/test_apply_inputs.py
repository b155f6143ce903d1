"""`calibcli apply`'s inputs: the files it rewrites are those the other commands read, and rows
are written once, as the other commands count them once.

The same file twice is refused (exit 2, the other commands' words), and a byte copy or a
compressed copy, a run appended to its file again (a later row carrying the first row's id) and
another file of the same confidences in another order are refused unless --all-runs; a folder
or a pattern reads its files in name order; a summary file holds no rows to rewrite. The
calibrator is written here: Platt with a = 2, b = 0 maps c to c² / (c² + (1 - c)²), so 0.75
becomes 0.9 and 0.25 becomes 0.1.
"""

from __future__ import annotations

import gzip
import json
import random

import pytest
from harness import run

N = 40  # rows a file holds: over the 30 the copy check needs, every confidence its own
DOUBLE = "its rows would count twice (pass --all-runs to pool them on purpose"
ONCE = "a path given twice is not a re-run, and its rows would count twice (give it once)"
CALIBRATOR = {
    "schema_version": 1,
    "kind": "calibcli-calibrator",
    "method": "platt",
    "params": {"a": 2.0, "b": 0.0},
    "fitted_on": {
        "n": 100,
        "files": ["fit.jsonl"],
        "format": "jsonl",
        "confidence_field": "confidence",
        "correct_field": "correct",
    },
    "by": None,
    "groups": {},
}


def mapped(c):
    return c * c / (c * c + (1 - c) * (1 - c))


def rows(prefix="r", n=N):
    """Rows of distinct confidences (i + 1) / 64 and ids prefix0, prefix1, ..."""
    return [
        {"id": f"{prefix}{i}", "confidence": (i + 1) / 64, "correct": i % 3 == 0} for i in range(n)
    ]


def text(found):
    return "".join(json.dumps(r) + "\n" for r in found)


@pytest.fixture
def cal(tmp_path):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(CALIBRATOR), encoding="utf-8")
    return path


@pytest.fixture
def preds(tmp_path):
    path = tmp_path / "preds.jsonl"
    path.write_text(text(rows()), encoding="utf-8")
    return path


def confidences(stdout):
    return [json.loads(line)["confidence"] for line in stdout.splitlines()]


def test_one_file_is_rewritten_by_the_hand_computed_map(cal, tmp_path):
    path = tmp_path / "two.jsonl"
    path.write_text('{"id": 1, "confidence": 0.75}\n{"id": 2, "confidence": 0.25}\n')
    result = run(["apply", cal, path, "-q"])
    assert result.exit_code == 0, result.stderr
    assert confidences(result.stdout) == pytest.approx([0.9, 0.1], abs=1e-12)


def test_the_same_file_twice_is_refused(cal, preds):
    result = run(["apply", cal, preds, preds, "-q"])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {preds}: is given twice: {ONCE}\n"
    assert result.stdout == ""


def test_all_runs_refuses_the_same_file_twice_too(cal, preds):
    result = run(["apply", cal, preds, preds, "--all-runs", "-q"])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {preds}: is given twice: {ONCE}\n"
    assert result.stdout == ""


def test_a_compressed_copy_is_refused(cal, preds, tmp_path):
    packed = tmp_path / "preds.jsonl.gz"
    packed.write_bytes(gzip.compress(preds.read_bytes()))
    result = run(["apply", cal, preds, packed, "-q"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {packed}: holds the same bytes as {preds} once decompressed: {DOUBLE}, or give "
        "one of them)\n"
    )


def test_a_byte_copy_is_refused(cal, preds, tmp_path):
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(preds.read_bytes())
    result = run(["apply", cal, preds, copy, "-q"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {copy}: holds the same bytes as {preds}: ")


def test_a_run_appended_to_its_file_is_refused_as_calibrate_refuses_it(cal, tmp_path):
    path = tmp_path / "twice.jsonl"
    path.write_text(text(rows()) + text(rows()), encoding="utf-8")
    said = run(["apply", cal, path, "-q"])
    assert said.exit_code == 2
    # the first row again is line N + 1; apply takes no --id-field, so it is not offered
    assert said.stderr == (
        f"Error: {path}:{N + 1}: the row of id 'r0' repeats the id of the file's first row "
        "(line 1): a run appended to its file again would count twice (pass --all-runs to pool "
        "the rows on purpose)\n"
    )
    calibrate = run(["calibrate", path, "-q"])
    assert calibrate.exit_code == 2
    assert calibrate.stderr.startswith(said.stderr.removesuffix(")\n"))
    pooled = run(["apply", cal, path, "--all-runs", "-q"])
    assert pooled.exit_code == 0, pooled.stderr
    assert len(pooled.stdout.splitlines()) == 2 * N


@pytest.mark.parametrize("kind", ["csv", "json"])
def test_a_repeated_first_id_in_a_table_or_array_is_refused(cal, tmp_path, kind):
    found = [*rows(n=3), rows(n=1)[0]]
    path = tmp_path / f"rows.{kind}"
    if kind == "json":
        path.write_text(json.dumps(found), encoding="utf-8")
    else:
        body = "".join(f"{r['id']},{r['confidence']},{str(r['correct']).lower()}\n" for r in found)
        path.write_text("id,confidence,correct\n" + body, encoding="utf-8")
    result = run(["apply", cal, path, "-q"])
    assert result.exit_code == 2
    assert "the row of id 'r0' repeats the id of the file's first row" in result.stderr
    assert run(["apply", cal, path, "--all-runs", "-q"]).exit_code == 0


def test_the_same_rows_in_another_order_are_refused(cal, preds, tmp_path):
    shuffled = rows()
    random.Random(3).shuffle(shuffled)
    other = tmp_path / "shuffled.jsonl"
    other.write_text(text(shuffled), encoding="utf-8")
    result = run(["apply", cal, preds, other, "-q"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {other}: holds the rows of {preds} (the same confidences, in any order): "
        f"{DOUBLE}, or give one of them)\n"
    )
    assert len(run(["apply", cal, preds, other, "--all-runs", "-q"]).stdout.splitlines()) == 2 * N


def test_a_refused_copy_leaves_the_output_file_as_it_was(cal, preds, tmp_path):
    shuffled = list(reversed(rows()))
    other = tmp_path / "reversed.jsonl"
    other.write_text(text(shuffled), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    result = run(["apply", cal, preds, other, "-o", out, "-q"])
    assert result.exit_code == 2
    assert not out.exists()
    out.write_text("before\n")
    assert run(["apply", cal, preds, other, "-o", out, "-q"]).exit_code == 2
    assert out.read_text() == "before\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "cal.json",
        "out.jsonl",
        "preds.jsonl",
        "reversed.jsonl",
    ]


def test_other_rows_are_written_one_file_after_the_other(cal, preds, tmp_path):
    # as many rows, of other confidences: another model's answers, written after preds.jsonl's
    changed = rows("s")
    for row in changed:
        row["confidence"] -= 1 / 128
    other = tmp_path / "other.jsonl"
    other.write_text(text(changed[::-1]), encoding="utf-8")
    result = run(["apply", cal, preds, other, "-q"])
    assert result.exit_code == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2 * N


def test_a_folder_reads_its_files_in_name_order(cal, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "b.jsonl").write_text('{"id": "b", "confidence": 0.25}\n')
    (folder / "a.jsonl").write_text('{"id": "a", "confidence": 0.75}\n')
    (folder / ".c.jsonl").write_text('{"id": "c", "confidence": 0.5}\n')
    result = run(["apply", cal, folder, "-q"])
    assert result.exit_code == 0, result.stderr
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ["a", "b"]
    assert confidences(result.stdout) == pytest.approx([0.9, 0.1], abs=1e-12)
    assert result.stderr.startswith(f"warning: {folder}: 1 hidden file left out (.c.jsonl)")
    pattern = run(["apply", cal, str(folder / "*.jsonl"), "-q"])
    assert pattern.exit_code == 0, pattern.stderr
    assert pattern.stdout == result.stdout


def test_a_folder_reads_a_task_s_newest_run(cal, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    old = folder / "samples_t_2024-01-01T00-00-00.jsonl"
    old.write_text('{"id": "old", "confidence": 0.25}\n')
    (folder / "samples_t_2024-02-01T00-00-00.jsonl").write_text(
        '{"id": "new", "confidence": 0.75}\n'
    )
    result = run(["apply", cal, folder, "-q"])
    assert result.exit_code == 0, result.stderr
    assert [json.loads(line)["id"] for line in result.stdout.splitlines()] == ["new"]
    assert "leaving out 1 older file(s): samples_t_2024-01-01T00-00-00.jsonl" in result.stderr
    pooled = run(["apply", cal, folder, "--all-runs", "-q"])
    assert [json.loads(line)["id"] for line in pooled.stdout.splitlines()] == ["old", "new"]


def test_a_summary_file_holds_no_rows_to_rewrite(cal, preds, tmp_path):
    summary = tmp_path / "preds.cbs"
    made = run(["summarize", preds, "-o", summary, "-q"])
    assert made.exit_code == 0, made.stderr
    result = run(["apply", cal, summary, "-q"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {summary}: a summary holds counts, no rows to rewrite: give apply the rows it "
        "was summarized from\n"
    )


def test_help_says_which_tables_are_rewritten():
    result = run(["apply", "--help"])
    assert result.exit_code == 0
    flat = " ".join(result.stdout.split())
    assert "Parquet and Arrow tables and summary files are read by the other commands, not " in (
        flat
    )
    assert "--all-runs" in flat
