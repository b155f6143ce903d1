"""``inspect eval TASK --model a,b`` writes one log of the task per model into one folder, each
numbering the task's samples 1..N: the samples of two models' logs are no re-runs of each
other. A sample's id carries its log's model as well as its task, so the two logs are read
together (pooled figures of two models fail every gate closed; ``--by model --gate-each``
gates each), while two logs of one model and task are still refused as re-runs. Summaries
written before ids carried the model (format version 4) are refused beside ones written now
that hold inspect-ai samples."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from harness import refused, run
from test_inspect_local_checkpoints import SAMPLES, SCORER, ece, log_of, rows_of

import calibcli

A, B = "openai/gpt-4o", "anthropic/claude-3-5-sonnet"
SEVERAL = "the rows are several models'"
TWICE = "re-runs of a task, or the same rows in two files, would count twice"
MODELLESS = "holds ids of inspect-ai, HELM or OpenAI evals rows without their run's model"

pytestmark = pytest.mark.usefixtures("fresh_inspect_reads")


def write_log(path: Path, model: str | None, *, overconfident: bool, run_id: str) -> Path:
    """A log of the fixture's task by ``model`` (none when None), as one of a run's logs."""
    log = log_of(None, overconfident=overconfident)
    if model is None:
        del log["eval"]["model"]
    else:
        log["eval"]["model"] = model
    log["eval"]["eval_id"] = f"eval-{model}-{overconfident}-{run_id}"
    log["eval"]["run_id"] = run_id
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


@pytest.fixture
def two_models(tmp_path):
    """The logs one ``--model a,b`` run writes into ``logs/``, and a --max-ece the first
    model meets and the second does not."""
    folder = tmp_path / "logs"
    folder.mkdir()
    first = write_log(
        folder / "2026-12-01T10-00-00+00-00_toy-arithmetic_Aa1.json",
        A,
        overconfident=False,
        run_id="run-1",
    )
    second = write_log(
        folder / "2026-12-01T10-00-00+00-00_toy-arithmetic_Bb2.json",
        B,
        overconfident=True,
        run_id="run-1",
    )
    (pa, ya), (pb, yb) = rows_of(first), rows_of(second)
    limit = (ece(pa, ya) + ece(pb, yb)) / 2
    assert ece(pa, ya) < limit < ece(pb, yb)  # the data's premise
    return folder, first, second, limit


def by_model(report: dict, first: Path, second: Path) -> None:
    """Two groups, each holding its model's samples and figures."""
    assert sorted(report["groups"]) == sorted([A, B])
    for model, log in ((A, first), (B, second)):
        p, y = rows_of(log)
        group = report["groups"][model]
        assert group["n"] == SAMPLES
        assert group["ece"] == pytest.approx(ece(p, y), abs=1e-12)
        assert group["accuracy"] == pytest.approx(y.mean(), abs=1e-15)
    assert report["gate"]["failed_groups"] == [B]


@pytest.mark.parametrize("all_runs", [[], ["--all-runs"]])
def test_by_model_gates_each_models_log(two_models, all_runs):
    folder, first, second, limit = two_models
    args = ["--by", "model", "--gate-each", "--max-ece", limit, "--json", *all_runs]
    result = run(["calibrate", folder, *SCORER, *args])
    assert result.exit_code == 1, result.stderr
    by_model(json.loads(result.stdout), first, second)
    alone = run(["calibrate", first, *SCORER, "--by", "model", "--gate-each", "--max-ece", limit])
    assert alone.exit_code == 0, alone.stderr


def test_each_model_holds_its_questions_under_all_runs(two_models):
    """Pooled with --all-runs, each model's 40 samples are its own questions, not a re-run
    of the other model's: each group meets --min-rows 40."""
    folder, *_ = two_models
    args = ["--all-runs", "--by", "model", "--gate-each", "--min-rows", SAMPLES, "--json"]
    result = run(["calibrate", folder, *SCORER, *args])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert [report["groups"][m]["n"] for m in (A, B)] == [SAMPLES, SAMPLES]
    pooled = run(["calibrate", folder, *SCORER, "--all-runs", "--min-rows", "41", "--json"])
    (check,) = json.loads(pooled.stdout)["gate"]["checks"]
    assert check["value"] == 2 * SAMPLES and check.get("questions", 2 * SAMPLES) == 2 * SAMPLES
    assert "re-run" not in pooled.stderr, pooled.stderr


