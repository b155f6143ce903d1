"""inspect-ai logs of local weights (``--model hf/local -M model_path=models/ckpt-1000``) all
name one ``eval.model`` (``hf/local``); the checkpoint is the ``model_path`` of
``eval.model_args``. Each checkpoint is a model of its own, named ``hf/local@<model_path>``,
on every route: files and folders, summaries merged, the Python API, and a calibrator's
recorded model. Pooled gates on two checkpoints fail closed as several models'; ``--by model
--gate-each`` gates each; a calibrator fitted on one checkpoint is another model's for the
other. Logs naming no ``model_path`` keep ``eval.model`` alone."""

from __future__ import annotations

import copy
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest
from harness import run

import calibcli

FIXTURE = Path(__file__).parent / "fixtures" / "inspect_ai" / "toy_arithmetic.json"
SCORER = ["--scorer", "match"]
SAMPLES = 40
LOCAL = "hf/local"
GOOD, BAD = "models/ckpt-1000", "models/ckpt-2000"
SEVERAL = "the rows are several models'"
OTHER = "the calibrator was fitted on another model's rows"


pytestmark = pytest.mark.usefixtures("fresh_inspect_reads")


def confidence_of(sid: int, overconfident: bool) -> float:
    """A sample's one-token answer probability: spread over 0.52..0.9, or over 0.71..0.98."""
    base = 0.52 + 0.38 * ((sid * 7) % SAMPLES) / SAMPLES
    return 0.71 + 0.27 * ((sid * 3) % SAMPLES) / SAMPLES if overconfident else base


def log_of(model_path: str | None, *, overconfident: bool, model_args=None) -> dict:
    """A log of the fixture's task run by ``hf/local`` with samples 1..SAMPLES: a one-token
    answer of probability exp(logprob), right for about its probability's share of samples
    (every sample's rightness the same for both checkpoints)."""
    log = json.loads(FIXTURE.read_text(encoding="utf-8"))
    template = log["samples"][0]
    log["eval"]["model"] = LOCAL
    run_of = f"{model_path}-{overconfident}"  # each log a run of its own, as inspect-ai ids it
    log["eval"]["eval_id"], log["eval"]["run_id"] = f"eval-{run_of}", f"run-{run_of}"
    args = {} if model_args is None else dict(model_args)
    if model_path is not None:
        args["model_path"] = model_path
    log["eval"]["model_args"] = args
    ids = list(range(1, SAMPLES + 1))
    log["eval"]["dataset"] = {"samples": SAMPLES, "sample_ids": ids, "shuffled": False}
    samples = []
    for sid in ids:
        s = copy.deepcopy(template)
        s["id"], s["epoch"], s["uuid"] = sid, 1, f"{model_path}-{sid}"
        logprob = math.log(confidence_of(sid, overconfident))
        choice = s["output"]["choices"][0]
        choice["logprobs"] = {"content": [{"token": "4", "logprob": logprob, "bytes": [52]}]}
        choice["message"]["content"] = s["output"]["completion"] = "4"
        s["output"]["model"] = LOCAL
        right = confidence_of(sid, False) > 0.52 + 0.38 * ((sid * 11) % SAMPLES) / SAMPLES
        s["scores"] = {"match": {"value": "C" if right else "I", "answer": "4"}}
        samples.append(s)
    log["samples"] = samples
    log["results"]["total_samples"] = log["results"]["completed_samples"] = len(samples)
    for score in log["results"]["scores"]:
        score["scored_samples"] = len(samples)
    return log


def write_log(path: Path, model_path: str | None, *, overconfident: bool, **kw) -> Path:
    path.write_text(json.dumps(log_of(model_path, overconfident=overconfident, **kw)))
    return path


def write_eval(path: Path, log: dict) -> Path:
    """``log`` as an ``.eval`` zip (deflated): its header and one member per sample."""
    header = {k: v for k, v in log.items() if k != "samples"}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("_journal/start.json", json.dumps({k: log[k] for k in ("version", "eval")}))
        for s in log["samples"]:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        z.writestr("header.json", json.dumps(header))
    return path


