"""threshold, fit and apply cases where a figure, a verdict or a warning could go wrong
without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run
from test_inspect_status import ERROR, log, write

FAILED = (
    "the inspect-ai run ended with status 'error' (RuntimeError: the server closed the "
    "connection): its 7 samples may be a part of those it planned (a dataset of 20 samples)"
)


@pytest.mark.parametrize("calibrated", [False, True], ids=["raw", "calibrator"])
def test_threshold_names_a_fit_log_whose_run_did_not_succeed(tmp_path, calibrated):
    """The --fit rows' own warnings reach stderr and the report, as the evaluated rows' do,
    with or without --calibrator; the figures are those of the same rows from a log whose run
    succeeded."""
    evaluated = write(tmp_path, "eval.json", log("success", held=20))
    failed = write(tmp_path, "failed.json", log("error", results=None, error=ERROR))
    ok = write(tmp_path, "ok.json", log("success"))  # the same 7 samples, a run that succeeded
    args = ["threshold", evaluated, "--scorer", "match", "--target-accuracy", "0.5", "--json"]
    if calibrated:
        cal = tmp_path / "cal.json"
        fitted = run(["fit", evaluated, "--scorer", "match", "--method", "platt", "-o", cal])
        assert fitted.exit_code == 0, fitted.stderr
        args += ["--calibrator", cal]
    said = f"{failed}: {FAILED}"
    result = run([*args, "--fit", failed])
    clean = run([*args, "--fit", ok])
    assert result.exit_code == clean.exit_code == 0, result.stderr
    body, plain = json.loads(result.stdout), json.loads(clean.stdout)
    assert [w for w in body["warnings"] if "inspect-ai" in w] == [said]
    assert result.stderr.count("inspect-ai run ended") == 1
    assert f"warning: {said}" in result.stderr.splitlines()
    if calibrated:  # the calibrator was fitted on the 20 rows that hold the 7 --fit rows
        assert any(
            w.startswith("the --fit rows: about 35% of the rows the calibrator was fitted on")
            for w in body["warnings"]
        )
    drop = ("warnings", "fit")
    assert {k: v for k, v in body.items() if k not in drop} == {
        k: v for k, v in plain.items() if k not in drop
    }


def _rows(path, *parts):
    """Native rows: for each (confidence, right, wrong), that many right then wrong answers."""
    lines = []
    for c, right, wrong in parts:
        lines += [{"confidence": c, "correct": True}] * right
        lines += [{"confidence": c, "correct": False}] * wrong
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path


def shown_thresholds(text):
    """The guaranteed and plug-in thresholds as the text table shows them."""
    labels = ("guaranteed threshold ", "plug-in threshold (no guarantee) ")
    return [line.split()[-1] for line in text.splitlines() if line.startswith(labels)]


def test_a_threshold_just_below_1_is_not_shown_as_1(tmp_path):
    """A threshold of 0.9999996 rounded to 1.0000 would read as "accept only rows at
    confidence 1": the text table, the Markdown summary, the HTML page and the warning show it
    apart from 1. Walking every distinct confidence (--grid 0), the 100 right answers at
    0.9999996 pass at A = 0.9 (p = 0.9^100) and the 100 wrong ones at 0.5 then fail, so both
    thresholds are 0.9999996 on the fit rows; of the evaluated rows it accepts 10, 5 right."""
    fit = _rows(tmp_path / "fit.jsonl", (0.9999996, 100, 0), (0.5, 0, 100))
    evaluated = _rows(tmp_path / "eval.jsonl", (0.9999996, 5, 5), (0.5, 0, 10))
    summary, html = tmp_path / "summary.md", tmp_path / "report.html"
    args = ["threshold", evaluated, "--fit", fit, "--target-accuracy", "0.9", "--grid", "0"]
    result = run([*args, "--summary", summary, "--html", html])
    assert result.exit_code == 0, result.stderr
    assert shown_thresholds(result.stdout) == ["0.9999996", "0.9999996"]
    table = [line.split()[:3] for line in result.stdout.splitlines()]
    # the risk-coverage table's first row: its threshold cut, never rounded up to 1, to the
    # decimals that keep it above the next confidence down (0.5)
    assert ["0.9999", "0.5000", "10"] in table
    warning = (
        "warning: the guaranteed threshold 0.9999996 accepts 10 of the evaluated rows with "
        "accuracy 0.5 (5 right), below the target 0.9 (1 on the fit rows)"
    )
    assert any(line.startswith(warning) for line in result.stderr.splitlines())
    text = summary.read_text(encoding="utf-8")
    assert "| guaranteed threshold | 0.9999996 |" in text
    assert "| plug-in threshold (no guarantee) | 0.9999996 |" in text
    page = html.read_text(encoding="utf-8")
    assert page.count('<data value="0.9999996">0.9999996</data>') >= 2
    assert '<data value="0.9999996">1.0000</data>' not in page
    body = json.loads(run([*args, "--json", "-q"]).stdout)
    assert body["guaranteed"]["threshold"] == body["plug_in"]["threshold"] == 0.9999996


def test_a_threshold_of_4_decimals_is_shown_as_before(tmp_path):
    """Thresholds that 4 decimals keep apart from 0, 1 and the rows around them print as they
    did: 0.7181 (a threshold at the confidence 0.71818 would print as 0.71818, since 0.7182
    rejects the rows at 0.71818)."""
    rows = _rows(tmp_path / "rows.jsonl", (0.71814, 100, 0), (0.2, 0, 100))
    result = run(["threshold", rows, "--target-accuracy", "0.9", "--grid", "0", "-q"])
    assert result.exit_code == 0, result.stderr
    assert shown_thresholds(result.stdout) == ["0.7181", "0.7181"]


def test_step_outputs_are_the_evaluated_rows_figures_with_fit(tmp_path):
    """With --fit, the step outputs ``coverage`` and ``accuracy`` are the guaranteed
    threshold's on the evaluated rows (what --min-coverage gates and the target is checked
    on), not on the rows it was chosen on. Walking every distinct confidence at A = 0.8, the
    fit rows' 100 right answers at 0.9 pass and their 100 wrong ones at 0.5 fail: the threshold
    is 0.9 (coverage 0.5, accuracy 1 on the fit rows). Of the 30 evaluated rows it accepts the
    10 at 0.9, 6 of them right: coverage 10/30, accuracy 6/10."""
    fit = _rows(tmp_path / "fit.jsonl", (0.9, 100, 0), (0.5, 0, 100))
    evaluated = _rows(tmp_path / "eval.jsonl", (0.9, 6, 4), (0.5, 10, 10))
    outputs = tmp_path / "github_output"
    outputs.write_text("")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(outputs),
    }
    args = ["threshold", evaluated, "--target-accuracy", "0.8", "--grid", "0", "-q"]
    result = run([*args, "--fit", fit], env=env)
    assert result.exit_code == 0, result.stderr
    said = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert said["threshold"] == "0.9"
    assert said["coverage"] == repr(10 / 30) and said["accuracy"] == repr(6 / 10)
    outputs.write_text("")  # without --fit, chosen and evaluated on the fit rows themselves
    args[1] = fit
    assert run(args, env=env).exit_code == 0
    said = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert (said["threshold"], said["coverage"], said["accuracy"]) == ("0.9", "0.5", "1.0")


def test_the_api_repr_shows_the_evaluated_rows_coverage():
    """The same rows from Python: the one-line repr's coverage is the evaluated rows' 10/30,
    beside their n, not the fit rows' 0.5."""
    import calibcli

    confidence, correct = [0.9] * 10 + [0.5] * 20, [1] * 6 + [0] * 4 + [1] * 10 + [0] * 10
    held_out = ([0.9] * 100 + [0.5] * 100, [1] * 100 + [0] * 100)
    result = calibcli.threshold(confidence, correct, target_accuracy=0.8, grid=0, fit=held_out)
    assert repr(result).endswith(f"n=30, target_accuracy=0.8, threshold=0.9, coverage={1 / 3:.4f}>")


