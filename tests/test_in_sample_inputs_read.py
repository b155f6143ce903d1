"""A calibrator records each input its fit read (after older re-runs were left out) with the
identity of its bytes and its rows' multiset hash, and the in-sample check compares the inputs
scored with those, where the rows' values are too coarse for their fingerprint to tell (a bf16
model's lm-eval loglikelihoods: a hundred distinct confidences in 600 rows):

- a byte-identical copy of a fitted run under another time stamp (a deterministic re-run) is
  in-sample: calibrate's gates fail closed, threshold --fit says so, apply refuses its rows;
- an older re-run in a fitted folder, which the fit left out, is not in-sample, though the
  folder holds it;
- a calibrator written before it recorded its inputs is judged by the files named, as before.

The runs are the committed lm-eval fixture's, their loglikelihoods held to a coarse grid as a
bf16 model's are (tests/fixtures/lm_eval holds the full-precision ones).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from harness import run

import calibcli
from calibcli.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
SCIENCE = f"samples_toy_mc_science_{STAMP}.jsonl"
TRIVIA = f"samples_toy_mc_trivia_{STAMP}.jsonl"
RERUN = "samples_toy_mc_science_2026-11-30T09-12-00.000000.jsonl"  # a later time stamp
OLDER = "samples_toy_mc_science_2026-11-28T07-00-00.000000.jsonl"  # an earlier one


def coarse_run(name: str, out: Path, step: float, shift: float = 0.0) -> Path:
    """The fixture run ``name`` with every loglikelihood held to a grid of ``step`` (after
    adding ``shift``), every other byte of its rows as lm-eval wrote them."""

    def held(x: str) -> str:
        return repr(round((float(x) + shift) / step) * step)

    lines = []
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        row["resps"] = [[[held(v), flag] for v, flag in resp] for resp in row["resps"]]
        row["filtered_resps"] = [[held(v), flag] for v, flag in row["filtered_resps"]]
        lines.append(json.dumps(row, ensure_ascii=False))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """science and trivia runs in ``runs/``; ``again/`` holds the science run byte for byte
    under a later time stamp; ``folder/`` holds the science run and an older re-run of it
    (other loglikelihoods)."""
    monkeypatch.chdir(tmp_path)
    science = coarse_run(SCIENCE, tmp_path / "runs" / SCIENCE, step=2.0)
    coarse_run(TRIVIA, tmp_path / "runs" / TRIVIA, step=1.0)
    (tmp_path / "again").mkdir()
    shutil.copyfile(science, tmp_path / "again" / RERUN)
    (tmp_path / "folder").mkdir()
    shutil.copyfile(science, tmp_path / "folder" / SCIENCE)
    coarse_run(SCIENCE, tmp_path / "folder" / OLDER, step=2.0, shift=1.0)
    return tmp_path


def fingerprint_cannot_tell(summary_of: str) -> None:
    """The premise: the rows' values are too coarse for their content to tell them."""
    rows = calibcli.read_predictions(summary_of)
    assert len(set(rows.confidence.tolist())) < 0.5 * len(rows)


def fit(*args: str) -> Path:
    made = run(["fit", *args, "--method", "histogram", "--bins", "5", "-o", "h.json", "-q"])
    assert made.exit_code == 0, made.stderr
    return Path("h.json")


def test_a_byte_identical_rerun_of_a_fitted_run_fails_the_gate_closed(runs):
    fingerprint_cannot_tell(f"runs/{SCIENCE}")
    fingerprint_cannot_tell(f"again/{RERUN}")
    cal = fit(f"runs/{SCIENCE}", f"runs/{TRIVIA}", "--by", "task")
    gate = ["--by", "task", "--max-smece", "0.9", "--gate-each", "-q"]
    scored = run(["calibrate", f"again/{RERUN}", "--calibrator", cal, *gate])
    assert scored.exit_code == 1, scored.stderr
    said = (
        f"the rows the calibrator was fitted on include those of {runs / 'runs' / SCIENCE}, "
        f"and again/{RERUN}, scored here, holds the same bytes: the figures after "
        "recalibration are in-sample"
    )
    assert said in scored.stderr
    assert "gate failed: smece: the calibrator was fitted on rows scored here" in scored.stderr
    # the pooled map too
    pooled = fit(f"runs/{SCIENCE}", f"runs/{TRIVIA}")
    scored = run(["calibrate", f"again/{RERUN}", "--calibrator", pooled, "--max-smece", "0.9"])
    assert scored.exit_code == 1, scored.stderr


