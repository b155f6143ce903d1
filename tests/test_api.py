"""The Python API (calibcli.api): each function's report is the command's --json output for the
same rows and options, byte for byte; its figures agree with independent references; bad rows
and options raise InputError with the command line's message."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from harness import make_rows, run, write_jsonl

import calibcli
from calibcli.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures"


def cli_json(*args):
    result = run([*args, "--json"])
    assert result.exit_code in (0, 1), result.stderr
    return result.stdout, result.exit_code


def grouped_rows(n, seed=11):
    rng = random.Random(seed)
    rows = make_rows(n, seed=seed)
    for row in rows:
        row["subject"] = rng.choice(["law", "history", "physics", 1])  # a number is a group too
    return rows


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("api")
    rows = grouped_rows(400)
    shifted = [{**r, "confidence": min(1.0, r["confidence"] * 1.15)} for r in rows]
    return {
        "rows": rows,
        "main": write_jsonl(root / "main.jsonl", rows),
        "new": write_jsonl(root / "new.jsonl", shifted),
        "held_out": write_jsonl(root / "held_out.jsonl", grouped_rows(300, seed=5)),
    }


def arrays(rows):
    return (
        np.array([r["confidence"] for r in rows]),
        np.array([r["correct"] for r in rows]),
        [r["subject"] for r in rows],
    )


# --------------------------------------------------------------------------- the CLI's JSON

CALIBRATE_CASES = [
    ({}, []),
    ({"bins": 15, "min_populated_bins": 5}, ["--bins", "15", "--min-populated-bins", "5"]),
    ({"strategy": "quantile"}, ["--strategy", "quantile"]),
    (
        {"ci": 0.9, "bootstrap": 200, "seed": 3},
        ["--ci", "0.9", "--bootstrap", "200", "--seed", "3"],
    ),
    ({"max_ece": 0.05, "max_brier": 0.3}, ["--max-ece", "0.05", "--max-brier", "0.3"]),
    (
        {"max_ece": 0.2, "gate_on": "upper", "bootstrap": 200},
        ["--max-ece", "0.2", "--gate-on", "upper", "--bootstrap", "200"],
    ),
]


@pytest.mark.parametrize(("options", "flags"), CALIBRATE_CASES)
def test_calibrate_is_the_commands_json(files, options, flags):
    expected, code = cli_json("calibrate", files["main"], *flags)
    conf, corr, _ = arrays(files["rows"])
    result = calibcli.calibrate(conf, corr, **options)
    assert result.to_json() == expected
    assert json.loads(result.to_json()) == json.loads(expected)
    assert result.passed == (code == 0)
    read = calibcli.calibrate(calibcli.read_predictions(files["main"]), **options)
    assert read.to_json() == expected


def test_calibrate_by_group_is_the_commands_json(files):
    flags = ["--by", "subject", "--max-ece", "0.3", "--gate-each"]
    expected, code = cli_json("calibrate", files["main"], *flags)
    conf, corr, subject = arrays(files["rows"])
    result = calibcli.calibrate(
        conf, corr, group=subject, by="subject", max_ece=0.3, gate_each=True
    )
    assert result.to_json() == expected
    read = calibcli.read_predictions(files["main"], by="subject")
    assert calibcli.calibrate(read, max_ece=0.3, gate_each=True).to_json() == expected
    assert result.passed == (code == 0)
    assert set(result["groups"]) == {"law", "history", "physics", "1"}


def test_threshold_is_the_commands_json(files):
    expected, _ = cli_json("threshold", files["main"], "--target-accuracy", "0.8")
    conf, corr, _ = arrays(files["rows"])
    result = calibcli.threshold(conf, corr, target_accuracy=0.8)
    assert result.to_json() == expected
    assert result.warnings == json.loads(expected)["warnings"]


@pytest.mark.parametrize(
    ("options", "flags"),
    [
        ({"method": "sgr", "delta": 0.1}, ["--method", "sgr", "--delta", "0.1"]),
        ({"grid": 0, "full": True}, ["--grid", "0", "--full"]),
        ({"min_coverage": 0.9}, ["--min-coverage", "0.9"]),
    ],
)
def test_threshold_options_are_the_commands(files, options, flags):
    expected, code = cli_json("threshold", files["main"], "--target-accuracy", "0.7", *flags)
    rows = calibcli.read_predictions(files["main"])
    result = calibcli.threshold(rows, target_accuracy=0.7, **options)
    assert result.to_json() == expected
    assert result.passed == (code == 0)


def test_threshold_fit_on_held_out_rows_is_the_commands_json(files):
    flags = ["--target-accuracy", "0.75", "--fit", files["held_out"], "--by", "subject"]
    flags += ["--min-coverage", "0.05", "--gate-each"]
    expected, _ = cli_json("threshold", files["main"], *flags)
    rows = calibcli.read_predictions(files["main"], by="subject")
    held_out = calibcli.read_predictions(files["held_out"], by="subject")
    result = calibcli.threshold(
        rows, target_accuracy=0.75, fit=held_out, min_coverage=0.05, gate_each=True
    )
    assert result.to_json() == expected


def test_compare_is_the_commands_json(files):
    flags = ["--max-increase", "ece=0.01", "--max-decrease", "auroc=0.02", "--bootstrap", "300"]
    expected, code = cli_json("compare", files["main"], files["new"], *flags)
    base = calibcli.read_predictions(files["main"], id_field="id")
    new = calibcli.read_predictions(files["new"], id_field="id")
    result = calibcli.compare(
        base, new, max_increase={"ece": 0.01}, max_decrease={"auroc": 0.02}, bootstrap=300
    )
    assert result.to_json() == expected
    assert result.passed == (code == 0)


def test_compare_by_group_and_unpaired_are_the_commands(files):
    flags = ["--by", "subject", "--bootstrap", "200"]
    expected, _ = cli_json("compare", files["main"], files["new"], *flags)
    base = calibcli.read_predictions(files["main"], id_field="id", by="subject")
    new = calibcli.read_predictions(files["new"], id_field="id", by="subject")
    assert calibcli.compare(base, new, bootstrap=200).to_json() == expected
    flags = ["--unpaired", "--seed", "4", "--bootstrap", "200"]
    expected, _ = cli_json("compare", files["main"], files["new"], *flags)
    base, new = (calibcli.read_predictions(files[k]) for k in ("main", "new"))
    assert calibcli.compare(base, new, unpaired=True, seed=4, bootstrap=200).to_json() == expected


LM_EVAL = FIXTURES / "lm_eval"
SAMPLES = Path(__file__).parent.parent / "sample_data"


@pytest.mark.parametrize(
    ("pair", "flags", "options"),
    [
        (("main", "new"), ["--bootstrap", "200", "--max-increase", "ece=0.01"], {}),
        (("main", "new"), ["--by", "subject", "--bootstrap", "200", "--seed", "3"], {}),
        (("main", "new"), ["--unpaired", "--bootstrap", "200"], {}),
        ((LM_EVAL, LM_EVAL), ["--bootstrap", "200"], {}),
        (
            (SAMPLES / "well_calibrated.jsonl", SAMPLES / "overconfident.jsonl"),
            ["--bootstrap", "200", "--ci", "0.9"],
            {},
        ),
    ],
)
def test_compare_of_two_paths_is_the_commands_json(files, pair, flags, options):
    paths = [str(files[p]) if isinstance(p, str) else str(p) for p in pair]
    expected, code = cli_json("compare", *paths, *flags)
    keywords = {
        "bootstrap": 200,
        "max_increase": {"ece": 0.01} if "--max-increase" in flags else None,
        "by": "subject" if "--by" in flags else None,
        "seed": 3 if "--seed" in flags else None,
        "unpaired": "--unpaired" in flags,
        "ci": 0.9 if "--ci" in flags else None,
    }
    result = calibcli.compare(*paths, **keywords)
    assert result.to_json() == expected
    assert result.passed == (code == 0)
    if "--unpaired" not in flags:  # the same rows read first, then given: the same report
        sides = [
            calibcli.read_predictions(
                p, id_field=None if p == str(LM_EVAL) else "id", by=keywords["by"]
            )
            for p in paths
        ]
        given = {k: v for k, v in keywords.items() if k != "by"}
        assert calibcli.compare(*sides, **given).to_json() == expected


def test_compare_of_two_paths_raises_the_commands_errors(tmp_path):
    rows = make_rows(30, seed=2)
    base = write_jsonl(tmp_path / "base.jsonl", rows)
    dup = write_jsonl(tmp_path / "dup.jsonl", [*rows[:20], rows[4], *rows[20:]])
    with pytest.raises(
        InputError, match=r"dup.jsonl:21: duplicate id .* \(first at .*dup.jsonl:5\)"
    ):
        calibcli.compare(base, dup)
    with pytest.raises(TypeError, match="two paths"):
        calibcli.compare(base, calibcli.read_predictions(base, id_field="id"))
    with pytest.raises(TypeError, match="reading options go with paths"):
        calibcli.compare(*(calibcli.read_predictions(base, id_field="id"),) * 2, by="subject")


def test_compare_of_arrays_matches_by_id():
    rows = make_rows(200, seed=3)
    conf, corr = np.array([r["confidence"] for r in rows]), [r["correct"] for r in rows]
    ids = [r["id"] for r in rows]
    order = np.random.default_rng(0).permutation(200)  # NEW in another order: matched by id
    base = (conf, corr, ids)
    new = (conf[order] ** 2, [corr[i] for i in order], [ids[i] for i in order])
    result = calibcli.compare(base, new, bootstrap=200)
    squared = calibcli.calibrate(conf**2, corr)
    assert result["figures"]["ece"]["new"] == pytest.approx(squared["ece"], rel=1e-12)
    assert result["matched"] == 200
    assert result["files"] == {"base": ["<arrays>"], "new": ["<arrays>"]}


@pytest.mark.parametrize("method", ["platt", "isotonic", "histogram", "temperature", "beta"])
def test_fit_is_the_commands_calibrator_file(files, method):
    expected, _ = cli_json("fit", files["main"], "--method", method)
    rows = calibcli.read_predictions(files["main"])
    calibrator = calibcli.fit(rows, method=method)
    assert calibrator.to_json() == expected
    assert calibrator.report.command == "fit"


def test_fit_by_group_and_apply(files, tmp_path):
    expected, _ = cli_json("fit", files["main"], "--method", "platt", "--by", "subject")
    rows = calibcli.read_predictions(files["main"], by="subject")
    calibrator = calibcli.fit(rows, method="platt")
    assert calibrator.to_json() == expected
    mapped = calibrator.apply(rows.confidence, rows.group)
    for name in ("law", "1"):
        mask = rows.group == name
        alone = calibrator.file.groups[name].apply(rows.confidence[mask])
        assert np.array_equal(mapped[mask], alone)
    # the saved file is the command's calibrator file: --calibrator reads it
    calibrator.save(tmp_path / "platt.json")
    result = run(["calibrate", files["main"], "--calibrator", tmp_path / "platt.json", "--json"])
    assert result.exit_code == 0, result.stderr


def test_a_per_group_calibrator_warns_when_rows_take_its_pooled_map(files, recwarn):
    # as the commands warn: every row without groups, or the rows of an unseen group, take
    # the pooled map, which was fitted on other rows than the groups' maps
    rows = calibcli.read_predictions(files["main"], by="subject")
    calibrator = calibcli.fit(rows, method="platt")
    pooled = calibrator.file.calibrator.apply(np.array([0.3, 0.8]))
    with pytest.warns(UserWarning, match="without group= every row takes its pooled map"):
        assert np.array_equal(calibrator.apply([0.3, 0.8]), pooled)
    with pytest.warns(
        UserWarning, match=r"no map for group\(s\) 'chemistry' \(it was fitted on none"
    ):
        mapped = calibrator.apply([0.3, 0.8], group=["chemistry", "law"])
    assert mapped[0] == pooled[0]
    assert mapped[1] == calibrator.file.groups["law"].apply(np.array([0.8]))[0]
    recwarn.clear()
    calibrator.apply([0.3, 0.8], group=["law", 1])  # each group has its map: no warning
    assert not recwarn.list
    one_map = calibcli.fit(rows.confidence, rows.correct, method="platt")
    one_map.apply([0.3, 0.8])  # a pooled calibrator has nothing else to take
    assert not recwarn.list


# --------------------------------------------------------------------------- references

TEN = (
    [0.95, 0.9, 0.85, 0.8, 0.7, 0.65, 0.6, 0.45, 0.3, 0.2],
    [1, 1, 0, 1, 1, 0, 1, 0, 0, 1],
)


def test_figures_agree_with_independent_references():
    conf, correct = TEN
    result = calibcli.calibrate(conf, correct, bins=5)
    c, y = np.array(conf), np.array(correct, dtype=float)
    # ECE by hand over 5 equal-width bins: [0.8,1.0) holds 0.95, 0.9, 0.85, 0.8; [0.6, 0.8)
    # holds 0.7, 0.65, 0.6; [0.4, 0.6) 0.45; [0.2, 0.4) 0.3, 0.2
    bins = [([0.95, 0.9, 0.85, 0.8], [1, 1, 0, 1]), ([0.7, 0.65, 0.6], [1, 0, 1])]
    bins += [([0.45], [0]), ([0.3, 0.2], [0, 1])]
    ece = sum(len(cs) / 10 * abs(np.mean(cs) - np.mean(ys)) for cs, ys in bins)
    assert result["ece"] == pytest.approx(ece, abs=1e-12)
    assert result["brier"] == pytest.approx(np.mean((c - y) ** 2), abs=1e-12)
    assert result["accuracy"] == 0.6
    nll = -np.mean(y * np.log(c) + (1 - y) * np.log(1 - c))
    assert result["nll"] == pytest.approx(nll, rel=1e-12)
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    assert result["auroc"] == pytest.approx(sklearn_metrics.roc_auc_score(y, c), abs=1e-12)
    assert result["brier"] == pytest.approx(sklearn_metrics.brier_score_loss(y, c), abs=1e-12)


def test_threshold_guarantee_by_hand():
    # 60 right answers at 0.99, then 40 rows at 0.5 of which 20 are right: at A = 0.9 only the
    # top block passes the binomial test, so the guaranteed threshold accepts those 60 rows
    conf = [0.99] * 60 + [0.5] * 40
    correct = [1] * 60 + [1, 0] * 20
    result = calibcli.threshold(conf, correct, target_accuracy=0.9)
    assert result["guaranteed"]["accepted"] == 60
    assert result["guaranteed"]["errors"] == 0
    assert result["guaranteed"]["p_value"] <= 0.05
    # the p-value of 60 right of 60 under H0 accuracy 0.9: P(Binomial(60, 0.9) >= 60) = 0.9^60
    assert result["guaranteed"]["p_value"] == pytest.approx(0.9**60, rel=1e-9)


def test_arrays_given_are_left_as_they_were():
    conf = np.array([0.9, 0.2, 0.7, 0.4, 0.95])
    correct = np.array([True, False, True, True, False])
    copies = conf.copy(), correct.copy()
    calibcli.calibrate(conf, correct, ci=0.9, bootstrap=200, strategy="quantile", bins=2)
    assert np.array_equal(conf, copies[0]) and np.array_equal(correct, copies[1])


# --------------------------------------------------------------------------- read_predictions


def test_read_predictions_gives_the_rows_as_read(files):
    rows = calibcli.read_predictions(files["main"], by="subject", id_field="id")
    raw = files["rows"]
    assert len(rows) == len(raw)
    assert rows.confidence.dtype == np.float64 and rows.correct.dtype == bool
    assert rows.confidence.tolist() == [r["confidence"] for r in raw]
    assert rows.correct.tolist() == [bool(r["correct"]) for r in raw]
    assert rows.id.tolist() == [r["id"] for r in raw]
    assert rows.group.tolist() == [str(r["subject"]) for r in raw]
    assert "400 rows" in repr(rows)
    plain = calibcli.read_predictions(files["main"])
    assert plain.id.tolist() == [None] * 400 and plain.group.tolist() == [None] * 400


def test_read_predictions_to_pandas(files):
    pytest.importorskip("pandas")
    frame = calibcli.read_predictions(files["main"], id_field="id").to_pandas()
    assert list(frame.columns) == ["confidence", "correct", "group", "id"]
    assert len(frame) == 400 and frame["id"].tolist()[:2] == [0, 1]


def test_read_predictions_reads_other_formats():
    path = FIXTURES / "lm_eval" / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"
    rows = calibcli.read_predictions(path)
    assert rows.format == "lm-eval"
    assert rows.id[0].startswith("toy_mc_science/")  # the harness's own ids: task/doc_id
    expected, _ = cli_json("calibrate", path)
    assert calibcli.calibrate(rows).to_json() == expected
    expected, _ = cli_json("fit", path, "--method", "temperature")  # over the choices
    assert calibcli.fit(rows, method="temperature").to_json() == expected


# --------------------------------------------------------------------------- HTML


def test_repr_html_holds_the_reports_tables(files):
    result = calibcli.calibrate(calibcli.read_predictions(files["main"]), max_ece=0.01)
    page = result._repr_html_()
    assert "<table" in page and "</table>" in page
    assert f"{result['ece']:.4f}" in page and f"{result['brier']:.4f}" in page
    assert "<script" not in page and "<html" not in page
    assert "gate" in page.lower()
    other = calibcli.calibrate(*TEN)._repr_html_()
    ids = {part.split('"')[0] for part in page.split(' id="')[1:]}
    assert ids and not ids & {part.split('"')[0] for part in other.split(' id="')[1:]}
    for made in (
        calibcli.threshold(*TEN, target_accuracy=0.6),
        calibcli.fit(*TEN, method="platt"),
        calibcli.compare((*TEN, list(range(10))), (*TEN, list(range(10))), bootstrap=200),
    ):
        assert "<table" in made._repr_html_()


# --------------------------------------------------------------------------- errors


def cli_error(tmp_path, rows, *flags):
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    result = run(["calibrate", path, *flags])
    assert result.exit_code == 2
    return result.stderr.strip().removeprefix("Error: ").split(": ", 1)[1]


@pytest.mark.parametrize(
    ("confidence", "correct", "index"),
    [
        ([0.5, 1.5, 0.2], [1, 0, 1], 1),
        ([0.5, 0.2, math.nan], [1, 0, 1], 2),
        ([0.5, -0.1], [1, 0], 1),
        ([0.5, 0.4], [1, 2], 1),
        ([True, False], [1, 0], 0),
        (["0.5", 0.4], [1, 0], 0),
        ([0.5, 0.4], [1.0, 0.0], 0),
    ],
)
def test_bad_values_are_named_as_the_command_names_them(tmp_path, confidence, correct, index):
    rows = [{"confidence": c, "correct": y} for c, y in zip(confidence, correct, strict=True)]
    expected = cli_error(tmp_path, rows)
    with pytest.raises(InputError) as caught:
        calibcli.calibrate(confidence, correct)
    assert caught.value.detail == expected
    assert str(caught.value) == f"<arrays>: index {index}: {expected}"


def test_predictions_carry_their_own_groups(files):
    rows = calibcli.read_predictions(files["main"])
    with pytest.raises(InputError, match="read them with by= for groups"):
        calibcli.calibrate(rows, by="subject")


def test_gate_on_upper_needs_a_gate():
    """As on the command line, an upper-end gate with no figure to gate is refused."""
    with pytest.raises(InputError, match=r"--gate-on upper reads a --max-\* gate .* none is"):
        calibcli.calibrate([0.9, 0.2], [1, 0], gate_on="upper")
    with pytest.raises(InputError, match=r"--gate-on upper reads a --max-increase"):
        calibcli.compare(
            ([0.9, 0.2], [1, 0], [1, 2]), ([0.8, 0.3], [1, 0], [1, 2]), gate_on="upper"
        )


def test_lengths_and_shapes_are_checked():
    with pytest.raises(InputError, match=r"confidence and correct differ in length: 3 != 2"):
        calibcli.calibrate([0.1, 0.2, 0.3], [1, 0])
    with pytest.raises(InputError, match=r"confidence and group differ in length: 2 != 1"):
        calibcli.calibrate([0.1, 0.2], [1, 0], group=["a"])
    with pytest.raises(InputError, match=r"one value per row"):
        calibcli.calibrate([[0.1, 0.2]], [[1, 0]])


@pytest.mark.parametrize(
    ("call", "flags"),
    [
        (
            lambda: calibcli.calibrate(*TEN, gate_each=True, max_ece=0.1),
            ["--gate-each", "--max-ece", "0.1"],
        ),
        (lambda: calibcli.calibrate(*TEN, seed=3), ["--seed", "3"]),
        (
            lambda: calibcli.calibrate(*TEN, group=[1] * 10, gate_each=True),
            ["--by", "x", "--gate-each"],
        ),
    ],
)
def test_options_that_cannot_work_are_refused_as_the_command_refuses_them(tmp_path, call, flags):
    path = write_jsonl(tmp_path / "rows.jsonl", [{"confidence": 0.5, "correct": 1, "x": 1}])
    result = run(["calibrate", path, *flags])
    assert result.exit_code == 2
    with pytest.raises(InputError) as caught:
        call()
    assert caught.value.detail in result.stderr


def test_option_values_are_checked_as_the_command_checks_them():
    with pytest.raises(InputError, match=r"ci: 1.5 is not a level strictly between 0 and 1"):
        calibcli.calibrate(*TEN, ci=1.5)
    with pytest.raises(InputError, match=r"max_ece: -0.1 is not a finite number >= 0"):
        calibcli.calibrate(*TEN, max_ece=-0.1)
    with pytest.raises(InputError, match=r"bins: 0 is not in the range 1<=x<=10000"):
        calibcli.calibrate(*TEN, bins=0)
    with pytest.raises(InputError, match=r"target_accuracy: 1 is not strictly between 0 and 1"):
        calibcli.threshold(*TEN, target_accuracy=1)
    with pytest.raises(InputError, match=r"method: 'spline' is not one of"):
        calibcli.fit(*TEN, method="spline")
    with pytest.raises(InputError, match=r"--max-increase takes FIGURE=MARGIN"):
        calibcli.compare((*TEN, range(10)), (*TEN, range(10)), max_increase={"auroc": 0.1})
    with pytest.raises(TypeError, match="max_accuracy"):
        calibcli.calibrate(*TEN, max_accuracy=0.1)


def test_compare_refuses_what_the_command_refuses(files):
    base = calibcli.read_predictions(files["main"], id_field="id")
    with pytest.raises(InputError, match="have none: read them with id_field="):
        calibcli.compare(base, calibcli.read_predictions(files["new"]))
    ids = list(range(400))
    few = (base.confidence[:10], base.correct[:10], ids[:10])
    with pytest.raises(InputError, match=r"390 of 400 rows of main.jsonl have no partner"):
        calibcli.compare(base, few)
    with pytest.raises(InputError, match=r"duplicate id 1 \(first at index 0\)"):
        calibcli.compare(few, (few[0], few[1], [1] * 10))


def test_read_predictions_errors_are_the_readers(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [{"confidence": 0.5, "correct": 1}], raw_lines=["{"])
    with pytest.raises(InputError, match=r"bad.jsonl:2: "):
        calibcli.read_predictions(path)
    with pytest.raises(TypeError, match="bins"):
        calibcli.read_predictions(path, bins=3)


def test_threshold_fit_on_the_evaluated_rows_is_named_as_the_command_names_it(files):
    expected, _ = cli_json(
        "threshold", files["main"], "--target-accuracy", "0.8", "--fit", files["main"]
    )
    rows = calibcli.read_predictions(files["main"])
    result = calibcli.threshold(rows, target_accuracy=0.8, fit=rows)
    assert result.to_json() == expected
    assert any("partly chosen on the rows it is evaluated on" in w for w in result.warnings)
