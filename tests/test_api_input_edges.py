"""The Python API at the edges of its input, against the command line: a calibrator of lm-eval
choices refused by ``apply``, float32 values read as written wherever they sit, groups and ids
given as pandas or numpy values named (or refused) as the command names a file's values, NaN
ids refused on every route, and option values the command refuses refused with its message."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
SCIENCE = LM_EVAL / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"

# eight confidences whose float32 values widened fall in other bins (0.7 -> 0.6999999881,
# 0.9 -> 0.8999999762), right and wrong by turns
VALUES = [0.7, 0.1, 0.3, 0.9, 0.2, 0.6, 0.7, 0.8]
RIGHT = [i % 2 == 0 for i in range(8)]
# by hand, 10 bins: 0.7 x2 (both right, gap 0.3 each), 0.1 wrong 0.1, 0.3 right 0.7, 0.9
# wrong 0.9, 0.2 right 0.8, 0.6 wrong 0.6, 0.8 wrong 0.8: (0.6+0.1+0.7+0.9+0.8+0.6+0.8)/8
ECE_AS_WRITTEN = 0.5625


# --------------------------------------------------------------------------- apply


def test_apply_refuses_a_calibrator_of_lm_eval_choices_as_the_command_does(tmp_path):
    calibrator = calibcli.fit(calibcli.read_predictions(SCIENCE), method="temperature")
    assert calibrator.method == "multiclass_temperature"
    said = (
        "apply: this calibrator scales lm-eval choices' loglikelihoods; apply() maps native "
        "confidences (use calibcli calibrate --calibrator on lm-eval rows)"
    )
    for given in (calibcli.read_predictions(SCIENCE), [0.6, 0.9]):
        with pytest.raises(InputError) as caught:
            calibrator.apply(given)
        assert str(caught.value) == said
    saved = tmp_path / "cal.json"
    calibrator.save(saved)
    rows = write_jsonl(tmp_path / "r.jsonl", [{"confidence": 0.6, "correct": 1}])
    result = run(["apply", saved, rows])
    assert result.exit_code == 2
    assert "scales lm-eval choices' loglikelihoods" in result.stderr
    assert "calibrate --calibrator on lm-eval rows" in result.stderr


# --------------------------------------------------------------------------- float32


def _object_series():
    pandas = pytest.importorskip("pandas")
    return pandas.Series([np.float32(x) for x in VALUES], dtype=object)


@pytest.mark.parametrize(
    "confidence",
    [
        lambda: np.array(VALUES, np.float32),
        lambda: [np.float32(x) for x in VALUES],
        lambda: np.array([np.float32(x) for x in VALUES], dtype=object),
        lambda: [np.float32(x) for x in VALUES[:-1]] + [VALUES[-1]],  # ends in a Python float
        lambda: [np.float16(0.7), *[np.float32(x) for x in VALUES[1:]]],
        _object_series,
    ],
    ids=["float32-array", "float32-list", "object-array", "mixed-list", "float16", "series"],
)
def test_float32_values_are_read_as_written_wherever_they_sit(tmp_path, confidence):
    rows = [{"confidence": c, "correct": y} for c, y in zip(VALUES, RIGHT, strict=True)]
    path = write_jsonl(tmp_path / "f.jsonl", rows)
    assert calibcli.calibrate(calibcli.read_predictions(path))["ece"] == pytest.approx(
        ECE_AS_WRITTEN, abs=1e-12
    )
    assert calibcli.calibrate(confidence(), RIGHT)["ece"] == pytest.approx(
        ECE_AS_WRITTEN, abs=1e-12
    )


def test_float64_values_are_left_as_they_are():
    widened = np.array(VALUES, np.float32).astype(np.float64)  # 0.7 is 0.6999999881 here
    # by hand: 0.7 x2 and 0.6 share bin 6 (accuracy 2/3, mean 0.6666666627), 0.9 and 0.8
    # bin 8 (accuracy 0, mean 0.8499999940); 0.1, 0.3, 0.2 alone: gaps 0.1, 0.7, 0.8
    mean6 = (2 * float(widened[0]) + float(widened[5])) / 3
    mean8 = (float(widened[3]) + float(widened[7])) / 2
    by_hand = (3 * abs(2 / 3 - mean6) + 2 * mean8 + 0.1 + 0.7 + 0.8) / 8
    got = calibcli.calibrate(widened, RIGHT)["ece"]
    assert got == pytest.approx(by_hand, abs=1e-7) and abs(got - ECE_AS_WRITTEN) > 0.1


# --------------------------------------------------------------------------- groups


def test_a_missing_group_is_the_group_the_command_names_null(tmp_path):
    pandas = pytest.importorskip("pandas")
    path = tmp_path / "g.csv"
    path.write_text("confidence,correct,subject,grade\n0.9,1,a,1\n0.8,0,,\n0.3,0,b,2\n0.6,1,,2\n")
    frame = pandas.read_csv(path)
    for by in ("subject", "grade"):
        given = calibcli.calibrate(frame.confidence, frame.correct, group=frame[by], by=by)
        read = calibcli.calibrate(calibcli.read_predictions(path, by=by))
        result = run(["calibrate", path, "--by", by, "--json"])
        assert result.exit_code == 0
        sizes = {name: group["n"] for name, group in given["groups"].items()}
        assert (
            sizes
            == {"subject": {"a": 1, "b": 1, "null": 2}, "grade": {"1": 1, "2": 2, "null": 1}}[by]
        )
        assert sizes == {k: g["n"] for k, g in read["groups"].items()}
        assert sizes == {k: g["n"] for k, g in json.loads(result.stdout)["groups"].items()}


def _groups(group):
    result = calibcli.calibrate([0.9, 0.8, 0.3], [1, 0, 1], group=group)
    return {name: g["n"] for name, g in result["groups"].items()}


def test_pandas_missing_values_and_numpy_scalars_name_groups():
    pandas = pytest.importorskip("pandas")
    assert _groups(pandas.array(["a", None, "b"], dtype="string")) == {"a": 1, "b": 1, "null": 1}
    assert _groups(pandas.array([1, None, 2], dtype="Int64")) == {"1": 1, "2": 1, "null": 1}
    assert _groups(np.array([None, pandas.NaT, float("nan")], dtype=object)) == {"null": 3}
    assert _groups(np.array([np.int64(1), "a", "a"], dtype=object)) == {"1": 1, "a": 2}
    assert _groups([np.bool_(True), np.str_("x"), np.float32(0.7)]) == {
        "true": 1,
        "x": 1,
        "0.7": 1,
    }


@pytest.mark.parametrize(
    ("group", "said"),
    [
        (
            [(1, 2), "a", "a"],
            "<arrays>: index 0: group is of type tuple, not a string, number or boolean",
        ),
        (
            ["a", [1], "a"],
            "<arrays>: index 1: group is of type list, not a string, number or boolean",
        ),
        (
            ["a", "a", {"x": 1}],
            "<arrays>: index 2: group is of type dict, not a string, number or boolean",
        ),
        (
            ["a", "a", b"x"],
            "<arrays>: index 2: group is of type bytes, not a string, number or boolean",
        ),
    ],
)
def test_groups_of_no_json_type_are_refused_naming_the_row(group, said):
    with pytest.raises(InputError) as caught:
        _groups(group)
    assert str(caught.value) == said


def test_timestamps_are_refused_as_groups():
    pandas = pytest.importorskip("pandas")
    stamps = pandas.Series(pandas.to_datetime(["2020-01-01"] * 3))
    with pytest.raises(InputError, match=r"^<arrays>: index 0: group is of type datetime64\["):
        _groups(stamps)
    aware = stamps.dt.tz_localize("UTC")
    with pytest.raises(InputError) as caught:
        _groups(aware)
    assert str(caught.value) == (
        "<arrays>: index 0: group is of type Timestamp, not a string, number or boolean"
    )


@pytest.mark.parametrize(
    "group", [{"x", "y", "z"}, frozenset("xyz"), {"x": 1, "y": 2, "z": 3}, {"x": 1}.keys()]
)
def test_unordered_groups_are_refused(group):
    with pytest.raises(InputError, match=r"^<arrays>: group: a \w+ holds no row order: give one"):
        _groups(group)


# --------------------------------------------------------------------------- ids


def test_a_pandas_na_id_names_its_type():
    pandas = pytest.importorskip("pandas")
    ids = pandas.array([1, None, 2], dtype="Int64")
    with pytest.raises(InputError) as caught:
        calibcli.compare(([0.9, 0.8, 0.3], [1, 0, 1], ids), ([0.9, 0.8, 0.3], [1, 0, 1], [1, 2, 3]))
    assert (
        str(caught.value) == "base <arrays>: index 1: id is of type NAType, not a string or number"
    )


def test_nan_ids_are_refused_not_matched_to_each_other():
    pandas = pytest.importorskip("pandas")
    for ids in (pandas.Series([1, None, 3]), [1, float("nan"), 3], np.array([1, np.nan, 3])):
        with pytest.raises(InputError) as caught:
            calibcli.compare(([0.9, 0.8, 0.3], [1, 0, 1], ids), ([0.2, 0.1, 0.3], [0, 1, 1], ids))
        assert str(caught.value) == "base <arrays>: index 1: id is NaN, not a string or number"


def test_numpy_scalar_ids_are_their_python_values():
    ids = np.array([np.int64(1), np.str_("b"), np.bool_(True)], dtype=object)
    result = calibcli.compare(
        ([0.9, 0.8, 0.3], [1, 0, 1], ids), ([0.2, 0.1, 0.3], [0, 1, 1], [1, "b", True])
    )
    assert result["matched"] == 3


def _nan_id_files(tmp_path):
    lines = [
        '{"id": 1, "confidence": 0.9, "correct": 1}\n',
        '{"id": NaN, "confidence": 0.8, "correct": 0}\n',
    ]
    base, new = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    base.write_text("".join(lines))
    new.write_text("".join(reversed(lines)))
    return base, new


def test_the_command_refuses_a_nan_id(tmp_path):
    base, new = _nan_id_files(tmp_path)
    result = run(["compare", base, new, "--id-field", "id"])
    assert result.exit_code == 2
    assert result.stderr == f'Error: {base}:2: id field "id" is NaN, not a string or number\n'
    result = run(["calibrate", new, "--id-field", "id"])
    assert result.exit_code == 2
    assert result.stderr == f'Error: {new}:1: id field "id" is NaN, not a string or number\n'
    with pytest.raises(InputError) as caught:
        calibcli.compare(str(base), str(new), id_field="id")
    assert str(caught.value) == f'{base}:2: id field "id" is NaN, not a string or number'
    with pytest.raises(InputError) as caught:
        calibcli.read_predictions(new, id_field="id")
    assert str(caught.value) == f'{new}:1: id field "id" is NaN, not a string or number'


# --------------------------------------------------------------------------- options


def test_an_infinite_threshold_is_refused_as_the_command_refuses_it(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"id": 0, "confidence": 0.5, "correct": 1}])
    result = run(["calibrate", path, "--max-ece", "1e400"])
    assert result.exit_code == 2 and "inf is not a finite number >= 0" in result.stderr
    with pytest.raises(InputError) as caught:
        calibcli.calibrate([0.5], [1], max_ece=10**400)
    assert str(caught.value) == "calibrate: max_ece: inf is not a finite number >= 0"
    with pytest.raises(InputError) as caught:
        calibcli.compare(str(path), str(path), id_field="id", max_increase={"ece": 10**400})
    assert str(caught.value) == (
        "compare: --max-increase ece=inf: the margin must be a finite number >= 0"
    )


@pytest.mark.parametrize(
    ("choices", "said"),
    [
        ([1, 2], "choices: 1 is not a string"),
        (3, "choices: 3 is not a string or a list of them"),
        ("", "choices: '' is not two or more distinct options, e.g. A,B,C"),
        ("a,,b", "choices: 'a,,b' is not two or more distinct options, e.g. A,B,C"),
        (["A", " A"], "choices: ['A', ' A'] is not two or more distinct options, e.g. A,B,C"),
    ],
)
def test_choices_are_checked_as_the_command_checks_them(tmp_path, choices, said):
    path = write_jsonl(tmp_path / "a.jsonl", [{"confidence": 0.5, "correct": 1}])
    with pytest.raises(InputError) as caught:
        calibcli.read_predictions(path, choices=choices)
    assert str(caught.value) == f"read_predictions: {said}"


@pytest.mark.parametrize(
    "name", ["id_field", "by", "confidence_field", "correct_field", "gold_field"]
)
def test_an_empty_field_name_is_refused_as_the_command_refuses_it(tmp_path, name):
    path = write_jsonl(tmp_path / "a.jsonl", [{"id": 0, "confidence": 0.5, "correct": 1}])
    option = "--" + name.replace("_", "-")
    result = run(["calibrate", path, f"{option}="])
    assert result.exit_code == 2 and "a field name cannot be empty" in result.stderr
    with pytest.raises(InputError) as caught:
        calibcli.read_predictions([path], **{name: ""})
    assert str(caught.value) == f"read_predictions: {name}: a field name cannot be empty"


def test_an_empty_group_name_is_refused_beside_arrays():
    with pytest.raises(InputError) as caught:
        calibcli.calibrate([0.9, 0.2], [1, 0], group=["x", "y"], by="")
    assert str(caught.value) == "<arrays>: by: a field name cannot be empty"
