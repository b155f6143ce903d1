"""Two checkpoints (revisions) of one model are two models, and two models' runs in one folder
are no re-runs of one: lm-eval names a run's model without its ``revision`` (the ``org__name``
folder v0.4.3+ writes every checkpoint of a model into, the results file's ``model_name``), and
before v0.4.3 a file name held the revision among the model arguments. Pooled, every gate fails
closed (several models); ``--by model --gate-each`` gates each model on its own rows, and no
model's run is left out as an older re-run of another's.

The runs are the fixture task's 40 documents (doc_id 0..39) with every answer right (a good
checkpoint) or every answer wrong (a bad one), the same loglikelihoods in both. Each row's
confidence is the largest softmax probability of its choices' loglikelihoods, computed here
with numpy; the ECE of rows all wrong is then their mean confidence (each bin's gap is its
mean confidence), that of rows all right one less it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from harness import refused, run

import calibcli

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP0 = "2026-11-29T18-50-52.260809"
OLDER, NEWER = "2026-12-01T10-00-00.000001", "2026-12-01T11-00-00.000001"
TASK = "toy_mc_trivia"
QUESTIONS = 40
SHARPER = 4.0


def rows(right: bool) -> list[dict]:
    """The fixture task's rows, every answer right or wrong, their loglikelihoods times
    ``SHARPER`` (a model surer of its answers); without ``acc_mutual_info`` each row's choices
    are all its responses."""
    out = []
    for line in (LM_EVAL / f"samples_{TASK}_{STAMP0}.jsonl").read_text().splitlines():
        row = json.loads(line)
        row.pop("acc_mutual_info", None)
        row["filtered_resps"] = [[repr(float(ll) * SHARPER), g] for ll, g in row["filtered_resps"]]
        row["resps"] = [[r] for r in row["filtered_resps"]]
        row["acc"] = row["acc_norm"] = 1.0 if right else 0.0
        out.append(row)
    return out


def mean_confidence() -> float:
    """The rows' mean largest softmax probability over their choices' loglikelihoods."""
    found = []
    for row in rows(True):
        ll = np.array([float(r[0]) for r in row["filtered_resps"]])
        p = np.exp(ll - ll.max())
        found.append(p.max() / p.sum())
    return float(np.mean(found))


BAD = mean_confidence()  # the ECE of rows all wrong
GOOD = 1.0 - BAD  # and of rows all right
MAX_ECE = 0.5


def test_the_references_leave_room_for_the_gate():
    assert len(rows(True)) == QUESTIONS
    assert sorted(r["doc_id"] for r in rows(True)) == list(range(QUESTIONS))
    assert GOOD < MAX_ECE - 0.05 and BAD > MAX_ECE + 0.05, (GOOD, BAD)


def write(path: Path, right: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows(right)))
    return path


def a_run(folder: Path, stamp: str, *, right: bool, model: str, args: str) -> None:
    """A v0.4.3+ run in ``folder``: its samples file and results file, naming ``model`` in
    ``model_name`` and the model arguments ``args``, as lm-eval writes them."""
    write(folder / f"samples_{TASK}_{stamp}.jsonl", right)
    results = json.loads((LM_EVAL / f"results_{STAMP0}.json").read_text())
    results |= {"model_name": model, "model_name_sanitized": model.replace("/", "__")}
    results["config"] = {**results["config"], "model": "hf", "model_args": args}
    results["date"] = float(results["date"]) + (3600.0 if stamp == NEWER else 0.0)
    (folder / f"results_{stamp}.json").write_text(json.dumps(results))


def by_model(inputs: list[Path], *more: str) -> dict:
    """The ``--by model --gate-each`` report of ``inputs``: it fails on the bad model."""
    args = ["--by", "model", "--gate-each", "--max-ece", MAX_ECE, "--json", "-q", *more]
    result = run(["calibrate", *inputs, *args])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    return json.loads(result.stdout)


def assert_each_model_gated(report: dict, good: str, bad: str) -> None:
    groups = report["groups"]
    assert sorted(groups) == sorted([good, bad])
    assert groups[good]["n"] == groups[bad]["n"] == QUESTIONS
    assert groups[bad]["ece"] == pytest.approx(BAD, abs=1e-9)
    assert groups[good]["ece"] == pytest.approx(GOOD, abs=1e-9)
    assert report["gate"]["failed_groups"] == [bad]


def assert_pooled_fails_closed(inputs: list[Path], *more: str) -> None:
    result = run(["calibrate", *inputs, "--max-ece", "0.99", "--json", "-q", *more])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    assert report["n"] == 2 * QUESTIONS
    (check,) = report["gate"]["checks"]
    assert not check["passed"] and "several models'" in check["reason"], check


@pytest.fixture
def old_names(tmp_path: Path) -> Path:
    """Two revisions' runs named the pre-v0.4.3 way, side by side in one folder."""
    out = tmp_path / "out"
    write(out / f"pretrained__org__m,revision__step143000_{TASK}.jsonl", True)
    write(out / f"pretrained__org__m,revision__step1000_{TASK}.jsonl", False)
    return out


@pytest.mark.parametrize("runs", [[], ["--all-runs"]])
def test_two_revisions_named_before_v0_4_3_are_two_models(old_names, runs):
    report = by_model([old_names], *runs)
    assert_each_model_gated(report, "org/m@step143000", "org/m@step1000")
    assert_pooled_fails_closed([old_names], *runs)


