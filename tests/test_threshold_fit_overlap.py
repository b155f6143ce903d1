"""threshold --fit decides "chosen on the rows it is evaluated on" by the rows' content, not by
file names: the same rows under another path, or the fit rows inside a larger evaluation set,
are named in a warning; disjoint rows are not."""

from __future__ import annotations

import json
import random

import pytest
from harness import run


def rows(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = 0.5 + 0.5 * rng.random()
        out.append({"confidence": c, "correct": rng.random() < c})
    return out


def write(path, data):
    path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path):
    dev, test = rows(2000, 1), rows(2000, 2)
    (tmp_path / "elsewhere").mkdir()
    return {
        "dev": write(tmp_path / "dev.jsonl", dev),
        "copy": write(tmp_path / "elsewhere" / "renamed.jsonl", dev),
        "test": write(tmp_path / "test.jsonl", test),
        "both": write(tmp_path / "both.jsonl", dev + test),
    }


def overlap_warnings(files, evaluated):
    args = ["threshold", files[evaluated], "--fit", files["dev"], "--json", "-q"]
    result = run([*args, "--target-accuracy", "0.7"])
    assert result.exit_code == 0, result.stderr
    return [w for w in json.loads(result.stdout)["warnings"] if "chosen on" in w]


@pytest.mark.parametrize(
    ("evaluated", "named"),
    [
        # the same rows exactly, under another name
        ("copy", "the 2,000 rows scored here are the rows the threshold was chosen on"),
        ("both", "about 100% of the rows the threshold was chosen on (2,000)"),
    ],
)
def test_fit_rows_among_the_evaluated_rows_are_named(files, evaluated, named):
    (warning,) = overlap_warnings(files, evaluated)
    assert named in warning
    assert "optimistic" in warning


def test_held_out_rows_carry_no_overlap_warning(files):
    assert overlap_warnings(files, "test") == []
