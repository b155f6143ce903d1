"""An lm-eval samples file renamed (``b/toy_mc_trivia.jsonl``, read as lm-eval by its rows) is a
run whose path names no model: its task is the file's stem, and its rows sharing that task's
doc_ids with a run in a model's ``org__`` folder are re-runs, refused with and without
--all-runs on every route, as a run in a plain folder under its lm-eval name is. Unrefused, the
two runs' 80 rows of the fixture's 40 questions passed ``--min-rows 60``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import refused, run
from test_reruns_across_model_folders import (
    QUESTIONS,
    SAMPLES,
    TASK,
    TWICE,
    a_run,
    rerun_rows,
)

import calibcli
from calibcli.errors import InputError

APART = "cannot pool their rows as re-runs of one question"


def renamed_rerun(folder: Path, name: str = f"{TASK}.jsonl") -> Path:
    """A re-run of the fixture task written under a name lm-eval never writes."""
    folder.mkdir(parents=True)
    path = folder / name
    path.write_text(rerun_rows(), encoding="utf-8")
    return path


def summaries_of(tmp_path: Path, *paths: Path) -> list[Path]:
    """A summary file of each of ``paths``, written by ``summarize``."""
    parts = []
    for i, path in enumerate(paths):
        part = tmp_path / f"part{i}.cbs"
        made = run(["summarize", path, "-o", part, "-q"])
        assert made.exit_code == 0, made.stderr
        parts.append(part)
    return parts


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
    parts = summaries_of(tmp_path, named, renamed)
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


RENAMED = "a re-run of that task under another name"


def other_documents() -> str:
    """The fixture's rows with every document's question reworded and no ``doc_hash``: another
    task's questions at the same doc_ids."""
    out = []
    for line in rerun_rows().splitlines():
        row = json.loads(line)
        row["doc"]["question"] += " (reworded)"
        del row["doc_hash"]
        out.append(json.dumps(row) + "\n")
    return "".join(out)


@pytest.mark.parametrize("order", ["named first", "renamed first"])
@pytest.mark.parametrize("all_runs", [False, True])
def test_a_rerun_renamed_to_no_task_is_refused(tmp_path, order, all_runs):
    """``b/rerun2.jsonl`` holds the task's documents at their doc_ids: under any name it is a
    re-run of the task, whose 40 questions would pass ``--min-rows 60`` as 80."""
    named = a_run(tmp_path / "org__modelA", rerun=False)
    renamed = renamed_rerun(tmp_path / "b", "rerun2.jsonl")
    inputs = (named, renamed) if order == "named first" else (renamed, named)
    extra = ["--all-runs"] if all_runs else []
    line = refused("calibrate", *inputs, "--min-rows", "60", *extra)
    later = renamed if order == "named first" else next(named.glob("samples_*"))
    assert f"{later}:1: the document of doc_id 0 was read before, at " in line, line
    assert RENAMED in line, line
    assert f"a run of task {TASK if order == 'named first' else 'rerun2'}: " in line, line


def test_two_renamed_reruns_are_refused(tmp_path):
    """Neither name says the task: two files holding one task's documents are its re-runs."""
    first = renamed_rerun(tmp_path / "a", "first.jsonl")
    (tmp_path / "b").mkdir()
    second = tmp_path / "b" / "second.jsonl"
    second.write_text(SAMPLES.read_text(encoding="utf-8"), encoding="utf-8")
    assert RENAMED in refused("calibrate", first, second, "--min-rows", "60", "--by", "task")


def test_a_renamed_rerun_is_refused_on_every_route(tmp_path):
    named = a_run(tmp_path / "org__modelA", rerun=False)
    renamed = renamed_rerun(tmp_path / "b", "rerun2.jsonl")
    parts = summaries_of(tmp_path, named, renamed)
    assert RENAMED in refused("merge", *parts, "-o", tmp_path / "m.cbs")
    assert not (tmp_path / "m.cbs").exists()
    assert RENAMED in refused("calibrate", *parts, "--min-rows", "60", "--all-runs")
    with pytest.raises(InputError, match=RENAMED):
        calibcli.read_predictions([str(named), str(renamed)])


def test_a_renamed_file_of_other_documents_is_another_task(tmp_path):
    """Rows at the same doc_ids holding other documents (compared by ``doc`` where the rows
    lack a ``doc_hash``) are another task's questions: both runs are read, 80 rows."""
    named = a_run(tmp_path / "org__modelA", rerun=False)
    (tmp_path / "b").mkdir()
    other = tmp_path / "b" / "rerun2.jsonl"
    other.write_text(other_documents(), encoding="utf-8")
    both = run(["calibrate", named, other, "--json", "--by", "task"])
    assert both.exit_code == 0, both.stderr
    report = json.loads(both.stdout)
    assert report["n"] == 2 * QUESTIONS, report["n"]


def test_another_task_of_the_stem_holding_the_documents_is_refused(tmp_path):
    """A renamed file whose stem is another task's name but which holds this task's documents
    at their doc_ids is a re-run under another name, not that task."""
    named = a_run(tmp_path / "org__modelA", rerun=False)
    other = renamed_rerun(tmp_path / "b", "other_task.jsonl")
    assert RENAMED in refused("calibrate", named, other, "--json", "--by", "task")


def test_a_renamed_rerun_holding_only_its_doc_hash_is_refused(tmp_path):
    """Rows stripped of their ``doc`` still hold lm-eval's ``doc_hash``: the same document as
    the run's rows, which hold both."""
    named = a_run(tmp_path / "org__modelA", rerun=False)
    (tmp_path / "b").mkdir()
    stripped = tmp_path / "b" / "rerun3.jsonl"
    rows = [json.loads(line) for line in rerun_rows().splitlines()]
    stripped.write_text("".join(json.dumps({**r, "doc": None}) + "\n" for r in rows))
    assert RENAMED in refused("calibrate", named, stripped, "--min-rows", "60")
