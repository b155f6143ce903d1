"""Each bin's accuracy interval on rows that repeat their questions (an inspect-ai run with
several epochs): a bin's rows count as count / k answers, correct / k of them right (k the
run's epochs), as if each question had put all its rows in one bin — the widest interval the
rows can need, and exact when a question's rows agree.

Copies make the expected intervals known without calibcli: two copies of each answer are the
one-epoch run's bins with every count doubled, so the intervals are the one-epoch run's. Where
the epochs disagree the expected bounds are Wilson's formula, written out here."""

from __future__ import annotations

import json
import math
from statistics import NormalDist

import pytest
from harness import run
from test_epochs import epochs_log, report_of

ONE = ("--scorer", "match", "--json")


def intervals(command, *args):
    report = report_of(run([command, *map(str, args), *ONE]))
    return report, report["reliability"]["accuracy_ci"]


def wilson(k, n, level=0.95):
    """Wilson's score interval, as its formula reads."""
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


@pytest.mark.parametrize("command", ["calibrate", "reliability"])
def test_copies_give_the_one_epoch_intervals(tmp_path, command):
    once_report, once = intervals(command, epochs_log(tmp_path, "once.json", copies=3, epochs=1))
    twice_report, twice = intervals(command, epochs_log(tmp_path, "twice.json", copies=3))
    assert twice_report["reliability"]["count"] == [
        2 * c for c in once_report["reliability"]["count"]
    ]
    assert twice == once


def test_each_group_and_a_summary_away_from_the_log_count_questions(tmp_path):
    _, once = intervals("calibrate", epochs_log(tmp_path, "once.json", copies=3, epochs=1))
    log = epochs_log(tmp_path, copies=3)
    grouped = report_of(run(["calibrate", log, *ONE, "--by", "model"]))
    (group,) = grouped["groups"].values()
    assert group["reliability"]["accuracy_ci"] == once
    summary = tmp_path / "epochs.cbs"
    made = run(["summarize", log, "--scorer", "match", "--table", "never", "-o", summary])
    assert made.exit_code == 0, made.stderr
    log.unlink()  # its summary records the 2 epochs
    away = report_of(run(["calibrate", summary, "--json"]))
    assert away["reliability"]["accuracy_ci"] == once


def test_epochs_that_disagree_count_each_bin_over_the_epochs(tmp_path):
    log = epochs_log(tmp_path, copies=3)
    data = json.loads(log.read_text())
    for sample in data["samples"]:  # the second answer to every third question scored the other way
        if sample["epoch"] == 2 and sample["id"] % 3 == 0:
            match = sample["scores"]["match"]
            match["value"] = "I" if match["value"] == "C" else "C"
    log.write_text(json.dumps(data))
    report, got = intervals("calibrate", log)
    rel = report["reliability"]
    for count, accuracy, ci in zip(rel["count"], rel["accuracy"], got, strict=True):
        if count == 0:
            assert ci is None
            continue
        right = round(accuracy * count)
        assert ci == pytest.approx(wilson(right / 2, count / 2), rel=1e-12, abs=1e-15)
    assert any(w.startswith("inspect-ai runs scored each sample") for w in report["warnings"])


def test_a_run_of_one_epoch_counts_every_row(tmp_path):
    report, got = intervals("calibrate", epochs_log(tmp_path, copies=3, epochs=1))
    rel = report["reliability"]
    for count, accuracy, ci in zip(rel["count"], rel["accuracy"], got, strict=True):
        if count:
            expected = wilson(round(accuracy * count), count)
            assert ci == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_each_file_counts_its_own_epochs(tmp_path):
    once = epochs_log(tmp_path, "once.json", copies=3, epochs=1)
    twice = epochs_log(tmp_path, "twice.json", copies=3)
    report = report_of(run(["calibrate", once, twice, *ONE, "--all-runs"]))
    files = {name.rsplit("/", 1)[-1]: section for name, section in report["per_file"].items()}
    assert (
        files["twice.json"]["reliability"]["accuracy_ci"]
        == (files["once.json"]["reliability"]["accuracy_ci"])
    )
