"""The smooth ECE is the same bits whatever the rows' order: with a bootstrap (``--ci``), whose
estimators may not sort the reader's columns in place, from a shuffled file, and from a summary.
Its grid histograms are sums over rows, so rows taken in another order round otherwise in the
last bit, and a gate set at the figure itself would pass on one route and fail on another."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import numpy as np
from harness import run

from calibcli.metrics.smooth import smooth_ece_split


def draw(seed, n=20_000):
    rng = np.random.default_rng(seed)
    confidence = rng.random(n)
    return confidence, rng.random(n) < confidence


@functools.cache
def rows():
    """Rows whose smooth ECE in file order and in ascending order differ in the last bit (which
    rows do depends on the floating-point library's kernels, so they are looked for)."""
    for seed in range(200):
        confidence, correct = draw(seed)
        right, wrong = confidence[correct], confidence[~correct]
        in_file = smooth_ece_split(right, wrong).value
        if in_file != smooth_ece_split(np.sort(right), np.sort(wrong)).value:
            return confidence, correct
    return draw(5)


def test_some_rows_round_otherwise_in_file_order():
    confidence, correct = rows()
    right, wrong = confidence[correct], confidence[~correct]
    in_file = smooth_ece_split(right, wrong).value
    assert in_file != smooth_ece_split(np.sort(right), np.sort(wrong)).value


def test_every_route_gives_the_smooth_ece_of_the_rows_in_ascending_order(tmp_path):
    confidence, correct = rows()
    ascending = smooth_ece_split(np.sort(confidence[correct]), np.sort(confidence[~correct]))
    path = tmp_path / "rows.jsonl"
    lines = (
        json.dumps({"confidence": float(c), "correct": bool(y)})
        for c, y in zip(confidence, correct, strict=True)
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    limit = repr(ascending.value)
    for extra in ([], ["--ci", "0.9", "--bootstrap", "200"]):
        result = run(["calibrate", path, "--json", "--max-smece", limit, *extra])
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["smece"] == ascending.value
    summary = tmp_path / "rows.cbs"
    assert run(["summarize", path, "-o", summary, "-q"]).exit_code == 0
    result = run(["calibrate", summary, "--json", "--ci", "0.9", "--bootstrap", "200"])
    assert json.loads(result.stdout)["smece"] == ascending.value


def test_the_python_api_in_a_fresh_process_gives_the_commands_bits(tmp_path):
    """A process that loaded numpy itself (its BLAS sized as it chose) and the command (BLAS
    loaded with one thread) give the same smooth ECE, on a few sets of rows."""
    paths = []
    for seed in range(5, 9):
        confidence, correct = draw(seed)
        path = tmp_path / f"rows{seed}.jsonl"
        pairs = zip(confidence, correct, strict=True)
        lines = (json.dumps({"confidence": float(c), "correct": bool(y)}) for c, y in pairs)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(path))
    script = (
        "import sys, calibcli\n"
        "for p in sys.argv[1:]:\n"
        "    print(repr(calibcli.calibrate(calibcli.read_predictions(p))['smece']))\n"
    )
    env = {k: v for k, v in os.environ.items() if "BLAS" not in k and "OMP" not in k}
    api = subprocess.run(
        [sys.executable, "-c", script, *paths], capture_output=True, text=True, env=env
    )
    assert api.returncode == 0, api.stderr
    commands = [json.loads(run(["calibrate", p, "--json"]).stdout)["smece"] for p in paths]
    assert api.stdout.split() == [repr(v) for v in commands]
