"""The manifests inspect-ai's eval_set writes into its log folder beside the logs: ``logs.json``
(each log's header keyed by the log's file name) and ``eval-set.json`` (the set's id and tasks).
A folder given as an input leaves them out with a warning and reads its logs; named on the
command line, each is said to be a manifest, not a log, exit 2."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from harness import run

from calibcli.io.documents import eval_header

EVAL = Path(__file__).parent / "fixtures" / "inspect_ai" / "toy_arithmetic.eval"
SCORER = ["--scorer", "match"]
SAID = "an inspect-ai eval-set manifest"
GIVE = "give the folder or its .eval files"


pytestmark = pytest.mark.usefixtures("fresh_inspect_reads")


def header():
    """The fixture log's header, as logs.json holds it."""
    with EVAL.open("rb") as f, zipfile.ZipFile(f) as archive:
        found = eval_header(archive, f, 1 << 26)
    assert found is not None and "eval" in found
    return found


def eval_set_folder(tmp_path, *, indent=None, with_eval_set=False):
    """A folder as eval_set leaves it: the log, and logs.json keyed by the log's name."""
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(EVAL, folder / EVAL.name)
    (folder / "logs.json").write_text(json.dumps({EVAL.name: header()}, indent=indent))
    if with_eval_set:
        task = {
            "name": "toy_arithmetic",
            "task_id": "FfLHn7",
            "task_file": "toy.py",
            "task_args": {},
            "model": "mockllm/model",
            "model_args": {},
            "model_roles": None,
            "sequence": 0,
        }
        (folder / "eval-set.json").write_text(
            json.dumps({"eval_set_id": "set1", "tasks": [task]}, indent=2)
        )
    return folder


def figures(result):
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    return {k: report[k] for k in ("n", "accuracy", "mean_confidence", "ece", "brier", "nll")}


@pytest.mark.parametrize("indent", [None, 2])
def test_a_folder_reads_its_logs_and_not_the_manifest(tmp_path, indent):
    folder = eval_set_folder(tmp_path, indent=indent, with_eval_set=True)
    alone = run(["calibrate", folder / EVAL.name, *SCORER, "--json"])
    both = run(["calibrate", folder, *SCORER, "--json"])
    assert figures(both) == figures(alone)
    assert figures(both)["n"] == 20  # the fixture's 20 samples, once
    for name in ("logs.json", "eval-set.json"):
        warning = f"{folder / name}: {SAID}"
        assert warning in both.stderr
        assert any(w.startswith(warning) for w in json.loads(both.stdout)["warnings"])
    assert "cannot detect" not in both.stderr


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("name", ["logs.json", "eval-set.json"])
def test_a_manifest_named_is_refused_saying_what_it_is(tmp_path, name, indent):
    folder = eval_set_folder(tmp_path, indent=indent, with_eval_set=True)
    if indent is None and name == "eval-set.json":  # written on one line too
        text = json.loads((folder / name).read_text())
        (folder / name).write_text(json.dumps(text))
    result = run(["calibrate", folder / name, folder / EVAL.name, *SCORER])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {folder / name}")
    assert SAID in result.stderr and GIVE in result.stderr
    assert "Traceback" not in result.stderr


def test_a_folder_of_manifests_alone_says_so(tmp_path):
    folder = eval_set_folder(tmp_path)
    (folder / EVAL.name).unlink()
    result = run(["calibrate", folder, *SCORER])
    assert result.exit_code == 2
    assert "inspect-ai eval-set manifests and no logs" in result.stderr


def test_a_logs_json_of_rows_is_read(tmp_path):
    # the name alone does not make a manifest: a file of rows so named is read as rows
    folder = tmp_path / "rows"
    folder.mkdir()
    rows = [{"confidence": 0.8, "correct": True}, {"confidence": 0.3, "correct": False}]
    (folder / "logs.json").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run(["calibrate", folder, "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 2
    assert SAID not in result.stderr
