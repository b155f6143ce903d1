"""Re-runs of an lm-eval task pooled with --all-runs answer each document once per run: the rows
keep their figures, but the gates count questions, a warning says the rows repeat them, and the
bootstrap draws a question's rows together, as it does for an inspect-ai run's epochs.

The runs are copies of the committed real lm-eval run (``toy_mc_trivia``: 40 documents, doc_id
0 to 39), so the counts are known without calibcli: three runs hold 3 x 40 = 120 rows and 40
questions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from harness import run
from test_epochs import captured

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMPS = ("2026-11-28T09-00-00.000001", "2026-11-29T08-00-00", "2026-11-29T18-50-52.260809")
SOURCE = FIXTURES / f"samples_toy_mc_trivia_{STAMPS[-1]}.jsonl"
DOCUMENTS = 40  # rows of the committed run, one per document
DRAWN = "the figures weigh every answer, and the bootstrap draws each question's answers together"
OPENING = (
    "lm-eval re-runs of a task are pooled (--all-runs), so each document is answered several "
    "times: "
)


def runs_folder(tmp_path: Path, documents: int = DOCUMENTS, folder: str = "out") -> Path:
    """A run folder holding three runs of one task (each the committed run's first
    ``documents`` rows, as a deterministic evaluation writes them) and the results file."""
    out = tmp_path / folder
    out.mkdir(parents=True)
    lines = SOURCE.read_text().splitlines(keepends=True)[:documents]
    for stamp in STAMPS:
        (out / f"samples_toy_mc_trivia_{stamp}.jsonl").write_text("".join(lines))
    shutil.copy(FIXTURES / f"results_{STAMPS[-1]}.json", out / f"results_{STAMPS[-1]}.json")
    return out


def report(args, code):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def warning_of(names: list[str]) -> str:
    shown = ", ".join(f"{name} (3 runs)" for name in names)
    return f"{OPENING}{shown}: {DRAWN}"


def test_min_rows_counts_each_document_once(tmp_path):
    out = runs_folder(tmp_path)
    failed = report(["calibrate", out, "--all-runs", "--min-rows", "41"], 1)
    assert failed["n"] == 3 * DOCUMENTS  # the figures are the pooled rows'
    (check,) = failed["gate"]["checks"]
    assert check["reason"] == (
        "the 120 rows repeat their questions (see the warning) and hold 40, fewer than 41; each "
        "question counts once"
    )
    names = [f"samples_toy_mc_trivia_{stamp}.jsonl" for stamp in STAMPS]
    assert warning_of(names) in failed["warnings"]
    passed = report(["calibrate", out, "--all-runs", "--min-rows", "40"], 0)
    assert passed["gate"]["passed"] is True


def test_the_pooled_figures_are_every_row_s(tmp_path):
    # byte-identical re-runs are pooled as before: each figure is one run's
    out = runs_folder(tmp_path)
    one = report(["calibrate", out / f"samples_toy_mc_trivia_{STAMPS[0]}.jsonl"], 0)
    pooled = report(["calibrate", out, "--all-runs"], 0)
    assert pooled["n"] == 120
    for key in ("accuracy", "ece", "brier", "nll", "auroc"):
        assert pooled[key] == pytest.approx(one[key], rel=1e-12), key


def test_an_upper_gate_on_too_few_questions_fails_closed(tmp_path):
    out = runs_folder(tmp_path, documents=20)  # 60 rows, but 20 questions
    args = ["calibrate", out, "--all-runs", "--max-brier", "0.99", "--gate-on", "upper"]
    body = report([*args, "--bootstrap", "200"], 1)
    assert body["n"] == 60
    (check,) = body["gate"]["checks"]
    assert check["reason"].startswith(
        "only 20 questions (the bootstrap draws each with all its rows): the upper end"
    )


def test_the_bootstrap_draws_each_document_s_runs_together(tmp_path, monkeypatch):
    calls = captured(monkeypatch, "bootstrap_intervals")
    out = runs_folder(tmp_path)
    result = run(["calibrate", out, "--all-runs", "--ci", "0.95", "--bootstrap", "200", "-q"])
    assert result.exit_code == 0, result.stderr
    right, wrong = calls[0][1]["clusters"]
    labels = np.concatenate([right, wrong])
    # 40 questions, each the three runs' rows
    assert sorted(np.unique(labels, return_counts=True)[1].tolist()) == [3] * DOCUMENTS


def test_poisson_weights_keyed_by_document_give_the_one_run_intervals(tmp_path):
    # the runs' copies of a row weigh its question three times, under the weight its key
    # (task and doc_id) gets in one run: every figure but the debiased RMSCE (whose correction
    # counts rows) and the smooth ECE (relplot moves it in the sixth digit) is one run's
    out = runs_folder(tmp_path)
    args = ["--ci", "0.95", "--bootstrap-scheme", "poisson"]
    one = report(["calibrate", out / f"samples_toy_mc_trivia_{STAMPS[-1]}.jsonl", *args], 0)
    pooled = report(["calibrate", out, "--all-runs", *args], 0)
    for key, interval in one["ci"].items():
        if key in ("rmsce_debiased", "smece", "smece_bandwidth") or interval[0] is None:
            continue
        assert pooled["ci"][key] == pytest.approx(interval, rel=1e-9, abs=1e-12), key


def test_a_summary_of_pooled_runs_counts_questions_away_from_them(tmp_path):
    out = runs_folder(tmp_path)
    summary = tmp_path / "away" / "runs.cbs"
    summary.parent.mkdir()
    made = run(["summarize", out, "--all-runs", "-o", summary, "-q"])
    assert made.exit_code == 0, made.stderr
    shutil.rmtree(out)
    from calibcli.summaries.encoding import from_bytes

    sources = from_bytes(summary.read_bytes()).sources
    assert [s.epochs for s in sources if s.skipped is None] == [3, 3, 3]
    body = report(["calibrate", summary, "--min-rows", "41"], 1)
    (check,) = body["gate"]["checks"]
    # a summary keeps no row's question: its rows over the runs, 120 / 3
    assert check["reason"] == (
        "the 120 rows repeat their questions (see the warning) and hold as few as 40, fewer "
        "than 41; each question counts once"
    )
    assert any(w.startswith(OPENING) for w in body["warnings"])


def test_the_api_counts_questions_as_the_command_does(tmp_path):
    import calibcli

    out = runs_folder(tmp_path)
    rows = calibcli.read_predictions(out, all_runs=True)
    assert len(rows) == 120 and len(np.unique(rows.questions)) == DOCUMENTS
    api = calibcli.calibrate(rows, min_rows=41, max_brier=0.99, bootstrap=200, gate_on="upper")
    gates = ["--min-rows", "41", "--max-brier", "0.99", "--bootstrap", "200", "--gate-on", "upper"]
    command = run(["calibrate", out, "--all-runs", *gates, "--json", "-q"])
    assert command.exit_code == 1
    assert api.to_json() == command.stdout
    reasons = [c.get("reason") for c in json.loads(api.to_json())["gate"]["checks"]]
    assert "hold 40, fewer than 41" in reasons[-1]


def test_two_models_runs_of_a_task_are_not_re_runs(tmp_path):
    # a row's question is its task and doc_id under the model its path names: one run of
    # each of two models repeats no question (their pooled rows fail every gate on their own)
    for model in ("org__model-a", "org__model-b"):
        folder = tmp_path / model
        folder.mkdir()
        shutil.copy(SOURCE, folder / SOURCE.name)
    body = report(
        ["calibrate", tmp_path / "org__model-a", tmp_path / "org__model-b", "--all-runs"], 0
    )
    assert body["n"] == 80
    assert not [w for w in body["warnings"] if w.startswith(OPENING)]


def test_one_run_is_not_said(tmp_path):
    out = runs_folder(tmp_path)
    newest = out / f"samples_toy_mc_trivia_{STAMPS[-1]}.jsonl"
    body = report(["calibrate", newest, "--all-runs", "--min-rows", "40"], 0)
    assert not [w for w in body["warnings"] if w.startswith(OPENING)]


@pytest.mark.parametrize("scheme", ["multinomial", "poisson"])
def test_an_inspect_log_s_epochs_are_drawn_together_with_all_runs_too(tmp_path, scheme):
    # --all-runs pools re-runs; it does not make a log's epochs independent answers: its
    # intervals are those without it (drawn by question), not narrower (drawn by row)
    from test_epochs import epochs_log

    log = epochs_log(tmp_path, "twice.json", copies=3)
    ci = ["--scorer", "match", "--ci", "0.95", "--bootstrap", "200", "--seed", "1"]
    ci += ["--bootstrap-scheme", scheme]
    alone = report(["calibrate", log, *ci], 0)
    pooled = report(["calibrate", log, *ci, "--all-runs"], 0)
    assert pooled["n"] == alone["n"] == 120  # 20 samples x 3 copies x 2 epochs
    for figure in ("ece", "brier", "accuracy"):
        assert pooled["ci"][figure] == alone["ci"][figure], figure


def test_a_group_that_repeats_nothing_fails_its_floor_on_its_rows(tmp_path):
    # beside three pooled runs of trivia (120 rows, 40 documents), one run of science (48
    # rows, one each): science's floor fails on its rows, not as rows repeating questions
    out = runs_folder(tmp_path)
    science = f"samples_toy_mc_science_{STAMPS[-1]}.jsonl"
    shutil.copy(FIXTURES / science, out / science)
    gate = ["--all-runs", "--by", "task", "--gate-each", "--min-rows", "49"]
    result = run(["calibrate", out, *gate, "-q"])
    assert result.exit_code == 1, result.stderr
    assert "gate failed: n in group 'toy_mc_science' = 48 is below --min-rows 49" in result.stderr
    assert "the 48 rows repeat their questions" not in result.stderr
    trivia = run(["calibrate", out, *gate[:-1], "41", "-q"])
    assert "the 120 rows repeat their questions (see the warning) and hold 40" in trivia.stderr


def test_each_file_s_own_figures_are_those_of_the_file_alone(tmp_path):
    # pooled, the runs count as epochs of one another; each file alone answers each document
    # once, and its per-file intervals are those of the file read alone
    out = runs_folder(tmp_path)
    pooled = report(["calibrate", out, "--all-runs"], 0)
    assert len(pooled["per_file"]) == 3
    for path, figures in pooled["per_file"].items():
        alone = report(["calibrate", path], 0)
        assert figures["reliability"] == alone["reliability"], path
