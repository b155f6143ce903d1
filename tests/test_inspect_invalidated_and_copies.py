"""inspect-ai logs read as inspect-ai means them.

A sample marked invalidated (its ``invalidation`` record, written by inspect-ai's
``invalidate_samples``; an eval set runs it again) is left out of the rows, on every route, with
one warning per log counting them and giving their reasons, as a sample that ended in an error
unscored is left out.

Two logs of one run (the same ``eval.eval_id``: a copy of a log, or an ``.eval`` log beside its
``inspect log convert`` ``.json``) are one run, refused under ``--all-runs`` as copies: a real
re-run has an eval_id of its own, and is pooled.

The logs are built from the repository's inspect-ai fixtures; the references are computed by
numpy from the logs' own samples."""

from __future__ import annotations

import copy
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from harness import run

import calibcli
from calibcli.engines import file_jobs, file_task, finish, merge_all
from calibcli.errors import InputError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ARITHMETIC = FIXTURES / "inspect_ai" / "toy_arithmetic.json"
PERPLEXITY = FIXTURES / "inspect_ai_schema" / "toy_perplexity.json"
# the first sample is decoded whole, the later ones into the typed struct: both are marked
INVALID = (0, 5, 11)
REASON = "answer leaked in sandbox"
READ = ("--scorer", "match", "--inspect-confidence", "sequence")
LEFT_OUT = (
    f"3 of 20 samples are invalidated (reason: {REASON}; an eval set runs them again): left out"
)
TWICE = (
    "not a re-run, which inspect-ai gives an eval_id of its own: --all-runs would count its "
    "answers twice (leave one of them out)"
)


def fixture(path: Path = ARITHMETIC) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def invalidated(log: dict, marked=INVALID, reason: str | None = REASON) -> dict:
    """``log`` with the samples at ``marked`` invalidated, as inspect-ai records it."""
    log = copy.deepcopy(log)
    for i in marked:
        record = {"timestamp": "2026-12-03T00:00:00+00:00", "author": "alice", "metadata": {}}
        if reason is not None:
            record["reason"] = reason
        log["samples"][i]["invalidation"] = record
    log["invalidated"] = True
    return log


def write(path: Path, log: dict) -> Path:
    """``log`` as a ``.json`` log, or for a name ending ``.eval`` as inspect-ai's zip (its
    header and one member per sample)."""
    if path.suffix == ".json":
        path.write_text(json.dumps(log, indent=2), encoding="utf-8")
        return path
    top = {k: v for k, v in log.items() if k != "samples"}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", json.dumps(top))
        for s in log["samples"]:
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    return path


def rerun(log: dict, eval_id: str) -> dict:
    """The same task run again: inspect-ai gives it a new eval_id and run_id."""
    log = copy.deepcopy(log)
    log["eval"]["eval_id"] = eval_id
    log["eval"]["run_id"] = f"run-{eval_id}"
    return log


def rows(samples: list) -> tuple[np.ndarray, np.ndarray]:
    """(sequence confidence, match is right) of samples, by numpy: the completion's
    probability, the exponential of its tokens' summed log-probabilities."""
    conf = [
        np.exp(np.sum([t["logprob"] for t in s["output"]["choices"][0]["logprobs"]["content"]]))
        for s in samples
    ]
    right = [s["scores"]["match"]["value"] == "C" for s in samples]
    return np.asarray(conf, dtype=float), np.asarray(right, dtype=bool)


def ece(conf: np.ndarray, right: np.ndarray, bins: int = 10) -> float:
    k = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        held = k == b
        if held.any():
            total += held.sum() / conf.size * abs(conf[held].mean() - right[held].mean())
    return total


def valid(log: dict) -> list:
    return [s for s in log["samples"] if not s.get("invalidation")]


