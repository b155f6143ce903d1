"""bench/ab.py runs each tree's own code: a checkout in the working directory shadows
PYTHONPATH for ``python -c`` and ``python -m``, and an A/B run from there compared a tree with
itself."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_ab():
    spec = importlib.util.spec_from_file_location("bench_ab", ROOT / "bench" / "ab.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def other_tree(tmp_path: Path) -> Path:
    """A tree holding a calibcli package of its own."""
    package = tmp_path / "tree" / "calibcli"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    return package.parent


def test_a_tree_shadowed_by_the_working_directory_stops_the_run(other_tree, monkeypatch):
    ab = load_ab()
    monkeypatch.chdir(ROOT)  # the checkout's calibcli comes first on sys.path
    with pytest.raises(SystemExit, match="not from that tree"):
        ab.check_tree(other_tree, dict(os.environ))


def test_a_tree_run_from_elsewhere_runs_its_own_code(other_tree, monkeypatch, tmp_path):
    ab = load_ab()
    monkeypatch.chdir(tmp_path)
    ab.check_tree(other_tree, dict(os.environ))
    ab.check_tree(ROOT, dict(os.environ))
