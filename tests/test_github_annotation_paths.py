"""An invalid row's annotation names its file by the path in the repository.

The runner resolves an annotation's ``file=`` from the repository root ($GITHUB_WORKSPACE),
whatever folder the step ran in, so a path given relative to the step's working folder is
placed from there and written relative to the workspace.
"""

from __future__ import annotations

import os

import pytest
from harness import run

from calibcli.cli import github

BAD_ROWS = '{"confidence": 0.9, "correct": true}\n{"confidence": 1.5, "correct": true}\n'


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A repository checked out at ``ws`` with ``eval/preds.jsonl``; the step runs in ``eval``."""
    ws = tmp_path / "ws"
    (ws / "eval").mkdir(parents=True)
    (ws / "eval" / "preds.jsonl").write_text(BAD_ROWS)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(ws))
    monkeypatch.chdir(ws / "eval")
    return ws


def annotation(path):
    result = run(["calibrate", path, "--annotations", "github"])
    assert result.exit_code == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("::")]
    return line


@pytest.mark.parametrize(
    "given", ["preds.jsonl", "./preds.jsonl", "../eval/./preds.jsonl", "sub/../preds.jsonl"]
)
def test_a_path_relative_to_the_working_folder_is_placed_in_the_repository(workspace, given):
    (workspace / "eval" / "sub").mkdir()
    assert annotation(given) == (
        "::error file=eval/preds.jsonl,line=2::confidence 1.5 is outside [0, 1]"
    )


def test_an_absolute_path_in_the_workspace_is_made_relative_to_it(workspace):
    line = annotation(workspace / "eval" / "preds.jsonl")
    assert line.startswith("::error file=eval/preds.jsonl,line=2::")


def test_at_the_repository_root_the_path_is_normalised(workspace, monkeypatch):
    monkeypatch.chdir(workspace)
    assert annotation("./eval//preds.jsonl").startswith("::error file=eval/preds.jsonl,line=2::")


def test_a_path_outside_the_workspace_is_kept_as_given(workspace, tmp_path, monkeypatch):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "preds.jsonl").write_text(BAD_ROWS)
    assert annotation("../../elsewhere/preds.jsonl").startswith(
        "::error file=../../elsewhere/preds.jsonl,line=2::"
    )
    outside = tmp_path / "elsewhere" / "preds.jsonl"
    assert annotation(outside).startswith(f"::error file={outside},line=2::")


def test_a_sibling_whose_name_starts_with_dots_is_inside(workspace):
    (workspace / "..data").mkdir()
    inside = workspace / "..data" / "preds.jsonl"
    inside.write_text(BAD_ROWS)
    assert annotation(inside).startswith("::error file=..data/preds.jsonl,line=2::")


def test_without_a_workspace_the_path_is_kept_as_given(workspace, monkeypatch):
    monkeypatch.delenv("GITHUB_WORKSPACE")
    assert annotation("../eval/./preds.jsonl").startswith(
        "::error file=../eval/./preds.jsonl,line=2::"
    )


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_workspace_named_through_a_symbolic_link(workspace, tmp_path, monkeypatch):
    # the working folder comes back resolved; the workspace may be named through a link
    link = tmp_path / "link"
    link.symlink_to(workspace, target_is_directory=True)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(link))
    monkeypatch.chdir(link / "eval")
    assert github._in_workspace("preds.jsonl") == os.path.join("eval", "preds.jsonl")