def report(args: list, code: int = 0) -> tuple[dict, str]:
    result = run([*args, "--json"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result.stderr


def refused(args: list) -> str:
    result = run(args)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


# --------------------------------------------------------------------------- invalidated


@pytest.mark.parametrize("name", ["inv.json", "inv.eval"])
def test_invalidated_samples_are_left_out_with_one_warning(tmp_path, name):
    log = invalidated(fixture())
    path = write(tmp_path / name, log)
    conf, right = rows(valid(log))
    assert conf.size == 17
    body, stderr = report(["calibrate", path, *READ, "-q"])
    assert body["n"] == 17
    assert body["accuracy"] == pytest.approx(right.mean(), rel=1e-12)
    assert body["mean_confidence"] == pytest.approx(conf.mean(), rel=1e-12)
    assert body["brier"] == pytest.approx(np.mean((conf - right) ** 2), rel=1e-9)
    assert body["ece"] == pytest.approx(ece(conf, right), rel=1e-9)
    said = [w for w in body["warnings"] if "invalidated" in w]
    assert said == [f"{path}: {LEFT_OUT}"]
    assert stderr.count("samples are invalidated") == 1 and f"warning: {said[0]}\n" in stderr


def test_a_gate_is_judged_on_the_valid_samples(tmp_path):
    log = invalidated(fixture())
    path = write(tmp_path / "inv.json", log)
    # the log holds 20 samples, 17 of them valid: 20 rows are not there to be counted
    body, _ = report(["calibrate", path, *READ, "--min-rows", "20", "-q"], 1)
    assert body["n"] == 17
    conf, right = rows(valid(log))
    whole = ece(*rows(log["samples"]))
    kept = ece(conf, right)
    assert kept != pytest.approx(whole)
    threshold = (whole + kept) / 2  # the gate passes on the whole log, and fails on the valid
    code = 1 if kept > whole else 0
    report(["calibrate", path, *READ, "--max-ece", f"{threshold:.6f}", "-q"], code)


def test_reasons_are_counted_and_a_log_without_them_is_said(tmp_path):
    log = invalidated(fixture(), (0, 1), "sandbox broke\nsee the transcript")
    log = invalidated(log, (2,), "a leaked answer")
    log = invalidated(log, (3,), "a grader outage")
    body, _ = report(["calibrate", write(tmp_path / "a.json", log), *READ, "-q"])
    (said,) = [w for w in body["warnings"] if "invalidated" in w]
    assert said.endswith(
        "4 of 20 samples are invalidated (reasons: sandbox broke; a leaked answer; and 1 "
        "other; an eval set runs them again): left out"
    )
    bare = invalidated(fixture(), (4,), None)
    body, _ = report(["calibrate", write(tmp_path / "b.json", bare), *READ, "-q"])
    assert body["n"] == 19
    assert any(
        w.endswith(
            "1 of 20 samples is invalidated (no reason given; an eval set runs it again): left out"
        )
        for w in body["warnings"]
    )


def test_every_route_leaves_them_out(tmp_path):
    log = invalidated(fixture())
    path = write(tmp_path / "inv.json", log)
    conf, right = rows(valid(log))
    # a summary file, read back
    out = tmp_path / "inv.cbs"
    assert run(["summarize", path, *READ, "-o", out, "-q"]).exit_code == 0
    body, _ = report(["calibrate", out, "-q"])
    assert body["n"] == 17 and body["accuracy"] == pytest.approx(right.mean())
    assert any(LEFT_OUT in w for w in body["warnings"])
    # the Python API
    read = calibcli.read_predictions(str(path), scorer="match", inspect_confidence="sequence")
    assert len(read) == 17
    assert np.allclose(np.sort(read.confidence), np.sort(conf), rtol=1e-12)
    assert any(LEFT_OUT in w for w in read.warnings)
    # compare, paired by sample against the whole log
    whole = write(tmp_path / "whole.json", fixture())
    body, _ = report(["compare", path, whole, *READ, "--allow-unmatched", "-q"])
    assert body["n_base"] == 17 and body["matched"] == 17 and body["unmatched_new"] == 3
    assert any(LEFT_OUT in w for w in body["warnings"])
    # a calibrator fitted on the log counts its valid samples
    fitted = tmp_path / "cal.json"
    result = run(["fit", path, *READ, "--method", "platt", "-o", fitted, "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(fitted.read_text())["fitted_on"]["n"] == 17
    assert f"warning: {path}: {LEFT_OUT}\n" in result.stderr


def test_perplexity_leaves_them_out(tmp_path):
    log = invalidated(fixture(PERPLEXITY), (1,))
    path = write(tmp_path / "ppl.json", log)
    logprobs = [
        [t["logprob"] for t in s["output"]["choices"][0]["prompt_logprobs"]["content"]]
        for s in valid(log)
    ]
    nll = -np.sum([lp for each in logprobs for lp in each if lp is not None])
    tokens = sum(lp is not None for each in logprobs for lp in each)
    body, _ = report(["perplexity", path, "-q"])
    assert body["sequences"] == 2 and body["total_tokens"] == tokens
    assert body["total_nll"] == pytest.approx(nll, rel=1e-12)
    assert any("1 of 3 samples is invalidated" in w for w in body["warnings"])


# --------------------------------------------------------------------------- one run twice


def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A folder of a log, its copy as a browser names it, and a real re-run."""
    folder = tmp_path / "logs"
    folder.mkdir()
    first = write(folder / "2026-12-01T01-00-00+00-00_t_Y1.json", rerun(fixture(), "Y1"))
    again = folder / "2026-12-01T01-00-00+00-00_t_Y1 (1).json"
    shutil.copyfile(first, again)
    other = write(folder / "2026-12-02T01-00-00+00-00_t_Y2.json", rerun(fixture(), "Y2"))
    return first, again, other


def test_a_real_rerun_is_pooled(tmp_path):
    first, again, other = runs(tmp_path)
    again.unlink()
    body, _ = report(["calibrate", first, other, *READ, "--all-runs", "-q"])
    conf, right = rows(fixture()["samples"])
    assert body["n"] == 2 * conf.size
    assert body["accuracy"] == pytest.approx(right.mean())


def test_a_copy_of_a_log_is_refused_under_all_runs(tmp_path):
    first, again, _ = runs(tmp_path)
    line = refused(["calibrate", first.parent, *READ, "--all-runs", "--max-ece", "0.9"])
    assert line == (
        f"Error: {first}: holds the same bytes as {again} (eval_id Y1): one inspect-ai run's "
        f"log, {TWICE}"
    )


@pytest.mark.parametrize("order", ["eval first", "json first"])
def test_a_log_beside_its_conversion_is_refused_under_all_runs(tmp_path, order):
    log = fixture()
    converted = write(tmp_path / "a.json", log)
    archive = write(tmp_path / "a.eval", log)
    given = [archive, converted] if order == "eval first" else [converted, archive]
    line = refused(["calibrate", *given, *READ, "--all-runs"])
    assert line == (
        f"Error: {given[1]}: is a log of the same inspect-ai run as {given[0]} (eval_id "
        f"{log['eval']['eval_id']}): a copy, a conversion (inspect log convert) or a "
        f"re-scoring (inspect score) of it, {TWICE}"
    )


def test_every_route_refuses_one_run_twice(tmp_path):
    log = fixture()
    base = tmp_path / "base"
    base.mkdir()
    converted = write(base / "a.json", log)
    archive = write(base / "a.eval", log)
    both = [str(archive), str(converted)]
    assert "same inspect-ai run" in refused(
        ["summarize", *both, *READ, "--all-runs", "-o", tmp_path / "x.cbs"]
    )
    assert not (tmp_path / "x.cbs").exists()
    # summaries of each, read together
    parts = []
    for path in both:
        out = tmp_path / f"{Path(path).suffix[1:]}.cbs"
        assert run(["summarize", path, *READ, "--all-runs", "-o", out, "-q"]).exit_code == 0
        parts.append(out)
    assert "same inspect-ai run" in refused(["calibrate", *parts, "--all-runs"])
    # compare's unpaired side, and the Python API
    other = write(tmp_path / "b.json", rerun(log, "other"))
    line = refused(["compare", base, other, *READ, "--all-runs", "--unpaired"])
    assert "same inspect-ai run" in line
    with pytest.raises(InputError, match="same inspect-ai run"):
        calibcli.read_predictions(both, all_runs=True, scorer="match")
    # fit, and an engine's parts
    line = refused(["fit", *both, *READ, "--method", "platt", "--all-runs", "-o", tmp_path / "c"])
    assert "same inspect-ai run" in line
    jobs = file_jobs(both, "auto", None, all_runs=True, scorer="match")
    with pytest.raises(InputError, match="same inspect-ai run"):
        finish(merge_all([file_task(job) for job in jobs]), all_runs=True)


def test_perplexity_refuses_a_copy_of_a_log(tmp_path):
    log = fixture(PERPLEXITY)
    log["eval"]["eval_id"] = "P1"
    first = write(tmp_path / "p.json", log)
    again = tmp_path / "p (1).json"
    shutil.copyfile(first, again)
    line = refused(["perplexity", first, again, "--all-runs"])
    assert line.startswith(f"Error: {again}: holds the same bytes as {first} (eval_id P1)")


def test_a_rescored_log_is_refused_beside_its_original(tmp_path):
    # inspect score copies the log whole, its eval_id with it: the same answers graded again
    log, rescored = fixture(), fixture()
    for s, again in zip(log["samples"], rescored["samples"], strict=True):
        s["scores"] = {"match": s["scores"]["match"]}
        again["scores"] = {"includes": again["scores"]["match"]}
    first = write(tmp_path / "a.json", log)
    again = write(tmp_path / "a-includes.json", rescored)
    line = refused(["calibrate", first, again, "--all-runs", "--inspect-confidence", "sequence"])
    assert line.startswith(f"Error: {again}: is a log of the same inspect-ai run as {first}")


def test_logs_of_one_eval_id_edited_to_another_model_are_not_taken_for_copies(tmp_path):
    log = fixture()
    first = write(tmp_path / "a.json", log)
    other = copy.deepcopy(log)
    other["eval"]["model"] = "mockllm/other"
    second = write(tmp_path / "b.json", other)
    result = run(["calibrate", first, second, *READ, "--all-runs", "--json", "-q"])
    assert result.exit_code in (0, 1), result.stderr
    assert json.loads(result.stdout)["n"] == 40


def test_a_conversion_whose_eval_ends_past_its_first_mib_is_refused(tmp_path):
    """A ``.json`` log's ``eval`` past its first MiB (a long metadata) is read from the whole
    log for its eval_id as for its model: the conversion is still one run's log."""
    log = fixture()
    log["eval"]["metadata"] = {"note": "x" * (1 << 20)}
    archive = write(tmp_path / "x.eval", log)
    converted = write(tmp_path / "x.json", log)
    line = refused(["calibrate", archive, converted, *READ, "--all-runs"])
    assert line.startswith(f"Error: {converted}: is a log of the same inspect-ai run as {archive}")


@pytest.mark.parametrize("empty", [{}, "", []])
def test_an_empty_invalidation_records_none(tmp_path, empty):
    """inspect-ai writes null or a record: an empty value leaves the sample valid."""
    log = fixture()
    log["samples"][0]["invalidation"] = empty
    body, err = report(["calibrate", write(tmp_path / "a.json", log), *READ])
    assert body["n"] == rows(log["samples"])[0].size
    assert "invalidated" not in err
