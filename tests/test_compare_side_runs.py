"""Each side of a comparison reads the newest run of its own files: re-runs of a task are chosen
within a side, never across the two (NEW's run is not BASE's re-run), and the warning names
exactly the files left out of that side. A side that then reads NEW's bytes says so.

Runs are made from the committed lm-eval fixture with other timestamps and perturbed
loglikelihoods; every figure is computed here (softmax of each row's loglikelihoods, the row
right when its largest is the gold choice's). The realworld tests read real harness output kept
beside the checkout in ../shared/realworld and are skipped without it.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

import pytest
from harness import run

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "lm_eval" / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"
TASK = "toy_mc_science"
STAMPS = (  # oldest first
    "2026-12-01T09-00-00.000001",
    "2026-12-01T10-00-00.000002",
    "2026-12-01T11-00-00.000003",
    "2026-12-01T12-00-00.000004",
)
REALWORLD = HERE.parents[1] / "shared" / "realworld"
BIAS = REALWORLD / "lmeval-pr1974-llama3-8b-bias"
needs_bias = pytest.mark.skipif(not BIAS.is_dir(), reason="no ../shared/realworld")


def named(folder: Path, stamp: str) -> Path:
    return folder / f"samples_{TASK}_{stamp}.jsonl"


def write_run(folder: Path, stamp: str, seed: int) -> Path:
    """The fixture's rows with each loglikelihood lowered by a seeded amount in [0, 3), and
    ``acc`` as the harness would give it for them."""
    rng = random.Random(seed)
    rows = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        moved = [[str(float(r[0][0]) - rng.uniform(0.0, 3.0)), r[0][1]] for r in row["resps"]]
        row["resps"] = [[pair] for pair in moved]
        row["filtered_resps"] = moved
        lls = [float(ll) for ll, _ in moved]
        row["acc"] = float(lls.index(max(lls)) == int(row["target"]))  # the harness's, as it is
        rows.append(json.dumps(row))
    folder.mkdir(exist_ok=True)
    path = named(folder, stamp)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def expected(*paths: Path) -> tuple[int, float, float]:
    """(n, accuracy, mean confidence) of the rows of ``paths``, computed from their JSON."""
    right, confs = 0, []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            lls = [float(r[0]) for r in row["filtered_resps"]]
            top = max(lls)
            confs.append(1.0 / math.fsum(math.exp(x - top) for x in lls))
            right += lls.index(top) == int(row["target"])
    return len(confs), right / len(confs), math.fsum(confs) / len(confs)


def rerun_warning(*left_out: Path, task: str = TASK) -> str:
    files = ", ".join(p.name for p in left_out)
    return (
        f"re-runs of 1 task(s) ('{task}') in one folder: reading each task's newest run and "
        f"leaving out {len(left_out)} older file(s): {files} (pass --all-runs to pool them)"
    )


SAME_ROWS = "NEW's rows are BASE's: every matched id has the same confidence"


def compare_json(*args, code: int = 0) -> tuple[dict, str]:
    result = run(["compare", *args, "--json", "-q", "--bootstrap", "200"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result.stderr


def assert_side(side: dict, *paths: Path) -> None:
    n, accuracy, confidence = expected(*paths)
    assert side["n"] == n
    assert side["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert side["mean_confidence"] == pytest.approx(confidence, rel=1e-12)


@pytest.fixture
def runs(tmp_path):
    """One folder: runs 0 and 1 distinct, run 2 a copy of run 0's bytes, run 3 of run 1's."""
    folder = tmp_path / "out"
    first = write_run(folder, STAMPS[0], seed=1)
    second = write_run(folder, STAMPS[1], seed=2)
    shutil.copy(first, named(folder, STAMPS[2]))
    shutil.copy(second, named(folder, STAMPS[3]))
    return [named(folder, stamp) for stamp in STAMPS]


def test_the_runs_differ_where_the_test_needs_them_to(runs):
    assert expected(runs[0])[1:] != expected(runs[1])[1:]
    assert expected(runs[0]) == expected(runs[2]) and expected(runs[1]) == expected(runs[3])


def test_base_reads_the_newest_of_its_own_files_and_names_those_left_out(runs):
    base = str(runs[0].parent / f"samples_{TASK}_2026-12-01T[01][90]-*.jsonl")  # runs 0 and 1
    report, _ = compare_json(base, runs[3])
    assert_side(report["sides"]["base"], runs[1])  # not run 0's, whose figures differ
    assert_side(report["sides"]["new"], runs[3])
    assert report["warnings"][0] == rerun_warning(runs[0])  # run 1 read, run 0 left out
    # run 1 holds run 3's bytes: NEW is not BASE's re-run, and the copy is said
    assert sum(w.startswith(SAME_ROWS) for w in report["warnings"]) == 1
    assert report["matched"] == 48


def test_a_base_pattern_reaching_a_later_copy_reads_that_copy(runs):
    # runs 0, 1 and 2 (run 0's bytes, the newest): BASE's figures are run 0's, read from run 2
    base = str(runs[0].parent / f"samples_{TASK}_2026-12-01T[01][901]-*.jsonl")
    report, _ = compare_json(base, runs[3])
    assert_side(report["sides"]["base"], runs[2])
    assert report["warnings"][0] == rerun_warning(runs[0], runs[1])
    assert not any(w.startswith(SAME_ROWS) for w in report["warnings"])


def test_each_side_chooses_among_its_own_files_only(runs):
    # both sides patterns over one folder: each reads its newest, none left out across sides
    folder = runs[0].parent
    base = str(folder / f"samples_{TASK}_2026-12-01T[01][90]-*.jsonl")  # runs 0 and 1
    new = str(folder / f"samples_{TASK}_2026-12-01T1[12]-*.jsonl")  # runs 2 and 3
    report, _ = compare_json(base, new)
    assert_side(report["sides"]["base"], runs[1])
    assert_side(report["sides"]["new"], runs[3])
    assert report["warnings"][:2] == [rerun_warning(runs[0]), rerun_warning(runs[2])]


def test_unpaired_sides_read_their_own_newest_runs(runs):
    base = str(runs[0].parent / f"samples_{TASK}_2026-12-01T[01][90]-*.jsonl")
    report, _ = compare_json(base, runs[2], "--unpaired")
    assert_side(report["sides"]["base"], runs[1])
    assert_side(report["sides"]["new"], runs[2])
    assert report["warnings"][0] == rerun_warning(runs[0])


def test_all_runs_pools_a_side_s_runs_and_only_its_own(runs):
    base = str(runs[0].parent / f"samples_{TASK}_2026-12-01T[01][90]-*.jsonl")
    report, _ = compare_json(base, runs[2], "--unpaired", "--all-runs")
    assert_side(report["sides"]["base"], runs[0], runs[1])
    assert_side(report["sides"]["new"], runs[2])
    assert not any(w.startswith("re-runs of") for w in report["warnings"])
    # paired, the pooled runs repeat each document: refused, as a paired comparison matches
    # each document once
    result = run(["compare", base, runs[2], "--all-runs", "-q"])
    assert result.exit_code == 2
    assert "duplicate id toy_mc_science/0" in result.stderr


# --------------------------------------------------------------------------- realworld


def bias_run(stamp: str) -> Path:
    return BIAS / f"samples_bias_classification_2024-06-17T{stamp}.json"


@needs_bias
def test_realworld_base_pattern_reads_its_newest_file():
    # T1[25]-* holds 12-20-26, 15-44-37 and 15-58-04 (12-20-26's bytes, the newest)
    base = str(BIAS / "samples_bias_classification_2024-06-17T1[25]-*.json")
    report, _ = compare_json(base, bias_run("16-06-39.458097"))
    calibrated = run(["calibrate", bias_run("15-58-04.407601"), "--json", "-q"])
    alone = json.loads(calibrated.stdout)
    assert report["sides"]["base"]["accuracy"] == alone["accuracy"]
    assert report["sides"]["base"]["ece"] == alone["ece"]
    left_out = (bias_run("12-20-26.826621"), bias_run("15-44-37.867068"))
    assert report["warnings"][0] == rerun_warning(*left_out, task="bias_classification")


@needs_bias
def test_realworld_base_of_two_runs_reads_the_newer_which_holds_new_s_bytes():
    base = str(BIAS / "samples_bias_classification_2024-06-17T1[25]-[24]*.json")
    report, _ = compare_json(base, bias_run("16-06-39.458097"))
    calibrated = run(["calibrate", bias_run("15-44-37.867068"), "--json", "-q"])
    assert report["sides"]["base"]["accuracy"] == json.loads(calibrated.stdout)["accuracy"]
    left_out = bias_run("12-20-26.826621")
    assert report["warnings"][0] == rerun_warning(left_out, task="bias_classification")
    assert sum(w.startswith(SAME_ROWS) for w in report["warnings"]) == 1
