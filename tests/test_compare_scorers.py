"""compare of inspect-ai logs read without --scorer, each graded by the one scorer its samples
hold: sides graded by different scorers judge a right answer differently, so they are said to
be and every gate check fails closed on them; sides graded by one scorer, by --scorer typed, or
a side whose logs were graded by several scorers compare as before."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from harness import run

import calibcli

LOG = Path(__file__).resolve().parent / "fixtures" / "inspect_ai" / "toy_arithmetic.json"
APART = "BASE and NEW were graded by different scorers (see the warning)"
WARNING = (
    "BASE and NEW were graded by different scorers (BASE's inspect-ai logs by 'match'; NEW's "
    "by 'includes', the one scorer each side's samples hold): each judges a right answer its "
    "own way; the differences compare the scorers as well as the models, and a gate on them "
    "fails; compare logs graded by one scorer"
)
GATE = ["--max-increase", "brier=1", "--max-decrease", "accuracy=1", "--gate-on", "estimate"]
B = "200"


def graded(path: Path, *scorers: str, results: bool = True) -> Path:
    """The toy log (20 samples, 12 of them right by match) graded by ``scorers``: match keeps
    its verdicts, includes finds every target in its answer (each answer right); without
    ``results`` (as a run that did not finish writes it), its results are left out. A ``.eval``
    path is written as an archive: its header, then a member per sample."""
    log = json.loads(LOG.read_text(encoding="utf-8"))
    verdicts = {
        "match": lambda s: s["scores"]["match"],
        "includes": lambda s: {"value": "C", "answer": s["output"]["completion"]},
    }
    for sample in log["samples"]:
        sample["scores"] = {name: verdicts[name](sample) for name in scorers}
    log["eval"]["eval_id"] = f"{path.name}-{'-'.join(scorers)}"  # each log a run of its own
    shown = log["results"]["scores"][0]
    log["results"]["scores"] = [dict(shown, name=name, scorer=name) for name in scorers]
    if not results:
        del log["results"]
    if path.suffix == ".json":
        path.write_text(json.dumps(log), encoding="utf-8")
        return path
    samples = log.pop("samples")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps(log))
        for s in samples:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    return path


def compare(*args):
    result = run(["compare", *map(str, args), "--json", "-q", "--bootstrap", B])
    assert result.exit_code in (0, 1), result.output
    return result, json.loads(result.stdout)


def scorers_said(report):
    return [w for w in report["warnings"] if "graded by different scorers" in w]


def every_check_closed(report):
    checks = report["gate"]["checks"]
    return bool(checks) and all(c["passed"] is False and c["reason"] == APART for c in checks)


def test_the_toy_log_is_right_on_12_of_20_by_match():
    log = json.loads(LOG.read_text(encoding="utf-8"))
    values = [s["scores"]["match"]["value"] for s in log["samples"]]
    assert (len(values), values.count("C")) == (20, 12)


@pytest.mark.parametrize("suffix", [".json", ".eval"])
def test_logs_of_two_scorers_fail_every_gate_closed(tmp_path, suffix):
    base = graded(tmp_path / f"base{suffix}", "match")
    new = graded(tmp_path / f"new{suffix}", "includes")
    result, report = compare(base, new, *GATE)
    assert result.exit_code == 1
    assert every_check_closed(report) and len(report["gate"]["checks"]) == 2
    assert scorers_said(report) == [WARNING]
    assert f"warning: {WARNING}" in result.stderr
    # each side is read as its own scorer graded it: 12 of 20 right by match, 20 by includes
    assert report["matched"] == 20
    accuracy = report["figures"]["accuracy"]
    assert (accuracy["base"], accuracy["new"]) == (12 / 20, 1.0)


@pytest.mark.parametrize("suffix", [".json", ".eval"])
def test_a_log_without_results_is_graded_by_its_samples_scorer(tmp_path, suffix):
    base = graded(tmp_path / f"base{suffix}", "match", results=False)
    new = graded(tmp_path / f"new{suffix}", "includes")
    result, report = compare(base, new, *GATE)
    assert result.exit_code == 1 and every_check_closed(report)
    assert scorers_said(report) == [WARNING]


def test_unpaired_logs_of_two_scorers_fail_every_gate_closed(tmp_path):
    base = graded(tmp_path / "base.json", "match")
    new = graded(tmp_path / "new.eval", "includes")
    result, report = compare(base, new, "--unpaired", *GATE, "--min-rows", "1")
    assert result.exit_code == 1
    assert every_check_closed(report) and len(report["gate"]["checks"]) == 3
    assert scorers_said(report) == [WARNING]


def test_logs_of_one_scorer_compare_as_before(tmp_path):
    base = graded(tmp_path / "base.json", "match")
    new = graded(tmp_path / "new.eval", "match")
    result, report = compare(base, new, *GATE)
    assert result.exit_code == 0 and not scorers_said(report)
    assert all(c["passed"] and c.get("reason") is None for c in report["gate"]["checks"])
    # NEW graded by includes on both sides: one scorer again
    base = graded(tmp_path / "inc.json", "includes")
    result, report = compare(base, graded(tmp_path / "inc.eval", "includes"), *GATE)
    assert result.exit_code == 0 and not scorers_said(report)


def test_scorer_typed_grades_both_sides_alike(tmp_path):
    base = graded(tmp_path / "base.json", "match", "includes")
    new = graded(tmp_path / "new.json", "includes", "match")
    for scorer in ("match", "includes"):
        result, report = compare(base, new, "--scorer", scorer, *GATE)
        assert result.exit_code == 0 and not scorers_said(report)


def test_a_side_of_several_scorers_is_not_compared(tmp_path):
    folder = tmp_path / "base"
    folder.mkdir()
    graded(folder / "a.json", "match")
    graded(folder / "b.json", "includes")
    new = graded(tmp_path / "new.json", "includes")
    result, report = compare(folder, new, "--unpaired", "--all-runs", *GATE, "--min-rows", "1")
    assert result.exit_code == 0 and not scorers_said(report)
    assert report["n_base"] == 40


def test_a_side_read_from_standard_input_is_not_compared(tmp_path):
    base = graded(tmp_path / "base.json", "match")
    new = graded(tmp_path / "new.json", "includes")
    samples = json.loads(new.read_text(encoding="utf-8"))["samples"]
    lines = "".join(json.dumps(s) + "\n" for s in samples)
    result = run(["compare", base, "-", *GATE, "--json", "-q"], input=lines)
    assert result.exit_code == 0, result.output
    assert not scorers_said(json.loads(result.stdout))


def test_the_python_api_of_two_paths_says_it_too(tmp_path):
    base = graded(tmp_path / "base.json", "match")
    new = graded(tmp_path / "new.json", "includes")
    report = calibcli.compare(str(base), str(new), max_increase={"brier": 1.0}, gate_on="estimate")
    assert report.passed is False
    assert scorers_said(json.loads(report.to_json())) == [WARNING]
    shutil.copy(base, tmp_path / "again.json")
    again = calibcli.compare(
        str(base), str(tmp_path / "again.json"), max_increase={"brier": 1.0}, gate_on="estimate"
    )
    assert again.passed is True
