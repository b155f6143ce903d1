"""--min-rows and --min-tokens: a gate that fails unless the sample is at least the size a CI
job expects, so a truncated dump or a limited run cannot pass on the rows it has. Row and token
counts here are counted from the files written, never read from calibcli's output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"


def rows(n, confidence=0.9, correct=True, **extra):
    return [{"confidence": confidence, "correct": correct, **extra} for _ in range(n)]


def report(args, code):
    result = run([*args, "--json", "-q"])
    assert result.exit_code == code, result.output
    failed = [line for line in result.stderr.splitlines() if line.startswith("gate failed: ")]
    return json.loads(result.stdout), failed


@pytest.mark.parametrize(("n", "least", "code"), [(5, 6, 1), (5, 5, 0), (2000, 1999, 0)])
def test_the_estimate_gates_pass_only_from_the_floor(tmp_path, n, least, code):
    """Five right answers at 0.9: a Brier score of 0.01 passes --max-brier 0.05, unless the
    job asked for more rows than it got."""
    path = write_jsonl(tmp_path / "rows.jsonl", rows(n))
    body, failed = report(["calibrate", path, "--max-brier", "0.05", "--min-rows", least], code)
    brier, floor = body["gate"]["checks"]
    assert brier == {
        "metric": "brier",
        "threshold": 0.05,
        "value": pytest.approx(0.01),
        "passed": True,
    }
    assert floor == {"metric": "n", "minimum": least, "value": n, "passed": code == 0}
    assert failed == ([] if code == 0 else [f"gate failed: n = {n} is below --min-rows {least}"])


def test_a_floor_is_a_gate_alone(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", rows(3))
    body, failed = report(["calibrate", path, "--min-rows", "1000000"], 1)
    assert body["gate"]["passed"] is False
    assert failed == ["gate failed: n = 3 is below --min-rows 1000000"]


def test_each_group_is_held_to_it(tmp_path):
    path = write_jsonl(
        tmp_path / "rows.jsonl",
        rows(40, subject="algebra") + rows(12, subject="law") + rows(30, subject="logic"),
    )
    args = ["calibrate", path, "--by", "subject", "--min-rows", "30"]
    body, failed = report([*args, "--gate-each"], 1)
    assert body["gate"]["failed_groups"] == ["law"]
    assert failed == ["gate failed: n in group 'law' = 12 is below --min-rows 30"]
    pooled, failed = report(args, 0)  # without --gate-each: the pooled 82 rows only
    assert [c["value"] for c in pooled["gate"]["checks"]] == [82] and failed == []


def test_the_upper_gate_keeps_its_own_minimum(tmp_path):
    """The floor counts rows; the upper end still needs 30 of them."""
    path = write_jsonl(tmp_path / "rows.jsonl", rows(20))
    args = ["--max-brier", "0.05", "--gate-on", "upper", "--bootstrap", "200", "--min-rows", "10"]
    body, failed = report(["calibrate", path, *args], 1)
    assert [c["passed"] for c in body["gate"]["checks"]] == [False, True]
    assert len(failed) == 1 and "at least 30" in failed[0]


def test_perplexity_floors_rows_and_tokens(tmp_path):
    path = write_jsonl(tmp_path / "ppl.jsonl", [{"nll": 2.0, "tokens": 10}] * 3)
    body, failed = report(["perplexity", path, "--min-tokens", "31", "--min-rows", "3"], 1)
    assert [(c["metric"], c["value"], c["passed"]) for c in body["gate"]["checks"]] == [
        ("total_tokens", 30, False),
        ("sequences", 3, True),
    ]
    assert failed == ["gate failed: total_tokens = 30 is below --min-tokens 31"]
    report(["perplexity", path, "--min-tokens", "30", "--min-rows", "3"], 0)


def test_perplexity_without_token_counts_fails_a_token_floor_closed():
    """lm-eval's rolling loglikelihoods carry bytes and words, not tokens."""
    path = next(LM_EVAL.glob("samples_toy_wikitext_*.jsonl"))
    body, failed = report(["perplexity", path, "--min-tokens", "1"], 1)
    assert body["gate"]["checks"][0]["passed"] is False
    assert failed == [
        "gate failed: total_tokens: total_tokens is undefined on this data; cannot support "
        "--min-tokens 1"
    ]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--min-rows", "0"], "Invalid value for '--min-rows': 0 is not in the range x>=1."),
        (["--min-rows", "2.5"], "Invalid value for '--min-rows': '2.5' is not a valid int"),
        (
            ["--min-rows", "100", "--min-rows", "10"],
            "--min-rows is given twice (100, then 10): give each gate once",
        ),
    ],
)
def test_a_floor_is_checked_as_the_other_gates(tmp_path, args, said):
    path = write_jsonl(tmp_path / "rows.jsonl", rows(3))
    result = run(["calibrate", path, *args, "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert said in result.stderr


def test_gate_each_is_satisfied_by_a_floor(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", rows(3, subject="a"))
    result = run(["calibrate", path, "--gate-each", "--json"])
    assert result.exit_code == 2
    assert "--gate-each needs --by FIELD" in result.stderr
    result = run(["calibrate", path, "--by", "subject", "--gate-each", "--json"])
    assert result.exit_code == 2
    assert "applies the --max-* and --min-* gates to every group; give one" in result.stderr
    report(["calibrate", path, "--by", "subject", "--gate-each", "--min-rows", "3"], 0)


def test_the_python_api_takes_min_rows():
    result = calibcli.calibrate([0.9, 0.8, 0.3, 0.6], [1, 1, 0, 1], bins=2, min_rows=5)
    assert result.passed is False and result.failures == ["n = 4 is below --min-rows 5"]
    assert calibcli.calibrate([0.9, 0.8, 0.3, 0.6], [1, 1, 0, 1], min_rows=4).passed is True
    with pytest.raises(InputError, match="min_rows: 0 is not in the range x>=1"):
        calibcli.calibrate([0.9], [1], min_rows=0)


def test_an_engine_summary_takes_floors(tmp_path):
    """The summary a Spark or Dask run ends with gates as the CLI does on the same rows."""
    from calibcli.engines.result import EngineSummary
    from calibcli.summaries import from_bytes

    path = write_jsonl(tmp_path / "rows.jsonl", rows(7))
    part = tmp_path / "part.cbs"
    assert run(["summarize", path, "-o", part]).exit_code == 0
    summary = EngineSummary(from_bytes(part.read_bytes()))
    body = summary.report(limits={"brier": 0.05}, floors={"n": 8})
    cli, _ = report(["calibrate", part, "--max-brier", "0.05", "--min-rows", "8"], 1)
    assert body["gate"] == cli["gate"] and body["gate"]["passed"] is False
    assert summary.report(floors={"n": 7})["gate"]["passed"] is True
    with pytest.raises(InputError, match="no floor gates 'tokens': the counts with one are 'n'"):
        summary.report(floors={"tokens": 7})


# --------------------------------------------------------------------------- compare


def keyed(n, start=0, **extra):
    return [
        {"id": f"q{i}", "confidence": 0.6 + 0.3 * (i % 2), "correct": i % 3 != 0, **extra}
        for i in range(start, start + n)
    ]


def test_compare_counts_the_matched_pairs(tmp_path):
    """40 questions on BASE, 38 of them on NEW: 38 pairs are compared."""
    base = write_jsonl(tmp_path / "base.jsonl", keyed(40))
    new = write_jsonl(tmp_path / "new.jsonl", keyed(38))
    args = ["compare", base, new, "--min-rows", "39"]
    body, failed = report(args, 1)
    assert body["matched"] == 38
    assert body["gate"]["checks"] == [
        {"metric": "rows", "minimum": 39, "value": 38, "passed": False}
    ]
    assert failed == ["gate failed: rows = 38 is below --min-rows 39"]
    report(["compare", base, new, "--min-rows", "38"], 0)


def test_compare_unpaired_counts_the_smaller_side(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", keyed(40))
    new = write_jsonl(tmp_path / "new.jsonl", keyed(25, start=100))
    _, failed = report(["compare", base, new, "--unpaired", "--min-rows", "26"], 1)
    assert failed == ["gate failed: rows = 25 is below --min-rows 26"]


def test_compare_holds_each_group_to_it(tmp_path):
    rows = keyed(30, subject="algebra") + keyed(12, start=30, subject="law")
    base = write_jsonl(tmp_path / "base.jsonl", rows)
    new = write_jsonl(tmp_path / "new.jsonl", rows)
    args = ["compare", base, new, "--by", "subject", "--min-rows", "20", "--gate-each"]
    body, failed = report(args, 1)
    assert body["gate"]["failed_groups"] == ["law"]
    assert failed == ["gate failed: rows in group 'law' = 12 is below --min-rows 20"]


def test_compare_in_python_takes_min_rows(tmp_path):
    base = write_jsonl(tmp_path / "base.jsonl", keyed(40))
    result = calibcli.compare(str(base), str(base), min_rows=41)
    assert result.passed is False and result.failures == ["rows = 40 is below --min-rows 41"]
    assert calibcli.compare(str(base), str(base), min_rows=40).passed is True
