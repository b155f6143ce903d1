"""--all-runs pools re-runs, never one input read twice: a path given twice is refused as it is
without --all-runs, and two files of the same bytes whose rows carry no ids (native rows
without --id-field) are refused too, since nothing tells such a re-run from a copy and pooled
one by one its rows would count twice (narrower intervals, --min-rows met with the copy). Rows
that carry ids are counted by question: native rows given --id-field, an lm-eval re-run written
again byte for byte under another time stamp; an inspect-ai log and its copy are one run (one
eval_id), refused.

The counts are known by construction: 30 native rows of ids q0 to q29 and their copy are 60
rows of 30 questions; an lm-eval samples file holds one row per document (its lines)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from harness import make_rows, run, write_jsonl

import calibcli
from calibcli.engines import file_jobs, file_task, finish, merge_all
from calibcli.errors import InputError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCIENCE = FIXTURES / "lm_eval" / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"
WIKITEXT = FIXTURES / "lm_eval" / "samples_toy_wikitext_2026-11-29T18-50-52.260809.jsonl"
LATER = "2026-12-01T10-00-00.000000"
QUESTIONS = 30
HOW = (
    "and rows without ids cannot tell a re-run from a copy: --all-runs would count them twice "
    "(give --id-field so that re-runs are counted by question, or leave one of them out)"
)
ONCE = "a path given twice is not a re-run, and its rows would count twice (give it once)"


def native(path: Path) -> Path:
    """30 native rows, ids q0 to q29, every third one wrong."""
    rows = [{"id": f"q{i}", "confidence": 0.5 + i / 100, "correct": i % 3 != 0} for i in range(30)]
    return write_jsonl(path, rows)


def copied(path: Path, name: str) -> Path:
    copy = path.parent / name
    shutil.copyfile(path, copy)
    return copy


def refused(args: list, message: str) -> None:
    result = run(args)
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr == f"Error: {message}\n"


def report(args: list, code: int) -> dict:
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("command", ["calibrate", "perplexity", "summarize"])
def test_a_path_given_twice_is_refused_with_all_runs(tmp_path, monkeypatch, command):
    if command == "perplexity":
        rows = write_jsonl(tmp_path / "p.jsonl", [{"nll": 10, "tokens": 5}] * 4)
    else:
        rows = write_jsonl(tmp_path / "rows.jsonl", make_rows(200, seed=3))
    out = tmp_path / "out.cbs"
    extra = ["-o", out] if command == "summarize" else []
    refused([command, rows, rows, "--all-runs", *extra], f"{rows}: is given twice: {ONCE}")
    assert not out.exists()
    # another spelling of the path, or a folder and a file in it, is the same path
    monkeypatch.chdir(tmp_path)
    refused(
        [command, rows.name, f"./{rows.name}", "--all-runs", *extra],
        f"./{rows.name}: is given twice (also as {rows.name}): {ONCE}",
    )
    refused(
        [command, ".", rows.name, "--all-runs", *extra],
        f"{rows.name}: is given twice (also as ./{rows.name}): {ONCE}",
    )


def test_a_path_given_twice_with_id_field_is_refused_too(tmp_path):
    rows = native(tmp_path / "rows.jsonl")
    args = ["calibrate", rows, rows, "--all-runs", "--id-field", "id"]
    refused(args, f"{rows}: is given twice: {ONCE}")


def test_standard_input_given_twice_is_refused_with_all_runs(tmp_path):
    text = native(tmp_path / "rows.jsonl").read_text()
    result = run(["calibrate", "-", "-", "--all-runs"], input=text)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == "Error: <stdin>: standard input is given twice: it can be read once\n"


def test_a_copy_of_rows_without_ids_is_refused(tmp_path):
    rows = write_jsonl(tmp_path / "a.jsonl", make_rows(200, seed=3))
    copy = copied(rows, "b.jsonl")
    refused(
        ["calibrate", rows, copy, "--all-runs"], f"{copy}: holds the same bytes as {rows}, {HOW}"
    )
    # the same under an upper-end gate and a floor the copy would meet: no figure is given
    gated = ["--gate-on", "upper", "--max-brier", "0.5", "--min-rows", "400"]
    refused(
        ["calibrate", rows, copy, "--all-runs", *gated],
        f"{copy}: holds the same bytes as {rows}, {HOW}",
    )
    # a link is the file itself, reached by another path: never a re-run
    link = tmp_path / "link.jsonl"
    link.symlink_to(rows)
    refused(
        ["calibrate", rows, link, "--all-runs"],
        f"{link}: is given twice (also as {rows}): one file reached by two paths is not a "
        "re-run, and its rows would count twice (give one of the paths)",
    )


def test_a_compressed_copy_of_rows_without_ids_is_refused(tmp_path):
    rows = write_jsonl(tmp_path / "a.jsonl", make_rows(200, seed=3))
    packed = tmp_path / "a.jsonl.gz"
    packed.write_bytes(gzip.compress(rows.read_bytes()))
    refused(
        ["calibrate", rows, packed, "--all-runs"],
        f"{packed}: holds the same bytes as {rows} once decompressed, {HOW}",
    )


def test_a_copy_of_perplexity_rows_without_ids_is_refused(tmp_path):
    rows = write_jsonl(tmp_path / "p.jsonl", [{"nll": 10 + i, "tokens": 5} for i in range(4)])
    copy = copied(rows, "q.jsonl")
    args = ["perplexity", rows, copy, "--all-runs", "--min-rows", "8", "--min-tokens", "38"]
    refused(args, f"{copy}: holds the same bytes as {rows}, {HOW}")


def test_a_copy_is_refused_whatever_the_format_forced(tmp_path):
    rows = write_jsonl(tmp_path / "a.jsonl", make_rows(200, seed=3))
    copy = copied(rows, "b.jsonl")
    args = ["calibrate", rows, copy, "--all-runs", "--format", "jsonl"]
    refused(args, f"{copy}: holds the same bytes as {rows}, {HOW}")


def test_a_summary_of_a_copy_is_not_written(tmp_path):
    rows = write_jsonl(tmp_path / "a.jsonl", make_rows(200, seed=3))
    copy = copied(rows, "b.jsonl")
    out = tmp_path / "both.cbs"
    refused(
        ["summarize", rows, copy, "--all-runs", "-o", out],
        f"{copy}: holds the same bytes as {rows}, {HOW}",
    )
    assert not out.exists()
    # a summary of the file, beside its copy or beside a summary of its copy
    alone, other = tmp_path / "a.cbs", tmp_path / "b.cbs"
    assert run(["summarize", rows, "-o", alone, "-q"]).exit_code == 0
    assert run(["summarize", copy, "-o", other, "-q"]).exit_code == 0
    assert run(["calibrate", alone, copy, "--all-runs"]).exit_code == 2
    assert run(["calibrate", alone, other, "--all-runs"]).exit_code == 2


def test_unpaired_compare_refuses_a_side_holding_a_copy(tmp_path):
    base, new = tmp_path / "base", tmp_path / "new"
    base.mkdir()
    new.mkdir()
    rows = write_jsonl(base / "x.jsonl", make_rows(200, seed=3))
    copy = copied(rows, "y.jsonl")
    write_jsonl(new / "x.jsonl", make_rows(200, seed=4))
    refused(
        ["compare", base, new, "--unpaired", "--all-runs"],
        f"{copy}: holds the same bytes as {rows}, {HOW}",
    )


def test_read_predictions_refuses_a_copy(tmp_path):
    rows = write_jsonl(tmp_path / "a.jsonl", make_rows(200, seed=3))
    copy = copied(rows, "b.jsonl")
    with pytest.raises(InputError) as caught:
        calibcli.read_predictions([str(rows), str(copy)], all_runs=True)
    assert str(caught.value) == f"{copy}: holds the same bytes as {rows}, {HOW}"
    with pytest.raises(InputError, match="is given twice"):
        calibcli.read_predictions([str(rows), str(rows)], all_runs=True)


def test_an_engine_refuses_a_copy(tmp_path):
    rows = write_jsonl(tmp_path / "a.jsonl", make_rows(200, seed=3))
    copy = copied(rows, "b.jsonl")
    jobs = file_jobs([str(rows), str(copy)], "auto", None, all_runs=True)
    merged = merge_all([file_task(job) for job in jobs])
    with pytest.raises(InputError) as caught:  # the parts' merge refuses them first
        finish(merged, all_runs=True)
    assert str(rows) in str(caught.value) and str(copy) in str(caught.value)
    with pytest.raises(InputError, match="is given twice"):
        file_jobs([str(rows), str(rows)], "auto", None, all_runs=True)


def test_a_copy_of_rows_with_ids_is_counted_by_question(tmp_path):
    rows = native(tmp_path / "a.jsonl")
    copy = copied(rows, "b.jsonl")
    args = ["calibrate", rows, copy, "--all-runs", "--id-field", "id", "--min-rows"]
    failed = report([*args, str(QUESTIONS + 1)], 1)
    assert failed["n"] == 2 * QUESTIONS
    (check,) = failed["gate"]["checks"]
    assert check["questions"] == QUESTIONS and check["questions_exact"] is True
    assert report([*args, str(QUESTIONS)], 0)["n"] == 2 * QUESTIONS


def test_an_lm_eval_rerun_of_the_same_bytes_is_a_rerun(tmp_path):
    documents = len(SCIENCE.read_text().splitlines())
    first = tmp_path / SCIENCE.name
    first.write_bytes(SCIENCE.read_bytes())
    again = tmp_path / f"samples_toy_mc_science_{LATER}.jsonl"
    again.write_bytes(SCIENCE.read_bytes())
    args = ["calibrate", first, again, "--all-runs", "--min-rows"]
    failed = report([*args, str(documents + 1)], 1)
    assert failed["n"] == 2 * documents
    (check,) = failed["gate"]["checks"]
    assert check["questions"] == documents
    passed = report([*args, str(documents)], 0)
    assert any(w.startswith("lm-eval re-runs of a task are pooled") for w in passed["warnings"])


def test_an_lm_eval_perplexity_rerun_of_the_same_bytes_is_a_rerun(tmp_path):
    documents = len(WIKITEXT.read_text().splitlines())
    first = tmp_path / WIKITEXT.name
    first.write_bytes(WIKITEXT.read_bytes())
    again = tmp_path / f"samples_toy_wikitext_{LATER}.jsonl"
    again.write_bytes(WIKITEXT.read_bytes())
    body = report(["perplexity", first, again, "--all-runs"], 0)
    assert body["sequences"] == 2 * documents


def test_an_inspect_log_and_its_copy_are_refused(tmp_path):
    # a copy of an inspect-ai log is its run again (its eval_id), not a re-run: a re-run has
    # an eval_id of its own (tests/test_inspect_invalidated_and_copies.py)
    log = FIXTURES / "inspect_ai" / "toy_arithmetic.eval"
    first, again = tmp_path / "run1.eval", tmp_path / "run2.eval"
    first.write_bytes(log.read_bytes())
    again.write_bytes(log.read_bytes())
    result = run(["calibrate", first, again, "--scorer", "match", "--all-runs"])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"Error: {again}: holds the same bytes as {first} (eval_id ")


def test_files_of_no_rows_are_no_copies(tmp_path):
    rows = write_jsonl(tmp_path / "a.jsonl", make_rows(200, seed=3))
    (tmp_path / "e1.jsonl").write_text("")
    (tmp_path / "e2.jsonl").write_text("\n")
    (tmp_path / "e3.jsonl").write_text("\n")
    body = report(
        ["calibrate", rows, tmp_path / "e2.jsonl", tmp_path / "e3.jsonl", "--all-runs"], 0
    )
    assert body["n"] == 200
