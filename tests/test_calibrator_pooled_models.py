"""A calibrator fitted on several models' rows pooled lets no gate pass after it.

Rows of several models read together fail every gate: their figures mix the models. A map
fitted on such rows is a map of their mix, none of theirs, so the figures after it gate nothing
either, as after a map of another model. The file lists the models as the check on pooled
models counts them: a run without model arguments (lm-eval before v0.4.3 names its file
``_<task>.jsonl``) is a model of its own beside a named one. The expected messages are written
here from the models' names, never taken from calibcli's output."""

from __future__ import annotations

import json
import random
import warnings

import pytest
from harness import run

import calibcli

STAMP = "2026-07-08T16-04-34.219874"
TASK = "toy_qa"

GATE = (
    "the calibrator was fitted on several models' rows pooled (see the warning): fit one "
    "calibrator per model"
)


def pooled_warning(shown: str, then: str = "so every gate on the figures after it fails") -> str:
    """The warning about a calibrator fitted on the two models ``shown``, as the text says."""
    return (
        f"the calibrator was fitted on the rows of 2 models pooled: {shown}, as their runs name "
        "them: a map of several models' confidences pooled is none of theirs, "
        f"{then}; fit one calibrator per model (on one model's files, or with --by model)"
    )


def samples(n: int, seed: int, sharp: float, start: int) -> str:
    """``n`` lm-eval multiple-choice rows of four options, the loglikelihoods drawn from
    random.Random(seed): the gold option's raised, all scaled by ``sharp`` (larger: a model
    surer of its answers); doc ids from ``start``."""
    rng = random.Random(seed)
    lines = []
    for i in range(start, start + n):
        gold = rng.randrange(4)
        ll = [rng.gauss(0, 1) * sharp for _ in range(4)]
        ll[gold] += rng.gauss(1, 1) * sharp
        top = max(ll)
        ll = [round(v - top - 0.05, 4) for v in ll]
        row = {
            "doc_id": i,
            "doc": {"question": f"question {i}?", "choices": list("abcd"), "gold": gold},
            "target": gold,
            "arguments": [[f"question {i}?", f" {c}"] for c in "abcd"],
            "resps": [[[v, False]] for v in ll],
            "filtered_resps": [[v, False] for v in ll],
            "acc": float(ll.index(max(ll)) == gold),
        }
        lines.append(json.dumps(row) + "\n")
    return "".join(lines)


def named_run(folder, model: str, *, seed: int, sharp: float, start: int):
    """An lm-eval v0.4.3+ run of ``model`` (its results file's ``model_name``) in ``folder``."""
    folder.mkdir(parents=True)
    results = {"results": {TASK: {"acc,none": 0.5}}, "configs": {TASK: {}}, "model_name": model}
    (folder / f"results_{STAMP}.json").write_text(json.dumps(results))
    body = samples(200, seed, sharp, start)
    (folder / f"samples_{TASK}_{STAMP}.jsonl").write_text(body)
    return folder


