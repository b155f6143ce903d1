"""The inspect-ai scorer a calibrator records, and the one the rows it maps are graded by, is
the scorer the reader used: ``--scorer`` as given, else the one scorer each log's samples hold.
So a log graded by another scorer than the fitted rows is named whether or not ``--scorer`` was
typed, on fit, calibrate --calibrator, threshold --calibrator and ``Calibrator.apply`` alike; a
calibrator that records none (scorer null) is applied as before. Also: the model ``""`` of an
lm-eval run without model arguments names no model, and a temperature at the upper end of its
range over lm-eval choices sends each row to about 1/k."""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path

import pytest
from harness import run

import calibcli

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOG = FIXTURES / "inspect_ai" / "toy_arithmetic.json"  # 20 samples, scorers match, exact_number
OLD_NAMES = FIXTURES / "lm_eval_old_names"
OTHER = (
    "the calibrator was fitted on rows graded by --scorer match; these rows are graded by "
    "--scorer model_graded_fact: its figures judge the map by another notion of a right answer"
)


def _graded(scores: dict, scorer: str) -> dict:
    """A sample's scores as a log of one scorer, ``scorer``, holds them: match's verdicts."""
    return {scorer: scores["match"]}


def one_scorer(path: Path, scorer: str) -> Path:
    """The toy log with one scorer, ``scorer``, whose verdicts are match's (its results name
    it alone)."""
    log = json.loads(LOG.read_text())
    for sample in log["samples"]:
        sample["scores"] = _graded(sample["scores"], scorer)
    log["eval"]["eval_id"] = f"{path.stem}-{scorer}"  # each log a run of its own
    kept = dict(log["results"]["scores"][0], name=scorer, scorer=scorer)
    log["results"]["scores"] = [kept]
    path.write_text(json.dumps(log))
    return path


def one_scorer_archive(path: Path, scorer: str) -> Path:
    """:func:`one_scorer`'s log as an ``.eval`` archive: its header, then a member per sample
    (deflated, as older inspect-ai versions wrote them)."""
    log = json.loads(one_scorer(path.with_suffix(".json"), scorer).read_text())
    samples = log.pop("samples")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(log))
        for sample in samples:
            name = f"samples/{sample['id']}_epoch_{sample['epoch']}.json"
            archive.writestr(name, json.dumps(sample))
    return path


@pytest.fixture
def logs(tmp_path):
    return {
        "match": one_scorer(tmp_path / "match.json", "match"),
        "graded": one_scorer(tmp_path / "graded.json", "model_graded_fact"),
    }


