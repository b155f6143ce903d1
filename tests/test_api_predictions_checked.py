"""``fit(read_predictions(folder), method="temperature")`` reads the choices of exactly the files
the reading read (a folder's older re-runs, results files and rolling tasks left out), with its
bounds, as ``calibcli fit`` does; standard input, which that second pass cannot read again, is
refused in one line by the functions and the commands alike. :class:`Predictions` are checked
when built, as arrays given to the functions are, and their arrays are read-only."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from harness import run

import calibcli
from calibcli.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
SCIENCE = LM_EVAL / f"samples_toy_mc_science_{STAMP}.jsonl"
NEWER = "samples_toy_mc_science_2026-12-01T10-00-00.000000.jsonl"
SECOND_PASS = (
    "<stdin>: temperature over lm-eval rows reads each row's choices in a second pass, which "
    "standard input cannot give; read the file by name"
)


def rows_of(path):
    """Each row's choice loglikelihoods and gold index, as the file logs them."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        scores = [float(resp[0][0]) for resp in row["resps"]]
        out.append((scores, int(row["target"])))
    return out


def ref_temperature(rows):
    """T minimising the mean gold NLL under softmax(l / T): the root in b = 1 / T of its
    derivative mean(E_p[l] - l_gold), which grows with b, by bisection."""

    def slope(b):
        total = 0.0
        for scores, gold in rows:
            top = max(scores)
            weights = [math.exp(b * (s - top)) for s in scores]
            mean = sum(w * s for w, s in zip(weights, scores, strict=True)) / sum(weights)
            total += mean - scores[gold]
        return total / len(rows)

    lo, hi = 1e-6, 1e3
    assert slope(lo) < 0 < slope(hi)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
    return 1 / lo


def newer_run(folder):
    """A re-run of the science task in ``folder``: its loglikelihoods halved (each answer's
    verdict kept), whose temperature is half the first run's."""
    lines = []
    for line in SCIENCE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        for resp in row["resps"]:
            resp[0][0] = repr(float(resp[0][0]) / 2)
        row["filtered_resps"] = [resp[0] for resp in row["resps"]]
        lines.append(json.dumps(row))
    path = folder / NEWER
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def reruns(tmp_path):
    """A folder of two runs of one lm-eval task, 48 rows each."""
    folder = tmp_path / "rr"
    folder.mkdir()
    shutil.copy(SCIENCE, folder)
    newer_run(folder)
    return folder


def test_the_references(reruns):
    older, newer = ref_temperature(rows_of(SCIENCE)), ref_temperature(rows_of(reruns / NEWER))
    assert newer == pytest.approx(older / 2, rel=1e-9)
    assert older != pytest.approx(1.0, abs=0.05)


def test_fit_on_a_folder_of_reruns_fits_the_newest_run_read(reruns):
    rows = calibcli.read_predictions(reruns)
    assert len(rows) == 48 and any("older file(s)" in w for w in rows.warnings)
    fitted = calibcli.fit(rows, method="temperature")
    assert fitted.params["temperature"] == pytest.approx(
        ref_temperature(rows_of(reruns / NEWER)), abs=1e-6
    )
    assert json.loads(fitted.to_json())["fitted_on"]["n"] == 48
    both = calibcli.fit(calibcli.read_predictions(reruns, all_runs=True), method="temperature")
    pooled = ref_temperature(rows_of(SCIENCE) + rows_of(reruns / NEWER))
    assert both.params["temperature"] == pytest.approx(pooled, abs=1e-6)


def test_fit_on_a_run_folder_leaves_out_its_results_file_and_rolling_task(tmp_path):
    folder = tmp_path / "lme"
    folder.mkdir()
    for name in (f"results_{STAMP}.json", SCIENCE.name, f"samples_toy_wikitext_{STAMP}.jsonl"):
        shutil.copy(LM_EVAL / name, folder)
    rows = calibcli.read_predictions(folder)
    assert len(rows) == 48
    fitted = calibcli.fit(rows, method="temperature")
    assert fitted.params["temperature"] == pytest.approx(
        ref_temperature(rows_of(SCIENCE)), abs=1e-6
    )


API = """
import calibcli, sys
rows = calibcli.read_predictions(sys.argv[1])
sys.stdout.write(calibcli.fit(rows, method="temperature").to_json())
"""


def test_the_calibrator_is_the_commands_byte_for_byte(reruns):
    # as a user starts them: without the variables conftest.py sets (test_api_cli_bytes.py)
    dropped = ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}

    def fresh(*args):
        done = subprocess.run(
            [sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    command = fresh("-m", "calibcli", "fit", str(reruns), "--method", "temperature", "--json", "-q")
    assert fresh("-c", API, str(reruns)) == command
    assert json.loads(command)["fitted_on"]["n"] == 48


def test_the_choices_are_read_with_the_readings_bounds(monkeypatch):
    import calibcli.io

    seen = {}
    read = calibcli.io.read_choices

    def spy(files, **options):
        seen.update(options, files=files)
        return read(files, **options)

    rows = calibcli.read_predictions(SCIENCE, max_line_mb=100, max_document_mb=3)
    monkeypatch.setattr(calibcli.io, "read_choices", spy)
    calibcli.fit(rows, method="temperature")
    assert seen["files"] == [str(SCIENCE)]
    assert seen["max_line_bytes"] == 100 * 2**20
    assert seen["max_document_bytes"] == 3 * 2**20


def test_files_that_changed_since_they_were_read_are_refused(tmp_path):
    path = tmp_path / SCIENCE.name
    shutil.copy(SCIENCE, path)
    rows = calibcli.read_predictions(path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:24]), encoding="utf-8")
    with pytest.raises(InputError, match="now hold 24 rows where 48 were read"):
        calibcli.fit(rows, method="temperature")


