"""An lm-eval samples file renamed (``b/toy_mc_trivia.jsonl``, read as lm-eval by its rows) is a
run whose path names no model: its task is the file's stem, and its rows sharing that task's
doc_ids with a run in a model's ``org__`` folder are re-runs, refused with and without
--all-runs on every route, as a run in a plain folder under its lm-eval name is. Unrefused, the
two runs' 80 rows of the fixture's 40 questions passed ``--min-rows 60``."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import refused, run
from test_reruns_across_model_folders import QUESTIONS, TASK, TWICE, a_run, rerun_rows

import calibcli
from calibcli.errors import InputError

APART = "cannot pool their rows as re-runs of one question"


def renamed_rerun(folder: Path, name: str = f"{TASK}.jsonl") -> Path:
    """A re-run of the fixture task written under a name lm-eval never writes."""
    folder.mkdir(parents=True)
    path = folder / name
    path.write_text(rerun_rows(), encoding="utf-8")
    return path


@pytest.mark.parametrize("order", ["named first", "renamed first"])
def test_files_are_refused(tmp_path, order):
    named = a_run(tmp_path / "org__modelA", rerun=False)
    renamed = renamed_rerun(tmp_path / "b")
    inputs = (named, renamed) if order == "named first" else (renamed, named)
    line = refused("calibrate", *inputs, "--min-rows", "60", "--by", "task", "--gate-each")
    assert f":1: the row of id {TASK}/0 was read before, at " in line, line
    assert line.endswith(TWICE)
    line = refused("calibrate", *inputs, "--min-rows", "60", "--all-runs")
    assert APART in line, line


def test_alone_each_run_holds_its_questions(tmp_path):
    named = a_run(tmp_path / "org__modelA", rerun=False)
    renamed = renamed_rerun(tmp_path / "b")
    for path in (named, renamed):
        alone = run(["calibrate", path, "--min-rows", str(QUESTIONS), "--format", "lm-eval"])
        assert alone.exit_code == 0, alone.stderr


def test_summaries_and_the_api_refuse_them(tmp_path):
    named = a_run(tmp_path / "org__modelA", rerun=False)
    renamed = renamed_rerun(tmp_path / "b")
    parts = []
    for i, path in enumerate((named, renamed)):
        part = tmp_path / f"part{i}.cbs"
        made = run(["summarize", path, "-o", part, "-q"])
        assert made.exit_code == 0, made.stderr
        parts.append(part)
    assert refused("merge", *parts, "-o", tmp_path / "m.cbs").endswith(TWICE)
    assert not (tmp_path / "m.cbs").exists()
    assert refused("calibrate", *parts, "--min-rows", "60").endswith(TWICE)
    assert APART in refused("calibrate", *parts, "--min-rows", "60", "--all-runs")
    with pytest.raises(InputError, match="was read before"):
        calibcli.read_predictions([str(named), str(renamed)])


@pytest.mark.parametrize("all_runs", [False, True])
def test_an_engine_refuses_them(tmp_path, all_runs):
    """Through the tasks an engine schedules (so without Dask or Spark): the file's format is
    known once read, so the refusal comes when the parts are judged."""
    from calibcli.engines import file_jobs, file_task, finish, merge_all

    named = a_run(tmp_path / "org__modelA", rerun=False)
    renamed = renamed_rerun(tmp_path / "b")
    files = [*map(str, named.glob("samples_*")), str(renamed)]
    jobs = file_jobs(files, "auto", None, all_runs=all_runs)
    merged = merge_all([file_task(job) for job in jobs])
    with pytest.raises(InputError, match=APART if all_runs else "was read before"):
        finish(merged, all_runs=all_runs, said=jobs[0].said).report()


def test_another_task_of_the_stem_is_not_compared(tmp_path):
    """A renamed file whose stem is another task's name holds, by its name, other questions:
    read beside the run, its rows are that task's (the names are all calibcli has)."""
    named = a_run(tmp_path / "org__modelA", rerun=False)
    other = renamed_rerun(tmp_path / "b", "other_task.jsonl")
    both = run(["calibrate", named, other, "--json", "--by", "task"])
    assert both.exit_code == 0, both.stderr
