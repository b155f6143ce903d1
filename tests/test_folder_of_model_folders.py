"""A folder holding no input file itself but subfolders that do (lm-eval's ``--output_path out``
writes each model's files into ``out/<org>__<model>/``) is refused as before, exit 2 on one
line, and the line names the subfolders holding input files and how to give them: it said only
that the folder held no input files, as if the run had written nothing. A folder is still read
one level deep: the subfolders' files are not read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from harness import refused, run, write_jsonl

import calibcli
import calibcli.io.folders as folders
from calibcli.errors import InputError

LM_EVAL = Path(__file__).parent / "fixtures" / "lm_eval"
DEEP = "folders are read one level deep"


def rows(n, shift=0.0):
    return [{"confidence": (i + 0.5) / n, "correct": (i + 0.5) / n + shift > 0.5} for i in range(n)]


@pytest.fixture
def lm_eval_out(tmp_path):
    """``out/org__modelA/`` as lm-eval writes it: a results file and three samples files (and
    the fixture's own data/ and tasks/ folders, one level further down)."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.copytree(LM_EVAL, out / "org__modelA")
    return out


def test_an_lm_eval_output_folder_names_the_model_folder(lm_eval_out, tmp_path):
    line = refused("calibrate", lm_eval_out)
    # the results file and the three samples files: data/ and tasks/ are not looked into
    assert line == (
        f"Error: {lm_eval_out}: a folder with no input files of its own: subfolder "
        f"org__modelA/ holds 4 input files ({DEEP}; name it to read it: "
        f"{lm_eval_out}/org__modelA)"
    )
    # what the line says to give is read
    result = run(["calibrate", tmp_path / "out" / "org__modelA", "--json", "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] > 0


def test_the_message_is_the_same_with_a_trailing_slash(lm_eval_out):
    line = refused("calibrate", f"{lm_eval_out}/")
    assert f"subfolder org__modelA/ holds 4 input files ({DEEP}; " in line


@pytest.fixture
def models(tmp_path):
    """Three model folders, each holding its own rows, beside nothing else."""
    out = tmp_path / "runs"
    for i, name in enumerate(["m1", "m2", "m3"]):
        (out / name).mkdir(parents=True)
        write_jsonl(out / name / "preds.jsonl", rows(10 * (i + 1), 0.1 * i))
    write_jsonl(out / "m2" / "more.jsonl", rows(7))
    return out


def test_several_model_folders_are_named_and_a_pattern_offered(models):
    line = refused("calibrate", models)
    assert line == (
        f"Error: {models}: a folder with no input files of its own: 3 subfolders hold 4 input "
        f"files (m1/, m2/, m3/; {DEEP}; name them to read them: '{models}/*/')"
    )
    # the quoted pattern reads every subfolder: 10 + 20 + 7 + 30 rows
    result = run(["calibrate", f"{models}/*/", "--json", "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 67


def test_past_three_subfolders_the_rest_are_counted(models):
    for name in ("m4", "m5"):
        (models / name).mkdir()
        write_jsonl(models / name / "preds.jsonl", rows(5))
    line = refused("calibrate", models)
    assert line.endswith(
        f": 5 subfolders hold 6 input files (m1/, m2/, m3/ and 2 more; {DEEP}; name them to "
        f"read them: '{models}/*/')"
    )


def test_a_subfolder_without_inputs_is_not_named_and_no_pattern_is_offered(models):
    """``'runs/*/'`` would give the empty ``logs/`` too, which is refused: the folders holding
    input files are named instead, as long as they are few."""
    (models / "logs").mkdir()
    (models / "logs" / "run.log").write_text("not rows\n")
    line = refused("calibrate", models)
    assert line.endswith(
        f"(m1/, m2/, m3/; {DEEP}; name them to read them: {models}/m1 {models}/m2 {models}/m3)"
    )
    (models / "m4").mkdir()
    write_jsonl(models / "m4" / "preds.jsonl", rows(5))
    line = refused("calibrate", models)
    assert line.endswith(f"(m1/, m2/, m3/ and 1 more; {DEEP}; name them to read them)")


def test_a_name_the_shell_splits_is_quoted(tmp_path):
    out = tmp_path / "my runs"
    (out / "model a").mkdir(parents=True)
    write_jsonl(out / "model a" / "preds.jsonl", rows(10))
    line = refused("calibrate", out)
    assert line.endswith(f"({DEEP}; name it to read it: '{out}/model a')")


def test_only_one_level_down_is_looked_into(tmp_path):
    """Files two levels down, or in a hidden subfolder, are not looked for: the refusal is the
    one of a folder holding nothing."""
    out = tmp_path / "deep"
    (out / "a" / "b").mkdir(parents=True)
    write_jsonl(out / "a" / "b" / "preds.jsonl", rows(10))
    (out / ".cache").mkdir()
    write_jsonl(out / ".cache" / "preds.jsonl", rows(10))
    (out / "a" / "notes.txt").write_text("not rows\n")
    line = refused("calibrate", out)
    assert line.startswith(f"Error: {out}: a folder with no input files (.jsonl, .ndjson, ")
    assert "subfolder" not in line


def test_the_subfolders_looked_into_are_bounded(models, monkeypatch):
    monkeypatch.setattr(folders, "SUBFOLDERS_WALKED", 2)
    line = refused("calibrate", models)
    assert line.endswith(
        f": 2 or more subfolders hold 3 or more input files (m1/, m2/; {DEEP}; name them to "
        "read them)"
    )
    monkeypatch.setattr(folders, "SUBFOLDERS_WALKED", 1)
    line = refused("calibrate", models)
    assert line.endswith(
        f": 1 or more subfolders hold 1 or more input files (m1/; {DEEP}; name them to read them)"
    )


def test_the_subfolders_files_are_still_not_read(models):
    """A folder beside a subfolder's files is read one level deep, as before: the refusal is
    not turned into reading the subfolders."""
    assert run(["calibrate", models, "--json", "-q"]).exit_code == 2
    write_jsonl(models / "top.jsonl", rows(4))
    result = run(["calibrate", models, "--json", "-q"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 4


def calibrator(tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    write_jsonl(flat / "rows.jsonl", rows(40, 0.1))
    path = tmp_path / "cal.json"
    result = run(["fit", flat, "--method", "platt", "-o", path, "-q"])
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["perplexity", "{out}"],
        ["calibrate", "{out}"],
        ["calibrate", "{out}", "--workers", "2"],
        ["calibrate", "{out}", "--by", "model"],
        ["reliability", "{out}"],
        ["threshold", "{out}", "--target-accuracy", "0.9"],
        ["fit", "{out}", "--method", "platt", "-o", "{tmp}/fitted.json"],
        ["apply", "{cal}", "{out}"],
        ["compare", "{out}", "{out}/org__modelA"],
        ["compare", "{out}/org__modelA", "{out}"],
        ["summarize", "{out}", "-o", "{tmp}/s.cbs"],
        ["summarize", "{out}", "--part", "1/2", "-o", "{tmp}/p.cbs"],
    ],
)
def test_every_command_names_the_subfolder(command, lm_eval_out, tmp_path):
    cal = calibrator(tmp_path) if command[0] == "apply" else ""
    args = [a.format(out=lm_eval_out, tmp=tmp_path, cal=cal) for a in command]
    line = refused(*args)
    assert line.startswith(f"Error: {lm_eval_out}: a folder with no input files of its own: ")
    assert f"subfolder org__modelA/ holds 4 input files ({DEEP}; name it to read it: " in line
    assert not (tmp_path / "fitted.json").exists()
    assert not (tmp_path / "s.cbs").exists() and not (tmp_path / "p.cbs").exists()


def test_the_python_api_says_it_too(lm_eval_out):
    expected = (
        f"{lm_eval_out}: a folder with no input files of its own: subfolder org__modelA/ "
        f"holds 4 input files ({DEEP}; name it to read it: {lm_eval_out}/org__modelA)"
    )
    with pytest.raises(InputError) as raised:
        calibcli.read_predictions(str(lm_eval_out))
    assert str(raised.value) == expected
