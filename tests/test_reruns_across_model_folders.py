"""Re-runs of an lm-eval task are found whatever folders hold them: a run whose path names no
model (a folder not named after one) may be any model's, so its rows sharing a task and doc_id
with another run's are re-runs, refused without --all-runs and, keyed apart, refused with it
too. Two folders named after models are two models, even where their results files give one
``model_name`` (which leaves out a checkpoint's revision): their rows share doc_ids, pooled as
several models' (every gate failing closed), each model's group gated on its own rows.

The fixture task has 40 documents (doc_id 0..39, counted by hand from the file); a re-run
holds the same 40, its confidences scaled, so two runs hold 80 rows of 40 questions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import refused, run

import calibcli
from calibcli.errors import InputError

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP, LATER = "2026-11-29T18-50-52.260809", "2026-11-30T10-00-00.000000"
TASK = "toy_mc_trivia"
SAMPLES = LM_EVAL / f"samples_{TASK}_{STAMP}.jsonl"
QUESTIONS = 40
TWICE = (
    "re-runs of a task, or the same rows in two files, would count twice (pass --all-runs to "
    "pool them on purpose)"
)


def rerun_rows() -> str:
    """The fixture's rows with every loglikelihood scaled by 0.8: another run of the task."""
    out = []
    for line in SAMPLES.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        row["resps"] = [[[repr(float(r[0][0]) * 0.8), r[0][1]]] for r in row["resps"]]
        row["filtered_resps"] = [[repr(float(r[0]) * 0.8), r[1]] for r in row["filtered_resps"]]
        out.append(json.dumps(row) + "\n")
    return "".join(out)


def results_naming(model: str | None, stamp: str) -> str:
    """The fixture run's results file, of the run at ``stamp``, its model_name ``model``."""
    results = json.loads((LM_EVAL / f"results_{STAMP}.json").read_text(encoding="utf-8"))
    later = 86400.0 if stamp == LATER else 0.0  # a re-run a day later: other bytes
    return json.dumps({**results, "model_name": model, "date": float(results["date"]) + later})


def a_run(folder: Path, *, rerun: bool, model: str | None = None) -> Path:
    """A run of the task in ``folder``, beside a results file naming ``model`` when given."""
    folder.mkdir(parents=True)
    stamp = LATER if rerun else STAMP
    path = folder / f"samples_{TASK}_{stamp}.jsonl"
    if rerun:
        path.write_text(rerun_rows(), encoding="utf-8")
    else:
        shutil.copy(SAMPLES, path)
    if model is not None:
        (folder / f"results_{stamp}.json").write_text(results_naming(model, stamp))
    return folder


def test_the_fixture_holds_forty_documents():
    rows = [json.loads(line) for line in SAMPLES.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["doc_id"] for r in rows) == list(range(QUESTIONS))


@pytest.mark.parametrize("order", ["named first", "unnamed first"])
def test_a_re_run_in_a_folder_naming_no_model_is_refused(tmp_path, order):
    named = a_run(tmp_path / "org__modelA", rerun=False)
    plain = a_run(tmp_path / "b", rerun=True)
    first, second = (named, plain) if order == "named first" else (plain, named)
    later = next(second.glob("samples_*"))
    line = refused("calibrate", first, second, "--min-rows", "60", "--by", "task", "--gate-each")
    assert line.startswith(f"Error: {later}:1: the row of id {TASK}/0 was read before, at ")
    assert line.endswith(TWICE)


def test_a_run_naming_no_model_beside_a_results_file_naming_one_is_refused(tmp_path):
    named = a_run(tmp_path / "run", rerun=False, model="gpt2")
    plain = a_run(tmp_path / "copy", rerun=True)
    assert refused("calibrate", named, plain, "--min-rows", "60").endswith(TWICE)


def checkpoint(folder: Path, *, rerun: bool, revision: str) -> Path:
    """A run of ``org/modelA`` at ``revision`` in its own folder: lm-eval's results file names
    the model without its revision, in ``model_name``, and the revision in the model args."""
    run_folder = a_run(folder, rerun=rerun, model="org/modelA")
    stamp = LATER if rerun else STAMP
    results = run_folder / f"results_{stamp}.json"
    body = json.loads(results.read_text())
    body["config"] = {"model_args": f"pretrained=org/modelA,revision={revision}"}
    results.write_text(json.dumps(body))
    return run_folder


def test_two_folders_whose_results_files_name_one_model_are_two_models(tmp_path):
    """Two checkpoints of one model, each in its folder: ``model_name`` leaves the revision
    out, so the folders tell the models; pooled, every gate fails closed, and each model's
    group holds its own 40 rows, with or without --all-runs."""
    first = checkpoint(tmp_path / "org__modelA-step1", rerun=False, revision="step1")
    second = checkpoint(tmp_path / "org__modelA-step2", rerun=True, revision="step2")
    for runs in ([], ["--all-runs"]):
        pooled = run(["calibrate", first, second, "--max-ece", "0.9", *runs, "--json"])
        assert pooled.exit_code == 1, pooled.stderr
        report = json.loads(pooled.stdout)
        assert report["n"] == 2 * QUESTIONS
        assert [c["passed"] for c in report["gate"]["checks"]] == [False]
        assert "several models'" in report["gate"]["checks"][0]["reason"]
        args = ["--by", "model", "--gate-each", "--max-ece", "0.9", "--json", *runs]
        each = json.loads(run(["calibrate", first, second, *args]).stdout)
        assert sorted(each["groups"]) == ["org/modelA-step1", "org/modelA-step2"]
        assert {g["n"] for g in each["groups"].values()} == {QUESTIONS}


