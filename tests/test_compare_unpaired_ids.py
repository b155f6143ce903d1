"""compare --unpaired --id-field FIELD: the field identifies each side's rows and matches none.
A side that repeats an id is refused as ``calibrate --id-field`` refuses it; with --all-runs
its rows are pooled and, repeating their ids, counted and drawn by question, as calibrate
counts them. The command and ``calibcli.compare(unpaired=True)`` give the same report.

The inputs are built so that the counts are known without calibcli: BASE and NEW hold 200
rows each, ids 0 to 199 on both sides; ``u25.jsonl`` is NEW's first 25 rows (ids 0 to 24,
lines 1 to 25) and ``u25dup.jsonl`` those 25 rows then rows 2 to 25 again: 49 rows of 25 ids,
the first repeat the row of id 1 (line 2) read again at line 26."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from harness import run

ROOT = Path(__file__).resolve().parent.parent
LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
STAMP = "2026-11-29T18-50-52.260809"
FAST = ["--bootstrap", "200"]
REFUSED = (
    "Error: u25dup.jsonl:26: the row of id 1 was read before, at u25dup.jsonl:2: re-runs of a "
    "task, or the same rows in two files, would count twice (pass --all-runs to pool them on "
    "purpose)\n"
)
POOLED = (
    "re-runs are pooled (--all-runs): their rows' ids repeat, so each question is answered "
    "several times: u25dup.jsonl (2 rows a question): the figures weigh every answer, and the "
    "bootstrap draws each question's answers together"
)


@pytest.fixture
def sides(tmp_path, monkeypatch):
    """base.jsonl, new.jsonl, u25.jsonl and u25dup.jsonl (see the module) in the working
    directory, so that messages name them as written here."""
    monkeypatch.chdir(tmp_path)
    rng = random.Random(2)
    lines = {}
    for name in ("base", "new"):
        rows = []
        for i in range(200):
            c = rng.random()
            rows.append(json.dumps({"id": i, "confidence": c, "correct": rng.random() < c}))
        lines[name] = rows
        Path(f"{name}.jsonl").write_text("\n".join(rows) + "\n")
    first = lines["new"][:25]
    Path("u25.jsonl").write_text("\n".join(first) + "\n")
    Path("u25dup.jsonl").write_text("\n".join(first + first[1:]) + "\n")
    assert len(Path("u25dup.jsonl").read_text().splitlines()) == 49
    return tmp_path


def compare(*args):
    return run(["compare", *args, "--unpaired", *FAST])


def report(*args, code):
    result = compare(*args, "--json", "-q")
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def checks(body):
    return {check["metric"]: check for check in body["gate"]["checks"]}


@pytest.mark.parametrize("side", ["NEW", "BASE"])
def test_a_repeated_id_is_refused_as_calibrate_refuses_it(sides, side):
    pair = ["base.jsonl", "u25dup.jsonl"] if side == "NEW" else ["u25dup.jsonl", "base.jsonl"]
    result = compare(*pair, "--id-field", "id", "-q")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == REFUSED
    alone = run(["calibrate", "u25dup.jsonl", "--id-field", "id", "-q"])
    assert (alone.exit_code, alone.stderr) == (2, REFUSED)


def test_a_repeated_id_read_from_standard_input_is_refused(sides):
    result = run(
        ["compare", "base.jsonl", "-", "--unpaired", "--id-field", "id", "-q"],
        input=Path("u25dup.jsonl").read_text(),
    )
    assert result.exit_code == 2
    assert result.stderr == REFUSED.replace("u25dup.jsonl", "<stdin>")


def test_the_repeat_is_the_first_error_in_reading_order(sides):
    # a bad row after the repeat (line 50): the repeat, on an earlier line, is named
    text = Path("u25dup.jsonl").read_text() + '{"id": 99, "confidence": 2, "correct": true}\n'
    Path("u25dup.jsonl").write_text(text)
    result = compare("base.jsonl", "u25dup.jsonl", "--id-field", "id", "-q")
    assert (result.exit_code, result.stderr) == (2, REFUSED)


def test_an_id_repeated_across_a_folder_s_files_is_refused(sides):
    Path("runs").mkdir()
    first = Path("u25.jsonl").read_text()
    Path("runs/a.jsonl").write_text(first)
    Path("runs/b.jsonl").write_text(first.replace('"correct": true', '"correct": false'))
    result = compare("base.jsonl", "runs", "--id-field", "id", "-q")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: runs/b.jsonl:1: the row of id 0 was read before, at runs/a.jsonl:1: "
    )


def test_pooled_with_all_runs_min_rows_counts_the_questions(sides):
    args = ["base.jsonl", "u25dup.jsonl", "--id-field", "id", "--all-runs"]
    body = report(*args, "--min-rows", "40", code=1)
    assert (body["n_base"], body["n_new"]) == (200, 49)
    assert POOLED in body["warnings"]
    rows = checks(body)["rows"]
    assert (rows["value"], rows["questions"], rows["questions_exact"]) == (49, 25, True)
    assert rows["passed"] is False
    assert rows["reason"] == (
        "the 49 rows repeat their questions (see the warning) and hold 25, fewer than 40; each "
        "question counts once"
    )
    assert report(*args, "--min-rows", "25", code=0)["gate"]["passed"] is True


def test_pooled_with_all_runs_the_upper_end_gate_fails_closed_on_25_questions(sides):
    args = ["base.jsonl", "u25dup.jsonl", "--id-field", "id", "--all-runs"]
    body = report(*args, "--max-increase", "brier=0.2", code=1)
    brier = checks(body)["brier_increase"]
    assert brier["passed"] is False
    assert brier["reason"].startswith("only 25 questions (the bootstrap draws each with all")
    # the 25 rows read once: the same 25 questions, each its own row
    once = report(
        "base.jsonl", "u25.jsonl", "--id-field", "id", "--max-increase", "brier=0.2", code=1
    )
    assert checks(once)["brier_increase"]["reason"].startswith("only 25 rows")


@pytest.mark.parametrize("pooled", [[], ["--all-runs"]])
def test_sides_numbering_their_rows_alike_give_the_report_without_id_field(sides, pooled):
    # both sides hold ids 0 to 199: nothing is matched, nothing repeats on a side
    gate = ["--max-increase", "brier=0.2", "--min-rows", "150"]
    given = compare("base.jsonl", "new.jsonl", "--id-field", "id", *pooled, *gate, "--json", "-q")
    without = compare("base.jsonl", "new.jsonl", *pooled, *gate, "--json", "-q")
    assert given.exit_code == without.exit_code == 0, given.stderr
    assert given.stdout == without.stdout
    body = json.loads(given.stdout)
    assert (body["paired"], body["id_field"], body["n_base"], body["n_new"]) == (
        False,
        None,
        200,
        200,
    )
    assert not any(w.startswith("re-runs are pooled") for w in body["warnings"])


# the API's report, in a fresh process as a notebook makes it (see test_api_cli_bytes.py)
API = """
import json, sys
import calibcli
base, new, reading, options = json.loads(sys.argv[1])
rows = [calibcli.read_predictions(side, **reading) for side in (base, new)]
sys.stdout.write(json.dumps(calibcli.compare(*rows, unpaired=True, **options).to_json()) + "\\n")
sys.stdout.write(
    json.dumps(calibcli.compare(base, new, unpaired=True, **reading, **options).to_json()) + "\\n"
)
"""


def _fresh(args: list, cwd: Path) -> subprocess.CompletedProcess:
    from test_api_cli_bytes import _user_env

    env = {**_user_env(), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600
    )


def test_the_command_and_the_function_give_the_same_report(sides):
    pooled = {"id_field": "id", "all_runs": True}
    cases = [
        ("u25dup.jsonl", pooled, {"min_rows": 40}, ["--min-rows", "40"], 1),
        (
            "u25dup.jsonl",
            pooled,
            {"max_increase": {"brier": 0.2}},
            ["--max-increase", "brier=0.2"],
            1,
        ),
        ("u25dup.jsonl", pooled, {"min_rows": 25}, ["--min-rows", "25"], 0),
        ("new.jsonl", {"id_field": "id"}, {"min_rows": 150}, ["--min-rows", "150"], 0),
    ]
    for new, reading, options, args, code in cases:
        flags = ["--id-field", "id", *(["--all-runs"] if reading.get("all_runs") else [])]
        given = json.dumps(["base.jsonl", new, reading, {**options, "bootstrap": 200}])
        api = _fresh(["-c", API, given], sides)
        assert api.returncode == 0, api.stderr
        of_rows, of_paths = (json.loads(line) for line in api.stdout.splitlines())
        command = ["-m", "calibcli", "compare", "base.jsonl", new, "--unpaired", *flags]
        cli = _fresh([*command, *args, *FAST, "--json", "-q"], sides)
        assert cli.returncode == code, cli.stderr
        assert of_rows == of_paths == cli.stdout, args


def test_detected_format_counts_the_files_read(tmp_path, monkeypatch):
    # two lm-eval samples files a side: 4 files read; a rolling task's file beside them is
    # skipped with its warning and not counted
    monkeypatch.chdir(tmp_path)
    for side in ("lmb", "lmn"):
        Path(side).mkdir()
        for task in ("toy_mc_science", "toy_mc_trivia"):
            name = f"samples_{task}_{STAMP}.jsonl"
            Path(side, name).write_text((LM_EVAL / name).read_text())
    rolling = f"samples_toy_wikitext_{STAMP}.jsonl"
    Path("lmb", rolling).write_text((LM_EVAL / rolling).read_text())
    for unpaired in ([], ["--unpaired"]):
        result = run(["compare", "lmb", "lmn", *unpaired, *FAST])
        assert result.exit_code == 0, result.stderr
        said = result.stderr.splitlines()
        assert "detected format: lm-eval (4 files)" in said
        assert any(line.startswith(f"warning: lmb/{rolling}: ") for line in said)
