"""A calibrator is applied to the score it was fitted on: its field by default, the same
multiple-choice normalisation, inspect-ai confidence mode and --by field, and rows it was
fitted on are named as in-sample by their content, not by the path typed."""

from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path

import pytest
from harness import run, write_jsonl

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LM_EVAL = FIXTURES / "lm_eval"
ARITHMETIC = FIXTURES / "inspect_ai" / "toy_arithmetic.eval"  # 20 samples, no choices
ARITHMETIC_JSON = FIXTURES / "inspect_ai" / "toy_arithmetic.json"  # the same samples
MC = FIXTURES / "inspect_ai_schema" / "toy_mc.json"  # 4 multiple_choice samples, "ANSWER: X"


def rows(n: int, seed: int) -> list[dict]:
    """Rows with two scores: ``p`` (what the model said) and ``confidence`` (another one)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        p = rng.random()
        out.append(
            {"id": f"{seed}-{i}", "p": p, "confidence": 0.5 + p / 2, "correct": rng.random() < p}
        )
    return out


@pytest.fixture
def files(tmp_path):
    dev = write_jsonl(tmp_path / "dev.jsonl", rows(600, 1))
    test = write_jsonl(tmp_path / "test.jsonl", rows(600, 2))
    cal = tmp_path / "cal.json"
    fitted = run(["fit", dev, "--method", "platt", "--confidence-field", "p", "-o", cal, "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    return tmp_path, dev, test, cal


def calibrate(*args):
    result = run(["calibrate", *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_field_the_calibrator_was_fitted_on_is_the_default(files):
    _, _, test, cal = files
    default = calibrate(test, "--calibrator", cal)
    named = calibrate(test, "--calibrator", cal, "--confidence-field", "p")
    assert default["recalibration"]["after"] == named["recalibration"]["after"]
    assert default["recalibration"]["before"]["mean_confidence"] == pytest.approx(
        sum(r["p"] for r in rows(600, 2)) / 600, abs=1e-12
    )
    other = calibrate(test, "--calibrator", cal, "--confidence-field", "confidence")
    assert any("fitted on the field 'p'; it maps 'confidence'" in w for w in other["warnings"])
    assert other["recalibration"]["after"]["ece"] != default["recalibration"]["after"]["ece"]


def test_apply_takes_the_field_the_calibrator_was_fitted_on(files):
    _, _, test, cal = files
    out = run(["apply", cal, test, "-q"])
    assert out.exit_code == 0, out.stderr
    first = json.loads(out.stdout.splitlines()[0])
    original = rows(600, 2)[0]
    assert first["confidence"] == original["confidence"]  # untouched
    assert first["p"] != original["p"]  # recalibrated


def test_another_mc_norm_is_refused(tmp_path):
    mc = sorted(str(p) for p in LM_EVAL.glob("samples_toy_mc_*.jsonl"))
    cal = tmp_path / "chars.json"
    assert (
        run(["fit", *mc, "--method", "platt", "--mc-norm", "chars", "-o", cal, "-q"]).exit_code == 0
    )
    result = run(["calibrate", *mc, "--calibrator", cal, "-q"])
    assert result.exit_code == 2
    assert "fitted on --mc-norm chars scores" in result.stderr
    assert "give --mc-norm chars" in result.stderr
    assert run(["calibrate", *mc, "--calibrator", cal, "--mc-norm", "chars", "-q"]).exit_code == 0


OTHER_FORMAT = "the calibrator was fitted on {} rows; it maps {} here, whose confidences may be "


@pytest.mark.parametrize("command", ["calibrate", "reliability", "threshold"])
def test_rows_of_another_format_than_the_fit_rows_are_named(tmp_path, command):
    """A map fitted on one format's confidences (a softmax over lm-eval choices) applied to
    another's (a stated number in JSON Lines) may not fit them: a warning names both formats,
    and the rows of the fit's format only; the figures are those of the map all the same."""
    mc = sorted(str(p) for p in LM_EVAL.glob("samples_toy_mc_*.jsonl"))
    native = write_jsonl(tmp_path / "native.jsonl", rows(300, 5))
    on_lm_eval, on_native = tmp_path / "lm.json", tmp_path / "native.json"
    assert run(["fit", *mc, "--method", "platt", "-o", on_lm_eval, "-q"]).exit_code == 0
    assert run(["fit", native, "--method", "platt", "-o", on_native, "-q"]).exit_code == 0
    extra = ["--target-accuracy", "0.6"] if command == "threshold" else []

    def warnings(*args):
        result = run([command, *args, *extra, "--json", "-q"])
        assert result.exit_code == 0, result.stderr
        return [w for w in json.loads(result.stdout)["warnings"] if "rows; it maps" in w]

    assert warnings(native, "--calibrator", on_lm_eval) == [
        OTHER_FORMAT.format("lm-eval", "jsonl rows") + "taken another way"
    ]
    assert warnings(*mc, "--calibrator", on_native) == [
        OTHER_FORMAT.format("jsonl", "lm-eval rows") + "taken another way"
    ]
    assert warnings(native, *mc, "--calibrator", on_native) == [
        OTHER_FORMAT.format("jsonl", "lm-eval rows") + "taken another way"
    ]
    assert warnings(*mc, "--calibrator", on_lm_eval) == []
    assert warnings(native, "--calibrator", on_native) == []


