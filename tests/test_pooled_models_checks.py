"""Under --by model with --gate-each, the pooled figures of several models' rows are no model's
figures: their checks are shown failing closed and record ``"decides": false``, and the
models' groups alone give the verdict and the exit code, in the table, the JSON report, the
Markdown summary, the HTML page, GitHub's annotations and the Python API's result. Gated alone,
the pooled checks still fail closed and decide.

Two runs of the fixture's trivia task (40 documents) in two model folders: ``org/modelA``'s as
committed, ``org/modelB``'s with every loglikelihood scaled by 0.8. The references are computed
here with numpy from the files' rows: confidence = the largest softmax probability over a row's
first half of ``filtered_resps`` (the task logs acc_mutual_info, so each choice twice), correct =
the row's ``acc``; 10 uniform bins."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run
from test_reruns_across_model_folders import a_run

import calibcli

A, B = "org/modelA", "org/modelB"
NOT_GATED = (
    "the figures over all groups pool several models' rows (see the warning): not gated, "
    "--gate-each gates each --by model group on its own rows"
)
POOLED_MODELS = (
    "the figures over all groups pool several models' rows (see the warning); gate each --by "
    "model group with --gate-each"
)


@pytest.fixture
def runs(tmp_path):
    return [
        a_run(tmp_path / "org__modelA", rerun=False),
        a_run(tmp_path / "org__modelB", rerun=True),
    ]


def rows_of(folder):
    """(confidence, correct) arrays of a run folder's samples file, read here with json."""
    (path,) = folder.glob("samples_*.jsonl")
    confidences, correct = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        scores = [float(r[0]) for r in row["filtered_resps"]]
        scores = scores[: len(scores) // 2]  # acc_mutual_info: the second half has no context
        top = max(scores)
        total = sum(math.exp(s - top) for s in scores)
        confidences.append(1.0 / total)  # the top choice's softmax probability
        correct.append(row["acc"] == 1.0)
    return np.array(confidences), np.array(correct, dtype=float)


def ece(c, y, bins=10):
    index = np.minimum((c * bins).astype(int), bins - 1)
    total = 0.0
    for k in range(bins):
        held = index == k
        if held.any():
            total += held.sum() / len(c) * abs(c[held].mean() - y[held].mean())
    return total


def brier(c, y):
    return float(np.mean((c - y) ** 2))


def figures(runs):
    """{group (None: pooled): (ece, brier, rows)} by numpy."""
    (ca, ya), (cb, yb) = rows_of(runs[0]), rows_of(runs[1])
    cp, yp = np.concatenate([ca, cb]), np.concatenate([ya, yb])
    return {
        g: (ece(c, y), brier(c, y), len(c))
        for g, (c, y) in {A: (ca, ya), B: (cb, yb), None: (cp, yp)}.items()
    }


def report_of(result):
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def checks(report, group):
    return [c for c in report["gate"]["checks"] if c.get("group") == group]


def test_the_references_differ_between_the_models(runs):
    found = figures(runs)
    assert found[A][2] == found[B][2] == 40 and found[None][2] == 80
    assert found[A][0] > found[None][0] > found[B][0]  # pooled ECE between the models'


def test_the_pooled_checks_of_two_models_do_not_read_as_a_pass(runs):
    found = figures(runs)
    args = ["calibrate", *runs, "--by", "model", "--gate-each", "--max-ece", "0.9"]
    result = run([*args, "--max-brier", "0.9", "--min-rows", "40", "--json"])
    assert result.exit_code == 0, result.stderr
    report = report_of(result)
    assert report["gate"]["passed"] is True and report["gate"]["failed_groups"] == []
    pooled = checks(report, None)
    assert [c["metric"] for c in pooled] == ["ece", "brier", "n"]
    for check, want in zip(pooled, found[None], strict=True):
        assert check["value"] == pytest.approx(want, abs=1e-12)
        assert check["passed"] is False and check["decides"] is False
        assert check["reason"] == NOT_GATED
    for group in (A, B):
        own = checks(report, group)
        for check, want in zip(own, found[group], strict=True):
            assert check["value"] == pytest.approx(want, abs=1e-12)
            assert check["passed"] is True and "decides" not in check and "reason" not in check


def test_the_exit_code_follows_the_models_groups(runs):
    found = figures(runs)
    # modelB's ECE below it; modelA's above it, and the pooled figure's, which decides nothing
    limit = round((found[None][0] + found[B][0]) / 2, 4)
    assert found[A][0] > found[None][0] > limit > found[B][0]
    args = ["calibrate", *runs, "--by", "model", "--gate-each", "--max-ece", str(limit)]
    result = run([*args, "--json"])
    assert result.exit_code == 1
    report = report_of(result)
    assert report["gate"]["passed"] is False and report["gate"]["failed_groups"] == [A]
    (pooled,) = checks(report, None)
    assert (pooled["passed"], pooled["decides"], pooled["reason"]) == (False, False, NOT_GATED)
    failed = [line for line in result.stderr.splitlines() if line.startswith("gate failed")]
    assert len(failed) == 1 and f"in group {A!r}" in failed[0]


def test_gated_alone_the_pooled_checks_still_fail_closed_and_decide(runs):
    result = run(["calibrate", *runs, "--by", "model", "--max-ece", "0.9", "--json"])
    assert result.exit_code == 1
    (check,) = report_of(result)["gate"]["checks"]
    assert (check["passed"], check["reason"]) == (False, POOLED_MODELS)
    assert "decides" not in check


def test_the_table_shows_the_pooled_row_not_gated(runs):
    result = run(["calibrate", *runs, "--by", "model", "--gate-each", "--max-ece", "0.9"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("Gate: passed") for line in lines)
    (row,) = [line for line in lines if line.startswith("ece") and "(pooled)" in line]
    assert row.rstrip().endswith("not gated")
    assert "pass" not in row
    rows = [line for line in lines if line.startswith("ece ") and "org/model" in line]
    assert len(rows) == 2 and all(r.rstrip().endswith("pass") for r in rows)


def test_the_markdown_summary_shows_the_pooled_row_not_gated(runs, tmp_path):
    summary = tmp_path / "summary.md"
    args = ["calibrate", *runs, "--by", "model", "--gate-each", "--max-ece", "0.9"]
    result = run([*args, "--summary", summary])
    assert result.exit_code == 0, result.stderr
    text = summary.read_text(encoding="utf-8")
    assert "— gate passed" in text.splitlines()[0]
    (row,) = [line for line in text.splitlines() if line.startswith("| ece |")]
    assert row.endswith("| not gated |") and NOT_GATED in row
    groups = [line for line in text.splitlines() if line.startswith("| ece (")]
    assert len(groups) == 2 and all(line.endswith("| yes |") for line in groups)


def test_the_html_page_and_a_saved_report_leave_the_pooled_checks_out_of_the_verdict(
    runs, tmp_path
):
    page, saved, drawn = tmp_path / "page.html", tmp_path / "r.json", tmp_path / "drawn.html"
    args = ["calibrate", *runs, "--by", "model", "--gate-each", "--max-ece", "0.9"]
    result = run([*args, "--max-brier", "0.9", "--html", page, "-o", saved])
    assert result.exit_code == 0, result.stderr
    drawn_again = run(["render", saved, "--html", drawn])
    assert drawn_again.exit_code == 0, drawn_again.stderr
    for html in (page, drawn):
        text = html.read_text(encoding="utf-8")
        assert "Gate passed</a>: 4 of 4 checks passed (2 not gated)" in text
        assert text.count("<td>not gated</td>") == 2
    # an edited report whose pooled check says it passed is not a report calibcli writes
    body = json.loads(saved.read_text(encoding="utf-8"))
    body["gate"]["checks"][0]["passed"] = True
    saved.write_text(json.dumps(body), encoding="utf-8")
    refused = run(["render", saved, "--html", tmp_path / "edited.html"])
    assert refused.exit_code == 2
    assert "gate.checks[0] decides nothing but passed is true" in refused.stderr
    # nor is one whose failing group's check is said to decide nothing, its verdict a pass
    body["gate"]["checks"][0]["passed"] = False
    group = next(i for i, c in enumerate(body["gate"]["checks"]) if "group" in c)
    body["gate"]["checks"][group] |= {"passed": False, "decides": False, "reason": "edited"}
    saved.write_text(json.dumps(body), encoding="utf-8")
    refused = run(["render", saved, "--html", tmp_path / "edited.html"])
    assert refused.exit_code == 2
    assert f"gate.checks[{group}] decides nothing but is a group's" in refused.stderr


def test_github_annotations_name_only_the_failing_group(runs):
    found = figures(runs)
    limit = round((found[None][0] + found[B][0]) / 2, 4)  # modelA's, pooled ECE above it
    args = ["calibrate", *runs, "--by", "model", "--gate-each", "--max-ece", str(limit)]
    result = run([*args, "--annotations", "github", "--no-summary"])
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("::error")]
    assert len(errors) == 1 and A in errors[0]


def test_the_python_api_result_says_so_too(runs):
    found = figures(runs)
    rows = calibcli.read_predictions([str(p) for p in runs], by="model")
    result = calibcli.calibrate(rows, gate_each=True, max_ece=0.9)
    assert result.passed and result.failures == []
    (pooled,) = [c for c in result.body["gate"]["checks"] if "group" not in c]
    assert pooled["value"] == pytest.approx(found[None][0], abs=1e-12)
    assert (pooled["passed"], pooled["decides"], pooled["reason"]) == (False, False, NOT_GATED)


def test_threshold_s_pooled_coverage_of_two_models_is_not_gated(runs):
    # at accuracy 0.05 SGR finds a threshold on the 80 pooled rows but not on either model's 40
    args = ["threshold", *runs, "--by", "model", "--gate-each", "--min-coverage", "0"]
    result = run([*args, "--target-accuracy", "0.05", "--method", "sgr", "--json"])
    assert result.exit_code == 1
    report = report_of(result)
    (pooled,) = checks(report, None)
    assert (pooled["passed"], pooled["decides"], pooled["reason"]) == (False, False, NOT_GATED)
    assert report["gate"]["failed_groups"] == [A, B]
    failed = [line for line in result.stderr.splitlines() if line.startswith("gate failed")]
    assert len(failed) == 2 and all("in group 'org/model" in line for line in failed)


def test_an_upper_end_gate_reads_the_groups_floors_beside_the_pooled_checks(tmp_path):
    # modelB right on only 4 of its 40 rows: its upper ends take the rare-class floor
    folders = [
        a_run(tmp_path / "org__modelA", rerun=False),
        a_run(tmp_path / "org__modelB", rerun=True),
    ]
    (path,) = folders[1].glob("samples_*.jsonl")
    rows, right = [json.loads(line) for line in path.read_text().splitlines()], 0
    for row in rows:
        right += row["acc"] == 1.0
        if right > 4:
            row["acc"] = 0.0
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    found = figures(folders)
    assert rows_of(folders[1])[1].sum() == 4
    args = ["calibrate", *folders, "--by", "model", "--gate-each", "--gate-on", "upper"]
    result = run([*args, "--max-ece", "0.42", "--max-brier", "0.9", "--json"])
    assert result.exit_code == 1
    report = report_of(result)
    for check, want in zip(checks(report, None), found[None][:2], strict=True):
        assert check["estimate"] == pytest.approx(want, abs=1e-12)
        assert (check["passed"], check["decides"], check["reason"]) == (False, False, NOT_GATED)
        assert "floor" not in check
    assert ["floor" in c for c in checks(report, A) + checks(report, B)] == [False] * 2 + [True] * 2
    failed = [line for line in result.stderr.splitlines() if line.startswith("gate failed")]
    # one line a failed check, each its own group's: none of the pooled checks'
    assert [line.split(" = ")[0] for line in failed] == [
        f"gate failed: ece in group {A!r}",
        f"gate failed: ece in group {B!r}",
    ]
    assert report["gate"]["failed_groups"] == [A, B]
