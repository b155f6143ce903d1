"""`--format auto` names the non-native formats it detected in one stderr line, counting the
files read (a skipped file is named by its warning instead), never with -q."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from harness import run, write_jsonl

FIXTURES = Path(__file__).resolve().parent / "fixtures"
STAMP = "2026-11-29T18-50-52.260809"
SCIENCE = FIXTURES / "lm_eval" / f"samples_toy_mc_science_{STAMP}.jsonl"
TRIVIA = FIXTURES / "lm_eval" / f"samples_toy_mc_trivia_{STAMP}.jsonl"
WIKITEXT = FIXTURES / "lm_eval" / f"samples_toy_wikitext_{STAMP}.jsonl"
RESULTS = FIXTURES / "lm_eval" / f"results_{STAMP}.json"
EVAL_LOG = FIXTURES / "inspect_ai" / "toy_arithmetic.eval"


def detected(result):
    return [line for line in result.stderr.splitlines() if line.startswith("detected format")]


@pytest.fixture
def lm_eval_copies(tmp_path):
    """Twelve lm-eval multiple-choice files (copies of the two fixture tasks under other
    task names: read with --all-runs, which pools files of the same bytes)."""
    out = []
    for i in range(12):
        source = SCIENCE if i % 2 else TRIVIA
        target = tmp_path / f"samples_task{i:02d}_{STAMP}.jsonl"
        shutil.copyfile(source, target)
        out.append(target)
    return out


def test_one_line_counts_the_files_of_each_format(lm_eval_copies):
    args = ["calibrate", *lm_eval_copies, EVAL_LOG, "--scorer", "match", "--json", "--all-runs"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    assert detected(result) == ["detected formats: lm-eval (12 files), inspect-ai (1 file)"]


def test_skipped_files_are_not_counted_or_announced():
    """The results file and the rolling task are skipped by calibrate: each gets its warning,
    and the line counts the two files read."""
    result = run(["calibrate", RESULTS, SCIENCE, TRIVIA, WIKITEXT, "--json"])
    assert result.exit_code == 0
    assert detected(result) == ["detected format: lm-eval (2 files)"]
    for skipped in (RESULTS, WIKITEXT):
        assert str(skipped) not in "\n".join(detected(result))
        assert f"warning: {skipped}: " in result.stderr


def test_a_single_file_is_named():
    result = run(["calibrate", SCIENCE, "--json"])
    assert detected(result) == [f"detected format: lm-eval ({SCIENCE})"]


def test_native_rows_and_quiet_runs_print_nothing(tmp_path):
    native = write_jsonl(tmp_path / "native.jsonl", [{"confidence": 0.9, "correct": True}])
    result = run(["calibrate", native, "--json"])
    assert detected(result) == []
    result = run(["calibrate", SCIENCE, TRIVIA, native, "--json"])
    assert detected(result) == ["detected format: lm-eval (2 files)"]
    result = run(["calibrate", SCIENCE, TRIVIA, "--json", "-q"])
    assert detected(result) == []


def test_compare_names_both_sides_in_one_line():
    result = run(["compare", SCIENCE, SCIENCE, "--json", "--bootstrap", "200", "--all-runs"])
    assert result.exit_code == 0, result.stderr
    assert detected(result) == [f"detected format: lm-eval ({SCIENCE})"]