def test_apply_names_a_calibrator_fitted_on_another_format(tmp_path):
    mc = sorted(str(p) for p in LM_EVAL.glob("samples_toy_mc_*.jsonl"))
    native = write_jsonl(tmp_path / "native.jsonl", rows(300, 5))
    cal = tmp_path / "lm.json"
    assert run(["fit", *mc, "--method", "platt", "-o", cal, "-q"]).exit_code == 0
    result = run(["apply", cal, native, "-q"])
    assert result.exit_code == 0
    assert result.stderr == (
        "warning: "
        + OTHER_FORMAT.format("lm-eval", "the JSON Lines rows' 'confidence'")
        + "taken another way\n"
    )


def test_another_by_field_is_refused(tmp_path):
    data = [dict(r, subject="ab"[i % 2], topic="xy"[i % 2]) for i, r in enumerate(rows(400, 3))]
    path = write_jsonl(tmp_path / "d.jsonl", data)
    cal = tmp_path / "by.json"
    assert (
        run(["fit", path, "--method", "platt", "--by", "subject", "-o", cal, "-q"]).exit_code == 0
    )
    result = run(["calibrate", path, "--calibrator", cal, "--by", "topic", "-q"])
    assert result.exit_code == 2
    assert "fitted per --by subject group, not per --by topic" in result.stderr
    assert run(["apply", cal, path, "--by", "topic", "-q"]).exit_code == 2
    assert run(["calibrate", path, "--calibrator", cal, "--by", "subject", "-q"]).exit_code == 0


POOLED_FOR_C = (
    "the calibrator holds no map for --by subject group 'c' (it was fitted on none of its "
    "rows): its rows take the pooled map"
)
POOLED_FOR_ALL = (
    "the calibrator holds a map per --by subject group; without --by every row takes its "
    "pooled map: give --by subject for the groups' maps"
)


@pytest.mark.parametrize("command", ["calibrate", "reliability", "threshold"])
def test_rows_taking_the_pooled_map_of_a_per_group_calibrator_are_named(tmp_path, command):
    """A calibrator fitted per group maps a group it never saw, or rows read without --by, by
    its pooled map: the figures are not those of the groups' maps, and the report says so."""
    fit_rows = [dict(r, subject="ab"[i % 2]) for i, r in enumerate(rows(400, 3))]
    scored = [dict(r, subject="abc"[i % 3]) for i, r in enumerate(rows(300, 4))]
    dev = write_jsonl(tmp_path / "dev.jsonl", fit_rows)
    test = write_jsonl(tmp_path / "test.jsonl", scored)
    cal = tmp_path / "by.json"
    assert run(["fit", dev, "--method", "platt", "--by", "subject", "-o", cal, "-q"]).exit_code == 0
    extra = ["--target-accuracy", "0.6"] if command == "threshold" else []

    def warnings(*args):
        result = run([command, test, "--calibrator", cal, *extra, *args, "--json", "-q"])
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)["warnings"]

    assert POOLED_FOR_C in warnings("--by", "subject")
    assert POOLED_FOR_ALL in warnings()
    seen = write_jsonl(tmp_path / "ab.jsonl", [r for r in scored if r["subject"] != "c"])
    result = run([command, seen, "--calibrator", cal, *extra, "--by", "subject", "--json", "-q"])
    assert not any("pooled map" in w for w in json.loads(result.stdout)["warnings"])


