"""Temperature over lm-eval choices given a summary file: the choices are read again from the
summary's sources, each source's byte range alone (a ``summarize --part`` piece holds only its
rows), and only while the file is the one summarized; the recalibrated rows keep what the rows
as read say (part of an input, the reader's warnings), so every gate fails closed as it does on
the rows without recalibration.

The fixture's rows are padded to one byte length, so that ``--part k/K`` holds rows
``(k - 1) N / K`` to ``k N / K`` by construction (the parts are cut at the line after each
``k / K`` of the bytes). References, computed here: each row's choice loglikelihoods from
``filtered_resps``, its gold index from ``target``, its correctness from ``acc``; confidences
max softmax(l / T) by scipy's logsumexp; T by scipy's bounded minimiser of the mean gold NLL;
ECE by a plain loop over equal-width bins.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from harness import run
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp
from test_cli_apply import ece_loop
from test_cli_choice_temperature import mc_rows

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
T_MIN, T_MAX = 1e-4, 1e4  # the documented search range of the temperature
TOL = 1e-6
ROWS = 48  # the science fixture's rows


def fixture(task):
    (path,) = sorted(FIXTURES.glob(f"samples_{task}_*.jsonl"))
    return path


SCIENCE = fixture("toy_mc_science")


def tempered(part, t):
    """max_j softmax(l / T)_j of each row."""
    return np.array([math.exp(max(lls) / t - logsumexp(np.array(lls) / t)) for lls, _, _ in part])


def mean_nll(part, t):
    return float(np.mean([logsumexp(np.array(lls) / t) - lls[g] / t for lls, g, _ in part]))


def ref_temperature(part):
    res = minimize_scalar(
        lambda log_t: mean_nll(part, math.exp(log_t)),
        bounds=(math.log(T_MIN), math.log(T_MAX)),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return math.exp(res.x)


def cross_fitted(part, folds):
    """Out-of-fold tempered confidences, the folds drawn as the command draws them."""
    n = len(part)
    conf = np.empty(n)
    for held in np.array_split(np.random.default_rng(0).permutation(n), folds):
        out = set(held.tolist())
        conf[held] = tempered(
            [part[i] for i in held], ref_temperature([part[i] for i in range(n) if i not in out])
        )
    return conf


@pytest.fixture
def run_dir(tmp_path):
    """A copy of the run folder whose science rows are padded to one byte length."""
    folder = tmp_path / "run"
    folder.mkdir()
    for path in FIXTURES.glob("results_*.json"):
        shutil.copy(path, folder / path.name)
    rows = [json.loads(line) for line in SCIENCE.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == ROWS
    width = max(len(json.dumps(r)) for r in rows) + len(', "pad": ""')
    lines = []
    for r in rows:
        r["pad"] = ""
        r["pad"] = "x" * (width - len(json.dumps(r)))
        lines.append(json.dumps(r))
    assert len({len(line) for line in lines}) == 1
    (folder / SCIENCE.name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return folder


@pytest.fixture
def rows():
    return mc_rows(SCIENCE)


def samples(run_dir):
    return run_dir / SCIENCE.name


def summarize(run_dir, part, name):
    out = run_dir.parent / name
    result = run(["summarize", samples(run_dir), "--part", part, "-q", "-o", out])
    assert result.exit_code == 0, result.stderr
    return out


def calibrator(tmp_path, t):
    path = tmp_path / f"t{t}.json"
    body = {
        "schema_version": 1,
        "kind": "calibcli-calibrator",
        "method": "multiclass_temperature",
        "params": {"temperature": t},
        "fitted_on": {"n": 10, "files": ["other.jsonl"], "format": "lm-eval"},
        "by": None,
        "groups": {},
    }
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def failed_closed(report):
    checks = report["gate"]["checks"]
    return not report["gate"]["passed"] and all(
        not c["passed"] and "part of" in c["reason"] for c in checks
    )


def test_recalibrate_temperature_on_a_part_scores_the_rows_of_the_part(run_dir, rows):
    piece = summarize(run_dir, "1/2", "p1.cbs")
    args = ["--folds", "4", "--bins", "5", "--max-ece", "0.9", "--min-rows", "10", "--json"]
    result = run(["calibrate", piece, "--recalibrate", "temperature", *args])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    part = rows[: ROWS // 2]
    assert report["n"] == ROWS // 2
    after = report["recalibration"]["after"]
    conf = cross_fitted(part, 4)
    assert after["ece"] == pytest.approx(ece_loop(conf, [y for *_, y in part], 5), abs=TOL)
    assert after["accuracy"] == sum(y for *_, y in part) / len(part)
    assert failed_closed(report)
    assert any("cover 1 of its 2 pieces" in w for w in report["warnings"])


def test_a_temperature_calibrator_on_a_part_scores_the_rows_of_the_part(run_dir, rows, tmp_path):
    piece = summarize(run_dir, "2/2", "p2.cbs")
    cal = calibrator(tmp_path, 2.5)
    result = run(["calibrate", piece, "--calibrator", cal, "--bins", "5", "--max-ece", "0.9"])
    assert result.exit_code == 1
    result = run(["calibrate", piece, "--calibrator", cal, "--bins", "5", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    part = rows[ROWS // 2 :]
    conf = tempered(part, 2.5)
    assert report["n"] == len(part)
    assert report["ece"] == pytest.approx(ece_loop(conf, [y for *_, y in part], 5), abs=1e-12)
    assert report["mean_confidence"] == pytest.approx(float(np.mean(conf)), abs=1e-12)

    args = ["--target-accuracy", "0.6", "--delta", "0.2", "--min-coverage", "0.1", "--json"]
    result = run(["threshold", piece, "--calibrator", cal, *args])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == len(part)
    assert not report["gate"]["passed"]


def test_pieces_merged_apart_score_their_rows_alone(run_dir, rows, tmp_path):
    first, last = summarize(run_dir, "1/3", "a.cbs"), summarize(run_dir, "3/3", "c.cbs")
    cal = calibrator(tmp_path, 0.7)
    result = run(["calibrate", first, last, "--calibrator", cal, "--bins", "5", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    part = rows[: ROWS // 3] + rows[2 * ROWS // 3 :]
    conf = tempered(part, 0.7)
    assert report["n"] == len(part) == 32
    assert report["ece"] == pytest.approx(ece_loop(conf, [y for *_, y in part], 5), abs=1e-12)
    assert any("--part 2/3 missing" in w for w in report["warnings"])


def test_fit_on_a_part_fits_and_records_the_rows_of_the_part(run_dir, rows, tmp_path):
    piece = summarize(run_dir, "1/2", "p1.cbs")
    out = tmp_path / "fitted.json"
    result = run(["fit", piece, "--method", "temperature", "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    part = rows[: ROWS // 2]
    assert doc["params"]["temperature"] == pytest.approx(ref_temperature(part), rel=1e-5)
    assert doc["fitted_on"]["n"] == doc["fingerprint"]["rows"] == len(part)
    assert any("cover 1 of its 2 pieces" in w for w in doc["warnings"])


@pytest.mark.parametrize("how", ["recalibrate", "calibrator", "fit"])
def test_a_file_changed_since_it_was_summarized_is_exit_2(run_dir, tmp_path, how):
    piece = summarize(run_dir, "1/2", "p1.cbs")
    shutil.copy(fixture("toy_mc_trivia"), samples(run_dir))  # another file at the same path
    args = {
        "recalibrate": ["calibrate", piece, "--recalibrate", "temperature", "--folds", "4"],
        "calibrator": ["calibrate", piece, "--calibrator", calibrator(tmp_path, 2.0)],
        "fit": ["fit", piece, "--method", "temperature", "-o", tmp_path / "f.json"],
    }[how]
    result = run([*args, "-q"])
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("Error: ") and SCIENCE.name in lines[0]
    assert "changed since it was summarized" in lines[0]
    assert not (tmp_path / "f.json").exists()


def test_a_range_holding_other_rows_than_the_summary_counted_is_an_error(run_dir):
    from calibcli.errors import InputError
    from calibcli.io import read_choices
    from calibcli.io.content import file_content_id
    from calibcli.summaries import Source

    path = str(samples(run_dir))
    size = Path(path).stat().st_size
    half = size // 2  # a line start: every line is size / 48 bytes
    held = Source(path, file_content_id(path), "lm-eval", ROWS // 2 + 1, 0, half)
    with pytest.raises(InputError, match="24 rows where it held 25"):
        read_choices([path], summarized=[held])
    held = Source(path, file_content_id(path), "lm-eval", ROWS // 2, half, size)
    choices = read_choices([path], summarized=[held])
    assert choices.n == ROWS // 2
    assert choices.where[0] == f"{path}:{ROWS // 2 + 1}"  # numbered in the whole file


def test_the_reader_warnings_stay_with_the_recalibrated_rows(run_dir):
    shutil.copy(fixture("toy_mc_trivia"), run_dir)
    plain = run(["calibrate", run_dir, "--json", "-q"])
    said = json.loads(plain.stdout)["warnings"]
    skipped = [w for w in said if w.endswith("skipped")]
    assert len(skipped) == 1 and "results file" in skipped[0]
    cal = calibrator(run_dir.parent, 2.0)
    for extra in (["--recalibrate", "temperature"], ["--calibrator", cal]):
        result = run(["calibrate", run_dir, *extra, "--json", "-q"])
        assert result.exit_code == 0, result.stderr
        assert skipped[0] in json.loads(result.stdout)["warnings"]
