"""The Python API's option values, as the command line takes them: float32 and float16 options
read as written (as their digits typed), switches that are True or False and nothing else,
``--bootstrap`` (and the resample counts of summarize and the engines) bounded above, ``by``
beside arrays only with ``group=``, and columns that numpy would coerce (dates, durations,
masked arrays, a string taken for its characters) refused or read as missing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError

NARROW = [np.float32, np.float16]


def _rows(path, confidences, right, **more):
    return write_jsonl(
        path,
        [
            {"confidence": c, "correct": bool(r), **{k: v[i] for k, v in more.items()}}
            for i, (c, r) in enumerate(zip(confidences, right, strict=True))
        ],
    )


# --------------------------------------------------------------------------- float32 options

# two rows at 0.6000000005, one right: one bin, accuracy 0.5, so ECE = 0.1000000005, above 0.1
# (and below float32 0.1 widened, 0.10000000149011612)
JUST_OVER = [0.6000000005, 0.6000000005]
HALF = [1, 0]


@pytest.mark.parametrize("kind", NARROW)
def test_a_narrow_ece_limit_is_read_as_written_and_fails_as_the_command_does(tmp_path, kind):
    result = calibcli.calibrate(JUST_OVER, HALF, bins=1, max_ece=kind(0.1))
    assert result.passed is False
    assert result.body["gate"]["checks"][0]["threshold"] == 0.1
    rows = _rows(tmp_path / "r.jsonl", JUST_OVER, HALF)
    command = run(["calibrate", rows, "--bins", "1", "--max-ece", "0.1", "-q"])
    assert command.exit_code == 1


@pytest.mark.parametrize("kind", NARROW)
def test_a_narrow_compare_margin_is_read_as_written(kind):
    # BASE: 40 rows at 0.5, half right: ECE 0. NEW: 20 at 0.5000000005 and 20 at 0.6000000005,
    # half right: mean 0.5500000005, ECE 0.0500000005 (one bin): d above the margin 0.05
    ids = list(range(40))
    base = ([0.5] * 40, [1, 0] * 20, ids)
    new = ([0.5000000005] * 20 + [0.6000000005] * 20, [1, 0] * 20, ids)
    result = calibcli.compare(
        base, new, bins=1, gate_on="estimate", max_increase={"ece": kind(0.05)}
    )
    assert result.body["gate"]["checks"][0]["threshold"] == 0.05
    assert result.passed is False
    # a margin met exactly: d = 0 against float32 0 and a float16 AUROC margin
    same = calibcli.compare(base, base, bins=1, max_decrease={"auroc": kind(0.1)})
    assert same.body["gate"]["checks"][0]["threshold"] == 0.1


# 30 right at 0.9 and 70 wrong at 0.1: at target 0.5 the guaranteed threshold accepts the 30
# (P(Binomial(30, 0.5) >= 30) = 2^-30 < 0.05; all 100 rows hold 30 right, not rejected), so the
# coverage is 30/100 = 0.3 exactly
COVERED = [0.9] * 30 + [0.1] * 70
COVERED_RIGHT = [1] * 30 + [0] * 70


@pytest.mark.parametrize("kind", NARROW)
def test_a_narrow_min_coverage_is_met_by_the_coverage_it_names(kind):
    result = calibcli.threshold(COVERED, COVERED_RIGHT, target_accuracy=0.5, min_coverage=kind(0.3))
    assert result["guaranteed"]["coverage"] == 0.3
    assert result.passed is True, result.failures


@pytest.mark.parametrize("kind", NARROW)
def test_narrow_levels_are_reported_as_written(kind):
    result = calibcli.threshold(COVERED, COVERED_RIGHT, target_accuracy=kind(0.7), delta=kind(0.1))
    assert (result.body["target_accuracy"], result.body["delta"]) == (0.7, 0.1)
    result = calibcli.calibrate([0.1] * 4, [0, 1, 0, 1], ci=kind(0.9), bootstrap=200)
    assert result.body["ci_level"] == 0.9


# --------------------------------------------------------------------------- switches


def _both(tmp_path):
    """BASE: ids 0..99; NEW: ids 0..79 (20% of BASE unmatched, refused unless allowed)."""
    right = [i % 2 for i in range(100)]
    confidences = [0.5 + (i % 5) / 10 for i in range(100)]
    base = _rows(tmp_path / "b.jsonl", confidences, right, id=list(range(100)))
    new = _rows(tmp_path / "n.jsonl", confidences[:80], right[:80], id=list(range(80)))
    return (
        calibcli.read_predictions(base, id_field="id"),
        calibcli.read_predictions(new, id_field="id"),
    )


ROWS = ([0.9, 0.8, 0.3, 0.6] * 5, [1, 1, 0, 1] * 5)
KEYED = (*ROWS, list(range(20)))  # the rows with ids, a side of compare
SWITCHES = [
    ("calibrate", "gate_each", lambda **kw: calibcli.calibrate(*ROWS, **kw)),
    ("threshold", "gate_each", lambda **kw: calibcli.threshold(*ROWS, target_accuracy=0.5, **kw)),
    ("threshold", "full", lambda **kw: calibcli.threshold(*ROWS, target_accuracy=0.5, **kw)),
    ("compare", "gate_each", lambda **kw: calibcli.compare(KEYED, KEYED, **kw)),
    ("compare", "unpaired", lambda **kw: calibcli.compare(KEYED, KEYED, **kw)),
    ("compare", "allow_unmatched", lambda **kw: calibcli.compare(KEYED, KEYED, **kw)),
    ("read_predictions", "all_runs", lambda **kw: calibcli.read_predictions("-", **kw)),
]


@pytest.mark.parametrize("value", ["false", "no", "False", 0, 1, None, 0.0])
@pytest.mark.parametrize(
    ("where", "name", "call"), SWITCHES, ids=[f"{w}-{n}" for w, n, _ in SWITCHES]
)
def test_a_switch_that_is_not_true_or_false_is_refused(where, name, call, value):
    with pytest.raises(TypeError) as caught:
        call(**{name: value})
    assert str(caught.value) == f"{where}(): {name} must be True or False, not {value!r}"


def test_allow_unmatched_as_a_string_no_longer_lets_unmatched_rows_through(tmp_path):
    base, new = _both(tmp_path)
    for refused in (False, np.False_):
        with pytest.raises(InputError, match=r"20 of 100 rows of b\.jsonl have no partner"):
            calibcli.compare(base, new, allow_unmatched=refused)
    for allowed in (True, np.True_):
        assert calibcli.compare(base, new, allow_unmatched=allowed)["matched"] == 80
    with pytest.raises(TypeError, match="allow_unmatched must be True or False, not 'false'"):
        calibcli.compare(base, new, allow_unmatched="false")


def test_numpy_switches_act_as_their_values(tmp_path):
    base, new = _both(tmp_path)
    assert calibcli.compare(base, new, unpaired=np.True_)["paired"] is False
    groups = ["a", "b"] * 10
    each = calibcli.calibrate(*ROWS, group=groups, gate_each=np.True_, max_ece=0.9)
    pooled = calibcli.calibrate(*ROWS, group=groups, gate_each=np.False_, max_ece=0.9)
    # 20 rows in 2 bins of 10 (0.3 and 0.6/0.8/0.9): the per-group checks come with gate_each
    assert len(each.body["gate"]["checks"]) > len(pooled.body["gate"]["checks"])
    rows = _rows(tmp_path / "r.jsonl", [0.5, 0.6], [1, 0])
    assert len(calibcli.read_predictions(rows, all_runs=np.False_)) == 2


# --------------------------------------------------------------------------- --bootstrap


@pytest.mark.parametrize("samples", [1_000_001, 2**63 - 1, 2**70])
def test_the_api_bootstrap_has_an_upper_bound(samples):
    said = f"bootstrap: {samples} is not in the range 200<=x<=1000000"
    with pytest.raises(InputError) as caught:
        calibcli.calibrate(*ROWS, ci=0.9, bootstrap=samples)
    assert str(caught.value) == f"calibrate: {said}"
    with pytest.raises(InputError) as caught:
        calibcli.compare(KEYED, KEYED, bootstrap=samples)
    assert str(caught.value) == f"compare: {said}"


@pytest.mark.parametrize("command", ["calibrate", "compare"])
def test_the_bootstrap_option_has_an_upper_bound(tmp_path, command):
    rows = _rows(tmp_path / "r.jsonl", [0.6, 0.7, 0.8], [1, 0, 1], id=[1, 2, 3])
    files = [rows, rows, "--id-field", "id"] if command == "compare" else [rows]
    for samples in ("1000001", "9223372036854775807"):
        result = run([command, *files, "--ci", "0.9", "--bootstrap", samples, "-q"])
        assert result.exit_code == 2, result.output
        assert f"{samples} is not in the range 200<=x<=1000000" in result.stderr
        assert "Traceback" not in result.stderr


def test_summarize_bootstrap_samples_has_the_same_bound(tmp_path):
    rows = _rows(tmp_path / "r.jsonl", [0.6, 0.7], [1, 0], id=[1, 2])
    out = tmp_path / "s.json"
    samples = ["--bootstrap-samples", "1000001"]
    result = run(["summarize", rows, "--id-field", "id", *samples, "-o", out])
    assert result.exit_code == 2
    assert "1000001 is not in the range 200<=x<=1000000" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("samples", [199, 1_000_001, 2**70, "1000"])
def test_the_engines_bootstrap_samples_have_the_same_bound(tmp_path, samples):
    from calibcli.engines import file_jobs, frame_spec

    said = f"bootstrap_samples must be a whole number from 200 to 1,000,000, not {samples!r}"
    with pytest.raises(ValueError) as caught:
        frame_spec("calibration", ("c", "y"), key="id", bootstrap_samples=samples)
    assert str(caught.value) == said
    rows = _rows(tmp_path / "r.jsonl", [0.6, 0.7], [1, 0], id=[1, 2])
    with pytest.raises(ValueError) as caught:
        file_jobs([rows], "calibration", None, bootstrap_samples=samples)
    assert str(caught.value) == said


# --------------------------------------------------------------------------- by and group

BY_ONLY = (
    "<arrays>: by='subject' names the groups given as group=, and none were given: give each "
    "row's group as group= (read_predictions(path, by='subject') reads a file's field)"
)


@pytest.mark.parametrize(
    "call",
    [
        lambda **kw: calibcli.calibrate(*ROWS, max_ece=0.5, **kw),
        lambda **kw: calibcli.calibrate(*ROWS, max_ece=0.5, gate_each=True, **kw),
        lambda **kw: calibcli.fit(*ROWS, method="platt", **kw),
        lambda **kw: calibcli.threshold(*ROWS, target_accuracy=0.5, **kw),
    ],
    ids=["calibrate", "gate_each", "fit", "threshold"],
)
def test_by_beside_arrays_without_groups_is_refused(call):
    with pytest.raises(InputError) as caught:
        call(by="subject")
    assert str(caught.value) == BY_ONLY
    # with group= it names them
    assert call(by="subject", group=["a"] * 10 + ["b"] * 10) is not None


@pytest.mark.parametrize("column", ["abcd", b"abcd", np.str_("abcd")])
def test_a_string_is_not_a_column_of_groups_or_ids(column):
    shown = repr(column)
    with pytest.raises(InputError) as caught:
        calibcli.calibrate([0.1] * 4, [0, 1, 0, 1], group=column)
    assert str(caught.value) == (
        f"<arrays>: group: {shown} is one value, not one per row: give a list or an array of "
        "the rows' values"
    )
    rows = ([0.1] * 4, [0, 1, 0, 1], column)
    with pytest.raises(InputError, match=r"ids: .* is one value, not one per row"):
        calibcli.compare(rows, rows)


# --------------------------------------------------------------------------- dates, masks


@pytest.mark.parametrize("unit", ["datetime64[ns]", "timedelta64[ns]", "datetime64[D]"])
def test_dates_and_durations_are_not_confidences_or_correctness(unit):
    ticks = np.array([0, 1], dtype=unit)  # would be read as 0 and 1
    with pytest.raises(
        InputError, match=r"^<arrays>: index 0: confidence np\.\w+64\(.* is not a number$"
    ):
        calibcli.calibrate(ticks, [0, 1])
    with pytest.raises(
        InputError, match=r"^<arrays>: index 0: correct np\.\w+64\(.* is not true/false/0/1$"
    ):
        calibcli.calibrate([0.2, 0.9], ticks)


def test_a_masked_value_is_missing_not_the_value_under_the_mask():
    masked = np.ma.masked_array([0.5, 0.9], mask=[0, 1])
    with pytest.raises(InputError) as caught:
        calibcli.calibrate(masked, [0, 1])
    assert str(caught.value) == "<arrays>: index 1: confidence null is not a number"
    with pytest.raises(InputError) as caught:
        calibcli.calibrate([0.5, 0.9], np.ma.masked_array([0, 1], mask=[1, 0]))
    assert str(caught.value) == "<arrays>: index 0: correct null is not true/false/0/1"
    result = calibcli.calibrate(
        [0.2, 0.9, 0.4], [0, 1, 1], group=np.ma.masked_array(["a", "b", "c"], mask=[0, 1, 1])
    )
    assert {name: g["n"] for name, g in result["groups"].items()} == {"a": 1, "null": 2}
    ids = np.ma.masked_array([1, 2], mask=[0, 1])
    with pytest.raises(InputError, match="index 1: id is null"):
        calibcli.compare(([0.5, 0.6], [0, 1], ids), ([0.5, 0.6], [0, 1], [1, 2]))


def test_a_masked_array_without_masked_values_is_read_as_its_values():
    # float32 0.7 and 0.2 as written: bins 7 and 2 of 10, right and wrong: gaps 0.3 and 0.2
    data = np.ma.masked_array(np.array([0.7, 0.2], np.float32), mask=[0, 0])
    result = calibcli.calibrate(data, [1, 0], bins=10, min_populated_bins=1)
    assert result["ece"] == pytest.approx(0.25, abs=1e-15)
    assert result["n"] == 2


def test_nat_groups_are_the_group_null():
    nat = np.array(["NaT", "NaT"], dtype="datetime64[ns]")
    result = calibcli.calibrate([0.2, 0.9], [0, 1], group=nat)
    assert {name: g["n"] for name, g in result["groups"].items()} == {"null": 2}
    listed = [np.datetime64("NaT"), "a", np.timedelta64("NaT")]
    result = calibcli.calibrate([0.2, 0.9, 0.5], [0, 1, 1], group=listed)
    assert {name: g["n"] for name, g in result["groups"].items()} == {"a": 1, "null": 2}
    dated = np.array(["NaT", "2020-01-01"], dtype="datetime64[ns]")
    with pytest.raises(InputError) as caught:
        calibcli.calibrate([0.2, 0.9], [0, 1], group=dated)
    assert str(caught.value) == (
        "<arrays>: index 1: group is of type datetime64[ns], not a string, number or boolean"
    )


def test_the_float32_limit_report_matches_the_command(tmp_path):
    rows = _rows(tmp_path / "r.jsonl", JUST_OVER, HALF)
    command = run(["calibrate", rows, "--bins", "1", "--max-ece", "0.1", "--json"])
    api = calibcli.calibrate(calibcli.read_predictions(rows), bins=1, max_ece=np.float32(0.1))
    assert json.loads(command.stdout)["gate"] == api.body["gate"]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"bins": 20_000}, "bins must be a whole number from 1 to 10,000, not 20000"),
        ({"bins": 2.0}, "bins must be a whole number from 1 to 10,000, not 2.0"),
        ({"bootstrap_samples": 300, "seed": "3"}, "seed must be a whole number >= 0, not '3'"),
        ({"bootstrap_samples": 300, "seed": 1.5}, "seed must be a whole number >= 0, not 1.5"),
        ({"bootstrap_samples": 300, "seed": -1}, "seed must be a whole number >= 0, not -1"),
    ],
)
def test_the_engines_bins_and_seed_are_the_command_s(tmp_path, options, said):
    """--bins takes 1 to 10,000 and --seed a whole number >= 0; the engines refuse the rest on
    the driver, before any task runs (a seed of -1 failed inside a task, "3" and 1.5 were
    made integers, and 20,000 bins were taken)."""
    from calibcli.engines import file_jobs, frame_spec

    with pytest.raises(ValueError) as caught:
        frame_spec("calibration", ("c", "y"), key="id", **options)
    assert str(caught.value) == said
    rows = _rows(tmp_path / "r.jsonl", [0.6, 0.7], [1, 0], id=[1, 2])
    with pytest.raises(ValueError) as caught:
        file_jobs([rows], "calibration", None, id_field="id", **options)
    assert str(caught.value) == said
    assert run(["summarize", rows, "--bins", "20000"]).exit_code == 2