def test_the_calibrator_records_the_inputs_its_fit_read(runs):
    cal = fit("folder", f"runs/{TRIVIA}")
    body = json.loads(cal.read_text())
    read = body["sources"]
    # the folder's newest run and the trivia run, each by its resolved path: not the older run
    assert [s["file"] for s in read] == [
        str((runs / "folder" / SCIENCE).resolve()),
        str((runs / "runs" / TRIVIA).resolve()),
    ]
    assert [s["rows"] for s in read] == [48, 40]
    assert all(s["content"].startswith("sampled:") for s in read)
    assert read[0]["content"] != read[1]["content"]
    assert all(len(s["rows_hash"][0]) == 16 and type(s["rows_hash"][1]) is bool for s in read)
    # the given names stay what fitted_on names
    assert body["fitted_on"]["files"] == ["folder", f"runs/{TRIVIA}"]
    # the Python API's calibrator is the command's, byte for byte
    rows = calibcli.read_predictions(["folder", f"runs/{TRIVIA}"])
    assert calibcli.fit(rows, method="histogram", bins=5).to_json() == cal.read_text()


def test_an_older_rerun_the_fit_left_out_is_not_in_sample(runs):
    fingerprint_cannot_tell(f"folder/{OLDER}")
    cal = fit("folder", f"runs/{TRIVIA}")
    older = run(["calibrate", f"folder/{OLDER}", "--calibrator", cal, "--max-smece", "0.9", "-q"])
    assert older.exit_code == 0, older.stderr
    assert "fitted on" not in older.stderr and "in-sample" not in older.stderr
    # the run the fit read, by its own name, and the folder scored (its newest run): in-sample
    newest = run(["calibrate", f"folder/{SCIENCE}", "--calibrator", cal, "--max-smece", "0.9"])
    assert newest.exit_code == 1
    assert f"the calibrator was fitted on folder/{SCIENCE}, which is scored here too" in (
        newest.stderr
    )
    folder = run(["calibrate", "folder", "--calibrator", cal, "--max-smece", "0.9", "-q"])
    assert folder.exit_code == 1


def test_a_calibrator_that_records_no_inputs_is_judged_by_the_files_named(runs):
    cal = fit("folder", f"runs/{TRIVIA}")
    body = json.loads(cal.read_text())
    del body["sources"]
    old = Path("old.json")
    old.write_text(json.dumps(body))
    newest = run(["calibrate", f"folder/{SCIENCE}", "--calibrator", old, "--max-smece", "0.9"])
    assert newest.exit_code == 1
    assert f"the calibrator was fitted on folder/{SCIENCE}, which is scored here too" in (
        newest.stderr
    )


def test_threshold_fit_on_a_run_it_evaluates_again_under_another_name(runs):
    fit_on = ["--fit", f"runs/{SCIENCE}", "--fit", f"runs/{TRIVIA}"]
    options = ["--target-accuracy", "0.5", "--json", "-q"]
    evaluated = run(["threshold", f"again/{RERUN}", *fit_on, *options])
    assert evaluated.exit_code == 0, evaluated.stderr
    warned = json.loads(evaluated.stdout)["warnings"]
    said = (
        f"the rows the threshold was chosen on include those of runs/{SCIENCE}, and "
        f"again/{RERUN}, scored here, holds the same bytes: the threshold was partly chosen"
    )
    assert any(w.startswith(said) for w in warned), warned