@pytest.fixture
def one_folder(tmp_path: Path) -> Path:
    """Two revisions' runs in the one folder v0.4.3+ writes them to, the bad one newer."""
    folder = tmp_path / "out" / "org__m"
    a_run(folder, OLDER, right=True, model="org/m", args="pretrained=org/m,revision=step143000")
    a_run(folder, NEWER, right=False, model="org/m", args="pretrained=org/m,revision=step1000")
    return folder


@pytest.mark.parametrize("runs", [[], ["--all-runs"]])
def test_two_revisions_in_one_model_folder_are_two_models(one_folder, runs):
    report = by_model([one_folder], *runs)
    assert_each_model_gated(report, "org/m@step143000", "org/m@step1000")
    assert not any("re-runs of" in w for w in report["warnings"]), report["warnings"]
    assert_pooled_fails_closed([one_folder], *runs)


def test_two_revisions_by_task_fail_closed(one_folder):
    args = ["--by", "task", "--gate-each", "--max-ece", MAX_ECE, "--all-runs", "--json", "-q"]
    result = run(["calibrate", one_folder, *args])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["groups"][TASK]["n"] == 2 * QUESTIONS
    assert not any(c["passed"] for c in report["gate"]["checks"])


def test_a_revision_the_model_name_carries_is_not_added_again(tmp_path):
    folder = tmp_path / "flat"
    a_run(folder, OLDER, right=True, model="org/m@v1", args="pretrained=org/m,revision=v1")
    a_run(folder, NEWER, right=False, model="org/m", args="pretrained=org/m,revision=v2")
    assert_each_model_gated(by_model([folder], "--all-runs"), "org/m@v1", "org/m@v2")


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    """Two models' runs in one folder named after neither, the bad model's older."""
    folder = tmp_path / "flat"
    a_run(folder, OLDER, right=False, model="orgB/bad", args="pretrained=orgB/bad")
    a_run(folder, NEWER, right=True, model="orgA/good", args="pretrained=orgA/good")
    return folder


def test_two_models_runs_in_one_folder_are_no_re_runs(flat):
    """Neither run is left out as the other's older re-run: their rows, keyed alike (the
    folder names no model), are refused as read twice; pooled on purpose, each model is
    gated on its own rows."""
    line = refused("calibrate", flat, "--by", "model", "--gate-each", "--max-ece", MAX_ECE)
    assert "'orgA/good'" in line and "'orgB/bad'" in line, line
    report = by_model([flat], "--all-runs")
    assert_each_model_gated(report, "orgA/good", "orgB/bad")
    assert_pooled_fails_closed([flat], "--all-runs")


def test_the_python_api_gates_each_revision(one_folder):
    found = calibcli.read_predictions(str(one_folder), by="model", all_runs=True)
    assert len(found.confidence) == 2 * QUESTIONS
    result = calibcli.calibrate(found, gate_each=True, max_ece=MAX_ECE)
    assert not result.passed
    report = json.loads(result.to_json())
    assert_each_model_gated(report, "org/m@step143000", "org/m@step1000")
    pooled = calibcli.calibrate(found, max_ece=0.99)
    assert not pooled.passed


@pytest.mark.parametrize("given", ["a summary beside the other's file", "two summaries"])
def test_a_summary_of_one_model_leaves_no_other_model_s_run_out(flat, tmp_path, given):
    """A summary of the newer model's run beside the older run of another model in its folder:
    the older run is no re-run of the summarized one, so it is not left out (the good model
    alone passed, the bad model's run said to be an older re-run); their rows, keyed alike,
    are refused as read twice, with --all-runs too (summaries hold no model per row)."""
    parts = {}
    for stamp in (OLDER, NEWER):
        part = parts[stamp] = tmp_path / f"{stamp}.cbs"
        samples = flat / f"samples_{TASK}_{stamp}.jsonl"
        made = run(["summarize", samples, "--by", "model", "-o", part, "-q"])
        assert made.exit_code == 0, made.stderr
    older = flat / f"samples_{TASK}_{OLDER}.jsonl"
    inputs = [older, parts[NEWER]] if given.startswith("a summary") else [*parts.values()]
    args = ["--by", "model", "--gate-each", "--max-ece", MAX_ECE]
    assert "the same id" in refused("calibrate", *inputs, *args)
    assert "the same id" in refused("calibrate", *inputs, *args, "--all-runs")


def test_the_main_revision_is_the_model_as_named(tmp_path):
    """``revision=main`` loads the hub's default branch, the model a run without a revision
    loads: the two runs are re-runs of one model, the older left out."""
    folder = tmp_path / "org__m"
    a_run(folder, OLDER, right=False, model="org/m", args="pretrained=org/m")
    a_run(folder, NEWER, right=True, model="org/m", args="pretrained=org/m,revision=main")
    result = run(["calibrate", folder, "--by", "model", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert list(report["groups"]) == ["org/m"] and report["n"] == QUESTIONS
    assert report["ece"] == pytest.approx(GOOD, abs=1e-9)
    assert any(w.startswith("re-runs of 1 task(s)") for w in report["warnings"])
