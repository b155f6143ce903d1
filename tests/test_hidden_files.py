"""A folder does not read files whose names start with a dot (an editor's swap file, a file
system's ``._x.jsonl``), but one of the kinds it reads is said in a warning, naming it: a run's
file named so by mistake was dropped without a word, its rows missing from every figure."""

from __future__ import annotations

import json

import pytest
from harness import run, write_jsonl

import calibcli


def rows(n, shift=0.0):
    return [{"confidence": (i + 0.5) / n + shift / n, "correct": i % 2 == 0} for i in range(n)]


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    write_jsonl(d / "a.jsonl", rows(20))
    write_jsonl(d / ".b.jsonl", rows(30, 0.25))
    (d / ".notes").write_text("not rows\n")  # not of a kind read: not named
    (d / ".DS_Store").write_bytes(b"\x00\x01")
    return d


WARNING = (
    "{d}: 1 hidden file left out (.b.jsonl): a folder does not read names that start with a "
    "dot; name a file to read it"
)


def test_a_hidden_file_of_a_kind_read_is_named_and_left_out(folder):
    result = run(["calibrate", folder, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["n"] == 20  # a.jsonl's rows alone
    assert body["warnings"][0] == WARNING.format(d=folder)
    named = run(["calibrate", folder / ".b.jsonl", "--json", "-q"])
    assert json.loads(named.stdout)["n"] == 30  # named, it is read


def test_the_api_says_it_too(folder):
    assert calibcli.read_predictions(str(folder)).warnings[0] == WARNING.format(d=folder)


def test_many_hidden_files_are_counted(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    write_jsonl(d / "a.jsonl", rows(20))
    for k in range(5):
        write_jsonl(d / f".h{k}.jsonl", rows(10, k / 10))
    result = run(["calibrate", d, "--json", "-q"])
    assert json.loads(result.stdout)["warnings"][0] == (
        f"{d}: 5 hidden files left out (.h0.jsonl, .h1.jsonl, .h2.jsonl and 2 more): a folder "
        "does not read names that start with a dot; name a file to read it"
    )


def test_no_warning_without_hidden_inputs(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    write_jsonl(d / "a.jsonl", rows(20))
    (d / ".gitignore").write_text("*\n")
    body = json.loads(run(["calibrate", d, "--json", "-q"]).stdout)
    assert not [w for w in body["warnings"] if "hidden" in w]


def test_a_folder_matched_by_a_pattern_is_looked_into_and_mac_metadata_is_not_said(tmp_path):
    d = tmp_path / "runs" / "one"
    d.mkdir(parents=True)
    write_jsonl(d / "a.jsonl", rows(20))
    write_jsonl(d / ".b.jsonl", rows(30, 0.25))
    (d / "._a.jsonl").write_bytes(b"\x00\x05\x16\x07")  # macOS metadata beside a.jsonl
    body = json.loads(run(["calibrate", f"{tmp_path}/runs/*", "--json", "-q"]).stdout)
    assert body["n"] == 20
    assert body["warnings"][0] == WARNING.format(d=d)
