"""A --min-rows check on rows that repeat their questions records the questions it counted
beside its ``value`` (the rows): ``questions`` and whether that count is exact
(``questions_exact``) or the least the rows can hold. A consumer reading ``value >= minimum``
alone would read a pass where the gate failed.

The counts are known by construction: 30 native rows and their copy, with --id-field and
--all-runs, are 60 rows of 30 questions (exact, from their ids); the committed lm-eval
wikitext run (20 documents) and a copy under a later time stamp, pooled with --all-runs, are
40 rows whose questions are at least 40 / 2 = 20 (perplexity rows keep no keys)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness import run
from test_all_runs_ids import native
from test_compare_unpaired_repeats import DOCUMENTS, runs_folder

WIKITEXT = (
    Path(__file__).resolve().parent
    / "fixtures"
    / "lm_eval"
    / "samples_toy_wikitext_2026-11-29T18-50-52.260809.jsonl"
)


def checks(args: list, code: int) -> list[dict]:
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)["gate"]["checks"]


def test_calibrate_records_the_exact_questions_of_a_failed_floor(tmp_path):
    rows, again = native(tmp_path), native(tmp_path, "again.jsonl")
    base = ["calibrate", rows, again, "--all-runs", "--id-field", "id", "--min-rows"]
    (check,) = checks([*base, "31"], 1)
    assert (check["value"], check["questions"], check["questions_exact"]) == (60, 30, True)
    assert check["passed"] is False
    # met: the check is as before, without the count
    (check,) = checks([*base, "30"], 0)
    assert check == {"metric": "n", "minimum": 30, "value": 60, "passed": True}


def test_a_floor_on_rows_of_their_own_questions_says_no_questions(tmp_path):
    rows = native(tmp_path)
    (check,) = checks(["calibrate", rows, "--min-rows", "31"], 1)
    assert check == {"metric": "n", "minimum": 31, "value": 30, "passed": False}


def test_perplexity_records_the_least_questions_its_rows_can_hold(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copy(WIKITEXT, folder / WIKITEXT.name)
    shutil.copy(WIKITEXT, folder / WIKITEXT.name.replace("2026-11-29", "2026-11-30"))
    (check,) = checks(["perplexity", folder, "--all-runs", "--min-rows", "21"], 1)
    assert check["metric"] == "sequences"
    assert (check["value"], check["questions"], check["questions_exact"]) == (40, 20, False)
    (check,) = checks(["perplexity", folder, "--all-runs", "--min-rows", "20"], 0)
    assert "questions" not in check and check["passed"] is True


def test_unpaired_compare_records_the_smaller_side_s_questions(tmp_path):
    base, new = runs_folder(tmp_path, "base", 3), runs_folder(tmp_path, "new", 2)
    args = ["compare", base, new, "--unpaired", "--all-runs", "--min-rows", str(DOCUMENTS + 1)]
    (check,) = checks(args, 1)
    assert check["metric"] == "rows"
    assert (check["value"], check["questions"], check["questions_exact"]) == (80, DOCUMENTS, True)


def test_perplexity_records_the_tokens_of_distinct_questions(tmp_path):
    # 10 documents of 3..12 tokens: 75 tokens once, 150 when the file and its copy are pooled
    path, again = tmp_path / "ppl.jsonl", tmp_path / "again.jsonl"
    rows = [{"id": f"d{i}", "nll": 1.5 * (i + 1), "tokens": i + 3} for i in range(10)]
    for written in (path, again):
        written.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = ["perplexity", path, again, "--all-runs", "--id-field", "id", "--min-tokens"]
    (check,) = checks([*base, "76"], 1)
    assert check["metric"] == "total_tokens"
    assert (check["value"], check["question_tokens"], check["question_tokens_exact"]) == (
        150,
        75,
        True,
    )
    assert "questions" not in check and check["passed"] is False
    (check,) = checks([*base, "75"], 0)
    assert check == {"metric": "total_tokens", "minimum": 75, "value": 150, "passed": True}
