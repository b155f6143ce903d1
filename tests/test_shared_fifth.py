"""Two files of doubles sharing a fifth or more of their rows are refused, as documented: values
that never repeat are shared by no chance, so the share is read at the upper end of its sketch
estimate. Files of other rows (no shared row), and a share well below a fifth, are read."""

from __future__ import annotations

import json
import random

import pytest
from harness import run


def write_pair(tmp_path, seed: int, rows: int, shared: int):
    rng = random.Random(seed)
    a = [{"confidence": rng.random(), "correct": rng.random() < 0.5} for _ in range(rows)]
    fresh = [
        {"confidence": rng.random(), "correct": rng.random() < 0.5} for _ in range(rows - shared)
    ]
    b = rng.sample(a, shared) + fresh
    rng.shuffle(b)
    paths = []
    for name, held in (("a.jsonl", a), ("b.jsonl", b)):
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in held))
        paths.append(str(path))
    # the overlap, counted by hand
    assert len({json.dumps(r) for r in a} & {json.dumps(r) for r in b}) == shared
    return paths


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_quarter_shared_is_refused(tmp_path, seed):
    paths = write_pair(tmp_path, seed, 20_000, 5_000)
    result = run(["calibrate", *paths, "--min-rows", "40000", "-q"])
    assert result.exit_code == 2, result.stdout
    assert "they would count twice" in result.stderr


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_fifth_shared_is_refused(tmp_path, seed):
    paths = write_pair(tmp_path, seed, 2_000, 400)
    result = run(["calibrate", *paths, "-q"])
    assert result.exit_code == 2, result.stdout
    assert "they would count twice" in result.stderr


def test_files_of_other_rows_are_read(tmp_path):
    paths = write_pair(tmp_path, 7, 2_000, 0)
    result = run(["calibrate", *paths, "--min-rows", "4000", "-q"])
    assert result.exit_code == 0, result.stderr