# --------------------------------------------------------------------------- standard input


def test_fit_refuses_lm_eval_rows_read_from_standard_input(monkeypatch):
    import io

    data = SCIENCE.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    rows = calibcli.read_predictions("-", format="lm-eval")
    assert len(rows) == 48
    with pytest.raises(InputError) as caught:
        calibcli.fit(rows, method="temperature")
    assert str(caught.value) == SECOND_PASS
    assert calibcli.fit(rows, method="platt").method == "platt"  # the confidences suffice


@pytest.fixture(scope="module")
def calibrator(tmp_path_factory):
    path = tmp_path_factory.mktemp("cal") / "cal.json"
    calibcli.fit(calibcli.read_predictions(SCIENCE), method="temperature").save(path)
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["fit", "-", "--method", "temperature"],
        ["calibrate", "-", "--recalibrate", "temperature"],
        ["calibrate", "-", "--calibrator", "CAL"],
    ],
    ids=["fit", "recalibrate", "calibrator"],
)
def test_the_commands_refuse_lm_eval_choices_from_standard_input(args, calibrator):
    args = [str(calibrator) if a == "CAL" else a for a in args]
    result = run([*args, "--format", "lm-eval", "-q"], input=SCIENCE.read_bytes())
    assert result.exit_code == 2
    assert result.stderr == f"Error: {SECOND_PASS}\n"
    assert result.stdout == ""


# --------------------------------------------------------------------------- Predictions


def none(n):
    return np.array([None] * n, object)


@pytest.mark.parametrize(
    "confidence, correct, message",
    [
        ([0.2, 1.7, 0.9, 0.6], [0, 2, 1, 1], "index 1: confidence 1.7 is outside [0, 1]"),
        ([0.2, 0.7, 0.9, 0.6], [0, 2, 1, 1], "index 1: correct 2 is not true/false/0/1"),
        ([0.2, np.nan, 0.9, 0.6], [0, 1, 1, 1], "index 1: confidence NaN is not a number"),
        ([0.2, 0.7, -0.1, 0.6], [0, 1, 1, 1], "index 2: confidence -0.1 is outside [0, 1]"),
        ([0.2, 0.7, 0.9], [0, 1, 1, 1], "confidence and correct differ in length: 3 != 4"),
    ],
)
def test_predictions_are_checked_when_built(confidence, correct, message):
    with pytest.raises(InputError) as caught:
        calibcli.Predictions(np.array(confidence), np.array(correct), none(4), none(4))
    assert str(caught.value) == f"<arrays>: {message}"


def test_groups_and_ids_are_one_per_row():
    with pytest.raises(InputError, match="confidence and group differ in length: 2 != 3"):
        calibcli.Predictions(np.array([0.2, 0.7]), np.array([0, 1]), none(3), none(2))
    with pytest.raises(InputError, match="index 1: group 7 is not a group's name"):
        calibcli.Predictions(
            np.array([0.2, 0.7]), np.array([0, 1]), np.array(["a", 7], object), none(2), by="g"
        )


def test_predictions_built_directly_give_the_figures_of_their_rows():
    rows = calibcli.Predictions(np.array([0.2, 0.7, 0.9, 0.6]), np.array([0, 1, 1, 1]), None, None)
    assert rows.correct.tolist() == [False, True, True, True]
    body = json.loads(calibcli.calibrate(rows).to_json())
    # (0.2² + 0.3² + 0.1² + 0.4²) / 4
    assert body["brier"] == pytest.approx(0.075, abs=1e-15)
    assert body["accuracy"] == 0.75


def test_rows_read_cannot_change_after_the_check():
    rows = calibcli.read_predictions(ROOT / "sample_data" / "well_calibrated.jsonl")
    for name in ("confidence", "correct", "group", "id"):
        assert not getattr(rows, name).flags.writeable, name
    with pytest.raises(ValueError, match="read-only"):
        rows.confidence[rows.correct] += 0.2
    with pytest.raises(InputError, match=r"index \d+: confidence 1\.\d+ is outside \[0, 1\]"):
        dataclasses.replace(rows, confidence=np.minimum(rows.confidence + 0.5, 1.5))
    copied = rows.confidence.copy()
    copied += 0.1  # a copy is the caller's, as usual
    frame = rows.to_pandas()
    frame["confidence"] += 0.1
    assert frame["confidence"].to_numpy() == pytest.approx(copied)


def test_the_callers_array_is_neither_frozen_nor_followed():
    given = np.array([0.2, 0.7, 0.9, 0.6])
    rows = calibcli.Predictions(given, np.array([0, 1, 1, 1]), none(4), none(4))
    assert given.flags.writeable and not rows.confidence.flags.writeable
    given[0] = 0.95
    assert rows.confidence.tolist() == [0.2, 0.7, 0.9, 0.6]
    arrays = calibcli.calibrate(given, [0, 1, 1, 1])
    assert given.flags.writeable and json.loads(arrays.to_json())["n"] == 4


def test_a_nullable_integer_column_names_its_missing_value():
    pandas = pytest.importorskip("pandas")
    correct = pandas.Series([1, 1, pandas.NA, 1], dtype="Int64")
    with pytest.raises(InputError) as caught:
        calibcli.calibrate([0.9, 0.8, 0.3, 0.6], correct)
    assert str(caught.value) == "<arrays>: index 2: correct <NA> is not true/false/0/1"
    full = pandas.Series([1, 1, 0, 1], dtype="Int64")
    assert json.loads(calibcli.calibrate([0.9, 0.8, 0.3, 0.6], full).to_json())["accuracy"] == 0.75
