"""A summary without its table of distinct confidences holds its per-bin sums for the bins it
was summarized with, and cannot give others: without --bins its report uses those bins (the
JSON's ``bins`` too), and --bins given at another number, the default included, is exit 2.
With its table, the bins are the summary's unless --bins is given, which rebuilds them."""

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
    for flags in ([], ["--bins", "15"]):  # not given: the summary's bins
        result = run(["calibrate", summary, "--json", *flags])
        assert result.exit_code == 0, result.stderr
        body = json.loads(result.stdout)
        assert (body["bins"], body["bins_used"]) == (15, 15)
        assert math.isclose(body["ece"], ece_by_hand(data, 15), rel_tol=1e-12)
        assert not any("the binned figures use" in w for w in body["warnings"])
    for other in ("10", "20"):  # given, the default too: refused
        result = run(["calibrate", summary, "--bins", other])
        assert result.exit_code == 2


def test_a_summary_with_its_table_rebins_without_a_word(tmp_path):
    data = rows()
    path = write_jsonl(tmp_path / "rows.jsonl", data)
    summary = tmp_path / "s.summary"
    assert run(["summarize", path, "--bins", "15", "-o", summary, "-q"]).exit_code == 0
    for flags, m in (([], 15), (["--bins", "10"], 10)):  # --bins given rebuilds them
        body = json.loads(run(["calibrate", summary, "--json", "-q", *flags]).stdout)
        assert (body["bins"], body["bins_used"]) == (m, m)
        assert math.isclose(body["ece"], ece_by_hand(data, m), rel_tol=1e-12)
        assert not any("the binned figures use" in w for w in body["warnings"])
