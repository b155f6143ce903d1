"""`calibrate --max-rmsce-debiased` gates the debiased RMSCE, the figure the small-sample
advice names, as the other binned gates gate theirs: on the estimate, on the interval's upper
end, and closed on too few populated bins; the Python API takes ``max_rmsce_debiased``."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

from harness import run

import calibcli

SAMPLE = Path(__file__).resolve().parents[1] / "sample_data" / "well_calibrated.jsonl"


def debiased_rmsce(rows, bins=10):
    """sqrt(max(0, sum over bins of n_k >= 2 of (n_k/N)(gap_k^2 - o_k(1 - o_k)/(n_k - 1)))),
    bin k holding k/M <= c < (k+1)/M (c = 1 in the last), compared as fractions."""
    held = {}
    for c, y in rows:
        k = min(int(Fraction(c) * bins), bins - 1)
        held.setdefault(k, []).append((c, y))
    total = 0.0
    for members in held.values():
        n = len(members)
        if n < 2:
            continue
        conf = math.fsum(c for c, _ in members) / n
        acc = sum(y for _, y in members) / n
        total += n / len(rows) * ((acc - conf) ** 2 - acc * (1 - acc) / (n - 1))
    return math.sqrt(max(0.0, total))


def rows_of(path):
    return [(r["confidence"], r["correct"]) for r in map(json.loads, path.read_text().splitlines())]


def test_the_gate_reads_the_debiased_rmsce():
    expected = debiased_rmsce(rows_of(SAMPLE))
    above, below = expected * 1.01, expected * 0.99
    passed = run(["calibrate", SAMPLE, "--max-rmsce-debiased", repr(above), "--json", "-q"])
    assert passed.exit_code == 0, passed.stderr
    assert math.isclose(json.loads(passed.stdout)["rmsce_debiased"], expected, rel_tol=1e-12)
    failed = run(["calibrate", SAMPLE, "--max-rmsce-debiased", repr(below), "-q"])
    assert failed.exit_code == 1
    assert f"exceeds --max-rmsce-debiased {below!r}" in failed.stderr


def test_on_the_upper_end_and_closed_on_one_bin(tmp_path):
    upper = run(["calibrate", SAMPLE, "--max-rmsce-debiased", "0.05", "--gate-on", "upper", "-q"])
    assert upper.exit_code == 1
    assert "(upper end of the 0.95 interval) exceeds --max-rmsce-debiased 0.05" in upper.stderr
    one = tmp_path / "one.jsonl"
    one.write_text(
        "".join(json.dumps({"confidence": 0.95, "correct": i % 20 != 0}) + "\n" for i in range(200))
    )
    closed = run(["calibrate", one, "--max-rmsce-debiased", "0.5", "-q"])
    assert closed.exit_code == 1
    assert "rmsce_debiased: only 1 of 10 bins are populated (minimum 3)" in closed.stderr


def test_the_python_api_takes_the_gate():
    rows = rows_of(SAMPLE)
    expected = debiased_rmsce(rows)
    conf, right = [c for c, _ in rows], [y for _, y in rows]
    assert calibcli.calibrate(conf, right, max_rmsce_debiased=expected * 1.01).passed
    assert not calibcli.calibrate(conf, right, max_rmsce_debiased=expected * 0.99).passed
