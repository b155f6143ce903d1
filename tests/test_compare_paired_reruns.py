"""A paired comparison of lm-eval re-runs pooled with --all-runs cannot match each document
once: its refusal says that the files are runs of one task and what to do instead (compare
the runs unpaired, or one run of each side), on the command and in the Python API alike. Ids
repeated across files that are not runs of one task keep the plain message."""

from __future__ import annotations

import shutil

import pytest
from harness import run
from test_compare_unpaired_repeats import STAMPS, runs_folder

import calibcli
from calibcli.errors import InputError

RUNS_OF_ONE_TASK = (
    ": both files are runs of task 'toy_mc_trivia', and a paired comparison matches each "
    "document once; compare the runs with --unpaired (each document counted once, its runs "
    "drawn together), or one run of each side (without --all-runs, each task's newest run is "
    "read)"
)


def _named(folder, stamp):
    return f"{folder}/samples_toy_mc_trivia_{stamp}.jsonl"


def test_a_side_of_pooled_re_runs_is_refused_saying_why(tmp_path):
    base, new = runs_folder(tmp_path, "base", 3), runs_folder(tmp_path, "new", 2)
    result = run(["compare", base, new, "--all-runs", "-q"])
    assert result.exit_code == 2
    # the first two runs (oldest first) hold document 0 on their first lines
    first, second = (_named(base, stamp) for stamp in STAMPS[:2])
    assert result.stderr == (
        f"Error: {second}:1: duplicate id toy_mc_trivia/0 (first at {first}:1){RUNS_OF_ONE_TASK}\n"
    )


def test_new_s_pooled_re_runs_are_refused_saying_why(tmp_path):
    base = runs_folder(tmp_path, "base", 1)
    new = runs_folder(tmp_path, "new", 2)
    result = run(["compare", base, new, "--all-runs", "-q"])
    assert result.exit_code == 2
    first, second = (_named(new, stamp) for stamp in STAMPS[1:])
    assert result.stderr.endswith(f"(first at {first}:1){RUNS_OF_ONE_TASK}\n")
    assert result.stderr.startswith(f"Error: {second}:1: duplicate id toy_mc_trivia/0 ")


def test_the_api_refuses_them_in_the_same_words(tmp_path):
    base, new = runs_folder(tmp_path, "base", 3), runs_folder(tmp_path, "new", 2)
    rows = [calibcli.read_predictions(side, all_runs=True) for side in (base, new)]
    with pytest.raises(InputError) as caught:
        calibcli.compare(*rows)
    first, second = (_named(base, stamp) for stamp in STAMPS[:2])
    assert str(caught.value) == (
        f"{second}:1: duplicate id toy_mc_trivia/0 (first at {first}:1){RUNS_OF_ONE_TASK}"
    )


def test_ids_repeated_by_files_of_other_tasks_keep_the_plain_message(tmp_path):
    # the same rows under two tasks' names, matched by doc_id alone: not runs of one task
    source = next(runs_folder(tmp_path, "base", 1).glob("samples_*.jsonl"))
    two = tmp_path / "two"
    two.mkdir()
    for task in ("toy_mc_trivia", "toy_mc_other"):
        shutil.copy(source, two / f"samples_{task}_{STAMPS[-1]}.jsonl")
    result = run(["compare", two, source, "--id-field", "doc_id", "--all-runs", "-q"])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert result.stderr.endswith(":1)\n")  # "duplicate id 0 (first at ...:1)", nothing after
    assert "duplicate id 0 (first at " in result.stderr