def test_apply_names_rows_taking_the_pooled_map(tmp_path):
    fit_rows = [dict(r, subject="ab"[i % 2]) for i, r in enumerate(rows(400, 3))]
    scored = [dict(r, subject="abc"[i % 3]) for i, r in enumerate(rows(300, 4))]
    dev = write_jsonl(tmp_path / "dev.jsonl", fit_rows)
    test = write_jsonl(tmp_path / "test.jsonl", scored)
    cal = tmp_path / "by.json"
    assert run(["fit", dev, "--method", "platt", "--by", "subject", "-o", cal, "-q"]).exit_code == 0
    done = "recalibrated 300 rows (platt)\n"
    grouped = run(["apply", cal, test, "--by", "subject"])
    assert grouped.exit_code == 0 and grouped.stderr == f"{done}warning: {POOLED_FOR_C}\n"
    pooled = run(["apply", cal, test])
    assert pooled.exit_code == 0 and pooled.stderr == f"{done}warning: {POOLED_FOR_ALL}\n"
    seen = write_jsonl(tmp_path / "ab.jsonl", [r for r in scored if r["subject"] != "c"])
    clean = run(["apply", cal, seen, "--by", "subject"])
    assert clean.exit_code == 0 and clean.stderr == "recalibrated 200 rows (platt)\n"
    # -q drops the count line, never the warning
    assert run(["apply", cal, test, "-q"]).stderr == f"warning: {POOLED_FOR_ALL}\n"


def in_sample(report) -> list[str]:
    return [w for w in report["warnings"] if "the rows the calibrator was fitted on" in w]


def test_in_sample_is_decided_by_content_not_by_path(files, monkeypatch):
    folder, dev, test, cal = files
    assert in_sample(calibrate(test, "--calibrator", cal)) == []
    # the same rows under another relative path, from another working folder
    sub = folder / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert in_sample(calibrate(os.path.relpath(dev), "--calibrator", "../cal.json"))
    # dev and test concatenated: partly in-sample, caught
    both = folder / "both.jsonl"
    both.write_text(Path(dev).read_text() + Path(test).read_text())
    (warning,) = in_sample(calibrate(str(both), "--calibrator", str(cal)))
    assert "about 100% of the rows the calibrator was fitted on (600)" in warning
    assert "1,200 rows scored here" in warning
    # a different file that happens to share the name dev.jsonl is not in-sample
    other = sub / "dev.jsonl"
    write_jsonl(other, rows(600, 9))
    assert in_sample(calibrate("dev.jsonl", "--calibrator", "../cal.json")) == []


def test_coarse_confidences_are_not_called_in_sample(tmp_path):
    """Two-decimal confidences repeat: a shared value says nothing about shared rows."""
    rng = random.Random(4)

    def coarse(n):
        return [
            {"confidence": round(rng.random(), 2), "correct": rng.random() < 0.6} for _ in range(n)
        ]

    dev = write_jsonl(tmp_path / "dev.jsonl", coarse(2000))
    test = write_jsonl(tmp_path / "test.jsonl", coarse(2000))
    cal = tmp_path / "cal.json"
    assert run(["fit", dev, "--method", "histogram", "-o", cal, "-q"]).exit_code == 0
    assert in_sample(calibrate(test, "--calibrator", cal)) == []


# --------------------------------------------------------------------------- inspect-ai modes


