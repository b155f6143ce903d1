"""A folder given as an input is read one level deep; a subfolder holding files of the kinds
read is named in a warning (stderr and the report's warnings), its files still not read: a
model's files moved into a subfolder were dropped without a word, and a gate passed on the
other rows alone."""

from __future__ import annotations

import json

import pytest
from harness import run, write_jsonl

import calibcli
import calibcli.io.folders as folders


def rows(n, shift=0.0):
    return [{"confidence": (i + 0.5) / n, "correct": (i + 0.5) / n + shift > 0.5} for i in range(n)]


ONE = (
    "{d}: subfolder model_b/ holds 1 input file that is not read (folders are read one level "
    "deep; name it to read it)"
)


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "r2"
    (d / "model_b").mkdir(parents=True)
    write_jsonl(d / "model_a.jsonl", rows(40))
    write_jsonl(d / "model_b" / "preds.jsonl", rows(60, 0.4))
    (d / ".cache").mkdir()  # hidden: not looked into
    write_jsonl(d / ".cache" / "x.jsonl", rows(10))
    (d / "empty").mkdir()  # no input file: not said
    (d / "notes").mkdir()
    (d / "notes" / "readme.txt").write_text("not rows\n")
    return d


def test_a_subfolder_holding_inputs_is_said_and_not_read(folder):
    result = run(["calibrate", folder, "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["n"] == 40  # model_a.jsonl's rows alone, as before
    said = ONE.format(d=folder)
    assert [w for w in body["warnings"] if "subfolder" in w] == [said]
    assert f"warning: {said}\n" in result.stderr


def test_the_gate_is_unchanged(folder):
    result = run(["calibrate", folder, "--max-ece", "0.9", "--json", "-q"])
    assert result.exit_code == 0  # what is read is the top level, warned about, not refused


def test_the_api_says_it_too(folder):
    assert ONE.format(d=folder) in calibcli.read_predictions(str(folder)).warnings


@pytest.mark.parametrize("side", [0, 1])
def test_compare_says_it_of_either_side(folder, tmp_path, side):
    other = tmp_path / "other.jsonl"
    write_jsonl(other, rows(40))
    files = [other, other]
    files[side] = folder
    result = run(["compare", *files, "--json", "--bootstrap", "200", "--unpaired"])
    assert result.exit_code in (0, 1), result.output
    assert ONE.format(d=folder) in json.loads(result.stdout)["warnings"]
    assert f"warning: {ONE.format(d=folder)}\n" in result.stderr


def test_apply_says_it(folder, tmp_path):
    calibrator = tmp_path / "cal.json"
    write_jsonl(tmp_path / "fit.jsonl", rows(50, 0.1))
    fit = run(["fit", tmp_path / "fit.jsonl", "--method", "platt", "-o", calibrator, "-q"])
    assert fit.exit_code == 0, fit.output
    result = run(["apply", calibrator, folder])
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 40
    assert f"warning: {ONE.format(d=folder)}\n" in result.stderr


def test_several_subfolders_at_any_depth_are_counted(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    write_jsonl(d / "top.jsonl", rows(20))
    for k, name in enumerate(["m1", "m2", "m3", "m4", "m5"]):
        (d / name / "deep").mkdir(parents=True)
        for j in range(k + 1):
            write_jsonl(d / name / "deep" / f"f{j}.jsonl", rows(10))
    body = json.loads(run(["calibrate", d, "--json", "-q"]).stdout)
    assert body["n"] == 20
    assert [w for w in body["warnings"] if "subfolder" in w] == [
        f"{d}: 5 subfolders hold 15 input files that are not read (m1/, m2/, m3/ and 2 more; "
        "folders are read one level deep; name them to read them)"
    ]


def test_a_long_walk_stops_and_says_the_count_is_a_floor(tmp_path, monkeypatch):
    monkeypatch.setattr(folders, "SUBFOLDERS_WALKED", 2)
    d = tmp_path / "runs"
    (d / "m" / "a" / "b").mkdir(parents=True)
    write_jsonl(d / "top.jsonl", rows(20))
    for path in (d / "m", d / "m" / "a", d / "m" / "a" / "b"):
        write_jsonl(path / "x.jsonl", rows(10))
    body = json.loads(run(["calibrate", d, "--json", "-q"]).stdout)
    assert [w for w in body["warnings"] if "subfolder" in w] == [
        f"{d}: subfolder m/ holds 2 or more input files that are not read (folders are read "
        "one level deep; name it to read it)"
    ]


def test_a_folder_matched_by_a_pattern_is_looked_into_and_a_deep_pattern_is_not(folder):
    body = json.loads(run(["calibrate", f"{folder.parent}/r*", "--json", "-q"]).stdout)
    assert ONE.format(d=folder) in body["warnings"]
    deep = json.loads(run(["calibrate", f"{folder}/**/*.jsonl", "--json", "-q"]).stdout)
    assert deep["n"] == 100  # the pattern names the subfolder's file: read, nothing to say
    assert not [w for w in deep["warnings"] if "subfolder" in w]


def test_no_warning_for_a_flat_folder_and_the_empty_folder_error_is_unchanged(tmp_path):
    d = tmp_path / "flat"
    d.mkdir()
    write_jsonl(d / "a.jsonl", rows(20))
    body = json.loads(run(["calibrate", d, "--json", "-q"]).stdout)
    assert not [w for w in body["warnings"] if "subfolder" in w]
    nested = tmp_path / "nested"
    (nested / "model").mkdir(parents=True)
    write_jsonl(nested / "model" / "a.jsonl", rows(20))
    result = run(["calibrate", nested, "--json", "-q"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {nested}: a folder with no input files")


def test_a_subfolder_also_given_by_name_is_not_said(folder):
    """``r2 r2/model_b`` reads the subfolder's files too: nothing is left unread to say."""
    for also in ([folder / "model_b"], [folder / "model_b" / "preds.jsonl"]):
        result = run(["calibrate", folder, *also, "--json"])
        assert result.exit_code == 0, result.output
        body = json.loads(result.stdout)
        assert body["n"] == 40 + 60
        assert not [w for w in body["warnings"] if "subfolder" in w]
    # one of two subfolders given: the other is still said
    (folder / "model_c").mkdir()
    write_jsonl(folder / "model_c" / "preds.jsonl", rows(20))
    body = json.loads(run(["calibrate", folder, folder / "model_b", "--json"]).stdout)
    said = ONE.format(d=folder).replace("model_b/", "model_c/")
    assert [w for w in body["warnings"] if "subfolder" in w] == [said]
