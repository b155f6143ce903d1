"""compare's accuracy difference, and the discordance floor a gate reads for it, are the correctly
rounded doubles of the exact differences of the count ratios (fractions.Fraction of the
counts), so a drop of exactly the margin meets it: 64/100 − 65/100 is the double −0.01, where
0.64 − 0.65 in floating point is −0.010000000000000009 and failed --max-decrease
accuracy=0.01. A difference of 0 is 0, never −0.0 (a gate table's "-0.00000000000000000").
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
from harness import run, write_jsonl

B = ["--bootstrap", "200"]  # the least the CLI accepts: the intervals are not what is tested
MARGIN = ["--max-decrease", "accuracy=0.01", "--gate-on", "estimate", "--json", "-q", *B]


def _side(rights, n, *, shift=0.0, group=None):
    """``n`` rows with ids 0..n-1, the first ``rights`` right; confidences differ per row."""
    rows = []
    for i in range(n):
        row = {"id": i, "confidence": 0.3 + 0.6 * i / n + shift, "correct": i < rights}
        rows.append(row if group is None else {**row, "g": group, "id": f"{group}{i}"})
    return rows


def _exact(new, base):
    """The correctly rounded double of new − base, from Fractions of the counts."""
    return float(Fraction(*new) - Fraction(*base))


def test_the_float_difference_is_not_the_exact_one():
    """What the gate read before: the two quotients rounded, then subtracted."""
    assert 64 / 100 - 65 / 100 == -0.010000000000000009 != _exact((64, 100), (65, 100)) == -0.01
    assert 21 / 40 - 17 / 40 == 0.10000000000000003 != _exact((21, 40), (17, 40)) == 0.1


@pytest.mark.parametrize("paired", [True, False])
def test_a_drop_of_exactly_the_margin_meets_it(tmp_path, paired):
    base = write_jsonl(tmp_path / "base.jsonl", _side(65, 100))
    new = write_jsonl(tmp_path / "new.jsonl", _side(64, 100, shift=0.01))
    result = run(["compare", base, new, *MARGIN, *([] if paired else ["--unpaired"])])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["paired"] is paired
    assert body["figures"]["accuracy"]["difference"] == _exact((64, 100), (65, 100)) == -0.01
    check = body["gate"]["checks"][0]
    assert check["metric"] == "accuracy_decrease" and check["value"] == 0.01
    assert check["passed"] is True


def test_sides_of_other_sizes_unpaired(tmp_path):
    """192/300 − 65/100 is exactly −1/100 too; the two quotients' difference is not."""
    assert 192 / 300 - 65 / 100 != -0.01
    base = write_jsonl(tmp_path / "base.jsonl", _side(65, 100))
    new = write_jsonl(tmp_path / "new.jsonl", _side(192, 300))
    result = run(["compare", base, new, *MARGIN, "--unpaired"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["figures"]["accuracy"]["difference"] == _exact((192, 300), (65, 100)) == -0.01


def test_each_group_and_the_pooled_rows(tmp_path):
    """Group a drops 65/100 to 64/100, group b 30/50 to 30/50; pooled, 95/150 to 94/150."""
    base = write_jsonl(
        tmp_path / "base.jsonl", _side(65, 100, group="a") + _side(30, 50, group="b")
    )
    rows = _side(64, 100, shift=0.01, group="a") + _side(30, 50, shift=0.01, group="b")
    new = write_jsonl(tmp_path / "new.jsonl", rows)
    result = run(["compare", base, new, *MARGIN, "--by", "g", "--gate-each"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["figures"]["accuracy"]["difference"] == _exact((94, 150), (95, 150))
    assert body["groups"]["a"]["figures"]["accuracy"]["difference"] == -0.01
    assert body["groups"]["b"]["figures"]["accuracy"]["difference"] == 0.0
    checks = {c.get("group"): c for c in body["gate"]["checks"]}
    assert checks["a"]["value"] == 0.01 and checks["a"]["passed"] is True
    # no change is 0, not -0.0
    assert checks["b"]["value"] == 0.0 and math.copysign(1.0, checks["b"]["value"]) == 1.0


def test_the_discordance_floor_is_exact_and_no_change_reads_0(tmp_path):
    """40 pairs, the same 21 right on both sides: no question has NEW wrong where BASE is right,
    so the discordance floor turns m − 0 right pairs NEW-wrong, m the one-sided 0.975
    Clopper–Pearson upper count of 0 of 40: 40·(1 − 0.025^(1/40)) = 3.52, so m = 4, and the
    floor of accuracy's decrease is 21/40 − 17/40 = 1/10 exactly, which meets a 0.1 margin."""
    upper = 1.0 - 0.025 ** (1 / 40)
    assert math.ceil(40 * upper) == 4
    floor = _exact((21, 40), (17, 40))
    base = write_jsonl(tmp_path / "base.jsonl", _side(21, 40))
    new = write_jsonl(tmp_path / "new.jsonl", _side(21, 40, shift=0.01))
    args = ["compare", base, new, "--max-decrease", "accuracy=0.1", *B]
    result = run([*args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    check = json.loads(result.stdout)["gate"]["checks"][0]
    assert check["floor"] == floor == 0.1 and check["floor_flips"] == 4
    assert check["value"] == 0.1 and check["passed"] is True
    for key in ("estimate", "upper"):
        assert check[key] == 0.0 and math.copysign(1.0, check[key]) == 1.0, key
    table = run(args).stdout
    row = next(line for line in table.splitlines() if line.startswith("accuracy_decrease"))
    assert row.split()[2:6] == ["0.0000", "0.0000", "0.1000", "0.1000"], row
