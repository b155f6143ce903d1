"""compare's upper-end margins on the figures sampling noise inflates (ECE, MCE, RMSCE, smECE,
the one-bin ECE) add BASE's bias allowance: the figure's mean over draws of calibrated outcomes
y* ~ Bernoulli(c) on BASE's own confidences.

The reference is the exact null expected ECE: within a bin, S = Σ y*_i is Poisson-binomial, its
distribution convolved row by row in the test, and E|S − Σ c_i| summed over bins and divided by
N. The pairs of the regression are calibrated BASE rows (c ~ U(0, 1), correct ~ Bernoulli(c)
from ``default_rng(seed)``: c first, then the uniforms the outcomes compare with) and NEW the
same answers at confidence min(c + 0.03, 1): a true 10-bin ECE increase of about 0.0296, which
the upper end read alone let pass a margin of 0.02 (300 rows, seed 1019), 0.015 (1,000 rows,
seed 3014) and, for smECE, 0.0125 (300 rows, seed 2004).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run, write_jsonl

SAYS = "on rows calibrated by construction: the most sampling noise can raise it"


def calibrated_rows(n, seed, shift=0.0):
    """BASE's and NEW's rows: NEW is BASE's answers at confidence min(c + shift, 1)."""
    rng = np.random.default_rng(seed)
    c = rng.random(n)
    right = rng.random(n) < c
    base = [{"id": i, "confidence": float(c[i]), "correct": bool(right[i])} for i in range(n)]
    raised = np.minimum(c + shift, 1.0)
    new = [{**row, "confidence": float(raised[i])} for i, row in enumerate(base)]
    return base, new


def exact_null_ece(conf, bins=10):
    """E[ECE] when each row is right with probability its confidence: per bin, the
    distribution of the number right by convolution, E|S − Σc| exactly."""
    conf = np.asarray(conf, float)
    which = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        held = conf[which == b]
        law = np.array([1.0])
        for c in held:
            law = np.convolve(law, [1.0 - c, c])
        total += float(np.sum(law * np.abs(np.arange(law.shape[0]) - held.sum())))
    return total / conf.shape[0]


def compare(tmp_path, base, new, *args, code=None):
    paths = write_jsonl(tmp_path / "base.jsonl", base), write_jsonl(tmp_path / "new.jsonl", new)
    result = run(["compare", *paths, "--json", "--bootstrap", "300", *args])
    assert code is None or result.exit_code == code, result.stderr
    return json.loads(result.stdout), result


def checks(body):
    return {(c["metric"], c.get("group")): c for c in body["gate"]["checks"]}


def test_the_ece_allowance_is_the_exact_null_ece():
    from calibcli.metrics import calibrated_null

    conf = np.random.default_rng(11).random(300)
    exact = exact_null_ece(conf)
    null = calibrated_null(conf, keys=["ece"], seed=0)
    assert null.draws == 200
    # the Monte Carlo error of a mean of 200 draws, from the draws themselves
    assert abs(null.mean["ece"] - exact) <= 4 * null.standard_error["ece"]
    assert 0 < null.standard_error["ece"] < 0.003


def test_the_gate_records_the_allowance_of_base_s_confidences(tmp_path):
    base, new = calibrated_rows(300, seed=11)
    exact = exact_null_ece([r["confidence"] for r in base])
    body, _ = compare(tmp_path, base, new, "--max-increase", "ece=0.5", code=0)
    check = checks(body)[("ece_increase", None)]
    # a null ECE over 200 draws on 300 rows: standard error below 0.0015 (checked above)
    assert check["allowance"] == pytest.approx(exact, abs=4 * 0.0015)
    # identical sides: no question NEW gets wrong alone, so the discordance floor is read
    assert check["floor_kind"] == "discordant"
    assert check["value"] == max(check["upper"], check["floor"]) + check["allowance"]
    assert check["upper"] == body["figures"]["ece"]["interval"][1] == 0.0


@pytest.mark.parametrize(
    ("n", "seed", "margin", "label"),
    [
        (300, 1019, "ece=0.02", "ECE"),
        (1000, 3014, "ece=0.015", "ECE"),
        (300, 2004, "smece=0.0125", "smECE"),
    ],
)
def test_a_true_increase_above_the_margin_fails(tmp_path, n, seed, margin, label):
    base, new = calibrated_rows(n, seed, shift=0.03)
    body, result = compare(tmp_path, base, new, "--max-increase", margin, code=1)
    (check,) = body["gate"]["checks"]
    limit = float(margin.split("=")[1])
    assert check["upper"] <= limit < check["value"]  # the upper end alone would pass
    assert check["value"] == check["upper"] + check["allowance"]
    assert "(upper end of the 0.95 interval) + " in result.stderr
    assert f"(BASE's {label} {SAYS}) exceeds --max-increase {margin}\n" in result.stderr


