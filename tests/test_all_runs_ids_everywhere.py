"""Re-runs pooled with --all-runs whose ids repeat are found by every reader: compare
--unpaired counts and draws each side's questions as calibrate does, and
``calibcli.read_predictions`` keys them so that the functions' reports are the commands' byte
for byte. Rows read by ``read_predictions`` stay read-only: numpy refuses to make them writable.

The counts are known by construction: the committed inspect-ai log has 20 samples, so a one-epoch
run of it and a re-indented copy are 40 rows of 20 questions, and two two-epoch runs 80 rows of
20 questions (4 rows a question, 2 from each run); a native file of 30 rows of ids q0 to q29
and its copy are 60 rows of 30 questions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from harness import run
from test_all_runs_ids import DRAWN, OPENING, native
from test_epochs import epochs_log

import calibcli

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = 20
QUESTIONS = 30


def pooled_folder(tmp_path: Path) -> Path:
    """A folder of a one-epoch run of the committed log and a re-run of it (its own eval_id,
    re-indented: other bytes, the same 20 samples)."""
    folder = tmp_path / "base"
    folder.mkdir()
    log = json.loads(epochs_log(folder, "run1.json", epochs=1).read_text())
    log["eval"]["eval_id"] = "run2"
    (folder / "run2.json").write_text(json.dumps(log, indent=1))
    return folder


def wider(tmp_path: Path) -> Path:
    """30 native rows: NEW holds more rows than BASE holds questions."""
    return native(tmp_path, "new.jsonl")


def compare(args: list, code: int) -> dict:
    result = run(["compare", *args, "--unpaired", "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def rows_check(body: dict) -> dict:
    return next(c for c in body["gate"]["checks"] if c["metric"] == "rows")


def test_unpaired_min_rows_counts_the_questions_of_pooled_logs(tmp_path):
    base, new = pooled_folder(tmp_path), wider(tmp_path)
    args = [base, new, "--all-runs", "--scorer", "match", "--min-rows"]
    body = compare([*args, str(SAMPLES + 1)], 1)
    assert (body["n_base"], body["n_new"]) == (2 * SAMPLES, QUESTIONS)
    assert rows_check(body)["reason"] == (
        "the 40 rows repeat their questions (see the warning) and hold 20, fewer than 21; each "
        "question counts once"
    )
    said = f"{OPENING}run1.json and run2.json (2 rows a question among them): {DRAWN}"
    assert said in body["warnings"]
    assert compare([*args, str(SAMPLES)], 0)["gate"]["passed"] is True


def test_unpaired_draws_the_pooled_logs_question_by_question(tmp_path, monkeypatch):
    import calibcli.reports.compare as compare_module

    seen = []
    real = compare_module.compare_section

    def spy(*args, **kwargs):
        seen.append(kwargs.get("side_questions"))
        return real(*args, **kwargs)

    monkeypatch.setattr(compare_module, "compare_section", spy)
    base, new = pooled_folder(tmp_path), wider(tmp_path)
    compare([base, new, "--all-runs", "--scorer", "match"], 0)
    (labels,) = seen
    base_labels, new_labels = labels
    assert new_labels is None  # native rows without ids: each its own question
    # 40 rows, 20 labels of two rows each
    assert sorted(np.unique(base_labels, return_counts=True)[1].tolist()) == [2] * SAMPLES


def test_unpaired_logs_that_repeat_nothing_read_as_without_all_runs(tmp_path):
    log, new = epochs_log(tmp_path, "run1.json", epochs=1), wider(tmp_path)
    args = [log, new, "--scorer", "match", "--min-rows", "20", "--ci", "0.95"]
    pooled = run(["compare", *args, "--unpaired", "--all-runs", "--json", "-q"])
    alone = run(["compare", *args, "--unpaired", "--json", "-q"])
    assert pooled.exit_code == alone.exit_code == 0
    assert pooled.stdout == alone.stdout


def test_read_predictions_counts_the_questions_of_a_file_and_its_copy(tmp_path):
    path, again = str(native(tmp_path)), str(native(tmp_path, "again.jsonl"))
    rows = calibcli.read_predictions([path, again], all_runs=True, id_field="id")
    assert len(rows) == 2 * QUESTIONS
    assert np.unique(rows.questions).shape[0] == QUESTIONS
    said = f"{OPENING}rows.jsonl and again.jsonl (2 rows a question among them): {DRAWN}"
    assert rows.warnings == (said,)
    assert calibcli.calibrate(rows, min_rows=QUESTIONS + 1).passed is False
    assert calibcli.calibrate(rows, min_rows=QUESTIONS).passed is True
    chosen = json.loads(calibcli.threshold(rows, target_accuracy=0.6).to_json())
    assert chosen["guaranteed"]["one_per_question"] == {"questions": 30, "rows": 60, "seed": 0}


def test_read_predictions_counts_the_samples_of_pooled_logs(tmp_path):
    folder = pooled_folder(tmp_path)
    files = [str(folder / "run1.json"), str(folder / "run2.json")]
    rows = calibcli.read_predictions(files, scorer="match", all_runs=True)
    assert len(rows) == 2 * SAMPLES
    assert np.unique(rows.questions).shape[0] == SAMPLES
    assert calibcli.calibrate(rows, min_rows=SAMPLES + 1).passed is False


# the functions' reports, in a fresh process as a notebook makes them (test_api_cli_bytes.py)
API = """
import json, sys
import calibcli
for command, paths, reading, options in json.loads(sys.argv[1]):
    if command == "compare":
        sides = [calibcli.read_predictions(p, **reading) for p in paths]
        got = calibcli.compare(*sides, unpaired=True, **options)
    else:
        got = getattr(calibcli, command)(calibcli.read_predictions(paths, **reading), **options)
    sys.stdout.write(json.dumps(got.to_json()) + "\\n")
