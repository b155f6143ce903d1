"""inspect-ai numbers the samples of every task 1..N, so the logs of two tasks hold the same
sample ids and epochs: their rows are distinct questions (an inspect-ai sample's id carries its
log's task, as an lm-eval row's carries its file's), while two logs of one task are re-runs of
its samples, refused without --all-runs and pooled as one question's answers with it. Every
route counts them alike: files, a folder, summaries merged, the Python API."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from harness import run

import calibcli
from calibcli.errors import InputError
from calibcli.io.inspect_log import forget_runs

FIXTURE = Path(__file__).parent / "fixtures" / "inspect_ai" / "toy_arithmetic.json"
SCORER = ["--scorer", "match"]
SAMPLES, EPOCHS = 20, 2
DOUBLE = "re-runs of a task, or the same rows in two files, would count twice"


pytestmark = pytest.mark.usefixtures("fresh_inspect_reads")


def write_log(path: Path, task: str, *, shift: float = 0.0, model: str = "openai/m") -> Path:
    """A log of ``task`` with samples 1..SAMPLES, each scored EPOCHS times: a one-token answer
    of probability exp(logprob), right when its sample id and epoch make an even number."""
    log = json.loads(FIXTURE.read_text(encoding="utf-8"))
    template = log["samples"][0]
    log["eval"]["task"] = task
    log["eval"]["model"] = model
    log["eval"]["eval_id"] = f"{path.name}-{task}-{shift}"  # each log a run of its own
    log["eval"]["config"]["epochs"] = EPOCHS
    ids = list(range(1, SAMPLES + 1))
    log["eval"]["dataset"] = {"samples": SAMPLES, "sample_ids": ids, "shuffled": False}
    samples = []
    for sid in ids:
        for epoch in range(1, EPOCHS + 1):
            s = copy.deepcopy(template)
            s["id"], s["epoch"], s["uuid"] = sid, epoch, f"{task}-{sid}-{epoch}-{model}"
            logprob = -((sid * 7 + epoch * 3) % 19) / 10 - shift
            choice = s["output"]["choices"][0]
            choice["logprobs"] = {"content": [{"token": "4", "logprob": logprob, "bytes": [52]}]}
            choice["message"]["content"] = s["output"]["completion"] = "4"
            s["output"]["model"] = model
            right = (sid + epoch) % 2 == 0
            s["scores"] = {"match": {"value": "C" if right else "I", "answer": "4"}}
            samples.append(s)
    log["samples"] = samples
    log["results"]["total_samples"] = log["results"]["completed_samples"] = len(samples)
    for score in log["results"]["scores"]:
        score["scored_samples"] = len(samples)
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def n_check(result) -> dict:
    report = json.loads(result.stdout)
    (check,) = [c for c in report["gate"]["checks"] if c["metric"] == "n"]
    return check


@pytest.fixture
def two_tasks(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    a = write_log(folder / "2026-01-01T00-00-00_toy-arithmetic_a.json", "toy_arithmetic")
    b = write_log(folder / "2026-01-01T00-00-01_other-task_b.json", "other_task", shift=0.05)
    return folder, a, b


@pytest.mark.parametrize("route", ["files", "folder"])
def test_two_tasks_logs_hold_each_task_s_questions(two_tasks, route):
    folder, a, b = two_tasks
    inputs = [str(folder)] if route == "folder" else [str(a), str(b)]
    questions = 2 * SAMPLES  # 20 samples of each of 2 tasks
    met = run(["calibrate", *inputs, *SCORER, "--min-rows", str(questions), "--json"])
    assert met.exit_code == 0, met.stderr
    assert json.loads(met.stdout)["n"] == 2 * SAMPLES * EPOCHS
    short = run(["calibrate", *inputs, *SCORER, "--min-rows", str(questions + 1), "--json"])
    assert short.exit_code == 1, short.stderr
    check = n_check(short)
    assert (check["questions"], check["questions_exact"], check["passed"]) == (40, True, False)
    # --all-runs pools nothing here: each question is still its own
    pooled = run(["calibrate", *inputs, *SCORER, "--all-runs", "--min-rows", "41", "--json"])
    assert pooled.exit_code == 1 and n_check(pooled)["questions"] == questions


def test_a_rerun_of_one_task_is_refused_and_pooled_as_one_question_s_answers(tmp_path):
    a = write_log(tmp_path / "a.json", "toy_arithmetic")
    again = write_log(tmp_path / "again.json", "toy_arithmetic", shift=0.05)
    refused = run(["calibrate", str(a), str(again), *SCORER])
    assert refused.exit_code == 2 and DOUBLE in refused.stderr
    pooled = run(
        ["calibrate", str(a), str(again), *SCORER, "--all-runs", "--min-rows", "21", "--json"]
    )
    assert pooled.exit_code == 1 and n_check(pooled)["questions"] == SAMPLES


def test_one_task_run_from_its_package_and_from_its_file_is_one_task(tmp_path):
    # inspect-ai names a task "inspect_evals/x" run from its package and "x" from its file
    a = write_log(tmp_path / "a.json", "toy_arithmetic")
    again = write_log(tmp_path / "again.json", "inspect_evals/toy_arithmetic", shift=0.05)
    refused = run(["calibrate", str(a), str(again), *SCORER])
    assert refused.exit_code == 2 and DOUBLE in refused.stderr


def test_summaries_of_each_log_merge_as_the_files_read_together(two_tasks, tmp_path):
    _, a, b = two_tasks
    parts = []
    for log in (a, b):
        part = tmp_path / f"{log.stem}.cbs"
        made = run(["summarize", str(log), *SCORER, "-o", str(part)])
        assert made.exit_code == 0, made.stderr
        parts.append(str(part))
    merged = tmp_path / "merged.cbs"
    done = run(["merge", *parts, "-o", str(merged)])
    assert done.exit_code == 0, done.stderr
    both = tmp_path / "both.cbs"
    assert run(["summarize", str(a), str(b), *SCORER, "-o", str(both)]).exit_code == 0
    read = run(["calibrate", str(a), str(b), *SCORER, "--min-rows", "41", "--json"])
    for summary in (merged, both):
        result = run(["calibrate", str(summary), "--min-rows", "41", "--json"])
        assert result.exit_code == 1 and n_check(result)["questions"] == 2 * SAMPLES
        report, files = json.loads(result.stdout), json.loads(read.stdout)
        figures = ("n", "ece", "brier", "accuracy")
        assert [report[k] for k in figures] == [files[k] for k in figures]
    # a re-run of a task summarized apart is still refused where the parts meet
    again = write_log(tmp_path / "again.json", "toy_arithmetic", shift=0.05)
    rerun = tmp_path / "again.cbs"
    assert run(["summarize", str(again), *SCORER, "-o", str(rerun)]).exit_code == 0
    refused = run(["merge", parts[0], str(rerun), "-o", str(tmp_path / "no.cbs")])
    assert refused.exit_code == 2 and "re-runs of a task" in refused.stderr


def test_the_api_counts_each_task_s_questions_as_the_command(two_tasks):
    _, a, b = two_tasks
    rows = calibcli.read_predictions([str(a), str(b)], scorer="match")
    assert len(rows.confidence) == 2 * SAMPLES * EPOCHS
    assert np.unique(rows.questions).shape[0] == 2 * SAMPLES
    report = calibcli.calibrate(rows, ci=0.95, min_rows=41).to_dict()
    (check,) = report["gate"]["checks"]
    assert check["questions"] == 2 * SAMPLES and not check["passed"]
    command = run(["calibrate", str(a), str(b), *SCORER, "--ci", "0.95", "--json"])
    assert json.loads(command.stdout)["ci"] == report["ci"]  # the same questions drawn whole
    chosen = calibcli.threshold(rows, target_accuracy=0.3).to_dict()
    assert chosen["guaranteed"]["one_per_question"]["questions"] == 2 * SAMPLES
    said = run(["threshold", str(a), str(b), *SCORER, "--target-accuracy", "0.3", "--json"])
    assert json.loads(said.stdout)["guaranteed"] == chosen["guaranteed"]


def test_the_api_refuses_a_rerun_of_one_task(tmp_path):
    a = write_log(tmp_path / "a.json", "toy_arithmetic")
    again = write_log(tmp_path / "again.json", "toy_arithmetic", shift=0.05)
    with pytest.raises(InputError, match="duplicate id 1 \\(epoch 1\\)"):
        calibcli.read_predictions([str(a), str(again)], scorer="match")
    pooled = calibcli.read_predictions([str(a), str(again)], scorer="match", all_runs=True)
    assert np.unique(pooled.questions).shape[0] == SAMPLES


def test_compare_pairs_one_task_s_samples_across_two_models_logs(tmp_path):
    base = write_log(tmp_path / "base.json", "toy_arithmetic", model="openai/a")
    new = write_log(tmp_path / "new.json", "inspect_evals/toy_arithmetic", model="openai/b")
    result = run(["compare", str(base), str(new), *SCORER, "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["matched"], report["unmatched_base"], report["unmatched_new"]) == (40, 0, 0)


def test_two_tasks_answers_are_weighed_as_their_rows_say(two_tasks):
    # the figures of every row, by hand: the two tasks' rows pooled one by one
    _, a, b = two_tasks
    conf, right = [], []
    for shift in (0.0, 0.05):
        for sid in range(1, SAMPLES + 1):
            for epoch in range(1, EPOCHS + 1):
                conf.append(math.exp(-((sid * 7 + epoch * 3) % 19) / 10 - shift))
                right.append((sid + epoch) % 2 == 0)
    p, y = np.array(conf), np.array(right, float)
    result = run(["calibrate", str(a), str(b), *SCORER, "--json"])
    report = json.loads(result.stdout)
    assert report["n"] == 80
    assert report["brier"] == pytest.approx(float(np.mean((p - y) ** 2)), abs=1e-12)
    assert report["accuracy"] == pytest.approx(float(y.mean()), abs=1e-12)


@pytest.mark.parametrize(("task", "code"), [("toy_arithmetic", 2), ("other_task", 0)])
def test_a_log_whose_eval_ends_past_its_first_mib_is_keyed_by_its_task(tmp_path, task, code):
    # inspect-ai writes eval before the samples; a large one is read from the whole log
    a = write_log(tmp_path / "a.json", "toy_arithmetic")
    big = write_log(tmp_path / "big.json", task, shift=0.05)
    log = json.loads(big.read_text(encoding="utf-8"))
    log["eval"]["metadata"] = {"pad": "x" * (1 << 20)}
    big.write_text(json.dumps(log), encoding="utf-8")
    result = run(["calibrate", str(a), str(big), *SCORER])
    assert result.exit_code == code, result.stderr
    assert (DOUBLE in result.stderr) is (code == 2)


def test_a_log_larger_than_a_document_still_names_its_task_from_its_head(tmp_path, monkeypatch):
    """A ``.json`` log above the document size limit (read with --max-document-mb) names its
    task, model and epochs from its first MiB, where inspect-ai writes ``eval``: without them
    its samples' ids would carry no task, and its re-runs beside a log that names it would
    not be found."""
    import calibcli.io.documents as documents
    from calibcli.io.inspect_log import log_task_name

    log = write_log(tmp_path / "big.json", "inspect_evals/toy_arithmetic")
    monkeypatch.setattr(documents, "MAX_DOCUMENT_BYTES", log.stat().st_size // 2)
    forget_runs()
    assert log_task_name(str(log)) == "inspect_evals/toy_arithmetic"
