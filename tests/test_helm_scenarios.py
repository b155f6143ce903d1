"""The scenario a HELM run asked, as its run folder names it: HELM numbers every scenario's
instances from ``id0``, so two subjects' runs of one model hold the same ids and are no re-runs
of each other. A HELM row's id carries its run's scenario (the arguments that set only how the
instances were put to the model left out: a 0-shot and a 5-shot run of a subject ask the same
questions) and its model, as an inspect-ai sample's carries its log's task; compare still
pairs two models' runs of one scenario by instance. ``--by task`` groups by the scenario. The
runs are written in HELM's layout (tests/helm_layout.py), the figures computed with numpy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from harness import run
from helm_layout import SUITE, choice_rows, choice_run, ece

import calibcli

ANATOMY = "mmlu:subject=anatomy,method=multiple_choice_joint"
ASTRONOMY = "mmlu:subject=astronomy,method=multiple_choice_joint"


@pytest.fixture
def subjects(tmp_path):
    """gpt2's runs of two subjects, 100 instances each (id0...id99 in both)."""
    first, second = choice_rows(100, 3), choice_rows(100, 4, shift=0.2)
    files = [
        choice_run(tmp_path, f"{ANATOMY},model=openai_gpt2", *first, model="openai/gpt2"),
        choice_run(tmp_path, f"{ASTRONOMY},model=openai_gpt2", *second, model="openai/gpt2"),
    ]
    return files, first, second


def report(args):
    result = run([*map(str, args), "--json"])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout), result


@pytest.mark.parametrize("all_runs", [[], ["--all-runs"]])
def test_two_subjects_are_two_sets_of_questions(subjects, all_runs):
    files, first, second = subjects
    pooled = [np.concatenate([a, b]) for a, b in zip(first, second, strict=True)]
    body, result = report(["calibrate", *files, *all_runs, "--min-rows", 150])
    assert result.exit_code == 0, result.stderr
    assert body["n"] == 200
    assert body["ece"] == pytest.approx(ece(*pooled), abs=1e-9)
    assert not any("re-runs" in w or "several times" in w for w in body["warnings"])


def test_by_task_groups_by_scenario(subjects):
    files, first, second = subjects
    body, result = report(["calibrate", *files, "--by", "task"])
    assert result.exit_code == 0, result.stderr
    groups = body["groups"]
    assert {name: g["n"] for name, g in groups.items()} == {ANATOMY: 100, ASTRONOMY: 100}
    assert groups[ANATOMY]["ece"] == pytest.approx(ece(*first), abs=1e-9)
    assert groups[ASTRONOMY]["ece"] == pytest.approx(ece(*second), abs=1e-9)


def test_by_task_of_a_file_copied_out_is_refused(subjects, tmp_path):
    files, _, _ = subjects
    alone = tmp_path / "out.json"
    shutil.copy(files[0], alone)
    result = run(["calibrate", alone, "--by", "task"])
    assert result.exit_code == 2
    assert "the HELM file's run folder is not named as HELM names a run" in result.stderr


def test_the_python_api_reads_both_subjects(subjects):
    files, first, second = subjects
    rows = calibcli.read_predictions(files)
    assert len(rows.confidence) == 200
    np.testing.assert_array_equal(rows.confidence, np.concatenate([first[0], second[0]]))
    rows = calibcli.read_predictions(files, all_runs=True)
    assert len(rows.confidence) == 200
    assert not any("several times" in w for w in rows.warnings)


def test_summaries_of_two_subjects_merge(subjects, tmp_path):
    files, first, second = subjects
    parts = []
    for k, f in enumerate(files):
        parts.append(tmp_path / f"s{k}.cbs")
        assert run(["summarize", f, "-o", parts[-1], "-q"]).exit_code == 0
    result = run(["merge", *parts, "-o", tmp_path / "all.cbs", "-q"])
    assert result.exit_code == 0, result.stderr
    body, result = report(["calibrate", *parts, "--min-rows", 150])
    assert result.exit_code == 0, result.stderr
    pooled = [np.concatenate([a, b]) for a, b in zip(first, second, strict=True)]
    assert body["n"] == 200
    assert body["ece"] == pytest.approx(ece(*pooled), abs=1e-9)


def test_unpaired_sides_of_two_subjects_count_each_question(subjects, tmp_path):
    files, _, _ = subjects
    other = tmp_path / "other"
    for name in (ANATOMY, ASTRONOMY):
        choice_run(other, f"{name},model=eleutherai_pythia-1b", *choice_rows(100, 5), "e/p")
    base = str(Path(files[0]).parents[1] / "*" / "per_instance_stats.json")
    new = str(Path(other, *SUITE, "*", "per_instance_stats.json"))
    args = ["compare", base, new, "--unpaired", "--all-runs", "--min-rows", 150, "--json"]
    result = run(args)
    assert result.exit_code == 0, result.stderr
    assert "several times" not in result.stderr


def test_one_subject_prompted_twice_is_a_re_run(tmp_path):
    files = [
        choice_run(tmp_path, f"{ANATOMY},model=openai_gpt2", *choice_rows(50, 6), "openai/gpt2"),
        choice_run(
            tmp_path,
            f"{ANATOMY},max_train_instances=0,model=openai_gpt2",
            *choice_rows(50, 16),
            model="openai/gpt2",
        ),
    ]
    result = run(["calibrate", files[1], files[0]])
    assert result.exit_code == 2
    assert "was read before" in result.stderr
    body, result = report(["calibrate", *files, "--all-runs"])
    assert body["n"] == 100
    assert any("re-runs are pooled" in w and "2 rows a question" in w for w in body["warnings"])


def test_compare_pairs_two_models_runs_of_one_scenario(tmp_path):
    base = choice_run(tmp_path, f"{ANATOMY},model=openai_gpt2", *choice_rows(80, 7), "openai/gpt2")
    new = choice_run(
        tmp_path, f"{ANATOMY},model=eleutherai_pythia-1b", *choice_rows(80, 8), "e/pythia"
    )
    body, result = report(["compare", base, new])
    assert result.exit_code == 0, result.stderr
    assert body["matched"] == 80


def test_a_renamed_run_folder_takes_its_scenario_from_run_spec_json(subjects, tmp_path):
    files, _, _ = subjects
    moved = []
    for k, f in enumerate(files):
        folder = tmp_path / "renamed" / f"run{k}"
        shutil.copytree(Path(f).parent, folder)
        moved.append(folder / "per_instance_stats.json")
    body, result = report(["calibrate", *moved, "--by", "task"])
    assert result.exit_code == 0, result.stderr
    assert {name: g["n"] for name, g in body["groups"].items()} == {ANATOMY: 100, ASTRONOMY: 100}
