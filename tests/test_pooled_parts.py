"""Re-runs pooled with --all-runs and read apart (summary files given together, ``merge``, an
engine's tasks, Dask and Spark) record the questions they repeat across each other as a reading
of all their files at once does: the same warning per source, --min-rows and --min-tokens
counting each question once, a gate on an interval's upper end closed where the rows cannot be
drawn a question at a time. A part summarized without --all-runs whose ids are questions a
pooled part holds is refused.

The files are built here: two runs of the same 300 questions (ids q0..q299) with other
confidences; the expected counts follow from that, the figures from a plain loop."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import require_engine, require_program
from harness import run, write_jsonl

from calibcli.engines import file_jobs, file_task, finish, merge_all

QUESTIONS = 300
ABOVE = str(QUESTIONS + 1)  # a --min-rows the questions do not meet, the rows do
OPENING = (
    "re-runs are pooled (--all-runs): their rows' ids repeat, so each question is answered "
    "several times: a.jsonl and c.jsonl (2 rows a question among them): "
)
DRAWN = "the figures weigh every answer, and the bootstrap draws each question's answers together"
POOLED = ["--all-runs", "--id-field", "id"]


def rows(run_number: int, prefix: str = "q") -> list[dict]:
    """One run of the questions: confidences spread over every bin, other in each run."""
    out = []
    for i in range(QUESTIONS):
        confidence = ((i * 37 + run_number * 11) % 97 + 1) / 99
        out.append({"id": f"{prefix}{i}", "confidence": confidence, "correct": (i * 7) % 5 < 3})
    return out


def ece(all_rows: list[dict], bins: int = 10) -> float:
    """Expected calibration error over equal-width bins, by a plain loop."""
    totals = [[0, 0.0, 0] for _ in range(bins)]
    for r in all_rows:
        b = min(int(r["confidence"] * bins), bins - 1)
        totals[b][0] += 1
        totals[b][1] += r["confidence"]
        totals[b][2] += int(r["correct"])
    n = len(all_rows)
    return sum(abs(s - k) / n for count, s, k in totals if count)


@pytest.fixture()
def runs(tmp_path, monkeypatch):
    """a.jsonl and c.jsonl (two runs of the same questions), the working directory holding
    them so that reports name them alike whatever route read them."""
    monkeypatch.chdir(tmp_path)
    write_jsonl(tmp_path / "a.jsonl", rows(1))
    write_jsonl(tmp_path / "c.jsonl", rows(2))
    return tmp_path


def calibrate(*args, code: int):
    result = run(["calibrate", *args, "--json"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout) if result.stdout.strip() else None, result


def summarize(source: str, target: str, *extra: str) -> str:
    result = run(["summarize", source, "-o", target, *extra])
    assert result.exit_code == 0, result.stderr
    return target


def floor(body: dict) -> dict:
    (check,) = [c for c in body["gate"]["checks"] if c["metric"] == "n"]
    return check


def test_summaries_given_together_count_the_questions_the_one_reading_counts(runs):
    both = rows(1) + rows(2)
    assert len(both) == 2 * QUESTIONS and len({r["id"] for r in both}) == QUESTIONS
    sa = summarize("a.jsonl", "sa.cbs", *POOLED)
    sc = summarize("c.jsonl", "sc.cbs", *POOLED)
    one, _ = calibrate("a.jsonl", "c.jsonl", *POOLED, "--min-rows", ABOVE, code=1)
    parts, result = calibrate(sa, sc, "--min-rows", ABOVE, code=1)
    for body in (one, parts):
        assert body["n"] == 2 * QUESTIONS
        assert Fraction(body["accuracy"]).limit_denominator(1000) == Fraction(
            sum(r["correct"] for r in both), len(both)
        )
        assert body["ece"] == pytest.approx(ece(both), abs=1e-12)
        (warning,) = body["warnings"]
        assert warning.startswith(OPENING)
        check = floor(body)
        assert (check["value"], check["questions"], check["passed"]) == (
            2 * QUESTIONS,
            QUESTIONS,
            False,
        )
    # the rows, their figures and each file's are the same; a summary's rows lose their keys,
    # so its question count is a bound and its bootstrap cannot draw a question's rows together
    same = {k: v for k, v in one.items() if k not in ("warnings", "gate")}
    assert {k: v for k, v in parts.items() if k not in ("warnings", "gate")} == same
    assert one["warnings"][0] == OPENING + DRAWN
    assert "gate on their upper end fails" in parts["warnings"][0]
    assert (floor(one)["questions_exact"], floor(parts)["questions_exact"]) == (True, False)
    assert "warning: re-runs are pooled (--all-runs)" in result.stderr
    # the questions meet a --min-rows of their number by either route
    for inputs in (["a.jsonl", "c.jsonl", *POOLED], [sa, sc]):
        body, _ = calibrate(*inputs, "--min-rows", str(QUESTIONS), code=0)
        assert floor(body)["passed"]


def test_a_merge_and_either_order_give_the_same_report(runs):
    sa = summarize("a.jsonl", "sa.cbs", *POOLED)
    sc = summarize("c.jsonl", "sc.cbs", *POOLED)
    merged = run(["merge", sa, sc, "-o", "m.cbs"])
    assert merged.exit_code == 0, merged.stderr
    _, given = calibrate(sa, sc, "--min-rows", ABOVE, code=1)
    _, swapped = calibrate(sc, sa, "--min-rows", ABOVE, code=1)
    body, from_merge = calibrate("m.cbs", "--min-rows", ABOVE, code=1)
    assert given.stdout == swapped.stdout == from_merge.stdout
    assert body["warnings"][0].startswith(OPENING)
    # a summary of both files read at once records the same repeats
    both = run(["summarize", "a.jsonl", "c.jsonl", "-o", "both.cbs", *POOLED])
    assert both.exit_code == 0, both.stderr
    _, at_once = calibrate("both.cbs", "--min-rows", ABOVE, code=1)
    assert at_once.stdout == given.stdout


def test_an_upper_end_gate_fails_closed_on_summaries_of_pooled_re_runs(runs):
    sa = summarize("a.jsonl", "sa.cbs", *POOLED)
    sc = summarize("c.jsonl", "sc.cbs", *POOLED)
    gate = ["--gate-on", "upper", "--max-ece", "0.99", "--bootstrap", "200"]
    one, _ = calibrate("a.jsonl", "c.jsonl", *POOLED, *gate, code=0)
    assert one["gate"]["passed"]  # drawn a question at a time
    parts, _ = calibrate(sa, sc, *gate, code=1)
    (check,) = [c for c in parts["gate"]["checks"] if c["metric"] == "ece"]
    assert not check["passed"] and "repeat" in check["reason"]


def test_poisson_sums_of_pooled_parts_give_the_one_reading_s_intervals(runs):
    boot = ["--bootstrap-samples", "200", "--seed", "3"]
    sa = summarize("a.jsonl", "sa.cbs", *POOLED, *boot)
    sc = summarize("c.jsonl", "sc.cbs", *POOLED, *boot)
    ci = ["--ci", "0.9", "--bootstrap", "200", "--seed", "3", "--bootstrap-scheme", "poisson"]
    one, _ = calibrate("a.jsonl", "c.jsonl", *POOLED, *ci, "--min-rows", ABOVE, code=1)
    parts, _ = calibrate(sa, sc, *ci, "--min-rows", ABOVE, code=1)
    for key in ("ece", "brier", "accuracy", "mce"):
        assert parts["ci"][key] == pytest.approx(one["ci"][key], abs=1e-12)
    assert parts["warnings"][0].startswith(OPENING)
    assert floor(parts)["questions"] == QUESTIONS


def test_a_pooled_part_and_one_read_without_all_runs_of_the_same_questions_are_refused(runs):
    write_jsonl(runs / "other.jsonl", rows(3, prefix="x"))
    sa = summarize("a.jsonl", "sa.cbs", *POOLED)
    plain = summarize("c.jsonl", "plain.cbs", "--id-field", "id")
    for command in (["calibrate", sa, plain], ["merge", sa, plain, "-o", "m.cbs"]):
        result = run(command)
        assert result.exit_code == 2
        message = result.stderr.strip().splitlines()[-1]
        assert "a row is in two of the parts (the same id)" in message
        assert "summarize both with --all-runs" in message
        assert "Traceback" not in result.stderr
    # other questions meet no pooled one: merged, nothing repeats
    other = summarize("other.jsonl", "other.cbs", "--id-field", "id")
    body, _ = calibrate(sa, other, "--min-rows", str(2 * QUESTIONS), code=0)
    assert body["warnings"] == [] and floor(body)["passed"]


def perplexity_rows(run_number: int) -> list[dict]:
    return [
        {"id": f"q{i}", "nll": ((i * 13 + run_number * 5) % 41 + 1) / 4, "tokens": 10 + i}
        for i in range(QUESTIONS)
    ]


def test_perplexity_summaries_count_each_question_s_tokens_once(runs):
    write_jsonl(runs / "a.jsonl", perplexity_rows(1))
    write_jsonl(runs / "c.jsonl", perplexity_rows(2))
    tokens_once = sum(10 + i for i in range(QUESTIONS))
    sa = summarize("a.jsonl", "sa.cbs", *POOLED)
    sc = summarize("c.jsonl", "sc.cbs", *POOLED)
    floors = ["--min-tokens", str(tokens_once + 1), "--min-rows", str(QUESTIONS + 1)]
    one = run(["perplexity", "a.jsonl", "c.jsonl", *POOLED, *floors, "--json"])
    parts = run(["perplexity", sa, sc, *floors, "--json"])
    assert (one.exit_code, parts.exit_code) == (1, 1), parts.stderr
    body = json.loads(parts.stdout)
    assert body["total_tokens"] == 2 * tokens_once and body["sequences"] == 2 * QUESTIONS
    assert body["warnings"][0].startswith(OPENING)
    failed = {c["metric"] for c in body["gate"]["checks"] if not c["passed"]}
    assert {"total_tokens", "n"} <= failed or {"total_tokens", "sequences"} <= failed
    assert parts.stdout == one.stdout
    at = run(["perplexity", sa, sc, "--min-tokens", str(tokens_once), "--json"])
    assert at.exit_code == 0, at.stderr


def engine_report(paths: list[Path], **options) -> tuple[dict, object]:
    jobs = file_jobs([str(p) for p in paths], "auto", None, **options)
    summary = finish(merge_all([file_task(job) for job in jobs]), all_runs=True, said=jobs[0].said)
    return summary.report(floors={"n": QUESTIONS + 1}), summary


def test_an_engine_s_tasks_count_the_questions_of_pooled_files(runs):
    body, summary = engine_report(
        [runs / "a.jsonl", runs / "c.jsonl"], all_runs=True, id_field="id"
    )
    one, _ = calibrate("a.jsonl", "c.jsonl", *POOLED, "--min-rows", ABOVE, code=1)
    assert body["warnings"] == [OPENING + DRAWN] == one["warnings"]
    check = floor(body)
    assert (check["questions"], check["passed"]) == (QUESTIONS, False)
    assert not body["gate"]["passed"]
    assert {k: body[k] for k in ("n", "ece", "brier", "auroc")} == {
        k: one[k] for k in ("n", "ece", "brier", "auroc")
    }
    summary.write(str(runs / "engine.cbs"))
    written, _ = calibrate("engine.cbs", "--min-rows", ABOVE, code=1)
    assert written["warnings"][0].startswith(OPENING)


def test_dask_counts_the_questions_of_pooled_files(runs):
    require_engine("dask", "dask")
    from calibcli.dask import summarize_files

    files = [str(runs / "a.jsonl"), str(runs / "c.jsonl")]
    with __import__("dask").config.set(scheduler="synchronous"):
        summary = summarize_files(files, all_runs=True, id_field="id").compute()
    body = summary.report(floors={"n": QUESTIONS + 1})
    expected, _ = engine_report([runs / "a.jsonl", runs / "c.jsonl"], all_runs=True, id_field="id")
    assert body == expected
    assert body["warnings"] == [OPENING + DRAWN] and not body["gate"]["passed"]


def test_spark_counts_the_questions_of_pooled_files(runs):
    require_program("java", "Spark runs on a JVM (Java 17)")
    require_engine("pyspark", "spark")
    from engine_checks import local_spark

    from calibcli.spark import summarize_files

    files = [str(runs / "a.jsonl"), str(runs / "c.jsonl")]
    with local_spark("calibcli-pooled-parts", memory="1g") as spark:
        summary = summarize_files(spark, files, all_runs=True, id_field="id")
    body = summary.report(floors={"n": QUESTIONS + 1})
    expected, _ = engine_report([runs / "a.jsonl", runs / "c.jsonl"], all_runs=True, id_field="id")
    assert body == expected
    assert body["warnings"] == [OPENING + DRAWN] and not body["gate"]["passed"]


def test_a_file_read_beside_a_pooled_summary_counts_the_questions_both_hold(runs):
    sa = summarize("a.jsonl", "sa.cbs", *POOLED)
    body, _ = calibrate("c.jsonl", sa, *POOLED, "--min-rows", ABOVE, code=1)
    (warning,) = body["warnings"]
    assert warning.startswith(OPENING.split(": a.jsonl")[0])
    assert "c.jsonl and a.jsonl (2 rows a question among them)" in warning
    check = floor(body)
    assert (check["value"], check["questions"], check["passed"]) == (
        2 * QUESTIONS,
        QUESTIONS,
        False,
    )
