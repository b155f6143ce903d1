"""Rows are read once: re-runs of an lm-eval task are not pooled by accident, and an input or a
row read twice is refused, unless --all-runs pools them on purpose; a path given twice is refused
with --all-runs too, and so are two files of the same bytes whose rows carry no ids."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
from harness import run, write_jsonl

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
OLDER = ("2026-11-28T09-00-00.000001", "2026-11-29T08-00-00")
ONCE = "a path given twice is not a re-run, and its rows would count twice (give it once)"


def rerun_folder(tmp_path: Path, task: str = "toy_mc_trivia") -> tuple[Path, int]:
    """A run folder holding three runs of one task (the same rows, as a deterministic
    evaluation writes them) and the results file."""
    source = FIXTURES / f"samples_{task}_{STAMP}.jsonl"
    folder = tmp_path / "out"
    folder.mkdir()
    for stamp in (*OLDER, STAMP):
        shutil.copy(source, folder / f"samples_{task}_{stamp}.jsonl")
    shutil.copy(FIXTURES / f"results_{STAMP}.json", folder / f"results_{STAMP}.json")
    return folder, len(source.read_text().splitlines())


def report(args, code=0):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result.stderr


def test_only_the_newest_run_of_a_task_is_read(tmp_path):
    folder, rows = rerun_folder(tmp_path)
    body, _ = report(["calibrate", *sorted(folder.glob("*"))])
    assert body["n"] == rows
    (warning,) = [w for w in body["warnings"] if w.startswith("re-runs of")]
    assert "'toy_mc_trivia'" in warning and "leaving out 2 older file(s)" in warning
    assert f"samples_toy_mc_trivia_{OLDER[0]}.jsonl" in warning
    pooled, _ = report(["calibrate", *sorted(folder.glob("*")), "--all-runs"])
    assert pooled["n"] == 3 * rows
    assert not [w for w in pooled["warnings"] if w.startswith("re-runs of")]


def test_the_newest_is_chosen_by_the_name_not_the_clock(tmp_path):
    folder, _ = rerun_folder(tmp_path)
    newest = folder / f"samples_toy_mc_trivia_{STAMP}.jsonl"
    oldest = folder / f"samples_toy_mc_trivia_{OLDER[0]}.jsonl"
    oldest.write_text(newest.read_text().replace('"acc": 1.0', '"acc": 0.0'))
    oldest.touch()  # modified last, as a fresh artifact download would be
    body, _ = report(["calibrate", oldest, newest])
    truth, _ = report(["calibrate", newest])
    assert body["accuracy"] == truth["accuracy"]


def test_pooled_reruns_no_longer_pass_a_gate_one_run_fails(tmp_path):
    folder, _ = rerun_folder(tmp_path)
    files = sorted(folder.glob("samples_*"))
    one, _ = report(["calibrate", files[-1], "--ci", "0.95", "--bootstrap", "200"])
    three, _ = report(["calibrate", *files, "--all-runs", "--ci", "0.95", "--bootstrap", "200"])
    upper_one, upper_three = one["ci"]["ece"][1], three["ci"]["ece"][1]
    # pooled, the runs are a document's answers drawn together: the interval is about one
    # run's (a third of the rows' independent answers would narrow it by about 1/sqrt(3))
    width_one = upper_one - one["ci"]["ece"][0]
    width_three = upper_three - three["ci"]["ece"][0]
    assert 0.8 < width_three / width_one < 1.25
    assert upper_three < upper_one  # at this seed, so that a limit lies between them
    limit = f"{(upper_one + upper_three) / 2:.6f}"
    gate = ["--max-ece", limit, "--gate-on", "upper", "--bootstrap", "200"]
    assert run(["calibrate", *files, *gate, "--all-runs", "-q"]).exit_code == 0
    assert run(["calibrate", *files, *gate, "-q"]).exit_code == 1  # as one run: it fails


@pytest.mark.parametrize(
    "command",
    [
        ["threshold", "--target-accuracy", "0.6"],
        ["reliability"],
        ["fit", "--method", "platt"],
    ],
)
def test_every_calibration_command_reads_the_newest_run(tmp_path, command):
    folder, _ = rerun_folder(tmp_path)
    result = run([command[0], *sorted(folder.glob("samples_*")), *command[1:], "-q"])
    assert result.exit_code == 0, result.stderr
    assert "re-runs of 1 task(s)" in result.stderr


def test_perplexity_reads_the_newest_run(tmp_path):
    folder, rows = rerun_folder(tmp_path, task="toy_wikitext")
    body, _ = report(["perplexity", *sorted(folder.glob("samples_*"))])
    assert body["sequences"] == rows
    assert (
        report(["perplexity", *sorted(folder.glob("samples_*")), "--all-runs"])[0]["sequences"]
        == 3 * rows
    )


def test_the_same_file_twice_is_refused(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"confidence": 0.5, "correct": True}] * 4)
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    result = run(["calibrate", path, link, "-q"])
    assert result.exit_code == 2
    assert "is given twice" in result.stderr and "--all-runs" not in result.stderr
    # one path read twice is no re-run, --all-runs or not
    for pooled in ([], ["--all-runs"]):
        result = run(["calibrate", path, path, *pooled, "-q"])
        assert result.exit_code == 2
        assert result.stderr == f"Error: {path}: is given twice: {ONCE}\n"


def test_a_hard_link_to_a_file_given_is_the_same_file_twice(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"confidence": 0.5, "correct": True}] * 4)
    link = tmp_path / "hard.jsonl"
    os.link(path, link)
    result = run(["calibrate", path, link, "-q"])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"Error: {link}: is given twice (also as {path}): one file reached by two paths is not "
        "a re-run, and its rows would count twice (give one of the paths)"
    ]
    # one file pooled with itself is no re-run, whatever its rows
    pooled = run(["calibrate", path, link, "--all-runs", "-q"])
    assert pooled.exit_code == 2
    assert pooled.stderr == result.stderr


def test_standard_input_and_a_file_are_two_inputs(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"confidence": 0.5, "correct": True}] * 4)
    result = run(["calibrate", "-", path, "--json", "-q"], input=path.read_text())
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 8


def test_two_files_with_the_same_bytes_are_refused(tmp_path):
    # the same rows twice narrow every interval and meet --min-rows with the copy
    path = write_jsonl(tmp_path / "p.jsonl", [{"confidence": 0.5, "correct": True}] * 4)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(path, copy)
    result = run(["calibrate", path, copy, "--min-rows", "8", "-q"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        f"Error: {copy}: holds the same bytes as {path}: its rows would count twice (pass "
        "--all-runs to pool them on purpose, or give one of them)\n"
    )
    pooled = run(["calibrate", path, copy, "--all-runs", "--min-rows", "8", "-q"])
    assert pooled.exit_code == 2 and pooled.stdout == ""
    assert pooled.stderr == (
        f"Error: {copy}: holds the same bytes as {path}, and rows without ids cannot tell a "
        "re-run from a copy: --all-runs would count them twice (give --id-field so that re-runs "
        "are counted by question, or leave one of them out)\n"
    )


def test_a_gzip_file_beside_the_file_it_compresses_is_refused(tmp_path):
    # a folder after `gzip -k p.jsonl` holds the rows twice
    path = write_jsonl(tmp_path / "p.jsonl", [{"nll": 2.0, "tokens": 3}] * 4)
    packed = tmp_path / "p.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    other = write_jsonl(tmp_path / "q.jsonl", [{"nll": 1.0, "tokens": 5}] * 4)
    result = run(["perplexity", tmp_path, "-q"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {packed}: holds the same bytes as {path} once decompressed: its rows would "
        "count twice (pass --all-runs to pool them on purpose, or give one of them)\n"
    )
    pooled = run(["perplexity", tmp_path, "--all-runs", "-q"])
    assert pooled.exit_code == 2
    assert pooled.stderr.startswith(
        f"Error: {packed}: holds the same bytes as {path} once decompressed, and rows without ids"
    )
    # the same size and other bytes, or another file, say nothing
    path.write_text(path.read_text().replace("2.0", "4.0"))
    assert report(["perplexity", packed, path, other])[0]["warnings"] == []


def test_standard_input_twice_is_refused():
    result = run(["calibrate", "-", "-", "-q"], input='{"confidence": 0.5, "correct": true}\n')
    assert result.exit_code == 2
    assert "standard input is given twice" in result.stderr


def test_rows_with_one_id_in_files_without_timestamps_are_refused(tmp_path):
    source = FIXTURES / f"samples_toy_mc_trivia_{STAMP}.jsonl"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    first = a / "samples_toy_mc_trivia.jsonl"
    second = b / "samples_toy_mc_trivia.jsonl"
    lines = source.read_text().splitlines()
    first.write_text("\n".join(lines[:5]) + "\n")
    second.write_text("\n".join(lines[3:]) + "\n")  # rows 4 and 5 again
    result = run(["calibrate", first, second, "-q"])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {second}:1: the row of id toy_mc_trivia/3 was read before")
    assert f"at {first}:4" in line
    assert run(["calibrate", first, second, "--all-runs", "-q"]).exit_code == 0


def test_native_rows_with_an_id_field(tmp_path):
    rows = [{"id": k, "confidence": 0.5, "correct": True} for k in (0, 1, 2, 1)]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    # native rows are not identified: only a repeat of the first row's id is watched for
    assert run(["calibrate", path, "-q"]).exit_code == 0
    result = run(["calibrate", path, "--id-field", "id", "-q"])
    assert result.exit_code == 2
    assert f"{path}:4: the row of id 1 was read before, at {path}:2" in result.stderr
    write_jsonl(path, [*rows[:3], rows[0]])
    result = run(["calibrate", path, "-q"])
    assert result.exit_code == 2
    assert f"{path}:4: the row of id 0 repeats the id of the file's first row" in result.stderr


def test_compare_sides_may_be_two_runs(tmp_path):
    folder, rows = rerun_folder(tmp_path)
    files = sorted(folder.glob("samples_*"))
    body, _ = report(["compare", files[0], files[-1], "--bootstrap", "200"])
    assert body["matched"] == rows