def test_threshold_names_fit_rows_of_another_format(tmp_path):
    """A threshold chosen on inspect-ai rows and evaluated on JSON Lines rows (or the other way
    round) is a cut on one kind of confidence held against another: a warning says so, as for
    a calibrator applied to rows of another format. Rows of one format on both sides say
    nothing."""
    logged = write(tmp_path, "ok.json", log("success", held=20))
    native = _rows(tmp_path / "native.jsonl", (0.9, 8, 2), (0.5, 5, 5))
    said = (
        "the threshold was chosen on {} rows (--fit) and is evaluated on {} rows, whose "
        "confidences may be taken another way"
    )
    base = ["threshold", "--scorer", "match", "--target-accuracy", "0.5", "--json", "-q"]
    for evaluated, fit, formats in [
        (native, logged, ("inspect-ai", "jsonl")),
        (logged, native, ("jsonl", "inspect-ai")),
    ]:
        result = run([*base, evaluated, "--fit", fit])
        assert result.exit_code == 0, result.stderr
        assert said.format(*formats) in json.loads(result.stdout)["warnings"]
        assert f"warning: {said.format(*formats)}" in result.stderr.splitlines()
    for same in (logged, native):
        result = run([*base, same, "--fit", same])
        assert "whose confidences may be taken another way" not in result.stdout + result.stderr