def fit(tmp_path, name, *args):
    out = tmp_path / name
    result = run(["fit", *args, "--method", "platt", "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    return out


def warnings_of(*args):
    result = run([*args, "--json", "-q"])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)["warnings"]


def test_a_fit_without_scorer_records_the_one_its_samples_hold(tmp_path, logs):
    cal = fit(tmp_path, "cal.json", logs["match"])
    assert json.loads(cal.read_text())["fitted_on"]["scorer"] == "match"
    archive = one_scorer_archive(tmp_path / "archive.eval", "model_graded_fact")
    cal = fit(tmp_path, "eval.json", archive)
    assert json.loads(cal.read_text())["fitted_on"]["scorer"] == "model_graded_fact"


@pytest.mark.parametrize("typed", [(), ("--scorer", "match")], ids=["found", "typed"])
def test_rows_of_another_scorer_are_named_without_scorer_typed(tmp_path, logs, typed):
    cal = fit(tmp_path, "cal.json", logs["match"], *typed)
    said = warnings_of("calibrate", logs["graded"], "--calibrator", cal, "--max-ece", "0.5")
    assert OTHER in said
    said = warnings_of("threshold", logs["graded"], "--calibrator", cal, "--target-accuracy", "0.5")
    assert OTHER in said
    # typed on the side scored, it is the same scorer as found
    said = warnings_of(
        "calibrate", logs["graded"], "--scorer", "model_graded_fact", "--calibrator", cal
    )
    assert OTHER in said


def test_rows_of_the_same_scorer_say_nothing_of_it(tmp_path, logs):
    cal = fit(tmp_path, "cal.json", logs["match"])
    said = warnings_of("calibrate", LOG, "--scorer", "match", "--calibrator", cal)
    assert not [w for w in said if "--scorer" in w]


def test_a_calibrator_recording_no_scorer_is_applied_as_before(tmp_path, logs):
    cal = fit(tmp_path, "cal.json", logs["match"])
    body = json.loads(cal.read_text())
    body["fitted_on"]["scorer"] = None  # as written without --scorer before it was found
    cal.write_text(json.dumps(body))
    said = warnings_of("calibrate", logs["graded"], "--calibrator", cal)
    assert not [w for w in said if "--scorer" in w]


def test_logs_of_two_scorers_record_none(tmp_path, logs):
    cal = fit(tmp_path, "cal.json", logs["match"], logs["graded"], "--all-runs")
    assert json.loads(cal.read_text())["fitted_on"]["scorer"] is None


def test_the_api_records_and_compares_the_scorer_found(logs):
    fitted = calibcli.read_predictions(logs["match"])
    assert fitted.read_as["scorer"] == "match"
    cal = calibcli.fit(fitted, method="platt")
    assert cal.file.fitted_on["scorer"] == "match"
    graded = calibcli.read_predictions(logs["graded"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal.apply(graded, allow_in_sample=True)  # the same verdicts and confidences
    said = [str(w.message) for w in caught]
    assert OTHER in said


# --------------------------------------------------------------------------- a run naming no model


def test_a_run_without_model_arguments_names_no_model(tmp_path):
    named = tmp_path / "pretrained=org__model-b_toy_qa.jsonl"
    named.write_bytes((OLD_NAMES / named.name).read_bytes())
    unnamed = tmp_path / "_toy_qa.jsonl"
    unnamed.write_bytes(named.read_bytes())
    cal = fit(tmp_path, "named.json", named)
    assert json.loads(cal.read_text())["fitted_on"]["models"] == ["pretrained=org__model-b"]
    said = warnings_of("calibrate", unnamed, "--calibrator", cal)
    assert not [w for w in said if "model" in w]
    bare = fit(tmp_path, "bare.json", unnamed)
    assert "models" not in json.loads(bare.read_text())["fitted_on"]
    # a calibrator that recorded the model "" says nothing of it either
    body = json.loads(bare.read_text())
    body["fitted_on"]["models"] = [""]
    bare.write_text(json.dumps(body))
    said = warnings_of("calibrate", named, "--calibrator", bare)
    assert not [w for w in said if "model" in w]


def test_another_named_model_still_fails_closed(tmp_path):
    a = tmp_path / "pretrained__org__model-a,dtype__float16_toy_qa.jsonl"
    b = tmp_path / "pretrained=org__model-b_toy_qa.jsonl"
    for path in (a, b):
        path.write_bytes((OLD_NAMES / path.name).read_bytes())
    cal = fit(tmp_path, "a.json", a)
    result = run(["calibrate", b, "--calibrator", cal, "--max-ece", "1", "--json", "-q"])
    assert result.exit_code == 1
    said = json.loads(result.stdout)["warnings"]
    assert any("these rows are of model 'pretrained=org__model-b'" in w for w in said)


# --------------------------------------------------------------------------- temperature at its end


def test_a_choice_temperature_at_its_upper_end_says_about_one_over_k():
    files = sorted((FIXTURES / "lm_eval").glob("samples_toy_mc_trivia_*.jsonl"))
    result = run(["fit", *files, "--method", "temperature", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["params"]["temperature"] == 1e4
    said = [w for w in body["warnings"] if "upper end of its range" in w]
    assert len(said) == 1
    assert said[0].endswith("the map sends every confidence to about 1/k for a row of k choices")
    assert "about 0.5" not in said[0]
