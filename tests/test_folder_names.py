"""A folder given as an input reads its files of the kinds calibcli reads whatever the case of
their names (``ROWS.JSONL``, ``LOG.JSON``), and ``.ndjson`` files, which are JSON Lines by
another name; hidden files and other kinds are left out. A log named in capitals is read
as the same log named in small letters: its epochs are found, and the bootstrap draws each
question with all its rows. Row counts are written from the files each folder holds."""

from __future__ import annotations

import gzip
import json

from harness import run
from test_epochs import epochs_log

QUESTIONS = (
    "only 20 questions (the bootstrap draws each with all its rows): the upper end of a "
    "bootstrap interval needs at least 30 to show how brier varies"
)


def row(confidence, correct):
    return json.dumps({"confidence": confidence, "correct": correct}) + "\n"


def test_a_folder_reads_its_files_whatever_their_case(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "a.jsonl").write_text(row(0.7, True))
    (folder / "B.JSONL").write_text(row(0.2, False) + row(0.4, True))
    (folder / "c.ndjson").write_text(row(0.9, True))
    (folder / "D.NDJSON.GZ").write_bytes(gzip.compress(row(0.6, False).encode()))
    (folder / "E.CSV").write_text("confidence,correct\n0.5,true\n")
    (folder / ".hidden.jsonl").write_text(row(0.1, True))  # hidden: left out
    (folder / "notes.txt").write_text(row(0.1, True))  # another kind: left out
    result = run(["calibrate", folder, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == 1 + 2 + 1 + 1 + 1
    # (0.7 + 0.2 + 0.4 + 0.9 + 0.6 + 0.5) / 6, and 4 right of 6
    assert abs(report["mean_confidence"] - 3.3 / 6) < 1e-15
    assert report["accuracy"] == 4 / 6


def test_a_log_named_in_capitals_keeps_its_epochs(tmp_path):
    log = epochs_log(tmp_path, name="EPOCHS.JSON")
    args = ["calibrate", log, "--scorer", "match", "--gate-on", "upper", "--max-brier", "0.99"]
    result = run([*args, "--bootstrap", "200", "--json"])
    assert result.exit_code == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["n"] == 40  # 20 samples, 2 epochs each
    # the bootstrap draws each question with its two rows: 20 questions are too few for it
    assert [c.get("reason") for c in report["gate"]["checks"]] == [QUESTIONS]
