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


def test_an_infinite_group_makes_the_macro_infinite_not_undefined(tmp_path):
    """A weighted mean of non-negative figures with one infinite term is infinite: written
    null as every infinity is, and marked inf in non_finite (the table shows inf, not n/a)."""
    path = tmp_path / "rows.jsonl"
    rows = [("a", "1e999", 3), ("b", "2.0", 4), ("b", "3.0", 4)]  # 1e999: an infinite NLL
    path.write_text("".join(f'{{"nll": {nll}, "tokens": {t}, "g": "{g}"}}\n' for g, nll, t in rows))
    report = json.loads(run(["perplexity", path, "--by", "g", "--json", "-q"]).stdout)
    assert report["macro"] == {"weights": "sequences", "perplexity": None, "bits_per_token": None}
    assert report["non_finite"]["macro.perplexity"] == "inf"
    assert report["non_finite"]["macro.bits_per_token"] == "inf"
    table = run(["perplexity", path, "--by", "g", "-q"]).stdout
    (macro,) = [line for line in table.splitlines() if line.startswith("macro")]
    assert macro.split()[3:5] == ["inf", "inf"]


def test_groups_other_than_tasks_are_not_called_the_harness_group_row(tmp_path):
    # lm-eval's group rows average tasks: grouped by another field, the macro row averages
    # those groups, and a note naming it lm-eval's group row would mislead
    a, b = two_tasks(tmp_path)
    report = json.loads(run(["perplexity", tmp_path, "--by", "doc_id", "--json"]).stdout)
    assert len(report["groups"]) == len({r["doc_id"] for r in a + b})
    assert report["macro"]["weights"] == "sequences"
    assert not any("lm-eval's group row" in w for w in report["warnings"])
    table = run(["perplexity", tmp_path, "--by", "doc_id"])
    assert "macro (by sequences)" in table.stdout
    assert "lm-eval's group row" not in table.stderr
