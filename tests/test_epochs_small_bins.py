"""The small-sample warning on rows that repeat their questions: a bin of 40 rows from 20
questions scored twice rests on 20 answers, which the warning (a median populated bin below 30)
must say. The bins' sizes in questions are known from the fixture: its 20 samples, with
``--bins 1`` all in one bin."""

from __future__ import annotations

import pytest
from harness import run
from test_epochs import epochs_log, report_of

ONE_BIN = ("--scorer", "match", "--json", "--bins", "1")
# reliability caps its minimum of populated bins at --bins; calibrate is told
OPTIONS = {"calibrate": (*ONE_BIN, "--min-populated-bins", "1"), "reliability": ONE_BIN}


def small(report):
    return [w for w in report["warnings"] if w.startswith("the median populated bin")]


@pytest.mark.parametrize("command", ["calibrate", "reliability"])
def test_a_bin_of_twice_scored_questions_counts_them_once(tmp_path, command):
    log = epochs_log(tmp_path)  # 20 questions, 2 epochs: 40 rows in the one bin
    report = report_of(run([command, log, *OPTIONS[command]]))
    assert report["reliability"]["count"] == [40]
    (warning,) = small(report)
    assert warning.startswith(
        "the median populated bin holds 40 predictions, as few as 20 questions (a run scored "
        "each up to 2 times) (fewer than 30)"
    )


@pytest.mark.parametrize(
    ("copies", "epochs"),
    [(2, 1), (2, 2)],  # 40 questions once; 40 questions twice (80 rows)
)
def test_forty_questions_raise_no_small_sample_warning(tmp_path, copies, epochs):
    log = epochs_log(tmp_path, copies=copies, epochs=epochs)
    report = report_of(run(["calibrate", log, *OPTIONS["calibrate"]]))
    assert report["reliability"]["count"] == [20 * copies * epochs]
    assert small(report) == []


def test_a_summary_away_from_the_log_and_each_group_count_questions(tmp_path):
    log = epochs_log(tmp_path)
    grouped = report_of(run(["calibrate", log, *OPTIONS["calibrate"], "--by", "model"]))
    assert any("as few as 20 questions" in w for w in grouped["warnings"])
    summary = tmp_path / "epochs.cbs"
    made = run(
        ["summarize", log, "--scorer", "match", "--bins", "1", "--table", "never", "-o", summary]
    )
    assert made.exit_code == 0, made.stderr
    log.unlink()  # its summary records the 2 epochs
    away = report_of(run(["calibrate", summary, *OPTIONS["calibrate"][2:]]))
    (warning,) = small(away)
    assert "holds 40 predictions, as few as 20 questions" in warning