@pytest.mark.parametrize("method", ["isotonic", "histogram"])
def test_fit_on_one_class_says_the_map_learnt_the_class(tmp_path, method):
    """isotonic and histogram fit rows of one class (temperature, platt and beta refuse
    them): the map sends every confidence it was fitted on to 1 (all right) or 0 (all wrong),
    which fit says, pooled and per --by group; rows of both classes say nothing."""
    rows = [{"g": "a", "confidence": 0.3 + i / 100, "correct": True} for i in range(20)]
    rows += [{"g": "b", "confidence": 0.3 + i / 100, "correct": i % 2 == 0} for i in range(20)]
    one = tmp_path / "one.jsonl"
    one.write_text("".join(json.dumps(r) + "\n" for r in rows[:20]), encoding="utf-8")
    both = tmp_path / "both.jsonl"
    both.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cal = tmp_path / "cal.json"
    said = f"the {method} map sends the confidences it was fitted on to 1"
    result = run(["fit", one, "--method", method, "-o", cal])
    assert result.exit_code == 0, result.stderr
    mapped = run(["apply", cal, one, "-q"]).stdout.splitlines()
    assert [json.loads(line)["confidence"] for line in mapped] == [1.0] * 20
    assert f"warning: all 20 answers are right: {said}" in result.stderr
    grouped = run(["fit", both, "--by", "g", "--method", method, "-o", cal])
    assert grouped.exit_code == 0, grouped.stderr
    assert f"warning: group 'a': all 20 answers are right: {said}" in grouped.stderr
    # the one-class warning names group 'a' alone (a histogram's thin bins are another's)
    one_class = [line for line in grouped.stderr.splitlines() if said in line]
    assert len(one_class) == 1 and one_class[0].startswith("warning: group 'a': ")
    assert "learnt the class" not in run(["fit", both, "--method", method, "-o", cal]).stderr


def test_standard_input_as_both_file_and_fit_is_refused(tmp_path):
    """Standard input can be read once: given as FILE and as --fit, the second read found it
    empty and the threshold was "none, the --fit input holds no rows" (exit 0); now exit 2."""
    rows = _rows(tmp_path / "rows.jsonl", (0.9, 90, 10))
    text = rows.read_text(encoding="utf-8")
    args = ["threshold", "-", "--fit", "-", "--target-accuracy", "0.8", "--json", "-q"]
    result = run(args, input=text)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "Error: standard input is given both as FILE and as --fit: it can be read once; save "
        "one of them to a file"
    ]
    for sides in (["-", "--fit", rows], [rows, "--fit", "-"]):
        assert (
            run(["threshold", *sides, "--target-accuracy", "0.8", "-q"], input=text).exit_code == 0
        )


def test_fit_says_a_decreasing_platt_map_reverses_the_ranking(tmp_path):
    """Platt's fit, as scikit-learn's, may give a < 0 when higher confidences went with wrong
    answers (here every row above 0.5 is wrong, every one below right): the map then sends a
    higher confidence lower, which fit says, pooled and per --by group; a map with a > 0 says
    nothing."""
    rows = [{"g": "a", "confidence": 0.6 + i / 100, "correct": False} for i in range(20)]
    rows += [{"g": "a", "confidence": 0.4 - i / 100, "correct": True} for i in range(20)]
    rows += [{"g": "b", "confidence": 0.6 + i / 100, "correct": True} for i in range(30)]
    rows += [{"g": "b", "confidence": 0.3 - i / 100, "correct": False} for i in range(30)]
    anti, both = tmp_path / "anti.jsonl", tmp_path / "both.jsonl"
    anti.write_text("".join(json.dumps(r) + "\n" for r in rows[:40]), encoding="utf-8")
    both.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    cal = tmp_path / "cal.json"
    result = run(["fit", anti, "--method", "platt", "-o", cal])
    assert result.exit_code == 0, result.stderr
    a = json.loads(cal.read_text())["params"]["a"]
    assert a < 0
    lines = run(["apply", cal, anti, "-q"]).stdout.splitlines()
    mapped_079, mapped_04 = (json.loads(line)["confidence"] for line in lines[19:21])
    assert mapped_079 < mapped_04  # rows 20 and 21 are at 0.79 and 0.4
    said = "it ranks every confidence the other way round"
    assert f"warning: the platt map decreases (a = {a:.4g}): {said}" in result.stderr
    grouped = run(["fit", both, "--by", "g", "--method", "platt", "-o", cal])
    a = json.loads(cal.read_text())["groups"]["a"]["params"]["a"]
    assert f"warning: group 'a': the platt map decreases (a = {a:.4g}): {said}" in grouped.stderr
    assert "group 'b'" not in grouped.stderr and "pooled rows decreases" not in grouped.stderr
    assert said not in run(["fit", both, "--method", "platt", "-o", cal]).stderr
    assert json.loads(cal.read_text())["params"]["a"] > 0


