"""calibcli.compare of Predictions checks its sides as ``calibcli compare`` of the files checks
them: runs of different tasks and logs graded by different scorers are said to be, and every
gate check fails closed on them, with the command's verdict and JSON; sides read with
different options that grade them (another scorer, another correct_field) fail closed too,
which the command, reading both sides one way, never compares."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOG = FIXTURES / "inspect_ai" / "toy_arithmetic.json"
SCIENCE = FIXTURES / "lm_eval" / "samples_toy_mc_science_2026-11-29T18-50-52.260809.jsonl"
TRIVIA = FIXTURES / "lm_eval" / "samples_toy_mc_trivia_2026-11-29T18-50-52.260809.jsonl"
SCORERS = "BASE and NEW were graded by different scorers (see the warning)"
TASKS = "BASE and NEW are runs of different tasks (see the warning)"
GRADING = "BASE and NEW were graded another way (see the warning)"
B = 200
ESTIMATE = "estimate"  # the toy log's 20 rows are too few to gate on an interval's end


def log(path: Path, *scorers: str, task: str = "toy_arithmetic", asks: str = "") -> str:
    """The toy log (20 samples, 12 right by match) of ``task``, graded by ``scorers``: match
    keeps its verdicts, includes reads every answer right; ``asks`` is added to every input
    (another question under the same ids)."""
    data = json.loads(LOG.read_text(encoding="utf-8"))
    data["eval"]["task"] = task
    verdicts = {
        "match": lambda s: s["scores"]["match"],
        "includes": lambda s: {"value": "C", "answer": s["output"]["completion"]},
    }
    for sample in data["samples"]:
        sample["scores"] = {name: verdicts[name](sample) for name in scorers}
        sample["input"] = sample["input"] + asks
    shown = data["results"]["scores"][0]
    data["results"]["scores"] = [dict(shown, name=name, scorer=name) for name in scorers]
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def command(base, new, *options):
    """``calibcli compare --json`` of the files: (exit code, report or None, stderr)."""
    args = ["compare", base, new, "--json", "-q", "--bootstrap", str(B), *options]
    result = run(args)
    report = json.loads(result.stdout) if result.exit_code in (0, 1) else None
    return result.exit_code, report, result.stderr


def closed(report, reason):
    checks = report["gate"]["checks"]
    return bool(checks) and all(c["passed"] is False and c["reason"] == reason for c in checks)


def test_logs_graded_by_different_scorers_fail_closed_as_the_command_does(tmp_path):
    base, new = log(tmp_path / "base.json", "match"), log(tmp_path / "new.json", "includes")
    code, report, _ = command(base, new, "--max-decrease", "accuracy=0", "--gate-on", ESTIMATE)
    assert code == 1 and closed(report, SCORERS)
    read = calibcli.read_predictions
    result = calibcli.compare(
        read(base), read(new), max_decrease={"accuracy": 0}, gate_on=ESTIMATE, bootstrap=B
    )
    assert result.passed is False
    assert json.loads(result.to_json()) == report


def test_logs_of_one_scorer_pass_as_the_command_does(tmp_path):
    base, new = log(tmp_path / "base.json", "match"), log(tmp_path / "new.json", "match")
    code, report, _ = command(base, new, "--max-decrease", "accuracy=0", "--gate-on", ESTIMATE)
    assert code == 0
    read = calibcli.read_predictions
    result = calibcli.compare(
        read(base), read(new), max_decrease={"accuracy": 0}, gate_on=ESTIMATE, bootstrap=B
    )
    assert result.passed is True
    assert json.loads(result.to_json()) == report


def test_lm_eval_runs_of_different_tasks_unpaired_fail_closed_as_the_command_does():
    base, new = str(SCIENCE), str(TRIVIA)
    code, report, _ = command(base, new, "--unpaired", "--max-increase", "ece=0.5")
    assert code == 1 and closed(report, TASKS)
    read = calibcli.read_predictions
    result = calibcli.compare(
        read(base), read(new), unpaired=True, max_increase={"ece": 0.5}, bootstrap=B
    )
    assert result.passed is False
    assert json.loads(result.to_json()) == report


def test_lm_eval_runs_of_different_tasks_paired_are_refused_as_the_command_refuses():
    code, _, stderr = command(str(SCIENCE), str(TRIVIA), "--max-increase", "ece=0.5")
    assert code == 2 and "runs of different tasks" in stderr
    read = calibcli.read_predictions
    with pytest.raises(InputError) as raised:
        calibcli.compare(read(str(SCIENCE)), read(str(TRIVIA)), max_increase={"ece": 0.5})
    assert stderr.strip().endswith(str(raised.value).split(": ", 1)[1])


@pytest.mark.parametrize("unpaired", [False, True])
def test_inspect_logs_of_different_tasks_fail_closed_as_the_command_does(tmp_path, unpaired):
    base = log(tmp_path / "base.json", "match")
    new = log(tmp_path / "new.json", "match", task="other_task", asks=" Think first.")
    gate = ["--max-increase", "ece=0.5", "--gate-on", ESTIMATE]
    code, report, _ = command(base, new, *gate, *(["--unpaired"] if unpaired else []))
    assert code == 1 and closed(report, TASKS)
    read = calibcli.read_predictions
    result = calibcli.compare(
        read(base),
        read(new),
        unpaired=unpaired,
        max_increase={"ece": 0.5},
        gate_on=ESTIMATE,
        bootstrap=B,
    )
    assert result.passed is False
    assert json.loads(result.to_json()) == report


def test_logs_of_tasks_named_apart_asking_the_same_questions_compare_as_the_command_does(
    tmp_path,
):
    base = log(tmp_path / "base.json", "match")
    new = log(tmp_path / "new.json", "match", task="renamed")
    code, report, _ = command(base, new, "--max-increase", "ece=0.5", "--gate-on", ESTIMATE)
    assert code == 0 and not any("different tasks" in w for w in report["warnings"])
    read = calibcli.read_predictions
    result = calibcli.compare(
        read(base), read(new), max_increase={"ece": 0.5}, gate_on=ESTIMATE, bootstrap=B
    )
    assert result.passed is True
    assert json.loads(result.to_json()) == report


def test_sides_read_with_different_scorers_fail_closed(tmp_path):
    both = log(tmp_path / "both.json", "match", "includes")
    read = calibcli.read_predictions
    result = calibcli.compare(
        read(both, scorer="match"),
        read(both, scorer="includes"),
        max_decrease={"accuracy": 0},
        gate_on=ESTIMATE,
        bootstrap=B,
    )
    # includes reads every answer right, match 12 of 20: NEW looks better, and may not pass
    assert result["figures"]["accuracy"]["difference"] == pytest.approx(8 / 20)
    assert result.passed is False and closed(result, SCORERS)
    said = [w for w in result.warnings if "graded by different scorers" in w]
    assert said and "'match'" in said[0] and "'includes'" in said[0]


def test_sides_read_with_one_scorer_compare_as_the_command_with_scorer(tmp_path):
    base = log(tmp_path / "base.json", "match", "includes")
    new = log(tmp_path / "new.json", "match", "includes")
    gate = ["--max-decrease", "accuracy=0", "--gate-on", ESTIMATE]
    code, report, _ = command(base, new, "--scorer", "match", *gate)
    assert code == 0
    read = calibcli.read_predictions
    result = calibcli.compare(
        read(base, scorer="match"),
        read(new, scorer="match"),
        max_decrease={"accuracy": 0},
        gate_on=ESTIMATE,
        bootstrap=B,
    )
    assert result.passed is True
    assert json.loads(result.to_json()) == report


def test_sides_read_with_different_correct_fields_fail_closed(tmp_path):
    # "ok" is "correct" with the first 10 of 100 answers read wrong: NEW's accuracy is lower
    rows = [
        {"id": i, "confidence": i / 100, "correct": i % 2 == 0, "ok": i % 2 == 0 and i >= 10}
        for i in range(100)
    ]
    path = str(write_jsonl(tmp_path / "rows.jsonl", rows))
    read = calibcli.read_predictions
    base, new = read(path, id_field="id"), read(path, id_field="id", correct_field="ok")
    gate = {"max_increase": {"brier": 1}, "gate_on": ESTIMATE, "bootstrap": B}
    result = calibcli.compare(base, new, **gate)
    assert result["figures"]["accuracy"]["difference"] == pytest.approx(-5 / 100)
    assert result.passed is False and closed(result, GRADING)
    said = [w for w in result.warnings if "graded another way" in w]
    assert said and "correct_field='correct' on BASE, 'ok' on NEW" in said[0]
    same = calibcli.compare(base, read(path, id_field="id"), **gate)
    assert same.passed is True and not any("graded another way" in w for w in same.warnings)


def test_rows_given_as_arrays_say_nothing_of_their_sides():
    conf, correct, ids = [0.2, 0.8, 0.6, 0.4], [False, True, True, False], [1, 2, 3, 4]
    result = calibcli.compare((conf, correct, ids), (conf, correct, ids), bootstrap=B)
    assert not any("different" in w or "another way" in w for w in result.warnings)