def test_pooled_figures_of_the_two_models_fail_closed(two_models):
    folder, first, second, _ = two_models
    result = run(["calibrate", folder, *SCORER, "--max-ece", "0.99", "--json"])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    p, y = (np.concatenate(pair) for pair in zip(rows_of(first), rows_of(second), strict=True))
    assert report["n"] == 2 * SAMPLES
    assert report["ece"] == pytest.approx(ece(p, y), abs=1e-12)
    (check,) = report["gate"]["checks"]
    assert check["passed"] is False and SEVERAL in check["reason"]


def test_two_logs_of_one_model_are_still_reruns(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    for name, shift in (("Aa1", False), ("Aa2", True)):
        write_log(
            folder / f"2026-12-0{1 + shift}T10-00-00_toy-arithmetic_{name}.json",
            A,
            overconfident=shift,
            run_id=name,
        )
    logs = sorted(folder.iterdir())
    assert TWICE in refused("calibrate", *logs, *SCORER, "--min-rows", "41")
    pooled = run(["calibrate", *logs, *SCORER, "--all-runs", "--min-rows", "41", "--json"])
    assert pooled.exit_code == 1, pooled.stderr  # 40 questions answered twice


def test_summaries_merged_and_the_api_read_both_models(two_models, tmp_path):
    folder, first, second, limit = two_models
    parts = []
    for log in (first, second):
        part = tmp_path / f"{log.stem}.cbs"
        made = run(["summarize", log, *SCORER, "--by", "model", "-o", part, "-q"])
        assert made.exit_code == 0, made.stderr
        parts.append(part)
    merged = tmp_path / "m.cbs"
    done = run(["merge", *parts, "-o", merged, "-q"])
    assert done.exit_code == 0, done.stderr
    result = run(
        ["calibrate", merged, "--by", "model", "--gate-each", "--max-ece", limit, "--json"]
    )
    assert result.exit_code == 1, result.stderr
    by_model(json.loads(result.stdout), first, second)
    rows = calibcli.read_predictions([str(folder)], scorer="match", by="model")
    assert len(rows.confidence) == 2 * SAMPLES
    assert sorted(set(rows.group)) == sorted([A, B])


def test_a_summary_whose_ids_carry_no_model_is_refused_beside_a_new_one(tmp_path):
    """A summary of format version 4 holds a log's samples' ids with the task alone (those of
    a log naming no model, as this calibcli reads one): beside a summary of a re-run written
    now, the samples they share had two ids, so the re-run was pooled as other questions."""
    old_log = write_log(tmp_path / "old.json", None, overconfident=False, run_id="r1")
    old = tmp_path / "old.cbs"
    assert run(["summarize", old_log, *SCORER, "-o", old, "-q"]).exit_code == 0
    data = bytearray(old.read_bytes())
    assert struct.unpack_from("<I", data, 16)[0] == 5
    struct.pack_into("<I", data, 16, 4)
    old.write_bytes(bytes(data))
    rerun = write_log(tmp_path / "rerun.json", A, overconfident=True, run_id="r2")
    new = tmp_path / "new.cbs"
    assert run(["summarize", rerun, *SCORER, "-o", new, "-q"]).exit_code == 0
    for parts in ((old, new), (new, old)):
        line = refused("merge", *parts, "-o", tmp_path / "m.cbs", "-q")
        assert line.startswith(f"Error: {old} holds ") and MODELLESS in line, line
    alone = run(["calibrate", old, "--json", "-q"])
    assert alone.exit_code == 0 and json.loads(alone.stdout)["n"] == SAMPLES


def test_an_old_summary_beside_rows_of_another_format_is_read(tmp_path):
    """A version 4 summary of inspect-ai samples beside a HELM run: their ids never meet, so
    the older scheme of the one is no matter to the other."""
    old_log = write_log(tmp_path / "old.json", A, overconfident=False, run_id="r1")
    old = tmp_path / "old.cbs"
    assert run(["summarize", old_log, *SCORER, "-o", old, "-q"]).exit_code == 0
    data = bytearray(old.read_bytes())
    struct.pack_into("<I", data, 16, 4)
    old.write_bytes(bytes(data))
    helm = Path(__file__).parent / "fixtures" / "helm" / "mmlu" / "per_instance_stats.json"
    both = run(["calibrate", old, helm, "--json", "-q"])
    assert both.exit_code in (0, 1), both.stderr
    assert json.loads(both.stdout)["n"] > SAMPLES