def test_summary_files_carry_their_inputs_identities(runs):
    made = run(["summarize", f"runs/{SCIENCE}", f"runs/{TRIVIA}", "-o", "fit.cbs", "-q"])
    assert made.exit_code == 0, made.stderr
    assert run(["summarize", f"again/{RERUN}", "-o", "again.cbs", "-q"]).exit_code == 0
    from_summary = fit("fit.cbs")
    for scored in (f"again/{RERUN}", "again.cbs"):
        gated = run(["calibrate", scored, "--calibrator", from_summary, "--max-smece", "0.9"])
        assert gated.exit_code == 1, (scored, gated.stderr)
        assert "holds the same bytes" in gated.stderr
    from_files = fit(f"runs/{SCIENCE}", f"runs/{TRIVIA}")
    gated = run(["calibrate", "again.cbs", "--calibrator", from_files, "--max-smece", "0.9"])
    assert gated.exit_code == 1, gated.stderr


def test_a_bad_sources_entry_is_one_line_exit_2(runs):
    cal = fit(f"runs/{SCIENCE}")
    body = json.loads(cal.read_text())
    body["sources"][0]["rows_hash"] = ["xyz", True]
    cal.write_text(json.dumps(body))
    scored = run(["calibrate", f"runs/{TRIVIA}", "--calibrator", cal])
    assert scored.exit_code == 2
    assert scored.stderr.startswith(f"Error: {cal}: not a calibcli calibrator file: ")
    assert '"sources"' in scored.stderr and len(scored.stderr.splitlines()) == 1


# --------------------------------------------------------------------------- apply and the API


