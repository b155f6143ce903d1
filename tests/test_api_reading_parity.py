"""``read_predictions`` reads a folder as ``calibrate`` reads it: the files it skips (results
files, tasks without probabilities) are said in the same warnings, ``all_runs=True`` pools a
task's re-runs as ``--all-runs`` does, and two models' files of one task are read (their
gates failing closed) rather than refused for sharing doc_ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import run, write_jsonl
from test_cli_realruns import GENERATIVE_ROW, REALWORLD
from test_compare_paired_reruns import RUNS_OF_ONE_TASK

import calibcli
from calibcli.errors import InputError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LM_EVAL = FIXTURES / "lm_eval"
OLD_NAMES = FIXTURES / "lm_eval_old_names"
STAMP = "2026-11-29T18-50-52.260809"
OLDER = "2026-11-28T09-00-00.000001"
TRIVIA = LM_EVAL / f"samples_toy_mc_trivia_{STAMP}.jsonl"
RESULTS = f"results_{STAMP}.json"
WIKITEXT = f"samples_toy_wikitext_{STAMP}.jsonl"
GENERATIVE = f"samples_toy_gen_{STAMP}.jsonl"

# the reasons the commands give for the files of a folder they leave out
RESULTS_SKIPPED = (
    "lm-eval results file: aggregate figures, no per-document rows (the samples_* files beside "
    "it hold them); skipped"
)
ROLLING_SKIPPED = (
    "loglikelihood_rolling task: no choice loglikelihoods (read it with `perplexity`); skipped"
)
GENERATIVE_SKIPPED = "generative task: no probabilities; skipped"


def lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def cli(*args) -> dict:
    result = run(["calibrate", *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def api(path: Path, **reading) -> tuple[calibcli.Predictions, dict]:
    rows = calibcli.read_predictions(path, **reading)
    return rows, json.loads(calibcli.calibrate(rows).to_json())


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """The committed lm-eval run (two multiple-choice tasks, a rolling one, its results file)
    with a generative task's samples beside it."""
    folder = tmp_path / "out"
    folder.mkdir()
    for path in LM_EVAL.glob(f"*_{STAMP}.json*"):
        shutil.copy(path, folder / path.name)
    write_jsonl(folder / GENERATIVE, [{**GENERATIVE_ROW, "doc_id": i} for i in range(3)])
    return folder


@pytest.fixture
def reruns(tmp_path: Path) -> Path:
    """Two runs of one task in one folder: the same 40 documents twice."""
    folder = tmp_path / "reruns"
    folder.mkdir()
    for stamp in (OLDER, STAMP):
        shutil.copy(TRIVIA, folder / f"samples_toy_mc_trivia_{stamp}.jsonl")
    return folder


def test_the_skipped_files_of_the_committed_run_are_said_as_calibrate_says_them():
    rows, report = api(LM_EVAL)
    expected = cli(LM_EVAL)
    assert report["warnings"] == expected["warnings"]
    assert list(rows.warnings[:2]) == [
        f"{LM_EVAL / RESULTS}: {RESULTS_SKIPPED}",
        f"{LM_EVAL / WIKITEXT}: {ROLLING_SKIPPED}",
    ]
    # the two multiple-choice tasks' rows, counted from their files
    science = LM_EVAL / f"samples_toy_mc_science_{STAMP}.jsonl"
    assert len(rows) == lines(science) + lines(TRIVIA) == 88 == expected["n"]


def test_a_generative_tasks_file_is_said_skipped(run_folder):
    rows, report = api(run_folder)
    assert report["warnings"] == cli(run_folder)["warnings"]
    skipped = [w for w in rows.warnings if w.endswith("; skipped")]
    assert skipped == [
        f"{run_folder / RESULTS}: {RESULTS_SKIPPED}",
        f"{run_folder / GENERATIVE}: {GENERATIVE_SKIPPED}",
        f"{run_folder / WIKITEXT}: {ROLLING_SKIPPED}",
    ]
    assert calibcli.calibrate(rows).warnings == report["warnings"]


def test_all_runs_pools_a_tasks_reruns_as_the_command_does(reruns):
    rows, report = api(reruns, all_runs=True)
    expected = cli(reruns, "--all-runs")
    assert len(rows) == report["n"] == expected["n"] == 2 * lines(TRIVIA) == 80
    assert report["warnings"] == expected["warnings"]
    # every row keeps its id: the pooled runs hold each document twice
    assert sorted(rows.id.tolist()).count("toy_mc_trivia/0") == 2
    # without it the newest run alone is read, and the older named
    newest, report = api(reruns)
    assert len(newest) == cli(reruns)["n"] == lines(TRIVIA) == 40
    assert report["warnings"] == cli(reruns)["warnings"]
    assert newest.warnings[0].startswith("re-runs of 1 task(s) ('toy_mc_trivia') in one folder")


