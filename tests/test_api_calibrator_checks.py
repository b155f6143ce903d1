"""``Calibrator.apply`` given Predictions read from files checks how they were read against
what the calibrator records, as ``--calibrator`` checks it: the API's fit records what the
command's fit records (models, tasks), another normalisation is an InputError, and another
model's or task's rows a UserWarning naming both."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from harness import run

import calibcli
from calibcli.errors import InputError

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
RESULTS = f"results_{STAMP}.json"


def _task(name: str) -> str:
    return f"samples_toy_mc_{name}_{STAMP}.jsonl"


@pytest.fixture
def runs(tmp_path):
    """The fixture's run (model wxrd1574) and the same files as another model's run."""
    made = {}
    for folder, model in (("a", None), ("b", "other-model-7b")):
        (tmp_path / folder).mkdir()
        for name in (_task("science"), _task("trivia")):
            (tmp_path / folder / name).write_bytes((LM_EVAL / name).read_bytes())
        results = json.loads((LM_EVAL / RESULTS).read_text())
        if model is not None:
            results["model_name"] = model
        (tmp_path / folder / RESULTS).write_text(json.dumps(results))
        made[folder] = tmp_path / folder
    return made


def test_the_api_fit_records_what_the_command_records(runs, tmp_path):
    path = runs["a"] / _task("science")
    cal = calibcli.fit(calibcli.read_predictions(path), method="platt")
    out = tmp_path / "cal.json"
    assert run(["fit", path, "--method", "platt", "-o", out, "-q"]).exit_code == 0
    fitted = json.loads(cal.to_json())["fitted_on"]
    assert fitted == json.loads(out.read_text())["fitted_on"]
    assert (fitted["models"], fitted["tasks"]) == (["wxrd1574"], ["toy_mc_science"])


def test_another_models_rows_warn_and_are_mapped_alike(runs):
    cal = calibcli.fit(calibcli.read_predictions(runs["a"] / _task("science")), method="platt")
    rows = calibcli.read_predictions(runs["b"] / _task("trivia"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mapped = cal.apply(rows)
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert said == [
        "the calibrator was fitted on rows of task 'toy_mc_science'; it maps rows of task "
        "'toy_mc_trivia' here, and a map may not carry over to another task",
        "the calibrator was fitted on rows of model 'wxrd1574'; these rows are of model "
        "'other-model-7b', as their runs name them: a map of one model's confidences says "
        "nothing of another's, gate nothing on them; fit a calibrator on this model's rows",
    ]
    # the map itself is the one applied to the bare confidences
    assert np.array_equal(mapped, cal.apply(rows.confidence))


def test_the_same_models_rows_say_nothing(runs):
    cal = calibcli.fit(calibcli.read_predictions(runs["a"] / _task("science")), method="platt")
    rows = calibcli.read_predictions(runs["a"] / _task("science"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal.apply(rows, allow_in_sample=True)  # the rows it was fitted on: only that is said
    assert [str(w.message) for w in caught] == [
        f"the {len(rows)} rows given here are the rows the calibrator was fitted on: figures "
        "computed on the output are in-sample for them and flatter the map"
    ]


def test_another_normalisation_is_refused(runs):
    path = runs["a"] / _task("science")
    cal = calibcli.fit(calibcli.read_predictions(path), method="platt")
    with pytest.raises(InputError, match="fitted on mc_norm=none scores; these rows are read"):
        cal.apply(calibcli.read_predictions(path, mc_norm="chars"))
    with pytest.raises(TypeError, match="give no group"):
        cal.apply(calibcli.read_predictions(path), group=["x"])