def coarse_rows(path: Path, seed: int, n: int = 1000) -> Path:
    """Native rows whose confidences have 2 decimals: about 80 distinct values in 1,000 rows,
    too few for the rows' content to tell them apart."""
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        c = round(rng.betavariate(5, 2), 2)
        lines.append(json.dumps({"confidence": c, "correct": rng.random() < c}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def native(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a = coarse_rows(tmp_path / "run" / "a.jsonl", 1)
    coarse_rows(tmp_path / "run" / "b.jsonl", 2)
    coarse_rows(tmp_path / "run" / ".c.jsonl", 3)  # a hidden file: a folder's reading skips it
    shutil.copyfile(a, tmp_path / "copy.jsonl")
    return tmp_path


def test_apply_refuses_a_copy_of_a_fitted_file(native):
    cal = fit("run/a.jsonl", "run/b.jsonl")
    applied = run(["apply", cal, "copy.jsonl", "-o", "out.jsonl", "-q"])
    assert applied.exit_code == 2, applied.stderr
    assert not Path("out.jsonl").exists()
    assert "and copy.jsonl, read here, holds the same bytes" in applied.stderr
    # the same rows written again in other bytes: told by the rows' multiset hash
    rows = [json.loads(line) for line in Path("copy.jsonl").read_text().splitlines()]
    turned = [{"correct": r["correct"], "confidence": r["confidence"]} for r in rows]
    Path("turned.jsonl").write_text("".join(json.dumps(r) + "\n" for r in turned))
    applied = run(["apply", cal, "turned.jsonl", "-o", "out.jsonl", "-q"])
    assert applied.exit_code == 2, applied.stderr
    assert "and the 1,000 rows read here are its rows" in applied.stderr
    # by its own name, as before
    applied = run(["apply", cal, "run/a.jsonl", "-o", "out.jsonl", "-q"])
    assert applied.exit_code == 2
    assert "the calibrator was fitted on run/a.jsonl, which is read here too" in applied.stderr


def test_a_file_of_a_fitted_folder_the_fit_did_not_read_is_not_in_sample(native):
    cal = fit("run")
    assert [Path(s["file"]).name for s in json.loads(cal.read_text())["sources"]] == [
        "a.jsonl",
        "b.jsonl",
    ]
    scored = run(["calibrate", "run/.c.jsonl", "--calibrator", cal, "--max-smece", "0.9", "-q"])
    assert scored.exit_code == 0, scored.stderr
    applied = run(["apply", cal, "run/.c.jsonl", "-o", "out.jsonl", "-q"])
    assert applied.exit_code == 0, applied.stderr
    assert Path("out.jsonl").exists()


def test_the_python_api_refuses_a_copy_of_a_fitted_file(native):
    cal = calibcli.fit(
        calibcli.read_predictions(["run/a.jsonl", "run/b.jsonl"]), method="histogram"
    )
    with pytest.raises(InputError) as refused:
        cal.apply(calibcli.read_predictions("copy.jsonl"))
    assert "and copy.jsonl, given here, holds the same bytes" in str(refused.value)
    cal.save("api.json")
    assert [Path(s["file"]).name for s in json.loads(Path("api.json").read_text())["sources"]] == [
        "a.jsonl",
        "b.jsonl",
    ]
    # a file the fit did not read is mapped
    assert len(cal.apply(calibcli.read_predictions("run/.c.jsonl"))) == 1000


# --------------------------------------------------------------------------- byte ranges


def test_pieces_of_one_file_read_with_part_are_other_rows():
    from calibcli.summaries import Source
    from calibcli.summaries.in_sample import FittedSource, shared_input_note

    class Scored:
        fingerprint = None

        def __init__(self, *sources):
            self.sources = sources

    fitted = [FittedSource("/data/a.jsonl", "sampled:ab", 10, 0, 100)]
    other_piece = Scored(Source("a.jsonl", "sampled:ab", "jsonl", 10, 100, 200))
    assert shared_input_note(fitted, other_piece, "the fitted rows", "so") is None
    overlapping = Scored(Source("b.jsonl", "sampled:ab", "jsonl", 10, 50, 150))
    note = shared_input_note(fitted, overlapping, "the fitted rows", "so")
    assert note == (
        "the fitted rows include those of /data/a.jsonl, and b.jsonl, scored here, holds the "
        "same bytes: so"
    )
    whole = Scored(Source("c.jsonl", "sampled:ab", "jsonl", 30))
    assert shared_input_note(fitted, whole, "the fitted rows", "so") is not None


# --------------------------------------------------------------------------- real runs

REAL = Path("/work/shared/realworld")
BIAS = REAL / "lmeval-pr1974-llama3-8b-bias"
STEREOTYPE = REAL / "lmeval-pr1974-llama3-8b-stereotype"
B1 = BIAS / "samples_bias_classification_2024-06-17T12-20-26.826621.json"
B2 = BIAS / "samples_bias_classification_2024-06-17T16-04-35.170084.json"  # B1's bytes
S1 = STEREOTYPE / "samples_stereotype_classification_2024-06-17T16-12-47.023639.json"
real = pytest.mark.skipif(
    not (B1.is_file() and B2.is_file() and S1.is_file()), reason="no real lm-eval runs here"
)


@real
def test_real_runs_a_rerun_of_the_same_bytes_fails_closed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert B1.read_bytes() == B2.read_bytes()
    cal = fit(str(B1), str(S1), "--by", "task")
    gate = ["--by", "task", "--max-smece", "0.02", "--gate-each", "-q"]
    scored = run(["calibrate", B2, "--calibrator", cal, *gate])
    assert scored.exit_code == 1, scored.stderr
    assert f"{B2}, scored here, holds the same bytes" in scored.stderr


@real
def test_real_runs_an_older_rerun_left_out_of_the_fit_is_not_in_sample(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cal = fit(str(BIAS), str(STEREOTYPE))
    scored = run(["calibrate", B1, "--calibrator", cal, "--max-smece", "0.3", "-q"])
    assert "fitted on" not in scored.stderr and "in-sample" not in scored.stderr
    assert scored.exit_code == 0, scored.stderr
