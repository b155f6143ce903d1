"""The README's Python examples run and print what the README shows.

Each ```python block of README.md is a doctest session (``>>>`` lines and their output), run in
a mirror of the repository (so ``sample_data/`` paths resolve), as the console blocks are run by
tests/test_readme.py. The API's docstring examples run here too.
"""

from __future__ import annotations

import doctest
import importlib
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = [
    (README[: m.start()].count("\n") + 2, m.group(1))
    for m in re.finditer(r"^```python\n(.*?)^```$", README, flags=re.M | re.S)
]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@pytest.fixture
def in_repository(tmp_path, monkeypatch):
    for entry in ROOT.iterdir():
        if entry.name not in {".git", ".venv"}:
            (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_readme_has_python_examples():
    assert "## From Python" in README
    assert len(BLOCKS) >= 2 and all(">>> " in text for _, text in BLOCKS)


def run_session(text: str, name: str, line: int) -> doctest.TestResults:
    test = doctest.DocTestParser().get_doctest(text, {}, name, "README.md", line)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    runner.run(test)
    return runner.summarize(verbose=False)


@pytest.mark.parametrize(("line", "text"), BLOCKS, ids=[f"README.md:{n}" for n, _ in BLOCKS])
def test_readme_python_block(in_repository, line, text):
    results = run_session(text, f"README.md:{line}", line)
    assert results.attempted and not results.failed


@pytest.mark.parametrize(
    "module",
    ["predictions", "calibration", "thresholds", "comparison", "fitting"],
)
def test_docstring_examples(in_repository, module):
    found = importlib.import_module(f"calibcli.api.{module}")
    results = doctest.testmod(found, optionflags=FLAGS)
    assert not results.failed
    assert os.getcwd() == str(in_repository)