def old_run(folder, args: str, *, seed: int, sharp: float, start: int):
    """An lm-eval samples file named as before v0.4.3: ``<model arguments>_<task>.jsonl``
    (``_<task>.jsonl`` for a run without model arguments)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{args}_{TASK}.jsonl"
    path.write_text(samples(200, seed, sharp, start))
    return path


@pytest.fixture
def runs(tmp_path):
    """Model A's and model B's runs to fit on (B far less sure of its answers), model A's
    held-out run, and calibrators fitted on A and B pooled, and on A alone."""
    made = {
        "a": named_run(tmp_path / "fit" / "a", "org/model-A", seed=4, sharp=3.0, start=0),
        "b": named_run(tmp_path / "fit" / "b", "org/model-B", seed=5, sharp=0.6, start=500),
        "a_test": named_run(tmp_path / "a_test", "org/model-A", seed=2, sharp=3.0, start=1000),
    }
    for name, given in (("pooled", [made["a"], made["b"]]), ("one", [made["a"]])):
        out = tmp_path / f"{name}.json"
        fitted = run(["fit", *given, "--method", "platt", "-o", out, "-q"])
        assert fitted.exit_code == 0, fitted.stderr
        made[name] = out
    return made


def fitted_models(path) -> list[str]:
    return json.loads(path.read_text())["fitted_on"]["models"]


def calibrate(test, cal, *extra):
    result = run(["calibrate", test, "--calibrator", cal, "--max-ece", "0.9", *extra, "--json"])
    assert result.exit_code in (0, 1), result.stderr
    return result, json.loads(result.stdout)


PAIR = "'org/model-A', 'org/model-B'"


def test_the_pooled_rows_models_are_recorded(runs):
    assert fitted_models(runs["pooled"]) == ["org/model-A", "org/model-B"]
    assert fitted_models(runs["one"]) == ["org/model-A"]


def test_a_gate_after_a_map_of_two_models_pooled_fails_closed(runs):
    result, body = calibrate(runs["a_test"], runs["pooled"])
    assert result.exit_code == 1
    (check,) = body["gate"]["checks"]
    assert check["reason"] == GATE
    assert body["ece"] < 0.9  # the figure alone would pass
    assert pooled_warning(PAIR) in body["warnings"]
    assert f"warning: {pooled_warning(PAIR)}" in result.stderr.splitlines()
    assert f"gate failed: ece: {GATE}; cannot support --max-ece 0.9" in result.stderr


def test_a_calibrator_of_one_model_still_passes(runs):
    result, body = calibrate(runs["a_test"], runs["one"])
    assert result.exit_code == 0, result.stderr
    assert body["gate"]["passed"] is True
    assert not [w for w in body["warnings"] if "models pooled" in w]


def test_the_threshold_gate_after_it_fails_closed(runs):
    gated = ["--method", "sgr", "--target-accuracy", "0.5", "--delta", "0.5"]
    args = ["threshold", runs["a_test"], *gated, "--min-coverage", "0.01", "--json", "-q"]
    one = run([*args, "--calibrator", runs["one"]])
    assert one.exit_code == 0, one.stderr  # the coverage passes after one model's map
    result = run([*args, "--calibrator", runs["pooled"]])
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    (check,) = body["gate"]["checks"]
    assert check["value"] >= 0.01 and check["reason"] == GATE
    assert pooled_warning(PAIR) in body["warnings"]


def test_reliability_has_no_gate_and_warns(runs):
    result = run(["reliability", runs["a_test"], "--calibrator", runs["pooled"], "--json"])
    assert result.exit_code == 0, result.stderr
    assert pooled_warning(PAIR) in json.loads(result.stdout)["warnings"]


def test_a_run_without_model_arguments_is_a_model_beside_a_named_one(tmp_path):
    # the check on pooled models counts the unnamed run as a model of its own: the file does
    unnamed = old_run(tmp_path / "fit", "", seed=4, sharp=3.0, start=0)
    named = old_run(tmp_path / "fit", "pretrained=org__model-a", seed=5, sharp=0.6, start=500)
    read = run(["calibrate", unnamed, named, "--max-ece", "0.99", "-q"])
    assert read.exit_code == 1  # their rows read together fail the gate
    cal = tmp_path / "cal.json"
    assert run(["fit", unnamed, named, "--method", "platt", "-o", cal, "-q"]).exit_code == 0
    assert fitted_models(cal) == ["", "pretrained=org__model-a"]
    shown = "a run without model arguments, 'pretrained=org__model-a'"
    for seed, args in ((2, ""), (3, "pretrained=org__model-a")):
        test = old_run(tmp_path / f"test{seed}", args, seed=seed, sharp=3.0, start=1000)
        result, body = calibrate(test, cal)
        assert result.exit_code == 1
        assert body["gate"]["checks"][0]["reason"] == GATE
        assert pooled_warning(shown) in body["warnings"]


def test_an_unnamed_run_alone_records_no_model(tmp_path):
    unnamed = old_run(tmp_path / "fit", "", seed=4, sharp=3.0, start=0)
    cal = tmp_path / "cal.json"
    assert run(["fit", unnamed, "--method", "platt", "-o", cal, "-q"]).exit_code == 0
    assert "models" not in json.loads(cal.read_text())["fitted_on"]
    test = old_run(tmp_path / "test", "", seed=2, sharp=3.0, start=1000)
    result, _ = calibrate(test, cal)
    assert result.exit_code == 0, result.stderr


def test_a_map_per_model_group_gates_each_models_rows(runs, tmp_path):
    cal = tmp_path / "by_model.json"
    fitted = run(["fit", runs["a"], runs["b"], "--by", "model", "--method", "platt", "-o", cal])
    assert fitted.exit_code == 0, fitted.stderr
    # read --by model, model A's rows take model A's own map
    result, _ = calibrate(runs["a_test"], cal, "--by", "model")
    assert result.exit_code == 0, result.stderr
    # read without --by, every row takes the map pooled over both models
    result, body = calibrate(runs["a_test"], cal)
    assert result.exit_code == 1
    assert body["gate"]["checks"][0]["reason"] == GATE


def test_a_file_without_models_is_applied_as_before(runs, tmp_path):
    body = json.loads(runs["pooled"].read_text())
    del body["fitted_on"]["models"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(body))
    result, _ = calibrate(runs["a_test"], old)
    assert result.exit_code == 0, result.stderr


def test_the_api_records_the_models_and_warns_as_it_maps(runs):
    pooled = calibcli.read_predictions([runs["a"], runs["b"]])
    cal = calibcli.fit(pooled, method="platt")
    assert json.loads(cal.to_json())["fitted_on"]["models"] == ["org/model-A", "org/model-B"]
    test = calibcli.read_predictions(runs["a_test"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal.apply(test)
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert said == [pooled_warning(PAIR, "gate nothing on them")]
    # a calibrator of model A alone says nothing of model A's rows
    one = calibcli.fit(calibcli.read_predictions(runs["a"]), method="platt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        one.apply(test)
    assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)] == []


def test_the_rendered_page_names_a_run_without_model_arguments(tmp_path):
    unnamed = old_run(tmp_path / "fit", "", seed=4, sharp=3.0, start=0)
    named = old_run(tmp_path / "fit", "pretrained=org__model-a", seed=5, sharp=0.6, start=500)
    cal, page = tmp_path / "mixed.json", tmp_path / "mixed.html"
    assert run(["fit", unnamed, named, "--method", "platt", "-o", cal, "-q"]).exit_code == 0
    assert run(["render", cal, "--html", page]).exit_code == 0
    shown = page.read_text(encoding="utf-8")
    assert "(a run without model arguments), pretrained=org__model-a" in shown


def test_apply_warns_when_it_writes_a_map_of_two_models_pooled(runs, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"confidence": c / 10}) + "\n" for c in range(1, 10)))
    said = f"warning: {pooled_warning(PAIR, 'gate nothing on them')}"
    pooled = run(["apply", runs["pooled"], rows, "-o", tmp_path / "pooled.jsonl"])
    assert pooled.exit_code == 0, pooled.stderr
    assert said in pooled.stderr.splitlines()
    one = run(["apply", runs["one"], rows, "-o", tmp_path / "one.jsonl"])
    assert one.exit_code == 0, one.stderr
    assert "models pooled" not in one.stderr
