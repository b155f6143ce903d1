"""lm-eval files named the pre-v0.4.3 way (``<model_args>_<task>.jsonl``) and folders given as
inputs: the task and model come out of the name, two models on one task match in compare, and a
folder reads the run files inside it in name order.

Expected figures are computed here from the raw rows (softmax of the logged loglikelihoods, the
harness's ``acc``), never from calibcli's output."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from harness import run

from calibcli.formats import model_from_filename, task_from_filename

HERE = Path(__file__).resolve().parent
OLD = HERE / "fixtures" / "lm_eval_old_names"
LM_EVAL = HERE / "fixtures" / "lm_eval"
REALWORLD = HERE.parents[1] / "shared" / "realworld"
needs_realworld = pytest.mark.skipif(not REALWORLD.is_dir(), reason="no ../shared/realworld")
MODEL_A = OLD / "pretrained__org__model-a,dtype__float16_toy_qa.jsonl"
MODEL_B = OLD / "pretrained=org__model-b_toy_qa.jsonl"


@pytest.mark.parametrize(
    ("name", "task", "model"),
    [
        ("samples_arc_easy_2024-06-01T12-30-05.123456.jsonl", "arc_easy", None),
        (
            "out/EleutherAI__pythia-160m/samples_arc_easy_2024-06-01T12-30-05.jsonl",
            "arc_easy",
            "EleutherAI/pythia-160m",
        ),
        ("out/run1/samples_arc_easy_2024-06-01T12-30-05.jsonl", "arc_easy", None),
        (
            "pretrained=EleutherAI__pythia-2.8b_winogrande.jsonl",
            "winogrande",
            "EleutherAI/pythia-2.8b",
        ),
        (
            "pretrained=EleutherAI__pythia-2.8b_trivia_qa_unfiltered.nocontext.jsonl",
            "trivia_qa_unfiltered.nocontext",
            "EleutherAI/pythia-2.8b",
        ),
        (
            "pretrained__EleutherAI__pythia-160m,dtype__float16_arc_easy.jsonl",
            "arc_easy",
            "EleutherAI/pythia-160m",
        ),
        (
            "pretrained__EleutherAI__pythia-160m,trust_remote_code__True_mmlu_high_school_physics"
            ".jsonl.gz",
            "mmlu_high_school_physics",
            "EleutherAI/pythia-160m",
        ),
        ("model=gpt-4o_arc_challenge.json", "arc_challenge", "gpt-4o"),
        ("_boolq-seq2seq.jsonl", "boolq-seq2seq", None),
        ("samples_arc.json", "arc", None),
        ("my_task__v2_preds.jsonl", "my_task__v2_preds", None),
    ],
)
def test_task_and_model_from_every_naming(name, task, model):
    assert task_from_filename(name) == task
    assert model_from_filename(name) == model


def max_softmax(lls):
    top = max(lls)
    return 1 / math.fsum(math.exp(x - top) for x in lls)


def rows_of(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        return json.loads(text)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def report(args, code=0):
    result = run([*args, "--json"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result


def test_by_task_and_by_model_from_the_older_names():
    body, _ = report(["calibrate", str(MODEL_A), str(MODEL_B), "--by", "task"])
    assert list(body["groups"]) == ["toy_qa"]
    rows = rows_of(MODEL_A) + rows_of(MODEL_B)
    assert body["n"] == 8
    assert body["accuracy"] == sum(r["acc"] for r in rows) / 8
    confidence = [max_softmax([r[0] for r in row["filtered_resps"]]) for row in rows]
    assert body["mean_confidence"] == pytest.approx(math.fsum(confidence) / 8, rel=1e-12)
    by_model, _ = report(["calibrate", str(MODEL_A), str(MODEL_B), "--by", "model"])
    assert list(by_model["groups"]) == ["org/model-a", "org/model-b"]
    assert (
        by_model["groups"]["org/model-a"]["accuracy"] == sum(r["acc"] for r in rows_of(MODEL_A)) / 4
    )


def test_compare_matches_two_models_on_one_task():
    body, _ = report(["compare", str(MODEL_A), str(MODEL_B), "-q"])
    assert body["id_field"] == "task + doc_id"
    assert (body["matched"], body["unmatched_base"], body["unmatched_new"]) == (4, 0, 0)


def test_a_folder_reads_its_run_files_in_name_order(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    for path in LM_EVAL.glob("*.json*"):  # samples files and the results file
        shutil.copy(path, folder / path.name)
    (folder / "notes.txt").write_text("not an input\n")
    (folder / ".hidden.jsonl").write_text("not read\n")
    files = sorted(str(p) for p in folder.glob("samples_toy_mc_*.jsonl"))
    from_files, _ = report(["calibrate", *files, "-q"])
    from_folder, _ = report(["calibrate", str(folder)])
    for key in ("n", "accuracy", "mean_confidence", "ece", "brier"):
        assert from_folder[key] == from_files[key]
    skipped = [w for w in from_folder["warnings"] if w.endswith("; skipped")]
    # the results file (aggregate figures) and the rolling task are skipped, as when named
    assert len(skipped) == 2 and any("results file" in w for w in skipped)
    assert list(from_folder["per_file"]) == files


def test_a_folder_without_inputs_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing\n")
    result = run(["calibrate", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {tmp_path}: a folder with no input files")
    assert result.stderr.count("\n") == 1


def test_compare_reads_folders(tmp_path):
    base, new = tmp_path / "a", tmp_path / "b"
    base.mkdir()
    new.mkdir()
    shutil.copy(MODEL_A, base / MODEL_A.name)
    shutil.copy(MODEL_B, new / MODEL_B.name)
    body, _ = report(["compare", str(base), str(new), "-q"])
    assert body["matched"] == 4


@needs_realworld
def test_realworld_2023_folder_given_as_a_folder():
    folder = REALWORLD / "lmeval-2023-bigrefactor-output"
    body, _ = report(["calibrate", str(folder), "--by", "task"])
    mc: dict[str, list[dict]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        rows = rows_of(path)
        if rows and isinstance(rows[0]["filtered_resps"][0], list):
            mc.setdefault(task_from_filename(path), []).extend(rows)
    # the unnamed --limit run and pythia-2.8b both ran winogrande: one group, both models' rows
    assert sorted(body["groups"]) == sorted(mc) and "winogrande" in mc
    for task, rows in mc.items():
        group = body["groups"][task]
        assert group["n"] == len(rows)
        assert group["accuracy"] == pytest.approx(sum(r["acc"] for r in rows) / len(rows))
    # the unnamed run's files name no model
    result = run(["calibrate", str(folder), "--by", "model"])
    assert result.exit_code == 2
    assert "/_mathqa.jsonl:1: the file's run names no model" in result.stderr


@needs_realworld
def test_realworld_run_folder_given_as_a_folder():
    """Five runs of one task in the folder: the folder reads the newest, as its files would."""
    folder = REALWORLD / "lmeval-pr1974-llama3-8b-bias"
    newest = sorted(folder.glob("samples_*.json"))[-1]
    results = json.loads(
        (folder / newest.name.replace("samples_bias_classification_", "results_")).read_text()
    )
    body, _ = report(["calibrate", str(folder)])
    assert body["n"] == len(rows_of(newest))
    assert body["accuracy"] == pytest.approx(
        results["results"]["bias_classification"]["acc,none"], abs=1e-12
    )
    assert any(w.startswith("re-runs of 1 task(s)") for w in body["warnings"])
    results_skipped = [w for w in body["warnings"] if "lm-eval results file" in w]
    assert len(results_skipped) == len(list(folder.glob("results_*.json")))


def test_compare_reads_run_folders_as_calibrate_does(tmp_path):
    """A run folder holds a results file, tasks of other kinds and re-runs: compare leaves them
    out as calibrate does."""
    base, new = tmp_path / "base", tmp_path / "new"
    for folder in (base, new):
        folder.mkdir()
        for path in LM_EVAL.glob("*.json*"):
            shutil.copy(path, folder / path.name)
    science = next(LM_EVAL.glob("samples_toy_mc_science_*.jsonl"))
    shutil.copy(science, new / "samples_toy_mc_science_2020-01-01T00-00-00.jsonl")  # older run
    body, _ = report(["compare", str(base), str(new), "-q"])
    n = sum(len(rows_of(p)) for p in LM_EVAL.glob("samples_toy_mc_*.jsonl"))
    assert (body["matched"], body["unmatched_base"], body["unmatched_new"]) == (n, 0, 0)


def test_a_quoted_pattern_stands_for_the_files_it_matches(tmp_path):
    """One argument per side takes several files as a pattern calibcli expands (in name order,
    as a folder's files): compare matches the sides' tasks as with folders."""
    base, new = tmp_path / "base", tmp_path / "new"
    for folder in (base, new):
        folder.mkdir()
        for path in LM_EVAL.glob("samples_toy_mc_*.jsonl"):
            shutil.copy(path, folder / path.name)
    pattern = "samples_toy_mc_*.jsonl"
    body, _ = report(["compare", str(base / pattern), str(new / pattern), "--by", "task", "-q"])
    n = sum(len(rows_of(p)) for p in LM_EVAL.glob("samples_toy_mc_*.jsonl"))
    assert (body["matched"], body["unmatched_base"], body["unmatched_new"]) == (n, 0, 0)
    assert sorted(body["groups"]) == ["toy_mc_science", "toy_mc_trivia"]
    same, _ = report(["calibrate", str(base / pattern), "-q"])
    folder, _ = report(["calibrate", str(base), "-q"])
    assert same == folder


def test_a_pattern_matching_nothing_is_refused(tmp_path):
    result = run(["calibrate", str(tmp_path / "samples_*.jsonl")])
    assert result.exit_code == 2
    assert result.stderr == f"Error: {tmp_path}/samples_*.jsonl: no file matches this pattern\n"


def test_a_file_named_like_a_pattern_is_read_as_itself(tmp_path):
    path = tmp_path / "odd[1].jsonl"
    path.write_text('{"confidence": 0.75, "correct": true}\n', encoding="utf-8")
    body, _ = report(["calibrate", str(path), "-q"])
    assert body["n"] == 1