def test_compare_refuses_pooled_reruns_as_the_command_does(reruns):
    result = run(["compare", reruns, reruns, "--all-runs", "--json", "-q"])
    assert result.exit_code == 2
    (said,) = result.stderr.splitlines()
    first = reruns / f"samples_toy_mc_trivia_{OLDER}.jsonl"
    again = reruns / f"samples_toy_mc_trivia_{STAMP}.jsonl"
    assert said == (
        f"Error: {again}:1: duplicate id toy_mc_trivia/0 (first at {first}:1){RUNS_OF_ONE_TASK}"
    )
    pooled = calibcli.read_predictions(reruns, all_runs=True)
    with pytest.raises(InputError) as error:
        calibcli.compare(pooled, calibcli.read_predictions(TRIVIA))
    assert f"Error: {error.value}" == said


def test_two_models_files_of_one_task_are_read_and_their_gate_fails_closed():
    # four questions in each model's file (the fixture's README), doc_ids 0-3 in both
    rows, report = api(OLD_NAMES)
    expected = cli(OLD_NAMES)
    assert len(rows) == expected["n"] == 8
    assert report["warnings"] == expected["warnings"]
    assert report["warnings"][0].startswith("rows of 2 models are pooled")
    gated = calibcli.calibrate(rows, min_rows=1)
    assert gated.passed is False
    assert run(["calibrate", OLD_NAMES, "--min-rows", "1", "-q"]).exit_code == 1
    (failure,) = gated.failures
    assert "several models" in failure


def test_a_folder_of_skipped_files_alone_is_refused_as_the_command_refuses_it(tmp_path):
    folder = tmp_path / "nothing"
    folder.mkdir()
    for name in (RESULTS, WIKITEXT):
        shutil.copy(LM_EVAL / name, folder / name)
    result = run(["calibrate", folder, "-q"])
    assert result.exit_code == 2
    with pytest.raises(InputError) as error:
        calibcli.read_predictions(folder)
    assert f"Error: {error.value}" == result.stderr.strip()
    assert str(error.value) == (
        f"{folder / RESULTS}: {RESULTS_SKIPPED.removesuffix('; skipped')}, and 1 other file(s) "
        "skipped too: no calibration rows left to read"
    )


@pytest.mark.skipif(not REALWORLD.is_dir(), reason="no ../shared/realworld")
@pytest.mark.parametrize(
    ("folder", "all_runs", "n"),
    [
        # 20 documents of each of two multiple-choice tasks (--limit 20); the generative
        # task and four results files skipped
        ("lmeval-pr3936-qwen3-8b-negotiationtom", False, 40),
        # two models' files; generative tasks and results files skipped
        ("lmeval-2023-bigrefactor-output", False, 48),
        ("lmeval-2023-bigrefactor-output", True, 48),
    ],
)
def test_real_run_folders_read_as_the_command_reads_them(folder, all_runs, n):
    path = REALWORLD / folder
    if not path.is_dir():
        pytest.skip(f"no {folder}")
    rows, report = api(path, all_runs=all_runs)
    expected = cli(path, *(["--all-runs"] if all_runs else []))
    assert len(rows) == expected["n"] == n
    assert report["warnings"] == expected["warnings"]
    assert any(w.endswith(GENERATIVE_SKIPPED) for w in report["warnings"])
    assert any(w.endswith(RESULTS_SKIPPED) for w in report["warnings"])


def test_compare_of_the_rows_says_what_compare_of_the_files_says(run_folder):
    result = run(["compare", run_folder, run_folder, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    sides = [calibcli.read_predictions(run_folder) for _ in range(2)]
    assert calibcli.compare(*sides).to_json() == result.stdout


def test_a_results_file_written_on_one_line_is_skipped_too(tmp_path):
    folder = tmp_path / "one_line"
    folder.mkdir()
    shutil.copy(TRIVIA, folder / TRIVIA.name)
    results = json.loads((LM_EVAL / RESULTS).read_text(encoding="utf-8"))
    (folder / "results_one.jsonl").write_text(json.dumps(results) + "\n", encoding="utf-8")
    rows, report = api(folder)
    assert rows.warnings == (f"{folder / 'results_one.jsonl'}: {RESULTS_SKIPPED}",)
    assert report["warnings"] == cli(folder)["warnings"]
    assert len(rows) == lines(TRIVIA) == 40
