"""An lm-eval results file holds no rows (its figures are aggregates; the samples files beside it
hold the rows, and it is read only for its run's model and settings), so two results files of
the same bytes are no copy to refuse: one run's samples files split across two folders, each
with the run's results file, or a results file copied beside itself under another stamp, are
read, on every route that refuses copies. Two files of rows holding the same bytes are still
refused, whatever their names."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import pack, refused, run

from calibcli.engines import file_jobs
from calibcli.errors import InputError

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
RESULTS = f"results_{STAMP}.json"
SCIENCE = f"samples_toy_mc_science_{STAMP}.jsonl"
TRIVIA = f"samples_toy_mc_trivia_{STAMP}.jsonl"
WIKITEXT = f"samples_toy_wikitext_{STAMP}.jsonl"
SKIPPED = "lm-eval results file: aggregate figures, no per-document rows"
SAME_BYTES = "holds the same bytes as"


def lines(name: str) -> int:
    """The rows of a fixture samples file: one document a line."""
    return len((FIXTURES / name).read_text().splitlines())


def split_run(tmp_path: Path, results: bytes | None = None, suffix: str = "") -> list[Path]:
    """The fixture run's samples files in two folders, each holding the run's results file
    (``results``: other bytes for it, written in both; ``suffix``: the second one compressed)."""
    data = (FIXTURES / RESULTS).read_bytes() if results is None else results
    science, trivia = tmp_path / "science", tmp_path / "trivia"
    for folder, samples in ((science, (SCIENCE, WIKITEXT)), (trivia, (TRIVIA,))):
        folder.mkdir()
        for name in samples:
            shutil.copy(FIXTURES / name, folder / name)
    (science / RESULTS).write_bytes(data)
    (trivia / (RESULTS + suffix)).write_bytes(pack(suffix, data) if suffix else data)
    return [science, trivia]


def report(args: list) -> tuple[dict, str]:
    result = run([*args, "--json"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result.stderr


@pytest.mark.parametrize("command", ["calibrate", "reliability"])
def test_a_run_split_across_folders_is_read_with_both_results_files(tmp_path, command):
    folders = split_run(tmp_path)
    body, stderr = report([command, *folders])
    assert body["n"] == lines(SCIENCE) + lines(TRIVIA) == 88
    # each results file is skipped as the reader skips one, not refused as a copy
    assert stderr.count(SKIPPED) == 2
    assert SAME_BYTES not in stderr


def test_perplexity_reads_the_split_run(tmp_path):
    folders = split_run(tmp_path)
    body, stderr = report(["perplexity", *folders])
    assert body["sequences"] == lines(WIKITEXT) == 20
    assert stderr.count(SKIPPED) == 2


def test_a_results_file_copied_under_another_stamp_is_skipped(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for name in (SCIENCE, TRIVIA, RESULTS):
        shutil.copy(FIXTURES / name, folder / name)
    shutil.copy(FIXTURES / RESULTS, folder / "results_2026-11-30T10-00-00.000000.json")
    body, stderr = report(["calibrate", folder])
    assert body["n"] == 88
    assert stderr.count(SKIPPED) == 2
    # named one by one, as a shell's glob names them
    body, _ = report(["calibrate", *sorted(folder.iterdir())])
    assert body["n"] == 88


def test_a_gzip_copy_of_a_results_file_in_another_folder_is_no_copy(tmp_path):
    folders = split_run(tmp_path, suffix=".gz")  # told by the gzip trailer, wherever it is
    body, stderr = report(["calibrate", *folders])
    assert body["n"] == 88
    assert stderr.count(SKIPPED) == 2


@pytest.mark.parametrize("suffix", [".gz", ".zst", ".xz", ".bz2"])
def test_a_compressed_copy_beside_a_results_file_is_no_copy(tmp_path, suffix):
    folder = tmp_path / "run"
    folder.mkdir()
    for name in (SCIENCE, TRIVIA, RESULTS):
        shutil.copy(FIXTURES / name, folder / name)
    (folder / (RESULTS + suffix)).write_bytes(pack(suffix, (FIXTURES / RESULTS).read_bytes()))
    body, stderr = report(["calibrate", folder])
    assert body["n"] == 88
    assert stderr.count(SKIPPED) == 2


def test_two_compressions_of_a_results_file_are_no_copies(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for name in (SCIENCE, TRIVIA):
        shutil.copy(FIXTURES / name, folder / name)
    for suffix in (".gz", ".zst"):
        data = pack(suffix, (FIXTURES / RESULTS).read_bytes())
        (folder / (RESULTS + suffix)).write_bytes(data)
    body, stderr = report(["calibrate", folder])
    assert body["n"] == 88
    assert stderr.count(SKIPPED) == 2


def test_results_files_written_on_one_line_are_no_copies(tmp_path):
    compact = json.dumps(json.loads((FIXTURES / RESULTS).read_text())) + "\n"
    folders = split_run(tmp_path, results=compact.encode())
    body, stderr = report(["calibrate", *folders])
    assert body["n"] == 88
    assert stderr.count(SKIPPED) == 2


def test_summarize_and_fit_and_threshold_read_the_split_run(tmp_path):
    folders = split_run(tmp_path)
    summary = tmp_path / "run.cbs"
    result = run(["summarize", *folders, "-o", summary, "-q"])
    assert result.exit_code == 0, result.stderr
    body, _ = report(["calibrate", summary])
    assert body["n"] == 88
    fitted = tmp_path / "cal.json"
    result = run(["fit", "--method", "platt", *folders, "-o", fitted, "-q"])
    assert result.exit_code == 0, result.stderr
    result = run(["threshold", "--target-accuracy", "0.5", *folders, "-q"])
    assert result.exit_code == 0, result.stderr


def test_compare_reads_a_side_holding_both_results_files(tmp_path):
    split_run(tmp_path)
    side = str(tmp_path / "*" / "*")  # both folders' files, the two results files among them
    result = run(["compare", side, FIXTURES, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["matched"] == 88


def test_an_engine_s_files_keep_both_results_files(tmp_path):
    folders = split_run(tmp_path)
    paths = [str(f / name) for f in folders for name in sorted(p.name for p in f.iterdir())]
    jobs = file_jobs(paths, "auto", None)
    assert sorted(job.path for job in jobs) == sorted(paths)


# still refused: files of rows of the same bytes


def test_two_equal_samples_files_are_still_refused(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    shutil.copytree(FIXTURES, first)
    shutil.copytree(FIXTURES, second)
    line = refused("calibrate", first, second)
    assert SAME_BYTES in line
    assert f"b/{SCIENCE}" in line  # the first row-holding copy, not a results file
    line = refused(
        "calibrate", first / SCIENCE, first / RESULTS, second / RESULTS, second / SCIENCE
    )
    assert line.startswith(f"Error: {second / SCIENCE}: {SAME_BYTES} {first / SCIENCE}")


def test_a_compressed_copy_of_a_samples_file_is_still_refused(tmp_path):
    folders = split_run(tmp_path)
    data = (FIXTURES / TRIVIA).read_bytes()
    (folders[0] / (TRIVIA + ".gz")).write_bytes(pack(".gz", data))
    line = refused("calibrate", *folders)
    assert f"{SAME_BYTES} {folders[1] / TRIVIA} once decompressed" in line


def test_rows_named_as_a_results_file_are_still_refused(tmp_path):
    # what the file holds decides, not its name: rows in a file named as a results file
    rows = [{"confidence": (i % 9 + 1) / 10, "correct": i % 2 == 0} for i in range(40)]
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / RESULTS).write_text(json.dumps(rows, indent=2) + "\n")
    line = refused("calibrate", tmp_path / "a", tmp_path / "b")
    assert SAME_BYTES in line and line.startswith(f"Error: {tmp_path / 'b' / RESULTS}")


def test_a_row_of_results_keys_in_a_json_lines_file_is_a_row(tmp_path):
    """Read with --format jsonl, a JSON Lines file's one row is a row whatever keys it holds:
    two files of its bytes are copies, not results files."""
    row = {"results": {}, "configs": {}, "confidence": 0.9, "correct": 1}
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text(json.dumps(row) + "\n")
    line = refused("calibrate", tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--format", "jsonl")
    assert SAME_BYTES in line and line.startswith(f"Error: {tmp_path / 'b.jsonl'}")


def test_an_engine_still_refuses_equal_samples_files(tmp_path):
    shutil.copy(FIXTURES / SCIENCE, tmp_path / "copy.jsonl")
    with pytest.raises(InputError, match=SAME_BYTES):
        file_jobs([str(FIXTURES / SCIENCE), str(tmp_path / "copy.jsonl")], "auto", None)


def test_only_a_json_object_of_results_and_configs_is_a_results_file(tmp_path):
    from calibcli.io.run_results import results_only

    whole = json.loads((FIXTURES / RESULTS).read_text())
    assert results_only(str(FIXTURES / RESULTS))
    (tmp_path / "packed.json.xz").write_bytes(pack(".xz", (FIXTURES / RESULTS).read_bytes()))
    assert results_only(str(tmp_path / "packed.json.xz"))
    others = {
        "with_samples.json": json.dumps({**whole, "samples": []}),
        "no_configs.json": json.dumps({k: v for k, v in whole.items() if k != "configs"}),
        "broken.json": (FIXTURES / RESULTS).read_text()[:-20],
        "list.json": json.dumps([whole]),
        "blank.json": "\n",
    }
    for name, text in others.items():
        (tmp_path / name).write_text(text)
        assert not results_only(str(tmp_path / name)), name
    assert not results_only(str(FIXTURES / SCIENCE))
    assert not results_only(str(tmp_path / "missing.json"))
