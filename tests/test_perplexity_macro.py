"""Group figures beside the pooled ones: lm-eval's group row averages its tasks' figures
weighted by their documents (``aggregate_subtask_metrics`` with ``weight_by_size``), which
differs from the pooled (micro) figures; the report gives both, named."""

from __future__ import annotations

import json
import math
from pathlib import Path

from harness import run

FIXTURE = Path(__file__).parent / "fixtures" / "lm_eval"
ROLLING = FIXTURE / "samples_toy_wikitext_2026-11-29T18-50-52.260809.jsonl"


def two_tasks(tmp_path):
    """The rolling fixture's rows as two tasks of 7 and 13 documents."""
    rows = ROLLING.read_text(encoding="utf-8").splitlines()
    stamp = "2026-11-29T18-50-52.260809"
    (tmp_path / f"samples_wiki_a_{stamp}.jsonl").write_text("\n".join(rows[:7]) + "\n")
    (tmp_path / f"samples_wiki_b_{stamp}.jsonl").write_text("\n".join(rows[7:]) + "\n")
    return [json.loads(r) for r in rows[:7]], [json.loads(r) for r in rows[7:]]


def task_figures(rows):
    """A task's corpus figures as lm-eval computes them from its rows."""
    nll = -math.fsum(r["bits_per_byte"][0] for r in rows)
    nbytes = sum(r["bits_per_byte"][1] for r in rows)
    words = sum(r["word_perplexity"][1] for r in rows)
    return {
        "bits_per_byte": nll / nbytes / math.log(2),
        "byte_perplexity": math.exp(nll / nbytes),
        "word_perplexity": math.exp(nll / words),
    }


def test_macro_is_the_harness_group_row_and_pooled_stays_micro(tmp_path):
    a, b = two_tasks(tmp_path)
    result = run(["perplexity", tmp_path, "--by", "task", "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    fa, fb = task_figures(a), task_figures(b)
    macro = report["macro"]
    assert macro["weights"] == "sequences"
    for key in ("bits_per_byte", "byte_perplexity", "word_perplexity"):
        expected = (fa[key] * len(a) + fb[key] * len(b)) / (len(a) + len(b))
        assert math.isclose(macro[key], expected, rel_tol=1e-12), key
        assert math.isclose(report[key], task_figures(a + b)[key], rel_tol=1e-12), key
        assert macro[key] != report[key]
    assert any("lm-eval's group row" in w for w in report["warnings"])
    table = run(["perplexity", tmp_path, "--by", "task"]).stdout
    assert "macro (by sequences)" in table


def test_no_macro_without_groups():
    report = json.loads(run(["perplexity", ROLLING, "--json"]).stdout)
    assert "macro" not in report
