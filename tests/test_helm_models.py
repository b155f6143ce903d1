"""The model a HELM run ran, as its run folder says: the folder name's ``model=`` argument
(``openai_gpt2``, HELM writing ``/`` as ``_``), else ``run_spec.json``'s ``adapter_spec.model``
(``openai/gpt2``) spelled alike, so one model is one name with or without its run spec. Two
models' runs of one scenario are read as two models' rows, as other formats' runs are: pooled,
a warning names each model and its run folder and every gate fails closed; ``--by model``
groups and gates each; a calibrator records the model it was fitted on. The runs are written in
HELM's layout (tests/helm_layout.py), the figures computed with numpy."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from harness import run
from helm_layout import choice_rows, choice_run, ece, text_entry, write_run

GPT2 = "mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2"
PYTHIA = "mmlu:subject=anatomy,method=multiple_choice_joint,model=eleutherai_pythia-1b"
TEXTS, LM = "twitter_aae:demographic=aa", "language_modeling"


@pytest.fixture
def two_models(tmp_path):
    """gpt2's calibrated run (400 instances) and pythia's overconfident one (60) of one
    scenario, with their (confidences, outcomes)."""
    good = choice_rows(400, 1)
    bad = choice_rows(60, 2, shift=0.45)
    files = (
        choice_run(tmp_path, GPT2, *good, model="openai/gpt2"),
        choice_run(tmp_path, PYTHIA, *bad, model="eleutherai/pythia-1b"),
    )
    return files, good, bad


def report(args):
    result = run([*map(str, args), "--json"])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout), result


def test_the_model_is_the_folder_s_else_run_spec_json_s(tmp_path):
    from calibcli.io.helm_spec import helm_model

    rows = choice_rows(10, 3)
    named = choice_run(tmp_path, GPT2, *rows, model="openai/gpt2")
    assert helm_model(named) == "openai_gpt2"  # spelled as HELM names its run folder
    bare = choice_run(tmp_path / "copy", GPT2, *rows, spec=False)
    assert helm_model(bare) == "openai_gpt2"  # the folder name's, as HELM wrote it
    # a folder not named as HELM names a run: the run spec's model, spelled alike
    plain = write_run(tmp_path / "plain", "anatomy-run", [], "openai/gpt2")
    assert helm_model(plain) == "openai_gpt2"
    # a file copied out of its run folder names no model
    (tmp_path / "out").mkdir()
    alone = tmp_path / "out" / "per_instance_stats.json"
    shutil.copy(bare, alone)
    assert helm_model(str(alone)) is None
    result = run(["calibrate", alone, "--by", "model"])
    assert result.exit_code == 2
    assert "the HELM file's run names no model" in result.stderr


@pytest.mark.parametrize("all_runs", [[], ["--all-runs"]])
def test_two_models_pooled_fail_every_gate_closed(two_models, all_runs):
    files, good, bad = two_models
    pooled = [np.concatenate([a, b]) for a, b in zip(good, bad, strict=True)]
    threshold = 0.15
    assert ece(*pooled) < threshold < ece(*bad)  # the pooled figure alone would pass
    body, result = report(["calibrate", *files, *all_runs, "--max-ece", threshold])
    assert result.exit_code == 1
    assert body["n"] == 460
    assert body["ece"] == pytest.approx(ece(*pooled), abs=1e-9)
    said = [w for w in body["warnings"] if w.startswith("rows of 2 models are pooled")]
    assert said == [
        f"rows of 2 models are pooled: 'eleutherai_pythia-1b' ({PYTHIA}/per_instance_stats.json"
        f"), 'openai_gpt2' ({GPT2}/per_instance_stats.json), as their runs name them: the "
        "figures mix the models, and a gate on them fails; read one model's files at a time "
        "(calibcli compare sets two side by side)"
    ]
    # neither run's rows were taken for re-runs of the other's
    assert not any("re-runs are pooled" in w for w in body["warnings"])


def test_by_model_gates_each_model(two_models):
    files, good, bad = two_models
    body, result = report(["calibrate", *files, "--by", "model", "--gate-each", "--max-ece", 0.15])
    assert result.exit_code == 1
    groups = body["groups"]
    assert {name: g["n"] for name, g in groups.items()} == {
        "openai_gpt2": 400,
        "eleutherai_pythia-1b": 60,
    }
    assert groups["openai_gpt2"]["ece"] == pytest.approx(ece(*good), abs=1e-9)
    assert groups["eleutherai_pythia-1b"]["ece"] == pytest.approx(ece(*bad), abs=1e-9)
    assert "ece in group 'eleutherai_pythia-1b'" in result.stderr
    # each model's group below the threshold: the gate passes
    body, result = report(["calibrate", *files, "--by", "model", "--gate-each", "--max-ece", 0.6])
    assert result.exit_code == 0, result.stderr


def test_summaries_of_two_models_fail_closed(two_models, tmp_path):
    files, _, _ = two_models
    parts = []
    for k, f in enumerate(files):
        parts.append(tmp_path / f"s{k}.cbs")
        result = run(["summarize", f, "-o", parts[-1], "-q"])
        assert result.exit_code == 0, result.stderr
    result = run(["calibrate", *parts, "--max-ece", 0.15, "-q"])
    assert result.exit_code == 1
    assert "the rows are several models'" in result.stderr


def test_perplexity_of_two_models_fails_closed(tmp_path):
    low = [text_entry(i, -20.0, 20, 80) for i in range(300)]  # 1 nat a token
    high = [text_entry(i, -100.0, 20, 80) for i in range(30)]  # 5 nats a token
    files = [
        write_run(tmp_path, f"{TEXTS},model=openai_gpt2", low, "openai/gpt2", method=LM),
        write_run(
            tmp_path,
            f"{TEXTS},model=eleutherai_pythia-70m",
            high,
            "eleutherai/pythia-70m",
            method=LM,
        ),
    ]
    expected = np.exp((300 * 20.0 + 30 * 100.0) / (330 * 20))
    assert expected < 10 < np.exp(5.0)
    result = run(["perplexity", *files, "--all-runs", "--max-perplexity", 10, "--json"])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["perplexity"] == pytest.approx(expected, rel=1e-12)
    assert any(w.startswith("rows of 2 models are pooled") for w in body["warnings"])


def test_a_calibrator_fitted_on_one_model_fails_closed_on_another(tmp_path):
    gpt2 = choice_run(tmp_path, GPT2, *choice_rows(600, 11, 0.25), model="openai/gpt2")
    pythia = choice_run(tmp_path, PYTHIA, *choice_rows(600, 12, 0.25), model="eleutherai/pythia-1b")
    made = tmp_path / "cal.json"
    result = run(["fit", gpt2, "--method", "platt", "-o", made, "-q"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(made.read_text())["fitted_on"]["models"] == ["openai_gpt2"]
    result = run(["calibrate", pythia, "--calibrator", made, "--max-ece", 0.5, "-q"])
    assert result.exit_code == 1
    assert (
        "the calibrator was fitted on rows of model 'openai_gpt2'; these rows are of model "
        "'eleutherai_pythia-1b'"
    ) in result.stderr
    # on its own model's held-out rows (another subject), nothing is said
    held = choice_run(
        tmp_path, GPT2.replace("anatomy", "astronomy"), *choice_rows(300, 13, 0.25), "openai/gpt2"
    )
    result = run(["calibrate", held, "--calibrator", made, "--max-ece", 0.5, "-q"])
    assert result.exit_code == 0, result.stderr
    assert "another model" not in result.stderr


def test_a_summary_whose_helm_ids_carry_no_model_is_refused_beside_a_new_one(tmp_path):
    """A summary of format version 4 holds a HELM run's instance ids without its scenario and
    model: beside a summary written now, a re-run of the scenario they share went unseen."""
    import struct

    first = choice_run(tmp_path / "a", GPT2, *choice_rows(50, 1), model="openai/gpt2")
    rerun = choice_run(tmp_path / "b", GPT2, *choice_rows(50, 3), model="openai/gpt2")
    old, new = tmp_path / "old.cbs", tmp_path / "new.cbs"
    for path, out in ((first, old), (rerun, new)):
        made = run(["summarize", path, "-o", str(out), "-q"])
        assert made.exit_code == 0, made.stderr
    data = bytearray(old.read_bytes())
    assert struct.unpack_from("<I", data, 16)[0] == 5
    struct.pack_into("<I", data, 16, 4)
    old.write_bytes(bytes(data))
    line = run(["merge", str(old), str(new), "-o", str(tmp_path / "m.cbs"), "-q"]).stderr
    assert "holds ids of inspect-ai, HELM or OpenAI evals rows without their run's model" in line
    assert not (tmp_path / "m.cbs").exists()
    both_new = run(["merge", str(new), str(new), "-o", str(tmp_path / "m2.cbs"), "-q"])
    assert both_new.exit_code == 2  # the same summary twice: a row in two parts