def test_fit_says_a_temperature_at_an_end_of_its_range_is_no_fitted_value(tmp_path):
    """Temperature is searched in [1e-4, 1e4]; when the likelihood keeps improving beyond an
    end, the end is returned. Rows whose confidences separate the classes (every row above
    0.5 right, every one below wrong) drive T to 0, hence 1e-4; the same confidences with the
    classes swapped drive 1/T below 0, hence T = 1e4. fit says so; rows of both kinds at
    every confidence give a fitted T inside and say nothing."""
    above = [0.6 + i / 100 for i in range(20)]
    below = [0.4 - i / 100 for i in range(20)]
    cal = tmp_path / "cal.json"
    cases = [
        ([(c, True) for c in above] + [(c, False) for c in below], 1e-4, "lower", "0.0001"),
        ([(c, False) for c in above] + [(c, True) for c in below], 1e4, "upper", "10000"),
    ]
    for rows, t, end, shown in cases:
        path = tmp_path / f"{end}.jsonl"
        lines = [json.dumps({"confidence": c, "correct": y}) + "\n" for c, y in rows]
        path.write_text("".join(lines), encoding="utf-8")
        result = run(["fit", path, "--method", "temperature", "-o", cal])
        assert result.exit_code == 0, result.stderr
        assert json.loads(cal.read_text())["params"]["temperature"] == t
        said = f"warning: the temperature is the {end} end of its range, {shown}: the likelihood"
        assert said in result.stderr
    mixed = _rows(tmp_path / "mixed.jsonl", (0.8, 7, 3), (0.6, 5, 5), (0.3, 4, 6))
    result = run(["fit", mixed, "--method", "temperature", "-o", cal])
    assert 1e-4 < json.loads(cal.read_text())["params"]["temperature"] < 1e4
    assert "end of its range" not in result.stderr


def test_threshold_names_inspect_confidences_taken_another_way(tmp_path):
    """--inspect-confidence auto takes a multiple-choice sample's answer-token probability and
    another sample's sequence probability: a threshold chosen on one kind and evaluated on the
    other is named, and not once --inspect-confidence takes both one way. The logs are the
    fixtures' (one scorer each, renamed alike so that one --scorer reads both)."""
    fixtures = Path(__file__).resolve().parent / "fixtures"
    arithmetic = json.loads((fixtures / "inspect_ai" / "toy_arithmetic.json").read_text())
    for sample in arithmetic["samples"]:  # no choices: auto takes the sequence
        sample["scores"] = {"match": sample["scores"]["match"]}
    mc = json.loads((fixtures / "inspect_ai_schema" / "toy_mc.json").read_text())
    for sample in mc["samples"]:  # "ANSWER: X" lines: auto takes the answer token
        sample["scores"] = {"match": sample["scores"]["choice"]}
    evaluated, fit = tmp_path / "arithmetic.json", tmp_path / "mc.json"
    evaluated.write_text(json.dumps(arithmetic), encoding="utf-8")
    fit.write_text(json.dumps(mc), encoding="utf-8")
    said = (
        "the threshold was chosen on inspect-ai confidences taken by answer-token (--fit) and "
        "is evaluated on ones taken by sequence, another kind of number: give "
        "--inspect-confidence to take both one way"
    )
    base = ["threshold", evaluated, "--fit", fit, "--target-accuracy", "0.5", "--json"]
    result = run(base)
    assert result.exit_code == 0, result.stderr
    assert said in json.loads(result.stdout)["warnings"]
    assert f"warning: {said}" in result.stderr.splitlines()
    result = run([*base, "--inspect-confidence", "sequence"])
    assert result.exit_code == 0, result.stderr
    assert "another kind of number" not in result.stdout + result.stderr
    result = run(["threshold", evaluated, "--fit", evaluated, "--target-accuracy", "0.5", "-q"])
    assert "another kind of number" not in result.stdout + result.stderr