def fit_inspect(tmp_path, name, *args):
    """Fit platt on inspect-ai rows; the calibrator file's path and its JSON."""
    cal = tmp_path / name
    fitted = run(["fit", *args, "--method", "platt", "-o", cal, "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    return cal, json.loads(cal.read_text())


def arithmetic_confidences(mode: str) -> list[float]:
    """toy_arithmetic's confidences computed here from its samples' token logprobs."""
    out = []
    for s in json.loads(ARITHMETIC_JSON.read_text())["samples"]:
        logprobs = [t["logprob"] for t in s["output"]["choices"][0]["logprobs"]["content"]]
        assert s.get("choices") is None  # no options: auto takes the whole completion
        out.append(math.exp(logprobs[0] if mode == "first-token" else math.fsum(logprobs)))
    return out


def platt(params: dict, c: float) -> float:
    z = math.log(c / (1 - c))
    return 1 / (1 + math.exp(-(params["a"] * z + params["b"])))


def mixed_samples(path: Path) -> Path:
    """toy_mc's samples (answer lines) and toy_arithmetic's (none) as JSON Lines, one scorer
    named alike in both and the arithmetic ids made distinct."""
    lines = []
    for s in json.loads(MC.read_text())["samples"]:
        lines.append({**s, "scores": {"ok": s["scores"]["choice"]}})
    for s in json.loads(ARITHMETIC_JSON.read_text())["samples"]:
        lines.append({**s, "id": f"a{s['id']}", "scores": {"ok": s["scores"]["match"]}})
    return write_jsonl(path, lines)


SEQUENCE_TO_FIRST_TOKEN = {
    # the rows scored are the rows fitted on: a --max-* gate would fail closed, a floor holds
    "calibrate": ["--min-rows", "1"],
    "reliability": [],
    "threshold": ["--target-accuracy", "0.5"],
}


@pytest.mark.parametrize("command", SEQUENCE_TO_FIRST_TOKEN)
def test_another_inspect_confidence_is_refused(tmp_path, command):
    cal, doc = fit_inspect(
        tmp_path, "pi.json", ARITHMETIC, "--scorer", "match", "--inspect-confidence", "sequence"
    )
    assert doc["fitted_on"]["inspect_confidence"] == "sequence"
    out = tmp_path / "out.json"
    args = [command, ARITHMETIC, "--scorer", "match", "--calibrator", cal, "-o", out, "-q"]
    result = run([*args, *SEQUENCE_TO_FIRST_TOKEN[command], "--inspect-confidence", "first-token"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {cal}: the calibrator was fitted on --inspect-confidence sequence confidences; "
        "these rows are read with --inspect-confidence first-token: give --inspect-confidence "
        "sequence, or fit a calibrator on these rows\n"
    )
    assert not out.exists()
    same = run([*args, *SEQUENCE_TO_FIRST_TOKEN[command], "--inspect-confidence", "sequence"])
    assert same.exit_code == 0, same.stderr
    assert out.exists()


def test_the_same_mode_maps_the_confidences_it_was_fitted_on(tmp_path):
    cal, doc = fit_inspect(tmp_path, "pi.json", ARITHMETIC, "--scorer", "match")
    # auto takes the whole completion's probability of samples without choices: the file
    # records what a user passes to read them alike
    assert doc["fitted_on"]["inspect_confidence"] == "sequence"
    expected = [platt(doc["params"], c) for c in arithmetic_confidences("sequence")]
    for given in ([], ["--inspect-confidence", "sequence"]):
        body = calibrate(ARITHMETIC, "--scorer", "match", "--calibrator", cal, *given)
        after = body["recalibration"]["after"]["mean_confidence"]
        assert after == pytest.approx(math.fsum(expected) / 20, rel=1e-12)


def test_a_calibrator_file_without_the_mode_is_applied_as_before(tmp_path):
    cal, doc = fit_inspect(
        tmp_path, "pi.json", ARITHMETIC, "--scorer", "match", "--inspect-confidence", "sequence"
    )
    del doc["fitted_on"]["inspect_confidence"]  # as fit wrote it before the mode was recorded
    cal.write_text(json.dumps(doc))
    body = calibrate(
        ARITHMETIC, "--scorer", "match", "--calibrator", cal, "--inspect-confidence", "first-token"
    )
    expected = [platt(doc["params"], c) for c in arithmetic_confidences("first-token")]
    after = body["recalibration"]["after"]["mean_confidence"]
    assert after == pytest.approx(math.fsum(expected) / 20, rel=1e-12)


def test_auto_is_recorded_as_the_mode_its_samples_took(tmp_path):
    _, mc = fit_inspect(tmp_path, "mc.json", MC)
    assert mc["fitted_on"]["inspect_confidence"] == "answer-token"
    mixed = mixed_samples(tmp_path / "mixed.jsonl")
    _, both = fit_inspect(tmp_path, "both.json", mixed)
    assert both["fitted_on"]["inspect_confidence"] == "auto"
    for mode in ("first-token", "mean-token"):
        _, doc = fit_inspect(
            tmp_path, f"{mode}.json", ARITHMETIC, "--scorer", "match", "--inspect-confidence", mode
        )
        assert doc["fitted_on"]["inspect_confidence"] == mode


def test_auto_taking_another_mode_is_refused(tmp_path):
    """A map of answer-token probabilities is not applied to whole completions, even when
    both were read with the default auto."""
    cal, _ = fit_inspect(tmp_path, "mc.json", MC)
    result = run(["calibrate", ARITHMETIC, "--scorer", "match", "--calibrator", cal, "-q"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {cal}: the calibrator was fitted on --inspect-confidence answer-token "
        "confidences; these rows are read with --inspect-confidence auto (sequence on these "
        "samples): give --inspect-confidence answer-token, or fit a calibrator on these rows\n"
    )


def test_a_calibrator_of_both_auto_modes_follows_auto(tmp_path):
    cal, _ = fit_inspect(tmp_path, "both.json", mixed_samples(tmp_path / "mixed.jsonl"))
    # auto's own rule: each sample takes the mode it took when the map was fitted
    assert run(["calibrate", MC, "--calibrator", cal, "-q"]).exit_code == 0
    answer = ["calibrate", MC, "--calibrator", cal, "--inspect-confidence", "answer-token", "-q"]
    assert run(answer).exit_code == 0
    assert run(["calibrate", ARITHMETIC, "--scorer", "match", "--calibrator", cal]).exit_code == 0
    # sequence would read toy_mc's samples otherwise than the map saw them
    sequence = ["calibrate", MC, "--calibrator", cal, "--inspect-confidence", "sequence", "-q"]
    result = run(sequence)
    assert result.exit_code == 2
    assert "fitted on --inspect-confidence auto confidences" in result.stderr
    assert "read with --inspect-confidence sequence: give --inspect-confidence auto" in (
        result.stderr
    )
    # and a map of whole completions is not applied to both modes
    seq, _ = fit_inspect(tmp_path, "seq.json", ARITHMETIC, "--scorer", "match")
    result = run(["calibrate", tmp_path / "mixed.jsonl", "--calibrator", seq, "-q"])
    assert result.exit_code == 2
    assert "auto (answer-token and sequence on these samples)" in result.stderr


def test_the_mode_of_worker_shares_and_summary_files(tmp_path):
    """toy_mc's samples fill the first half of a file, then toy_arithmetic's: with two
    processes the worker reads the arithmetic samples, whose mode counts too."""
    mc = json.loads(MC.read_text())["samples"]
    lines = [{**s, "id": f"{k}-{s['id']}"} for k in range(60) for s in mc]
    for s in json.loads(ARITHMETIC_JSON.read_text())["samples"]:
        lines.append({**s, "id": f"a{s['id']}", "scores": {"choice": s["scores"]["match"]}})
    path = write_jsonl(tmp_path / "halves.jsonl", lines)
    part = tmp_path / "part.cbs"
    assert run(["summarize", path, "--part", "1/2", "-o", part, "-q"]).exit_code == 0
    _, first = fit_inspect(tmp_path, "first.json", part)
    assert first["fitted_on"]["inspect_confidence"] == "answer-token"  # the first half: toy_mc
    for workers in ("1", "2"):
        _, doc = fit_inspect(tmp_path, f"w{workers}.json", path, "--workers", workers)
        assert doc["fitted_on"]["inspect_confidence"] == "auto"
    # a summary file keeps the mode, and the check reads it
    whole = tmp_path / "arithmetic.cbs"
    assert run(["summarize", ARITHMETIC, "--scorer", "match", "-o", whole, "-q"]).exit_code == 0
    _, doc = fit_inspect(tmp_path, "from-summary.json", whole)
    assert doc["fitted_on"]["inspect_confidence"] == "sequence"
    first_token, _ = fit_inspect(
        tmp_path, "ft.json", ARITHMETIC, "--scorer", "match", "--inspect-confidence", "first-token"
    )
    result = run(["calibrate", whole, "--calibrator", first_token, "-q"])
    assert result.exit_code == 2
    assert "fitted on --inspect-confidence first-token confidences" in result.stderr


def test_other_formats_record_no_mode(tmp_path, files):
    _, _, test, cal = files
    assert "inspect_confidence" not in json.loads(cal.read_text())["fitted_on"]
    mc = sorted(str(p) for p in LM_EVAL.glob("samples_toy_mc_*.jsonl"))
    lm_eval = tmp_path / "lm.json"
    assert run(["fit", *mc, "--method", "platt", "-o", lm_eval, "-q"]).exit_code == 0
    fitted_on = json.loads(lm_eval.read_text())["fitted_on"]
    assert fitted_on["mc_norm"] == "none" and "inspect_confidence" not in fitted_on
    # rows of other formats are mapped as before by a calibrator of inspect-ai rows
    pi, _ = fit_inspect(
        tmp_path, "pi.json", ARITHMETIC, "--scorer", "match", "--inspect-confidence", "first-token"
    )
    assert run(["calibrate", *mc, "--calibrator", pi, "-q"]).exit_code == 0
    assert run(["calibrate", test, "--calibrator", pi, "-q"]).exit_code == 0


def test_the_python_api_records_the_mode(tmp_path):
    import calibcli

    rows = calibcli.read_predictions(str(MC))
    assert rows.inspect_confidence == "answer-token"
    cal = tmp_path / "api.json"
    calibcli.fit(rows, method="platt").save(cal)
    assert json.loads(cal.read_text())["fitted_on"]["inspect_confidence"] == "answer-token"
    result = run(["calibrate", ARITHMETIC, "--scorer", "match", "--calibrator", cal, "-q"])
    assert result.exit_code == 2 and "--inspect-confidence answer-token" in result.stderr
    native = calibcli.read_predictions(
        FIXTURES.parent.parent / "sample_data" / "overconfident.jsonl"
    )
    assert native.inspect_confidence is None
    fitted_on = json.loads(calibcli.fit(native, method="platt").to_json())["fitted_on"]
    assert "inspect_confidence" not in fitted_on


# --------------------------------------------------------------------------- how rows were read


def graded(n: int, seed: int) -> list[dict]:
    """Rows with two notions of a right answer: ``correct`` and ``em`` (which differ)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = rng.random()
        out.append({"confidence": c, "correct": rng.random() < c, "em": rng.random() < c / 2})
    return out


def test_a_jsonl_calibrator_records_no_other_keys(tmp_path):
    dev = write_jsonl(tmp_path / "dev.jsonl", graded(300, 1))
    cal = tmp_path / "cal.json"
    assert (
        run(["fit", dev, "--method", "platt", "--correct-field", "em", "-o", cal, "-q"]).exit_code
        == 0
    )
    fitted = json.loads(cal.read_text())["fitted_on"]
    assert list(fitted) == ["n", "files", "format", "confidence_field", "correct_field"]
    assert fitted["correct_field"] == "em"


@pytest.mark.parametrize("command", ["calibrate", "threshold"])
def test_rows_graded_by_another_correct_field_are_named(tmp_path, command):
    dev = write_jsonl(tmp_path / "dev.jsonl", graded(300, 1))
    test = write_jsonl(tmp_path / "test.jsonl", graded(300, 2))
    cal = tmp_path / "cal.json"
    assert (
        run(["fit", dev, "--method", "platt", "--correct-field", "em", "-o", cal, "-q"]).exit_code
        == 0
    )
    extra = ["--target-accuracy", "0.5"] if command == "threshold" else []
    other = run([command, test, "--calibrator", cal, *extra, "--json", "-q"])
    assert other.exit_code == 0, other.stderr
    said = [w for w in json.loads(other.stdout)["warnings"] if "--correct-field" in w]
    assert said == [
        "the calibrator was fitted on rows graded by --correct-field em; these rows are graded "
        "by --correct-field correct: its figures judge the map by another notion of a right "
        "answer"
    ]
    same = run(
        [command, test, "--calibrator", cal, "--correct-field", "em", *extra, "--json", "-q"]
    )
    assert same.exit_code == 0, same.stderr
    assert not [w for w in json.loads(same.stdout)["warnings"] if "--correct-field" in w]


def test_samples_graded_by_another_scorer_are_named(tmp_path):
    cal = tmp_path / "cal.json"
    fitted = run(["fit", ARITHMETIC, "--scorer", "match", "--method", "platt", "-o", cal, "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    assert json.loads(cal.read_text())["fitted_on"]["scorer"] == "match"
    other = run(["calibrate", ARITHMETIC, "--scorer", "exact_number", "--calibrator", cal, "-q"])
    assert other.exit_code == 0
    assert (
        "graded by --scorer match; these rows are graded by --scorer exact_number" in other.stderr
    )
    same = run(["calibrate", ARITHMETIC, "--scorer", "match", "--calibrator", cal, "-q"])
    assert same.exit_code == 0 and "--scorer" not in same.stderr


def response(top: dict[str, float], **fields) -> dict:
    """An OpenAI chat completion answering one letter, with the top logprobs ``top``."""
    chosen = max(top, key=top.get)
    entries = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in top.items()]
    token = {"token": chosen, "logprob": top[chosen], "top_logprobs": entries}
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": chosen},
        "logprobs": {"content": [token]},
        "finish_reason": "stop",
    }
    return {"object": "chat.completion", "model": "m", "choices": [choice], **fields}


def responses(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        top = {x: math.log(rng.uniform(0.05, 1.0)) for x in "ABC"}
        top["D"] = math.log(0.01)  # never chosen, so every answer is an option of A,B,C
        out.append(response(top, answer=rng.choice("ABC"), key=rng.choice("ABC")))
    return out


@pytest.fixture
def openai_files(tmp_path):
    dev = write_jsonl(tmp_path / "dev.jsonl", responses(200, 1))
    test = write_jsonl(tmp_path / "test.jsonl", responses(200, 2))
    cal = tmp_path / "cal.json"
    fitted = run(["fit", dev, "--gold-field", "answer", "--method", "platt", "-o", cal, "-q"])
    assert fitted.exit_code == 0, fitted.stderr
    return dev, test, cal


def test_openai_records_the_gold_field_and_the_options(openai_files):
    _, _, cal = openai_files
    fitted = json.loads(cal.read_text())["fitted_on"]
    assert fitted["gold_field"] == "answer"
    assert fitted["choices"] == ["A", "B", "C", "D", "E"]  # the default options


def test_confidences_over_other_choices_are_refused(openai_files):
    _, test, cal = openai_files
    args = ["calibrate", test, "--gold-field", "answer", "--calibrator", cal, "-q"]
    refused = run([*args, "--choices", "A,B,C"])
    assert refused.exit_code == 2
    assert refused.stderr.splitlines() == [
        f"Error: {cal}: the calibrator was fitted on confidences renormalised over --choices "
        "A,B,C,D,E; these rows are read with --choices A,B,C: give --choices A,B,C,D,E"
    ]
    # the options it was fitted over, named or by default: the same numbers, so no word
    for same in (["--choices", "A,B,C,D,E"], []):
        given = run([*args, *same, "--json"])
        assert given.exit_code == 0, given.stderr
        body = json.loads(given.stdout)
        assert not [w for w in body["warnings"] if "calibrator" in w]
        # each confidence is the chosen letter's probability over A to E (E never appears)
        expected = []
        for r in responses(200, 2):
            top = r["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
            p = {t["token"]: math.exp(t["logprob"]) for t in top}
            expected.append(max(p.values()) / sum(p.values()))
        mean = body["recalibration"]["before"]["mean_confidence"]
        assert mean == pytest.approx(sum(expected) / len(expected), abs=1e-9)


def test_the_same_choices_in_another_order_are_the_same_numbers(openai_files):
    """Renormalising over E,D,C,B,A is renormalising over A,B,C,D,E: the map takes them."""
    _, test, cal = openai_files
    args = ["calibrate", test, "--gold-field", "answer", "--calibrator", cal, "--json", "-q"]
    bodies = []
    for choices in ("A,B,C,D,E", "E,D,C,B,A"):
        given = run([*args, "--choices", choices])
        assert given.exit_code == 0, given.stderr
        bodies.append(json.loads(given.stdout))
    assert bodies[0]["ece"] == bodies[1]["ece"]
    assert bodies[0]["recalibration"] == bodies[1]["recalibration"]
    assert not [w for w in bodies[1]["warnings"] if "calibrator" in w]


def test_responses_graded_by_another_gold_field_are_named(openai_files):
    _, test, cal = openai_files
    other = run(["calibrate", test, "--gold-field", "key", "--calibrator", cal, "-q"])
    assert other.exit_code == 0
    assert "graded by --gold-field answer; these rows are graded by --gold-field key" in (
        other.stderr
    )


def test_a_calibrator_without_the_options_is_applied_as_before(openai_files, tmp_path):
    _, test, cal = openai_files
    body = json.loads(cal.read_text())
    for key in ("choices", "gold_field"):
        del body["fitted_on"][key]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(body))
    args = ["calibrate", test, "--gold-field", "key", "--choices", "A,B,C", "--calibrator", old]
    given = run([*args, "--json", "-q"])
    assert given.exit_code == 0, given.stderr
    assert not [w for w in json.loads(given.stdout)["warnings"] if "calibrator was" in w]


TASK = "samples_toy_mc_{}_2026-11-29T18-50-52.260809.jsonl"
RESULTS = "results_2026-11-29T18-50-52.260809.json"


@pytest.fixture
def two_models(tmp_path):
    """The lm-eval fixture's run as written (model wxrd1574), and the same files as a run of
    another model (its results file names other-model-7b), each with half of the science
    rows (the first run the first half), with a calibrator fitted on the first run's science
    rows."""
    runs = {}
    science = (LM_EVAL / TASK.format("science")).read_text().splitlines(keepends=True)
    for folder, model in (("a", None), ("b", "other-model-7b")):
        (tmp_path / folder).mkdir()
        half = science[:24] if model is None else science[24:]
        (tmp_path / folder / TASK.format("science")).write_text("".join(half))
        name = TASK.format("trivia")
        (tmp_path / folder / name).write_bytes((LM_EVAL / name).read_bytes())
        results = json.loads((LM_EVAL / RESULTS).read_text())
        if model is not None:
            results["model_name"] = model
        (tmp_path / folder / RESULTS).write_text(json.dumps(results))
        runs[folder] = tmp_path / folder
    cal = tmp_path / "cal.json"
    fitted = run(["fit", runs["a"] / TASK.format("science"), "--method", "temperature", "-o", cal])
    assert fitted.exit_code == 0, fitted.stderr
    return runs, cal


def test_lm_eval_records_the_model_and_task(two_models):
    _, cal = two_models
    fitted = json.loads(cal.read_text())["fitted_on"]
    assert fitted["models"] == ["wxrd1574"]
    assert fitted["tasks"] == ["toy_mc_science"]


def test_another_models_rows_fail_every_gate_closed(two_models):
    runs, cal = two_models
    test = runs["b"] / TASK.format("trivia")
    result = run(["calibrate", test, "--calibrator", cal, "--max-ece", "0.9", "--json", "-q"])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    assert body["gate"]["checks"][0]["reason"] == (
        "the calibrator was fitted on another model's rows (see the warning): a map of one "
        "model's confidences says nothing of another's"
    )
    assert body["ece"] < 0.9  # the figure alone would pass
    said = [w for w in body["warnings"] if w.startswith("the calibrator was fitted on rows of")]
    assert said == [
        "the calibrator was fitted on rows of task 'toy_mc_science'; it maps rows of task "
        "'toy_mc_trivia' here, and a map may not carry over to another task",
        "the calibrator was fitted on rows of model 'wxrd1574'; these rows are of model "
        "'other-model-7b', as their runs name them: a map of one model's confidences says "
        "nothing of another's, so every gate on the figures after it fails; fit a calibrator "
        "on this model's rows",
    ]


def test_another_models_rows_fail_the_threshold_gate_closed(two_models):
    runs, cal = two_models
    test = runs["b"] / TASK.format("science")  # the same task, held-out rows
    gated = ["--method", "sgr", "--target-accuracy", "0.5", "--delta", "0.5"]
    gated += ["--min-coverage", "0.01"]
    result = run(["threshold", test, "--calibrator", cal, *gated, "--json", "-q"])
    assert result.exit_code == 1
    body = json.loads(result.stdout)
    (check,) = body["gate"]["checks"]
    assert check["value"] >= 0.01  # the coverage alone would pass
    assert check["reason"].startswith("the calibrator was fitted on another model's rows")
    assert not [w for w in body["warnings"] if "task" in w and "calibrator" in w]


def test_another_task_of_the_same_model_is_a_warning_only(two_models):
    runs, cal = two_models
    test = runs["a"] / TASK.format("trivia")
    result = run(["calibrate", test, "--calibrator", cal, "--max-ece", "0.9", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    said = [w for w in json.loads(result.stdout)["warnings"] if "calibrator was fitted" in w]
    assert said == [
        "the calibrator was fitted on rows of task 'toy_mc_science'; it maps rows of task "
        "'toy_mc_trivia' here, and a map may not carry over to another task"
    ]


def test_a_calibrator_without_models_is_applied_as_before(two_models, tmp_path):
    runs, cal = two_models
    body = json.loads(cal.read_text())
    for key in ("models", "tasks"):
        del body["fitted_on"][key]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(body))
    test = runs["b"] / TASK.format("trivia")
    result = run(["calibrate", test, "--calibrator", old, "--max-ece", "0.9", "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    assert not [w for w in json.loads(result.stdout)["warnings"] if "calibrator was" in w]