"""


def _fresh(args: list) -> subprocess.CompletedProcess:
    from test_api_cli_bytes import _user_env

    return subprocess.run(
        [sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        env=_user_env(),
        cwd=ROOT,
        timeout=600,
    )


def _option(key: str, value: object) -> tuple[str, str]:
    return "--" + key.replace("_", "-"), str(value)


def test_the_functions_give_the_commands_reports_byte_for_byte(tmp_path):
    rows, again = str(native(tmp_path)), str(native(tmp_path, "again.jsonl"))
    folder = pooled_folder(tmp_path)
    one = [str(folder / "run1.json"), str(folder / "run2.json")]
    # two two-epoch runs of the same samples: 4 rows a question, 2 of them from each run
    two = [str(epochs_log(tmp_path, f"e{k}.json", flip={k}, epochs=2)) for k in (1, 2)]
    ids = {"id_field": "id", "all_runs": True}
    match = {"scorer": "match", "all_runs": True}
    ci = {"ci": 0.95, "bootstrap": 200, "seed": 1}
    ci_args = ["--ci", "0.95", "--bootstrap", "200", "--seed", "1"]
    by_id, scored = ["--id-field", "id"], ["--scorer", "match"]
    # NEW: one run of 40 samples (the log's 20 asked twice under other ids), rows of BASE's kind
    new = str(epochs_log(tmp_path, "new.json", epochs=1, copies=2))
    cases = [
        ("calibrate", [rows, again], ids, {**ci, "min_rows": 31}, [*by_id, *ci_args]),
        ("calibrate", one, match, {**ci, "min_rows": 20}, [*scored, *ci_args]),
        ("calibrate", two, match, {**ci, "min_rows": 20}, [*scored, *ci_args]),
        ("threshold", two, match, {"target_accuracy": 0.6}, scored),
        ("compare", [str(folder), new], match, {"min_rows": 21}, [*scored, "--unpaired"]),
    ]
    given = [[command, paths, reading, options] for command, paths, reading, options, _ in cases]
    api = _fresh(["-c", API, json.dumps(given)])
    assert api.returncode == 0, api.stderr
    got = [json.loads(line) for line in api.stdout.splitlines()]
    for (command, paths, _, options, args), text in zip(cases, got, strict=True):
        given_too = [_option(key, value) for key, value in options.items() if key not in ci]
        args = [*args, *(part for pair in given_too for part in pair)]
        cli = _fresh(["-m", "calibcli", command, *paths, "--all-runs", "--json", "-q", *args])
        assert cli.returncode in (0, 1), cli.stderr
        assert text == cli.stdout, (command, args)
    body = json.loads(got[2])
    # the two runs' epochs pooled: each question holds 4 rows, and each file's own figures
    # are those of its 2 epochs (its 40 rows, 20 questions)
    said = f"{OPENING}e1.json and e2.json (4 rows a question among them): {DRAWN}"
    assert said in body["warnings"]
    assert not any(w.startswith("inspect-ai runs scored") for w in body["warnings"])
    assert json.loads(got[0])["gate"]["passed"] is False  # 30 questions, fewer than 31
    assert json.loads(got[4])["gate"]["passed"] is False  # BASE: 20 questions


@pytest.mark.parametrize("name", ["confidence", "correct", "group", "id", "questions"])
def test_the_rows_cannot_be_made_writable_again(tmp_path, name):
    path, again = str(native(tmp_path)), str(native(tmp_path, "again.jsonl"))
    rows = calibcli.read_predictions([path, again], all_runs=True, id_field="id")
    asked = np.arange(3, dtype=np.uint64)
    built = calibcli.Predictions(
        np.array([0.2, 0.7, 0.9]), np.array([0, 1, 1]), None, None, questions=asked
    )
    for held in (rows, built):
        column = getattr(held, name)
        with pytest.raises(ValueError, match="WRITEABLE"):
            column.setflags(write=True)
        assert not column.flags.writeable
