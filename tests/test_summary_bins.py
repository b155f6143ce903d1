"""A summary without its table of distinct confidences holds its per-bin sums for the bins it
was summarized with, and cannot give others: its report names those bins as the ones its
figures use (the JSON's ``bins`` too, not the number the command would otherwise bin by), and
a warning says so when they are not the number asked for."""

from __future__ import annotations

import json
import math
import random

from harness import run, write_jsonl


def rows(n: int = 600) -> list[dict]:
    rng = random.Random(4)
    out = []
    for _ in range(n):
        c = rng.random()
        out.append({"confidence": c, "correct": rng.random() < c * c})
    return out


def ece_by_hand(data: list[dict], m: int) -> float:
    """Equal-width bins: k/m <= c < (k+1)/m, with c = 1 in the last bin."""
    bins: dict[int, list[dict]] = {}
    for r in data:
        k = next(k for k in range(m) if k / m <= r["confidence"] < (k + 1) / m or k == m - 1)
        bins.setdefault(k, []).append(r)
    return math.fsum(
        abs(math.fsum(r["correct"] for r in b) - math.fsum(r["confidence"] for r in b))
        for b in bins.values()
    ) / len(data)


def test_a_summary_without_its_table_reports_its_own_bins(tmp_path):
    data = rows()
    path = write_jsonl(tmp_path / "rows.jsonl", data)
    summary = tmp_path / "s.summary"
    made = run(["summarize", path, "--bins", "15", "--table", "never", "-o", summary, "-q"])
    assert made.exit_code == 0, made.stderr
    said = (
        "the binned figures use the summary's 15 bins, not 10: it holds no table of distinct "
        "confidences to rebuild others from (it was summarized with --table never)"
    )
    for flags in ([], ["--bins", "10"]):  # --bins 10 is the default: the two cannot differ
        result = run(["calibrate", summary, "--json", *flags])
        assert result.exit_code == 0, result.stderr
        body = json.loads(result.stdout)
        assert (body["bins"], body["bins_used"]) == (15, 15)
        assert math.isclose(body["ece"], ece_by_hand(data, 15), rel_tol=1e-12)
        assert said in body["warnings"] and f"warning: {said}" in result.stderr.splitlines()
    result = run(["calibrate", summary, "--json", "--bins", "15", "-q"])
    assert json.loads(result.stdout)["bins"] == 15
    assert "the binned figures use the summary's" not in result.stdout
    result = run(["calibrate", summary, "--bins", "20"])  # not the default: refused
    assert result.exit_code == 2


def test_a_summary_with_its_table_rebins_without_a_word(tmp_path):
    data = rows()
    path = write_jsonl(tmp_path / "rows.jsonl", data)
    summary = tmp_path / "s.summary"
    assert run(["summarize", path, "--bins", "15", "-o", summary, "-q"]).exit_code == 0
    body = json.loads(run(["calibrate", summary, "--json", "-q"]).stdout)
    assert (body["bins"], body["bins_used"]) == (10, 10)
    assert math.isclose(body["ece"], ece_by_hand(data, 10), rel_tol=1e-12)
    assert not any("the binned figures use" in w for w in body["warnings"])