def test_with_all_runs_a_run_naming_no_model_is_refused_as_unmatchable(tmp_path):
    """Pooled, the two runs' rows are keyed apart (one path names the model, the other none):
    each of the 40 questions would count twice, and --min-rows 60 passed on 80 "questions"."""
    named = a_run(tmp_path / "org__modelA", rerun=False)
    plain = a_run(tmp_path / "b", rerun=True)
    for command in (["calibrate", "--min-rows", "60"], ["summarize", "-o", tmp_path / "s.cbs"]):
        line = refused(*command, named, plain, "--all-runs")
        assert "cannot pool their rows as re-runs of one question" in line, line
        assert line.startswith(f"Error: {plain}") and ":1: the row of id toy_mc_trivia/0 " in line
    # summarized apart, they meet when the summaries are read together
    parts = []
    for i, path in enumerate((named, plain)):
        out = tmp_path / f"p{i}.cbs"
        made = run(["summarize", path, "--all-runs", "-o", out, "-q"])
        assert made.exit_code == 0, made.stderr
        parts.append(out)
    line = refused("calibrate", *parts, "--all-runs", "--min-rows", "60")
    assert "cannot pool their rows as re-runs of one question" in line, line


def test_two_models_runs_still_share_doc_ids(tmp_path):
    first = a_run(tmp_path / "org__modelA", rerun=False, model="org/modelA")
    second = a_run(tmp_path / "org__modelB", rerun=True, model="org/modelB")
    pooled = run(["calibrate", first, second, "--min-rows", "60"])
    assert pooled.exit_code == 1, pooled.stderr  # several models' rows: every gate fails closed
    assert "rows of 2 models are pooled" in pooled.stderr
    each = run(["calibrate", first, second, "--by", "model", "--gate-each", "--min-rows", "40"])
    assert each.exit_code == 0, each.stderr


def test_the_api_refuses_them_too(tmp_path):
    named = a_run(tmp_path / "org__modelA", rerun=False)
    plain = a_run(tmp_path / "b", rerun=True)
    copy = a_run(tmp_path / "copy", rerun=True, model="org/modelA")  # its results file beside it
    (named / f"results_{STAMP}.json").write_text(results_naming("org/modelA", STAMP))
    for other in (plain, copy):
        # the API says a row read twice as it always has, naming the row read first
        with pytest.raises(InputError, match=r"was read before|duplicate id"):
            calibcli.read_predictions([str(named), str(other)])


def test_summaries_merged_or_read_together_refuse_them(tmp_path):
    named = a_run(tmp_path / "org__modelA", rerun=False)
    plain = a_run(tmp_path / "b", rerun=True)
    parts = []
    for i, folder in enumerate((named, plain)):
        part = tmp_path / f"part{i}.json"
        assert run(["summarize", folder, "-o", part]).exit_code == 0
        parts.append(part)
    assert refused("merge", *parts, "-o", tmp_path / "merged.json").endswith(TWICE)
    assert not (tmp_path / "merged.json").exists()
    assert refused("calibrate", *parts, "--min-rows", "60").endswith(TWICE)
    assert refused("calibrate", parts[0], plain, "--min-rows", "60").endswith(TWICE)


def test_an_engine_refuses_them(tmp_path):
    from calibcli.engines import file_jobs

    named = a_run(tmp_path / "org__modelA", rerun=False)
    plain = a_run(tmp_path / "b", rerun=True)
    files = [str(p) for p in (*named.glob("samples_*"), *plain.glob("samples_*"))]
    with pytest.raises(InputError, match="was read before"):
        file_jobs(files, "auto", None)


def test_summaries_whose_files_moved_away_are_refused(tmp_path):
    """The check reads the runs' doc_ids from their files: summaries read where those files
    are gone (a later CI job holding only the artifacts) cannot be told apart, and are refused
    rather than counted as 80 questions."""
    named = a_run(tmp_path / "org__modelA", rerun=False)
    plain = a_run(tmp_path / "b", rerun=True)
    parts = []
    for i, folder in enumerate((named, plain)):
        part = tmp_path / f"part{i}.cbs"
        assert run(["summarize", folder, "-o", part, "-q"]).exit_code == 0
        parts.append(part)
    shutil.rmtree(plain)
    for args in (
        ["calibrate", *parts, "--min-rows", "60"],
        ["merge", *parts, "-o", tmp_path / "m.cbs"],
    ):
        line = refused(*args)
        assert "cannot be read (No such file or directory) to tell its rows from those of" in line
    assert not (tmp_path / "m.cbs").exists()
