"""compare leaves out a folder's hidden files and inspect-ai eval-set manifests as calibrate
does, and says so as calibrate does, on the terminal and in the report's warnings: the rows
left out are missing from the comparison, and the user who put them there should know."""

from __future__ import annotations

import json
import shutil

from harness import run, write_jsonl
from test_inspect_eval_set import EVAL, SAID, SCORER, eval_set_folder

HIDDEN = "1 hidden file left out (.b.jsonl): a folder does not read names that start with a dot"


def side(tmp_path, name, shift):
    folder = tmp_path / name
    folder.mkdir()
    rows = [
        {"id": i, "confidence": (i + 0.5) / 40, "correct": (i + shift) % 3 != 0} for i in range(40)
    ]
    write_jsonl(folder / "a.jsonl", rows)
    write_jsonl(folder / ".b.jsonl", rows[:5])
    return folder


def test_a_sides_hidden_file_is_named(tmp_path):
    base, new = side(tmp_path, "base", 0), side(tmp_path, "new", 1)
    result = run(["compare", base, new, "--json"])
    assert result.exit_code == 0, result.stderr
    warnings = json.loads(result.stdout)["warnings"]
    for folder in (base, new):
        assert f"warning: {folder}: {HIDDEN}" in result.stderr
        assert any(w.startswith(f"{folder}: {HIDDEN}") for w in warnings)


def test_an_eval_set_manifest_beside_a_sides_logs_is_named(tmp_path):
    folder = eval_set_folder(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(EVAL, other / EVAL.name)
    result = run(["compare", other, folder, *SCORER, "--json"])
    assert result.exit_code == 0, result.stderr
    warning = f"{folder / 'logs.json'}: {SAID}"
    assert f"warning: {warning}" in result.stderr
    assert any(w.startswith(warning) for w in json.loads(result.stdout)["warnings"])
