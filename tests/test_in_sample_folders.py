"""A calibrator fitted on a folder or a quoted pattern is found in its files by name, where the
rows' values repeat too much for their content to tell (2-decimal confidences): one of the
folder's files scored again fails calibrate's gate closed and is refused by apply, as it is
when the fit named the files one by one; a folder scored whose files were fitted by name too.
A fresh file of the same kind, and a file in a subfolder the fit did not read, keep their
verdicts."""

from __future__ import annotations

import json
import random

import pytest
from harness import run


def coarse(path, seed, n=1000):
    """Beta(5, 2) confidences to 2 decimals, right with that probability: about 80 distinct
    values in 1,000 rows, too few for the rows' content to tell them apart."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        c = round(rng.betavariate(5, 2), 2)
        rows.append({"confidence": c, "correct": rng.random() < c})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    coarse(tmp_path / "run" / "a.jsonl", 12)
    coarse(tmp_path / "run" / "b.jsonl", 13)
    coarse(tmp_path / "run" / "deeper" / "c.jsonl", 15)
    coarse(tmp_path / "fresh.jsonl", 14)
    return tmp_path


@pytest.mark.parametrize("fitted", [["run"], ["run/*.jsonl"], ["run/a.jsonl", "run/b.jsonl"]])
def test_a_file_of_a_fitted_folder_or_pattern_is_found_by_name(runs, fitted):
    cal = runs / "h.json"
    made = run(["fit", *fitted, "--method", "histogram", "-o", cal, "-q"])
    assert made.exit_code == 0, made.stderr
    assert json.loads(cal.read_text())["fitted_on"]["files"] == fitted
    scored = run(["calibrate", "run/a.jsonl", "--calibrator", cal, "--max-ece", "1", "-q"])
    assert scored.exit_code == 1
    assert "the calibrator was fitted on run/a.jsonl, which is scored here too" in scored.stderr
    applied = run(["apply", cal, "run/a.jsonl", "-q", "-o", runs / "out.jsonl"])
    assert applied.exit_code == 2 and not (runs / "out.jsonl").exists()
    assert "the calibrator was fitted on run/a.jsonl, which is read here too" in applied.stderr
    # the folder scored: its files are the fitted ones
    folder = run(["calibrate", "run", "--calibrator", cal, "--max-ece", "1", "-q"])
    assert folder.exit_code == 1


def test_other_files_keep_their_verdicts(runs):
    cal = runs / "h.json"
    assert run(["fit", "run", "--method", "histogram", "-o", cal, "-q"]).exit_code == 0
    for held_out in ("fresh.jsonl", "run/deeper/c.jsonl"):
        scored = run(["calibrate", held_out, "--calibrator", cal, "--max-ece", "1", "-q"])
        assert scored.exit_code == 0, (held_out, scored.stderr)
        assert "in-sample" not in scored.stderr
        applied = run(["apply", cal, held_out, "-q", "-o", runs / "out.jsonl"])
        assert applied.exit_code == 0, (held_out, applied.stderr)
