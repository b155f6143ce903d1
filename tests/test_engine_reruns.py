"""The engines' files runs choose their files as the command does: of an lm-eval task's re-runs
in one folder only the newest is read, with the command's warning first among the summary's;
``all_runs`` pools them; a file given twice, or two files of the same bytes, is the command's
error. Run through the tasks an engine schedules (file_jobs, file_task, merge_all, finish), so
without Dask or Spark; tests/test_dask.py and tests/test_spark.py run it on the engines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from engine_checks import OLDER_RUN, TASK, rerun_pair
from harness import run

from calibcli.engines import file_jobs, file_task, finish, merge_all
from calibcli.errors import InputError


def engine_report(paths: list[Path], **options) -> dict:
    jobs = file_jobs([str(p) for p in paths], "auto", None, **options)
    judged = {"all_runs": bool(options.get("all_runs", False)), "said": jobs[0].said}
    return finish(merge_all([file_task(job) for job in jobs]), **judged).report()


def cli_report(paths: list[Path], *extra: str) -> dict:
    result = run(["calibrate", *map(str, paths), *extra, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_newest_run_is_read_as_the_command_reads_it(tmp_path):
    older, newer = rerun_pair(tmp_path)
    # the older run scores otherwise: reading it, or pooling both, would change the accuracy
    assert cli_report([older])["accuracy"] != cli_report([newer])["accuracy"]
    body = engine_report([older, newer])
    command = cli_report([older, newer])
    assert body == command
    assert body["n"] == cli_report([newer])["n"]
    assert body["accuracy"] == cli_report([newer])["accuracy"]
    warning = body["warnings"][0]
    assert warning.startswith(f"re-runs of 1 task(s) ('{TASK}') in one folder")
    assert f"leaving out 1 older file(s): samples_{TASK}_{OLDER_RUN}.jsonl" in warning


def test_all_runs_pools_them_as_the_command_does(tmp_path):
    older, newer = rerun_pair(tmp_path)
    body = engine_report([older, newer], all_runs=True)
    assert body == cli_report([older, newer], "--all-runs")
    assert body["n"] == 2 * cli_report([newer])["n"]
    assert not [w for w in body["warnings"] if w.startswith("re-runs of")]


def test_a_file_given_twice_is_the_command_s_error(tmp_path):
    _, newer = rerun_pair(tmp_path)
    other = tmp_path / "link.jsonl"
    other.symlink_to(newer)
    with pytest.raises(InputError) as caught:
        file_jobs([str(newer), str(other)], "auto", None)
    assert caught.value.path == str(other)
    assert "is given twice (also as" in caught.value.detail
    copy = tmp_path / "copy.jsonl"
    shutil.copy(newer, copy)
    with pytest.raises(InputError, match="holds the same bytes as"):
        file_jobs([str(newer), str(copy)], "auto", None)
    # all_runs pools them on purpose
    assert len(file_jobs([str(newer), str(copy)], "auto", None, all_runs=True)) == 2


def test_files_of_one_run_say_nothing(tmp_path):
    _, newer = rerun_pair(tmp_path)
    jobs = file_jobs([str(newer)], "auto", 2000)
    assert len(jobs) > 1 and all(job.said == () for job in jobs)
