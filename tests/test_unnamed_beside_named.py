"""The ids of inspect-ai, HELM and OpenAI evals rows carry the model their run names, so that two
models' runs numbering their rows alike are no re-runs of each other. A run that names no model
(a HELM ``per_instance_stats.json`` copied out of its run folder, an OpenAI evals log whose spec
names no completion functions) keys its rows without it: beside a run naming its model, a
re-run of that run would count its questions twice. The two are refused together, with and
without ``--all-runs``, on every route; alone, or beside other runs naming none, each is read as
before. A spec written before ``oaieval`` took completion functions names its ``model_name``."""

from __future__ import annotations

import json
import shutil

import pytest
from harness import run, write_jsonl
from helm_layout import choice_rows, choice_run
from test_evals_models import evals_log

import calibcli
from calibcli.errors import InputError

GPT2 = "mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2"
UNNAMED = "its run names no model"


def refused_as_unnamed(args, unnamed) -> None:
    result = run([*map(str, args)])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"Error: {unnamed}: {UNNAMED} ("), result.stderr
    assert "a re-run of that run would count each of its questions twice" in result.stderr


@pytest.fixture
def helm_runs(tmp_path):
    """A gpt2 run in its run folder, and a re-run of its 40 instances copied out of its own."""
    named = choice_run(tmp_path, GPT2, *choice_rows(40, 1), model="openai/gpt2")
    rerun = choice_run(tmp_path / "other", GPT2, *choice_rows(40, 2), model="openai/gpt2")
    (tmp_path / "copy").mkdir()
    copied = tmp_path / "copy" / "per_instance_stats.json"
    shutil.copy(rerun, copied)
    return named, copied


@pytest.mark.parametrize("all_runs", [[], ["--all-runs"]])
def test_a_helm_copy_beside_a_run_in_its_folder_is_refused(helm_runs, all_runs):
    named, copied = helm_runs
    refused_as_unnamed(["calibrate", named, copied, "--min-rows", 60, *all_runs], copied)
    refused_as_unnamed(["calibrate", copied, named, "--min-rows", 60, *all_runs], copied)


def test_a_helm_copy_is_refused_through_summaries_and_the_api(helm_runs, tmp_path):
    named, copied = helm_runs
    parts = []
    for i, path in enumerate((named, copied)):
        part = tmp_path / f"p{i}.cbs"
        made = run(["summarize", str(path), "-o", str(part), "-q"])
        assert made.exit_code == 0, made.stderr
        parts.append(part)
    result = run(["calibrate", *map(str, parts), "--min-rows", "60"])
    assert result.exit_code == 2 and UNNAMED in result.stderr, result.stderr
    with pytest.raises(InputError, match=UNNAMED):
        calibcli.read_predictions([str(named), str(copied)])


def test_a_helm_copy_alone_or_with_an_id_field_is_read(helm_runs):
    named, copied = helm_runs
    alone = run(["calibrate", str(copied), "--json", "-q"])
    assert alone.exit_code == 0 and json.loads(alone.stdout)["n"] == 40
    # --id-field names the rows' ids: the two runs' instances are then one id each, refused
    both = run(["calibrate", str(named), str(copied), "--id-field", "instance_id"])
    assert both.exit_code == 2 and "was read before" in both.stderr, both.stderr


@pytest.mark.parametrize("all_runs", [[], ["--all-runs"]])
def test_an_evals_log_naming_no_model_beside_one_naming_it_is_refused(tmp_path, all_runs):
    named = write_jsonl(tmp_path / "a.jsonl", evals_log("gpt-4", "RUNA", 40, 1))
    unnamed = write_jsonl(tmp_path / "b.jsonl", evals_log("x", "RUNB", 40, 2, fns=[]))
    refused_as_unnamed(["calibrate", named, unnamed, "--min-rows", 60, *all_runs], unnamed)


def test_an_older_spec_names_its_model_name(tmp_path):
    """``oaieval`` specs before completion functions named ``model_name``: such a log of gpt-4
    beside a log of gpt-4 is a re-run of it, refused without --all-runs."""
    events = evals_log("x", "RUNB", 40, 2)
    spec = events[0]["spec"]
    del spec["completion_fns"]
    spec["model_name"], spec["model_names"] = "gpt-4", {"completions": ["gpt-4"]}
    old = write_jsonl(tmp_path / "old.jsonl", events)
    report = json.loads(run(["calibrate", str(old), "--by", "model", "--json", "-q"]).stdout)
    assert list(report["groups"]) == ["gpt-4"]
    named = write_jsonl(tmp_path / "a.jsonl", evals_log("gpt-4", "RUNA", 40, 1))
    result = run(["calibrate", str(named), str(old), "--min-rows", "60"])
    assert result.exit_code == 2 and "was read before" in result.stderr, result.stderr