def test_far_above_fails_and_far_below_passes(tmp_path):
    base, new = calibrated_rows(300, seed=11, shift=0.3)
    body, result = compare(tmp_path, base, new, "--max-increase", "ece=0.02", code=1)
    assert f"(BASE's ECE {SAYS})" in result.stderr
    # BASE against its own rows: the upper end is 0, and the allowance (about 0.06) is well
    # inside a margin of 0.15; on the estimate there is no allowance
    body, _ = compare(tmp_path, base, base, "--max-increase", "ece=0.15", code=0)
    check = checks(body)[("ece_increase", None)]
    assert 0.04 < check["allowance"] < 0.08 and check["passed"] is True
    body, _ = compare(tmp_path, base, base, "--max-increase", "ece=0.0", "--gate-on", "estimate")
    assert "allowance" not in checks(body)[("ece_increase", None)]
    assert body["gate"]["passed"] is True


def test_brier_and_the_debiased_rmsce_carry_none(tmp_path):
    base, new = calibrated_rows(300, seed=1019, shift=0.03)
    margins = ["brier=0.05", "rmsce_debiased=0.2", "ece=0.5"]
    args = [x for m in margins for x in ("--max-increase", m)]
    body, _ = compare(tmp_path, base, new, *args, code=0)
    found = checks(body)
    for key in ("brier", "rmsce_debiased"):
        check = found[(f"{key}_increase", None)]
        assert "allowance" not in check
        assert check["upper"] == body["figures"][key]["interval"][1]
        # the same outcomes on both sides: the discordance floor is read where larger
        assert check["value"] == max(check["upper"], check["floor"])
    assert "allowance" in found[("ece_increase", None)]


def test_each_group_and_an_unpaired_base_take_their_own_rows(tmp_path):
    base, new = calibrated_rows(400, seed=5)
    for b, n in zip(base, new, strict=True):
        b["task"] = n["task"] = "low" if b["confidence"] < 0.5 else "high"
    args = ["--by", "task", "--gate-each", "--max-increase", "ece=0.5"]
    body, _ = compare(tmp_path, base, new, *args, code=0)
    found = checks(body)
    for group in ("low", "high"):
        conf = [r["confidence"] for r in base if r["task"] == group]
        # a group of about 200 rows: the null ECE's standard error is below 0.002
        assert found[("ece_increase", group)]["allowance"] == pytest.approx(
            exact_null_ece(conf), abs=4 * 0.002
        )
    body, _ = compare(tmp_path, base, new[:250], "--unpaired", "--max-increase", "ece=0.5", code=0)
    allowance = checks(body)[("ece_increase", None)]["allowance"]
    assert allowance == pytest.approx(exact_null_ece([r["confidence"] for r in base]), abs=0.006)
    assert math.isfinite(allowance)


def test_the_table_the_summary_and_the_page_show_the_allowance(tmp_path):
    base, new = calibrated_rows(300, seed=1019, shift=0.03)
    # ten questions NEW gets wrong where BASE is right: enough that no discordance floor
    # applies, so the table shows the upper end and the allowance alone
    for row in [r for r in new if r["correct"]][:10]:
        row["correct"] = False
    paths = write_jsonl(tmp_path / "base.jsonl", base), write_jsonl(tmp_path / "new.jsonl", new)
    out, summary, page = tmp_path / "r.json", tmp_path / "s.md", tmp_path / "r.html"
    args = ["--max-increase", "ece=0.02", "-o", out, "--summary", summary, "--html", page]
    result = run(["compare", *paths, "--bootstrap", "300", *args])
    assert result.exit_code == 1
    (check,) = json.loads(out.read_text(encoding="utf-8"))["gate"]["checks"]
    shown = [f"{check[k]:.4f}" for k in ("upper", "allowance", "value")]
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("metric") and "group" in line)
    assert header.split() == [
        *("metric", "group", "estimate", "upper", "allowance", "gated", "threshold", "result")
    ]
    row = next(line for line in lines if line.startswith("ece_increase"))
    assert row.split()[3:] == [*shown, "0.02", "fail"]
    said = f"| {shown[2]} (upper end {shown[0]} + allowance {shown[1]}) | **no** |"
    assert said in summary.read_text(encoding="utf-8")
    html = page.read_text(encoding="utf-8")
    cells = "".join(f"<td>{x}</td>" for x in shown)
    assert '<th scope="col">allowance</th><th scope="col">gated value</th>' in html
    assert cells in html
