"""--format (lm-eval samples, per-token logprobs), --mc-norm, --by and --gate-each on the CLI.

lm-eval figures are checked against the results file the harness wrote in the same run
(tests/fixtures/lm_eval); confidences against a plain-Python softmax of the logged responses.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from harness import columns, make_rows, run, write_jsonl
from reference import estimates, top_softmax

LM_EVAL = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
SCIENCE = next(LM_EVAL.glob("samples_toy_mc_science_*.jsonl"))
TRIVIA = next(LM_EVAL.glob("samples_toy_mc_trivia_*.jsonl"))
WIKITEXT = next(LM_EVAL.glob("samples_toy_wikitext_*.jsonl"))
RESULTS = json.loads(next(LM_EVAL.glob("results_*.json")).read_text())["results"]


def cli_json(args, code=0, input=None):
    result = run([*args, "--json"], input=input)
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result


# --------------------------------------------------------------------------- lm-eval


def test_lm_eval_multiple_choice_with_no_flags():
    report, result = cli_json(["calibrate", SCIENCE])
    assert result.stderr.splitlines()[0] == f"detected format: lm-eval ({SCIENCE})"
    assert report["warnings"] == [line[9:] for line in result.stderr.splitlines()[1:]]
    assert report["format"] == "lm-eval"
    assert report["n"] == RESULTS["toy_mc_science"]["sample_len"] == 48
    assert report["accuracy"] == pytest.approx(RESULTS["toy_mc_science"]["acc,none"], abs=1e-9)
    rows = [json.loads(line) for line in SCIENCE.read_text().splitlines()]
    conf = [top_softmax([float(r[0]) for r in row["filtered_resps"]]) for row in rows]
    assert report["mean_confidence"] == pytest.approx(math.fsum(conf) / len(conf), rel=1e-12)


@pytest.mark.parametrize(("norm", "metric"), [("chars", "acc_norm"), ("bytes", "acc_bytes")])
def test_lm_eval_mc_norm_uses_the_matching_accuracy(norm, metric):
    report, _ = cli_json(["calibrate", SCIENCE, "--mc-norm", norm, "--quiet"])
    assert report["accuracy"] == pytest.approx(
        RESULTS["toy_mc_science"][f"{metric},none"], abs=1e-9
    )


def test_quiet_silences_the_detected_format_line():
    _, result = cli_json(["reliability", SCIENCE, "--quiet"])
    assert "detected format" not in result.stderr
    assert result.stderr.startswith("warning: the median populated bin holds 5 predictions")


def test_lm_eval_several_tasks_by_task():
    report, _ = cli_json(["calibrate", SCIENCE, TRIVIA, "--by", "task"])
    assert list(report["groups"]) == ["toy_mc_science", "toy_mc_trivia"]
    for task, group in report["groups"].items():
        assert group["n"] == RESULTS[task]["sample_len"]
        assert group["accuracy"] == pytest.approx(RESULTS[task]["acc,none"], abs=1e-9)
    assert report["n"] == 88
    pooled = (0.6875 * 48 + 0.275 * 40) / 88
    assert report["accuracy"] == pytest.approx(pooled, abs=1e-12)


@pytest.mark.parametrize(
    ("path", "by", "groups"),
    [
        (SCIENCE, "doc.subject", None),
        (TRIVIA, "doc.meta.difficulty", None),
        (TRIVIA, "doc.meta.round", None),
    ],
)
def test_lm_eval_nested_by(path, by, groups):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    expected = {}
    for row in rows:
        value = row["doc"]
        for part in by.split(".")[1:]:
            value = value[part]
        expected.setdefault(str(value), []).append(row["acc"])
    report, _ = cli_json(["calibrate", path, "--by", by, "--quiet"])
    assert list(report["groups"]) == sorted(expected)
    for name, accs in expected.items():
        assert report["groups"][name]["n"] == len(accs)
        assert report["groups"][name]["accuracy"] == pytest.approx(sum(accs) / len(accs), abs=1e-12)


def test_lm_eval_rolling_perplexity_matches_the_harness():
    report, result = cli_json(["perplexity", WIKITEXT])
    expected = RESULTS["toy_wikitext"]
    assert report["format"] == "lm-eval"
    for key in ("word_perplexity", "byte_perplexity", "bits_per_byte"):
        assert report[key] == pytest.approx(expected[f"{key},none"], rel=1e-9), key
    assert report["sequences"] == 20
    assert report["total_tokens"] is None and report["perplexity"] is None
    assert any("token perplexity is unavailable" in w for w in report["warnings"])
    assert "detected format: lm-eval" in result.stderr
    table = run(["perplexity", WIKITEXT, "-q"])
    assert table.exit_code == 0
    assert f"{expected['bits_per_byte,none']:.4f}" in table.stdout
    gated, result = cli_json(["perplexity", WIKITEXT, "--max-perplexity", "1000"], code=1)
    assert gated["gate"]["checks"][0]["reason"] == "the input carries no token counts"


def test_forcing_jsonl_on_lm_eval_rows_is_invalid_input():
    result = run(["calibrate", SCIENCE, "--format", "jsonl"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {SCIENCE}:1: ")


# --------------------------------------------------------------------------- logprobs


def test_logprobs_nulls_infinity_and_sentinels(tmp_path):
    path = tmp_path / "lp.jsonl"
    path.write_text(
        '{"logprobs": [null, -0.5, -1.25]}\n'
        '{"logprobs": [null, -0.25, -10000.5, -2.0]}\n'
        '{"logprobs": []}\n'
    )
    report, result = cli_json(["perplexity", path])
    assert result.stderr.startswith(f"detected format: logprobs ({path})\n")
    assert report["format"] == "logprobs"
    assert report["sequences"] == 3 and report["total_tokens"] == 5
    assert report["null_logprobs"] == 2 and report["sentinel_logprobs"] == 1
    total = 0.5 + 1.25 + 0.25 + 10000.5 + 2.0
    assert report["total_nll"] == pytest.approx(total, rel=1e-15)
    assert report["mean_nll"] == pytest.approx(total / 5, rel=1e-15)
    assert report["perplexity"] is None  # exp(2000) overflows a double
    assert any(w.startswith("perplexity overflow(s) a double") for w in report["warnings"])
    assert any("1 token logprob(s) are <= -9999" in w for w in report["warnings"])
    assert not any("not finite numbers" in w for w in report["warnings"])
    assert "warning: 1 token logprob(s)" in result.stderr


def test_logprobs_field_option_and_minus_infinity(tmp_path):
    path = tmp_path / "lp.jsonl"
    path.write_text('{"out": {"lp": [-1.0, -Infinity]}}\n')
    report, _ = cli_json(["perplexity", path, "--logprobs-field", "out.lp", "--format", "logprobs"])
    assert report["total_tokens"] == 2 and report["perplexity"] is None
    assert any("infinite" in w for w in report["warnings"])


@pytest.mark.parametrize(
    ("values", "mentions"), [("[-0.5, 0.25]", "logprobs[1]"), ("[-0.5, NaN]", "logprobs[1]")]
)
def test_bad_logprobs_exit_2_naming_line_and_position(tmp_path, values, mentions):
    path = tmp_path / "lp.jsonl"
    path.write_text('{"logprobs": [-1.0]}\n{"logprobs": ' + values + "}\n")
    result = run(["perplexity", path])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"Error: {path}:2: ") and mentions in line


def test_undetectable_format_exits_2(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [{"foo": 1, "bar": 2}])
    for command in ("perplexity", "calibrate", "reliability"):
        result = run([command, path])
        assert result.exit_code == 2
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"Error: {path}:1: ") and "format" in line


# --------------------------------------------------------------------------- --by, --gate-each


@pytest.fixture(scope="module")
def grouped_rows():
    rows = []
    for name, skew in (("alpha", 1.0), ("beta", 2.5), ("gamma", 1.2)):
        for r in make_rows(150, seed=len(name) * 7, skew=skew):
            rows.append({**r, "meta": {"split": name}})
    return rows


@pytest.fixture
def grouped(tmp_path, grouped_rows):
    return write_jsonl(tmp_path / "g.jsonl", grouped_rows)


def test_by_groups_and_pooled_figures(grouped, grouped_rows):
    report, _ = cli_json(["calibrate", grouped, "--by", "meta.split"])
    assert list(report["groups"]) == ["alpha", "beta", "gamma"]
    assert report["ece"] == pytest.approx(estimates(*columns(grouped_rows))["ece"], rel=1e-12)
    for name, group in report["groups"].items():
        members = [r for r in grouped_rows if r["meta"]["split"] == name]
        ref = estimates(*columns(members))
        assert group["n"] == 150
        for key in ("ece", "brier", "mce", "accuracy", "auroc"):
            assert group[key] == pytest.approx(ref[key], rel=1e-12, abs=1e-15), (name, key)
        assert "schema_version" not in group and "warnings" not in group


def test_by_table_has_a_row_per_group(grouped):
    result = run(["calibrate", grouped, "--by", "meta.split"])
    assert result.exit_code == 0
    for name in ("alpha", "beta", "gamma", "all (pooled)", "By meta.split"):
        assert name in result.stdout


def test_gates_apply_to_the_pooled_figure_unless_gate_each(grouped):
    report, _ = cli_json(["calibrate", grouped, "--by", "meta.split"])
    eces = {name: g["ece"] for name, g in report["groups"].items()}
    worst = max(eces, key=eces.get)
    threshold = repr((report["ece"] + eces[worst]) / 2)
    assert report["ece"] < float(threshold) < eces[worst]
    pooled, _ = cli_json(["calibrate", grouped, "--by", "meta.split", "--max-ece", threshold])
    assert pooled["gate"]["passed"] is True and len(pooled["gate"]["checks"]) == 1
    each, result = cli_json(
        ["calibrate", grouped, "--by", "meta.split", "--max-ece", threshold, "--gate-each"], code=1
    )
    failing = sorted(n for n, e in eces.items() if e > float(threshold))
    assert each["gate"]["failed_groups"] == failing
    assert [c.get("group") for c in each["gate"]["checks"]] == [None, "alpha", "beta", "gamma"]
    for name in failing:
        assert f"gate failed: ece in group '{name}' = " in result.stderr


def test_gate_each_fails_closed_on_a_thin_group(tmp_path):
    rows = make_rows(200, seed=1) + [
        {"confidence": 0.95, "correct": True, "split": "thin"} for _ in range(30)
    ]
    rows = [{**r, "split": r.get("split", "wide")} for r in rows]
    path = write_jsonl(tmp_path / "t.jsonl", rows)
    report, result = cli_json(
        ["calibrate", path, "--by", "split", "--max-ece", "0.5", "--gate-each"], code=1
    )
    assert report["gate"]["failed_groups"] == ["thin"]
    thin = report["gate"]["checks"][1]
    assert thin["group"] == "thin" and thin["reason"].startswith("only 1 of 10 bins")
    assert "group 'thin': only 1 of 10 bins are populated" in result.stderr


def test_by_with_ci_gives_group_intervals(grouped):
    report, _ = cli_json(
        ["calibrate", grouped, "--by", "meta.split", "--ci", "0.9", "--bootstrap", "200"]
    )
    for group in report["groups"].values():
        lo, hi = group["ci"]["ece"]
        assert lo <= hi


def test_by_on_perplexity_and_reliability(tmp_path):
    rows = [
        {"nll": 2.0, "tokens": 2, "doc": {"lang": "en"}},
        {"nll": 6.0, "tokens": 3, "doc": {"lang": "fr"}},
        {"nll": 1.0, "tokens": 2, "doc": {"lang": "en"}},
    ]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    report, _ = cli_json(["perplexity", path, "--by", "doc.lang"])
    assert report["groups"]["en"]["perplexity"] == pytest.approx(math.exp(0.75), rel=1e-15)
    assert report["groups"]["fr"]["perplexity"] == pytest.approx(math.exp(2.0), rel=1e-15)
    assert report["perplexity"] == pytest.approx(math.exp(9.0 / 7), rel=1e-15)
    table = run(["perplexity", path, "--by", "doc.lang"])
    assert "en" in table.stdout and "all (pooled)" in table.stdout
    cal = [{"confidence": 0.1 * (i % 10), "correct": i % 3 == 0, "k": i % 2} for i in range(60)]
    path = write_jsonl(tmp_path / "c.jsonl", cal)
    report, _ = cli_json(["reliability", path, "--by", "k"])
    assert list(report["groups"]) == ["0", "1"]
    assert sum(g["n"] for g in report["groups"].values()) == report["n"] == 60


def test_by_missing_field_exits_2(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"confidence": 0.5, "correct": True}])
    result = run(["calibrate", path, "--by", "subject"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}:1: ") and "subject" in result.stderr