def rows_of(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, correct) of a log's samples, read from its JSON by hand."""
    log = json.loads(path.read_text())
    conf = [
        math.exp(sum(t["logprob"] for t in s["output"]["choices"][0]["logprobs"]["content"]))
        for s in log["samples"]
    ]
    right = [s["scores"]["match"]["value"] == "C" for s in log["samples"]]
    return np.array(conf), np.array(right, float)


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over ``bins`` equal-width bins, by a loop."""
    total = 0.0
    for k in range(bins):
        lo, hi = k / bins, (k + 1) / bins
        mask = (p > lo) & (p <= hi) if k else (p >= lo) & (p <= hi)
        if mask.any():
            total += mask.sum() / len(p) * abs(y[mask].mean() - p[mask].mean())
    return total


@pytest.fixture
def checkpoints(tmp_path):
    """Two checkpoints' logs in one folder, and a --max-ece the pooled rows and the first
    checkpoint meet and the second does not."""
    folder = tmp_path / "logs"
    folder.mkdir()
    good = write_log(
        folder / "2026-12-01T00-00-00_toy-arithmetic_a.json", GOOD, overconfident=False
    )
    bad = write_log(folder / "2026-12-02T00-00-00_toy-arithmetic_b.json", BAD, overconfident=True)
    (pg, yg), (pb, yb) = rows_of(good), rows_of(bad)
    pooled = ece(np.concatenate([pg, pb]), np.concatenate([yg, yb]))
    limit = (max(pooled, ece(pg, yg)) + ece(pb, yb)) / 2
    assert ece(pg, yg) < limit and pooled < limit < ece(pb, yb)  # the data's premise
    return folder, good, bad, limit


def named(path: str) -> str:
    return f"{LOCAL}@{path}"


def gated_groups(report: dict, good: Path, bad: Path) -> None:
    """The report of both checkpoints by model: two groups of their own figures, the second
    failing."""
    assert report["by"] == "model"
    assert sorted(report["groups"]) == [named(GOOD), named(BAD)]
    for path, log in ((GOOD, good), (BAD, bad)):
        p, y = rows_of(log)
        group = report["groups"][named(path)]
        assert group["n"] == SAMPLES
        assert group["ece"] == pytest.approx(ece(p, y), abs=1e-9)
    assert report["gate"]["passed"] is False
    assert report["gate"]["failed_groups"] == [named(BAD)]


@pytest.mark.parametrize("route", ["files", "folder"])
def test_two_checkpoints_pooled_fail_closed_as_several_models(checkpoints, route):
    folder, good, bad, limit = checkpoints
    inputs = [folder] if route == "folder" else [good, bad]
    result = run(["calibrate", *inputs, *SCORER, "--all-runs", "--max-ece", limit, "--json"])
    assert result.exit_code == 1, result.stderr
    assert "rows of 2 models are pooled" in result.stderr
    assert f"'{named(GOOD)}'" in result.stderr and f"'{named(BAD)}'" in result.stderr
    (check,) = json.loads(result.stdout)["gate"]["checks"]
    assert check["passed"] is False and SEVERAL in check["reason"]


@pytest.mark.parametrize("route", ["files", "folder"])
def test_by_model_gates_each_checkpoint(checkpoints, route):
    folder, good, bad, limit = checkpoints
    inputs = [folder] if route == "folder" else [good, bad]
    args = ["--all-runs", "--by", "model", "--gate-each", "--max-ece", limit, "--json"]
    result = run(["calibrate", *inputs, *SCORER, *args])
    assert result.exit_code == 1, result.stderr
    gated_groups(json.loads(result.stdout), good, bad)
    alone = run(["calibrate", good, *SCORER, "--by", "model", "--gate-each", "--max-ece", limit])
    assert alone.exit_code == 0, alone.stderr


def test_summaries_merged_keep_the_checkpoints_apart(checkpoints, tmp_path):
    _, good, bad, limit = checkpoints
    for by in ([], ["--by", "model"]):
        parts = []
        for log in (good, bad):
            part = tmp_path / f"{log.stem}{len(by)}.cbs"
            made = run(["summarize", log, *SCORER, *by, "--all-runs", "-o", part])
            assert made.exit_code == 0, made.stderr
            parts.append(part)
        merged = tmp_path / f"merged{len(by)}.cbs"
        done = run(["merge", *parts, "--all-runs", "-o", merged])
        assert done.exit_code == 0, done.stderr
        each = ["--gate-each"] if by else []
        result = run(["calibrate", merged, *by, *each, "--max-ece", limit, "--json"])
        assert result.exit_code == 1, result.stderr
        report = json.loads(result.stdout)
        if by:
            gated_groups(report, good, bad)
        else:
            (check,) = report["gate"]["checks"]
            assert check["passed"] is False and SEVERAL in check["reason"]


def test_the_api_reads_each_checkpoint_as_a_model(checkpoints):
    _, good, bad, limit = checkpoints
    paths = [str(good), str(bad)]
    rows = calibcli.read_predictions(paths, scorer="match", by="model", all_runs=True)
    assert sorted(set(rows.group)) == [named(GOOD), named(BAD)]
    result = calibcli.calibrate(rows, gate_each=True, max_ece=limit)
    assert result.passed is False
    gated_groups(result.to_dict(), good, bad)
    pooled = calibcli.read_predictions(paths, scorer="match", all_runs=True)
    report = calibcli.calibrate(pooled, max_ece=limit).to_dict()
    (check,) = report["gate"]["checks"]
    assert check["passed"] is False and SEVERAL in check["reason"]


def test_a_calibrator_of_one_checkpoint_is_another_model_s_for_the_other(checkpoints, tmp_path):
    _, good, bad, _ = checkpoints
    calibrator = tmp_path / "cal.json"
    made = run(["fit", good, *SCORER, "--method", "platt", "-o", calibrator])
    assert made.exit_code == 0, made.stderr
    assert json.loads(calibrator.read_text())["fitted_on"]["models"] == [named(GOOD)]
    other = run(["calibrate", bad, *SCORER, "--calibrator", calibrator, "--max-ece", "0.9"])
    assert other.exit_code == 1, other.stderr
    assert named(GOOD) in other.stderr and named(BAD) in other.stderr
    assert OTHER in other.stderr
    # the same rows as the other checkpoint's, named the fitted checkpoint's: held out, passing
    held = write_log(tmp_path / "held.json", GOOD, overconfident=True)
    same = run(["calibrate", held, *SCORER, "--calibrator", calibrator, "--max-ece", "0.9"])
    assert same.exit_code == 0, same.stderr
    assert OTHER not in same.stderr


def test_eval_logs_name_their_checkpoints(tmp_path):
    good = write_eval(tmp_path / "a.eval", log_of(GOOD, overconfident=False))
    bad = write_eval(tmp_path / "b.eval", log_of(BAD, overconfident=True))
    args = ["--all-runs", "--by", "model", "--json"]
    result = run(["calibrate", good, bad, *SCORER, *args])
    assert result.exit_code == 0, result.stderr
    groups = json.loads(result.stdout)["groups"]
    assert sorted(groups) == [named(GOOD), named(BAD)]
    assert [groups[named(p)]["n"] for p in (GOOD, BAD)] == [SAMPLES, SAMPLES]


@pytest.mark.parametrize("model_args", [None, {}, {"custom_outputs": None}, {"model_path": ""}])
def test_a_log_naming_no_model_path_keeps_its_model(tmp_path, model_args):
    log = log_of(None, overconfident=False)
    if model_args is None:
        del log["eval"]["model_args"]
    else:
        log["eval"]["model_args"] = model_args
    path = tmp_path / "a.json"
    path.write_text(json.dumps(log))
    result = run(["calibrate", path, *SCORER, "--by", "model", "--json"])
    assert result.exit_code == 0, result.stderr
    assert list(json.loads(result.stdout)["groups"]) == [LOCAL]


def test_a_log_whose_eval_ends_past_its_first_mib_names_its_checkpoint(tmp_path):
    # inspect-ai writes eval before the samples; one past the first MiB is read from the
    # whole log, its model_args with it
    logs = []
    for name, path, over in (("a.json", GOOD, False), ("b.json", BAD, True)):
        log = log_of(path, overconfident=over)
        log["eval"]["task_attribs"] = {"note": "x" * (1 << 20)}
        logs.append(tmp_path / name)
        logs[-1].write_text(json.dumps(log))
    result = run(["calibrate", *logs, *SCORER, "--all-runs", "--by", "model", "--json"])
    assert result.exit_code == 0, result.stderr
    assert sorted(json.loads(result.stdout)["groups"]) == [named(GOOD), named(BAD)]


@pytest.mark.parametrize("spelt", ["./models/ckpt-1000", "models/ckpt-1000/", "models//ckpt-1000"])
def test_one_checkpoint_however_its_path_is_spelt_is_one_model(tmp_path, spelt):
    """``./models/ckpt-1000`` and ``models/ckpt-1000/`` are one folder: one model's logs."""
    first = write_log(tmp_path / "a.json", "models/ckpt-1000", overconfident=False)
    second = write_log(tmp_path / "b.json", spelt, overconfident=True)
    result = run(["calibrate", first, second, *SCORER, "--all-runs", "--by", "model", "--json"])
    assert result.exit_code == 0, result.stderr
    assert list(json.loads(result.stdout)["groups"]) == [named("models/ckpt-1000")]
