"""lm-eval v0.4.3+ writes each model's files into a folder named ``org__name``; without the
run's results file beside them, that folder is all that names the model. ``--by model`` reads
it, and so does the check that no gate passes on several models' rows: two models' folders
read together are said and fail every gate, one model's folders are not. The expected messages
are written here from the folder names."""

from __future__ import annotations

import json
from pathlib import Path

from harness import run

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
SAMPLES = f"samples_toy_mc_science_{STAMP}.jsonl"
MIXED = "the rows are several models' (see the warning); read one model's files at a time"
ADVICE = (
    "as their runs name them: the figures mix the models, and a gate on them fails; read one "
    "model's files at a time (calibcli compare sets two side by side)"
)


def shifted(line, by):
    """A samples row with its first choice's loglikelihood lowered by ``by``: another model's
    (lowering every choice alike would leave each softmax confidence as it was, to the last
    digits: the same rows, which are refused as a copy)."""
    row = json.loads(line)
    row["filtered_resps"] = [
        [str(float(ll) - (by if k == 0 else 0.0)), greedy]
        for k, (ll, greedy) in enumerate(row["filtered_resps"])
    ]
    return json.dumps(row) + "\n"


def model_folders(tmp_path, *folders):
    """One folder per name, each holding the committed run's samples file (its first choices'
    loglikelihoods lowered by 0.1 more in each folder, so that no two hold the same rows) and no
    results."""
    lines = (LM_EVAL / SAMPLES).read_text(encoding="utf-8").splitlines()
    out = []
    for i, folder in enumerate(folders):
        where = tmp_path / f"run{i}" / folder
        where.mkdir(parents=True)
        (where / SAMPLES).write_text("".join(shifted(line, 0.1 * i) for line in lines))
        out.append(where)
    return out


def test_two_models_folders_fail_every_gate(tmp_path):
    a, b = model_folders(tmp_path, "org__mA", "org__mB")
    result = run(["calibrate", a, b, "--json", "--max-ece", "0.99", "--min-rows", "1"])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    warning = f"rows of 2 models are pooled: 'org/mA' ({SAMPLES}), 'org/mB' ({SAMPLES}), {ADVICE}"
    assert warning in report["warnings"]
    closed = [c["metric"] for c in report["gate"]["checks"] if c.get("reason") == MIXED]
    assert closed == ["ece", "n"]


def test_by_model_keeps_the_folders_apart(tmp_path):
    a, b = model_folders(tmp_path, "org__mA", "org__mB")
    result = run(["calibrate", a, b, "--by", "model", "--max-ece", "0.99", "--json"])
    report = json.loads(result.stdout)
    assert sorted(report["groups"]) == ["org/mA", "org/mB"]
    assert not [w for w in report["warnings"] if "models are pooled" in w]
    # the gate reads the pooled figures alone, which mix the two models' groups: it fails
    # closed; with --gate-each each model's group is gated too, and it passes
    assert result.exit_code == 1, result.stderr
    (check,) = report["gate"]["checks"]
    assert check["passed"] is False and "pool several models' rows" in check["reason"]
    each = run(["calibrate", a, b, "--by", "model", "--max-ece", "0.99", "--gate-each", "-q"])
    assert each.exit_code == 0, each.stderr


def test_one_model_s_folders_are_not_said(tmp_path):
    # two tasks of one model, each in its own run's folder named for the model
    folders = []
    for i, task in enumerate(("toy_mc_science", "toy_mc_trivia")):
        where = tmp_path / f"run{i}" / "org__mA"
        where.mkdir(parents=True)
        name = f"samples_{task}_{STAMP}.jsonl"
        (where / name).write_bytes((LM_EVAL / name).read_bytes())
        folders.append(where)
    result = run(["calibrate", *folders, "--json", "--max-ece", "0.99"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert not [w for w in report["warnings"] if "models are pooled" in w]
    assert not [c for c in report["gate"]["checks"] if c.get("reason") == MIXED]


def test_summaries_of_two_models_folders_are_said(tmp_path):
    parts = []
    for folder in model_folders(tmp_path, "org__mA", "org__mB"):
        part = tmp_path / f"{folder.name}.cbs"
        made = run(["summarize", folder, "-o", part, "-q"])
        assert made.exit_code == 0, made.stderr
        parts.append(part)
    result = run(["calibrate", *parts, "--json", "--max-ece", "0.99"])
    assert result.exit_code == 1, result.stderr
    closed = [
        c["metric"] for c in json.loads(result.stdout)["gate"]["checks"] if c.get("reason") == MIXED
    ]
    assert closed == ["ece"]
