"""One file reached by two paths is read once or refused, never pooled with itself: a run
folder reached again through a symbolic link (``out/latest -> org__model``), or a hard link, is
refused with ``--all-runs`` too (a file is no re-run of itself), on the command, the Python API
and the engines' routes, and the message does not point at --all-runs. And an lm-eval run
written with ``--output_path out/res.json`` (results in ``out/res_<stamp>.json``, beside flat
``samples_<task>_<stamp>.jsonl`` files) is read with its results file: its model, its --limit.

Question counts are those of the fixture, counted by hand: toy_mc_trivia holds 40 documents,
toy_mc_science 48 (88 in all)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
from harness import refused, run

import calibcli
from calibcli.engines import file_jobs
from calibcli.errors import InputError
from calibcli.io.run_results import results_file

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
FIXTURE_STAMP = "2026-11-29T18-50-52.260809"
TASKS = {"toy_mc_trivia": 40, "toy_mc_science": 48}  # documents of each task, by hand
QUESTIONS = 88
FIRST = "2026-12-01T10-00-00.000001"
SECOND = "2026-12-01T11-00-00.000001"
TWICE = "one file reached by two paths is not a re-run"


def write_run(
    folder: Path, stamp: str, model: str, results: str | None = None, limit: int | None = None
) -> list[Path]:
    """An lm-eval run of the two multiple-choice tasks written into ``folder``: its samples
    files (the fixture's rows, the first ``limit`` of each task under ``--limit``) and its
    results file, named ``results`` (``results_<stamp>.json`` unless given), naming ``model``."""
    folder.mkdir(parents=True, exist_ok=True)
    document = json.loads((FIXTURES / f"results_{FIXTURE_STAMP}.json").read_text())
    document["model_name"] = model
    document["config"]["model_args"] = f"pretrained={model}"
    document["config"]["limit"] = limit
    document["n-samples"] = {
        task: {"original": n, "effective": n if limit is None else min(n, limit)}
        for task, n in TASKS.items()
    }
    written = []
    for task in TASKS:
        rows = (FIXTURES / f"samples_{task}_{FIXTURE_STAMP}.jsonl").read_text().splitlines()
        path = folder / f"samples_{task}_{stamp}.jsonl"
        path.write_text("\n".join(rows[:limit]) + "\n")
        written.append(path)
    name = results or f"results_{stamp}.json"
    (folder / name).write_text(json.dumps(document, indent=2))
    return written


def linked_run(tmp_path: Path) -> Path:
    """``out/org__bad`` holding one run, and ``out/latest`` a symbolic link to it."""
    out = tmp_path / "out"
    write_run(out / "org__bad", SECOND, "org/bad")
    (out / "latest").symlink_to("org__bad")
    return out


# --- one file reached by two paths ---------------------------------------------------------


@pytest.mark.parametrize(
    "extra", [["--min-rows", "150"], ["--by", "task", "--gate-each", "--min-rows", "50"]]
)
def test_a_symlinked_run_folder_is_not_pooled_with_itself(tmp_path, extra):
    out = linked_run(tmp_path)
    pattern = f"{out}/**/samples_*.jsonl"
    # the run read once holds 88 questions (40 and 48): fewer than the gates ask
    once = run(["calibrate", out / "org__bad", *extra, "--json", "-q"])
    assert once.exit_code == 1, once.stderr
    assert json.loads(once.stdout)["n"] == QUESTIONS
    line = refused("calibrate", pattern, "--all-runs", *extra, "-q")
    assert "is given twice (also as " in line and TWICE in line
    assert "--all-runs" not in line
    assert f"{out}/latest/" in line and f"{out}/org__bad/" in line


def test_without_all_runs_the_message_does_not_suggest_pooling(tmp_path):
    out = linked_run(tmp_path)
    line = refused("calibrate", f"{out}/**/samples_*.jsonl", "-q")
    assert "is given twice (also as " in line and TWICE in line
    assert "--all-runs" not in line


def test_a_link_to_a_folder_of_re_runs_is_refused_not_taken_for_an_older_run(tmp_path):
    out = linked_run(tmp_path)
    write_run(out / "org__bad", FIRST, "org/bad")  # an older run of both tasks
    for pooled in ([], ["--all-runs"]):
        line = refused("calibrate", f"{out}/**/samples_*.jsonl", *pooled, "-q")
        assert TWICE in line and "--all-runs" not in line


def test_a_hard_link_is_refused_with_all_runs(tmp_path):
    folder = tmp_path / "org__bad"
    science = write_run(folder, SECOND, "org/bad")[1]
    # named as an older run of the task: pooled with it, each question would count twice
    link = folder / f"samples_toy_mc_science_{FIRST}.jsonl"
    os.link(science, link)
    line = refused("calibrate", science, link, "--all-runs", "-q")
    said = f"{TWICE}, and its rows would count twice (give one of the paths)"
    assert line == f"Error: {link}: is given twice (also as {science}): {said}"


def test_the_python_api_refuses_a_file_reached_twice(tmp_path):
    out = linked_run(tmp_path)
    paths = [str(p) for name in ("org__bad", "latest") for p in sorted((out / name).glob("s*"))]
    with pytest.raises(InputError, match=TWICE):
        calibcli.read_predictions(paths, all_runs=True)
    rows = calibcli.read_predictions(paths[:2], all_runs=True)
    assert len(rows.confidence) == QUESTIONS


def test_the_engines_refuse_a_file_reached_twice(tmp_path):
    out = linked_run(tmp_path)
    paths = [str(p) for name in ("org__bad", "latest") for p in sorted((out / name).glob("s*"))]
    with pytest.raises(InputError, match=TWICE):
        file_jobs(paths, "auto", None, all_runs=True)
    assert len(file_jobs(paths[:2], "auto", None, all_runs=True)) == 2


def test_summaries_of_one_file_reached_twice_are_refused(tmp_path):
    out = linked_run(tmp_path)
    pattern = f"{out}/**/samples_*.jsonl"
    summary = tmp_path / "s.cbs"
    line = refused("summarize", pattern, "--all-runs", "-o", summary, "-q")
    assert TWICE in line and not summary.exists()
    # one summary a path: merging them counts the file twice
    parts = []
    for name in ("org__bad", "latest"):
        parts.append(tmp_path / f"{name}.cbs")
        done = run(["summarize", *sorted((out / name).glob("samples_*")), "-o", parts[-1], "-q"])
        assert done.exit_code == 0, done.stderr
    pooled = run(["calibrate", *parts, "--all-runs", "--min-rows", "150", "-q"])
    assert pooled.exit_code == 2, pooled.stderr


# --- a results file named by --output_path -------------------------------------------------


def output_path_runs(tmp_path: Path) -> Path:
    """``lm_eval --output_path out/res.json`` run twice: ``res_<stamp>.json`` beside flat
    samples files; the second run, of another model, under ``--limit 20``."""
    out = tmp_path / "out"
    write_run(out, FIRST, "org/good", results=f"res_{FIRST}.json")
    write_run(out, SECOND, "org/bad", results=f"res_{SECOND}.json", limit=20)
    return out


def test_one_run_s_model_is_read_from_its_results_file(tmp_path):
    out = tmp_path / "out"
    write_run(out, FIRST, "org/good", results=f"res_{FIRST}.json")
    result = run(["calibrate", out, "--by", "model", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert list(body["groups"]) == ["org/good"]
    assert body["n"] == QUESTIONS


def test_two_models_pooled_fail_the_gate_closed(tmp_path):
    out = output_path_runs(tmp_path)
    result = run(["calibrate", out, "--all-runs", "--max-ece", "0.7", "--json", "-q"])
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    assert body["n"] == QUESTIONS + 2 * 20
    pooled = [w for w in body["warnings"] if w.startswith("rows of 2 models are pooled")]
    assert len(pooled) == 1 and "'org/good'" in pooled[0] and "'org/bad'" in pooled[0]


def test_the_limit_of_a_run_is_said(tmp_path):
    out = output_path_runs(tmp_path)
    result = run(["calibrate", *sorted(out.glob(f"samples_*_{SECOND}.jsonl")), "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["n"] == 2 * 20
    (limited,) = [w for w in body["warnings"] if "evaluated only" in w]
    assert limited.startswith(f"{out / f'res_{SECOND}.json'}: lm-eval evaluated only a part")
    assert "'toy_mc_science' 20 of 48, 'toy_mc_trivia' 20 of 40" in limited
    assert "(--limit 20)" in limited


def test_results_file_names(tmp_path):
    out = tmp_path / "out"
    samples = write_run(out, FIRST, "org/good", results=f"res_{FIRST}.json")[0]
    document = (out / f"res_{FIRST}.json").read_text()
    assert results_file(str(samples), FIRST) == str(out / f"res_{FIRST}.json")
    # the run's own stamp only; another stamp's results file is another run's
    assert results_file(str(samples), SECOND) == str(out / f"results_{SECOND}.json")
    # a file of that stamp that is no results file is passed over, whatever its name
    (out / f"a_{FIRST}.json").write_text('{"results": {}}')
    (out / f"samples_toy_other_{FIRST}.json").write_text(document)
    assert results_file(str(samples), FIRST) == str(out / f"res_{FIRST}.json")
    # of several results files, the first by name
    (out / f"b_{FIRST}.json.gz").write_bytes(gzip.compress(document.encode()))
    assert results_file(str(samples), FIRST) == str(out / f"b_{FIRST}.json.gz")
    # results_<stamp>.json first, as lm-eval names it by default
    shutil.copy(out / f"res_{FIRST}.json", out / f"results_{FIRST}.json")
    assert results_file(str(samples), FIRST) == str(out / f"results_{FIRST}.json")


def test_a_folder_listed_before_is_listed_again_once_it_changes(tmp_path):
    out = tmp_path / "out"
    samples = write_run(out, FIRST, "org/good", results=f"res_{FIRST}.json")[0]
    document = (out / f"res_{FIRST}.json").read_text()
    os.utime(out, ns=(10**18, 10**18))  # settled long ago: its listing is kept
    assert results_file(str(samples), FIRST) == str(out / f"res_{FIRST}.json")
    (out / f"a_{FIRST}.json").write_text(document)
    os.utime(out, ns=(10**18 + 1, 10**18 + 1))
    assert results_file(str(samples), FIRST) == str(out / f"a_{FIRST}.json")
