"""``Calibrator.apply`` given rows that carry their outcomes (Predictions) refuses the rows the
calibrator was fitted on, as ``calibcli apply`` refuses them: figures computed on them after the
map are in-sample and flatter it (a histogram map scores an ECE of 0 on its own rows, whatever
the model). Confidences given alone carry no outcome and are mapped as before."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.api.predictions import Predictions
from calibcli.errors import InputError

REFUSED = (
    "the {n:,} rows given here are the rows the calibrator was fitted on: figures computed on "
    "the output are in-sample for them and flatter the map; apply the calibrator to held-out "
    "rows (or fit it on other rows), or pass allow_in_sample=True to map them anyway"
)


def rows(n: int, seed: int) -> list[dict]:
    """Rows of confidences drawn to 17 digits (no two alike), right with that chance."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        c = rng.random()
        out.append({"id": f"{seed}-{i}", "confidence": c, "correct": rng.random() < c})
    return out


@pytest.fixture
def files(tmp_path):
    dev = write_jsonl(tmp_path / "dev.jsonl", rows(1000, 1))
    test = write_jsonl(tmp_path / "test.jsonl", rows(1000, 2))
    return tmp_path, dev, test


def _caught(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = call()
    return out, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_the_rows_fitted_on_are_refused_as_the_command_refuses_them(files):
    tmp_path, dev, _ = files
    fitted = calibcli.read_predictions(dev)
    cal = calibcli.fit(fitted, method="histogram")
    with pytest.raises(InputError) as refused:
        cal.apply(calibcli.read_predictions(dev))
    assert str(refused.value) == f"{dev}: " + REFUSED.format(n=1000)
    assert isinstance(refused.value, ValueError)
    # the command refuses the same rows, in its own words for its option
    path = tmp_path / "cal.json"
    cal.save(path)
    command = run(["apply", path, dev, "-q"])
    assert command.exit_code == 2
    assert command.stderr.startswith(f"Error: {dev}: the 1,000 rows read here are the rows the ")


def test_the_map_of_the_fitted_rows_cannot_pass_a_gate_unseen(files):
    # what a gate on the mapped rows would read: histogram binning on its own rows, ECE 0
    _, dev, _ = files
    fitted = calibcli.read_predictions(dev)
    cal = calibcli.fit(fitted, method="histogram")
    mapped = cal.apply(fitted.confidence)  # the confidences alone: mapped, as documented
    assert calibcli.calibrate(mapped, fitted.correct)["ece"] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="are the rows the calibrator was fitted on"):
        cal.apply(fitted)


def test_the_same_rows_in_another_order_and_file_are_refused(files):
    tmp_path, dev, _ = files
    shuffled = rows(1000, 1)
    random.Random(5).shuffle(shuffled)
    other = write_jsonl(tmp_path / "other.jsonl", shuffled)
    cal = calibcli.fit(calibcli.read_predictions(dev), method="platt")
    with pytest.raises(InputError, match=r"^.*other\.jsonl: the 1,000 rows given here are the"):
        cal.apply(calibcli.read_predictions(other))


def test_the_fitted_rows_inside_a_larger_file_are_refused(files):
    tmp_path, dev, _ = files
    both = write_jsonl(tmp_path / "both.jsonl", rows(1000, 1) + rows(1000, 3))
    cal = calibcli.fit(calibcli.read_predictions(dev), method="platt")
    with pytest.raises(InputError) as refused:
        cal.apply(calibcli.read_predictions(both))
    # every one of the 1,000 fitted rows is among the 2,000 given
    assert str(refused.value).startswith(
        f"{both}: about 100% of the rows the calibrator was fitted on (1,000) are among the "
        "2,000 rows given here: figures computed on the output"
    )
    cal.save(tmp_path / "cal.json")
    assert run(["apply", tmp_path / "cal.json", both, "-q"]).exit_code == 2


def test_held_out_rows_are_mapped_without_a_word(files):
    _, dev, test = files
    cal = calibcli.fit(calibcli.read_predictions(dev), method="platt")
    held_out = calibcli.read_predictions(test)
    mapped, said = _caught(lambda: cal.apply(held_out))
    assert said == []
    assert np.array_equal(mapped, cal.apply(held_out.confidence))


def test_allow_in_sample_maps_them_with_a_warning(files):
    _, dev, _ = files
    fitted = calibcli.read_predictions(dev)
    cal = calibcli.fit(fitted, method="histogram")
    mapped, said = _caught(lambda: cal.apply(fitted, allow_in_sample=True))
    assert said == [
        "the 1,000 rows given here are the rows the calibrator was fitted on: figures computed "
        "on the output are in-sample for them and flatter the map"
    ]
    assert np.array_equal(mapped, cal.apply(fitted.confidence))
    with pytest.raises(TypeError, match="allow_in_sample must be True or False"):
        cal.apply(fitted, allow_in_sample="yes")


def test_confidences_alone_are_not_looked_at(files):
    _, dev, _ = files
    fitted = calibcli.read_predictions(dev)
    cal = calibcli.fit(fitted, method="histogram")
    mapped, said = _caught(lambda: cal.apply(fitted.confidence))
    assert said == [] and mapped.shape == (1000,)


def test_rows_given_as_arrays_are_named_as_arrays():
    rng = np.random.default_rng(0)
    conf = rng.random(500)
    correct = rng.random(500) < conf
    cal = calibcli.fit(conf, correct, method="isotonic")
    again = Predictions(conf, correct, None, None)
    with pytest.raises(InputError) as refused:
        cal.apply(again)
    assert str(refused.value) == "<arrays>: " + REFUSED.format(n=500)
    other = Predictions(rng.random(500), rng.random(500) < 0.5, None, None)
    _, said = _caught(lambda: cal.apply(other))
    assert said == []
