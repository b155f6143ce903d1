"""A summary file's reading settings are taken over by the commands that read it.

An option not given on the command line takes the summary's value; one given at the summary's
value is read as it is; one given at another value is exit 2 with one line naming the option
and both values, whether or not that value is the option's default. A calibrator fitted on a
summary records what fitting the summary's source rows directly with its settings records, so
every later check of it behaves the same either way. Expected figures are the rows' own (a mean
of the field read, a sum of NLLs) or those of reading the source files directly with the
summary's options."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from harness import run, write_jsonl

FIXTURES = Path(__file__).parent / "fixtures"
LM_EVAL = FIXTURES / "lm_eval"
TRIVIA = str(next(LM_EVAL.glob("samples_toy_mc_trivia_*.jsonl")))
SCIENCE = str(next(LM_EVAL.glob("samples_toy_mc_science_*.jsonl")))
INSPECT = str(FIXTURES / "inspect_ai" / "toy_arithmetic.eval")
SUBJECTS = ("algebra", "biology", "history", "law")


def two_fields(n: int, seed: int) -> list[dict]:
    """Rows whose field p is not their confidence: p = 1 - confidence, each row a subject
    and a topic drawn apart."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        c = round(rng.random(), 4)
        rows.append(
            {
                "confidence": c,
                "p": round(1 - c, 4),
                "correct": rng.random() < c**1.5,
                "subject": rng.choice(SUBJECTS),
                "topic": rng.choice(SUBJECTS),
            }
        )
    return rows


def summarize(tmp_path: Path, name: str, *args: str) -> str:
    out = str(tmp_path / name)
    result = run(["summarize", *args, "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    return out


def figures(*args: str) -> dict:
    result = run(["calibrate", *args, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def refused(result, option: str, theirs: str, mine: str) -> None:
    """Exit 2 with one line naming the option, the summary's value and the value given."""
    assert result.exit_code == 2, result.stdout
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, result.stderr
    assert f"with {option} {theirs}, not {option} {mine}" in lines[0]


@pytest.fixture
def field_p(tmp_path):
    """A summary read with --confidence-field p, and the rows it read."""
    rows = two_fields(400, seed=3)
    src = write_jsonl(tmp_path / "p.jsonl", rows)
    return summarize(tmp_path, "p.cbs", str(src), "--confidence-field", "p"), rows


# --------------------------------------------------------------------- options given or not


def test_an_option_not_given_takes_the_summarys_value(field_p):
    cbs, rows = field_p
    body = figures(cbs)
    assert body["n"] == len(rows)
    assert body["mean_confidence"] == pytest.approx(sum(r["p"] for r in rows) / len(rows))


def test_an_option_given_at_the_summarys_value_is_read_as_it_is(field_p):
    cbs, rows = field_p
    body = figures(cbs, "--confidence-field", "p")
    assert body["mean_confidence"] == pytest.approx(sum(r["p"] for r in rows) / len(rows))


@pytest.mark.parametrize(
    "command",
    [
        ["calibrate"],
        ["reliability"],
        ["threshold", "--target-accuracy", "0.6"],
        ["fit", "--method", "platt"],
    ],
)
def test_an_option_given_at_its_default_is_refused_when_the_summary_differs(field_p, command):
    # --confidence-field confidence is the option's default, given on the command line
    cbs, _ = field_p
    result = run([*command, cbs, "--confidence-field", "confidence", "-q"])
    refused(result, "--confidence-field", "p", "confidence")


@pytest.mark.parametrize(
    "command", [["calibrate"], ["reliability"], ["threshold", "--target-accuracy", "0.3"]]
)
def test_mc_norm_given_as_none_is_refused_for_a_chars_summary(tmp_path, command):
    cbs = summarize(tmp_path, "trivia.cbs", TRIVIA, "--mc-norm", "chars")
    refused(run([*command, cbs, "--mc-norm", "none", "-q"]), "--mc-norm", "chars", "none")
    assert run([*command, cbs, "--mc-norm", "chars", "-q"]).exit_code in (0, 1)


def test_a_chars_summary_gives_the_chars_figures(tmp_path):
    cbs = summarize(tmp_path, "trivia.cbs", TRIVIA, "--mc-norm", "chars")
    chars = figures(TRIVIA, "--mc-norm", "chars")
    raw = figures(TRIVIA)
    assert chars["mean_confidence"] != pytest.approx(raw["mean_confidence"])
    for args in ([cbs], [cbs, "--mc-norm", "chars"]):
        body = figures(*args)
        assert body["n"] == chars["n"] == 40
        assert body["mean_confidence"] == pytest.approx(chars["mean_confidence"], abs=1e-12)
        assert body["ece"] == pytest.approx(chars["ece"], abs=1e-12)


def test_an_inspect_summary_of_another_mode_is_read_with_its_mode(tmp_path):
    args = ["--scorer", "match", "--inspect-confidence", "first-token"]
    cbs = summarize(tmp_path, "insp.cbs", INSPECT, *args)
    direct = figures(INSPECT, *args)
    assert direct["mean_confidence"] != pytest.approx(
        figures(INSPECT, "--scorer", "match")["mean_confidence"]
    )
    for given in ([], ["--inspect-confidence", "first-token"]):
        body = figures(cbs, *given)
        assert body["n"] == direct["n"] == 20
        assert body["mean_confidence"] == pytest.approx(direct["mean_confidence"], abs=1e-12)
    result = run(["calibrate", cbs, "--inspect-confidence", "auto", "-q"])
    refused(result, "--inspect-confidence", "first-token", "auto")


def test_bins_not_given_are_the_summarys_and_given_at_their_default_rebuild_them(tmp_path):
    src = str(write_jsonl(tmp_path / "rows.jsonl", two_fields(300, seed=5)))
    cbs = summarize(tmp_path, "b20.cbs", src, "--bins", "20")
    for given, bins in (([], 20), (["--bins", "20"], 20), (["--bins", "10"], 10)):
        body, direct = figures(cbs, *given), figures(src, "--bins", str(bins))
        assert body["bins"] == bins
        for key in ("ece", "mce", "populated_bins"):
            assert body[key] == pytest.approx(direct[key], abs=1e-12)
    result = run(["reliability", cbs, "--json", "-q"])
    assert json.loads(result.stdout)["bins"] == 20
    via, direct = str(tmp_path / "via.json"), str(tmp_path / "direct.json")
    assert run(["fit", cbs, "--method", "histogram", "-o", via, "-q"]).exit_code == 0
    args = ["fit", src, "--bins", "20", "--method", "histogram", "-o", direct, "-q"]
    assert run(args).exit_code == 0
    assert len(fitted(via)["params"]["accuracy"]) == 20
    same_file(fitted(via), fitted(direct))


def test_perplexity_field_given_at_its_default_is_refused(tmp_path):
    rows = [{"nll": 1.0 + i, "loss": 2.5 * i + 0.25, "tokens": 3 + i % 4} for i in range(30)]
    src = write_jsonl(tmp_path / "ppl.jsonl", rows)
    cbs = summarize(tmp_path, "ppl.cbs", str(src), "--nll-field", "loss")
    for given in ([], ["--nll-field", "loss"]):
        result = run(["perplexity", cbs, *given, "--json", "-q"])
        assert result.exit_code == 0, result.stderr
        body = json.loads(result.stdout)
        assert body["total_nll"] == pytest.approx(sum(r["loss"] for r in rows))
        assert body["total_tokens"] == sum(r["tokens"] for r in rows)
    refused(run(["perplexity", cbs, "--nll-field", "nll", "-q"]), "--nll-field", "loss", "nll")


# ------------------------------------------------------------- calibrators fitted on summaries


def fitted(path: str) -> dict:
    return json.loads(Path(path).read_text())


def same_file(left: dict, right: dict) -> None:
    """Two calibrator files alike but for the last bits of their fitted parameters (the rows
    reach the fit in another order)."""

    def params(body):
        return {None: body["params"], **{k: g["params"] for k, g in body["groups"].items()}}

    mine, theirs = params(left), params(right)
    assert mine.keys() == theirs.keys()
    for group, values in mine.items():
        assert values.keys() == theirs[group].keys()
        for name, value in values.items():
            assert value == pytest.approx(theirs[group][name], rel=1e-9, abs=1e-12)
    strip = {"params": None, "groups": None}
    assert {**left, **strip} == {**right, **strip}
    assert {k: {**g, "params": None} for k, g in left["groups"].items()} == {
        k: {**g, "params": None} for k, g in right["groups"].items()
    }


@pytest.fixture
def dev_test(tmp_path):
    dev = write_jsonl(tmp_path / "dev.jsonl", two_fields(800, seed=11))
    test = write_jsonl(tmp_path / "test.jsonl", two_fields(800, seed=12))
    return str(dev), str(test)


def fit_both(tmp_path, cbs, *source):
    """(calibrator path fitted on the summary ``cbs``, one fitted on its ``source`` arguments
    read directly: the files and the summary's reading options)."""
    via, direct = str(tmp_path / "via.json"), str(tmp_path / "direct.json")
    assert run(["fit", cbs, "--method", "platt", "-o", via, "-q"]).exit_code == 0
    assert run(["fit", *source, "--method", "platt", "-o", direct, "-q"]).exit_code == 0
    return via, direct


def test_fit_on_a_summary_records_its_by(tmp_path, dev_test):
    dev, test = dev_test
    cbs = summarize(tmp_path, "dev.cbs", dev, "--by", "subject")
    via, direct = fit_both(tmp_path, cbs, dev, "--by", "subject")
    body = fitted(via)
    assert body["by"] == "subject"
    assert sorted(body["groups"]) == list(SUBJECTS)
    assert body["fitted_on"]["files"] == [dev]
    same_file(body, fitted(direct))
    # the later checks: maps of subject groups are not applied to topic groups
    for calibrator in (via, direct):
        result = run(["calibrate", test, "--calibrator", calibrator, "--by", "topic", "-q"])
        assert result.exit_code == 2
        assert "fitted per --by subject group, not per --by topic" in result.stderr
        # without --by, the pooled-map warning names the field
        result = run(["calibrate", test, "--calibrator", calibrator, "-q"])
        assert result.exit_code == 0, result.stderr
        assert "give --by subject for the groups' maps" in result.stderr
        assert "FIELD" not in result.stderr


def test_a_summary_grouped_otherwise_than_the_calibrator_is_refused(tmp_path, dev_test):
    dev, test = dev_test
    calibrator = str(tmp_path / "topic.json")
    args = ["fit", dev, "--by", "topic", "--method", "platt", "-o", calibrator, "-q"]
    assert run(args).exit_code == 0
    cbs = summarize(tmp_path, "test.cbs", test, "--by", "subject")
    for command in (["calibrate"], ["reliability"], ["threshold", "--target-accuracy", "0.6"]):
        result = run([*command, cbs, "--calibrator", calibrator, "-q"])
        assert result.exit_code == 2, (command, result.stderr)
        assert "fitted per --by topic group, not per --by subject" in result.stderr


def test_fit_on_a_summary_records_its_mc_norm(tmp_path):
    cbs = summarize(tmp_path, "trivia.cbs", TRIVIA, "--mc-norm", "chars")
    via, direct = fit_both(tmp_path, cbs, TRIVIA, "--mc-norm", "chars")
    body = fitted(via)
    assert body["fitted_on"]["mc_norm"] == "chars"
    assert body["fitted_on"]["files"] == [TRIVIA]
    same_file(body, fitted(direct))
    # a chars map is refused on raw scores and applied to chars scores
    result = run(["calibrate", SCIENCE, "--calibrator", via, "--max-ece", "0.8", "-q"])
    assert result.exit_code == 2
    assert "fitted on --mc-norm chars scores" in result.stderr
    result = run(["calibrate", SCIENCE, "--mc-norm", "chars", "--calibrator", via, "-q"])
    assert result.exit_code == 0, result.stderr


def test_fit_on_a_summary_records_its_confidence_field_and_mode(tmp_path, field_p):
    cbs, rows = field_p
    src = str(tmp_path / "p.jsonl")
    via, direct = str(tmp_path / "via.json"), str(tmp_path / "direct.json")
    assert run(["fit", cbs, "--method", "platt", "-o", via, "-q"]).exit_code == 0
    args = ["fit", src, "--confidence-field", "p", "--method", "platt", "-o", direct, "-q"]
    assert run(args).exit_code == 0
    assert fitted(via)["fitted_on"]["confidence_field"] == "p"
    assert fitted(via)["fitted_on"]["n"] == len(rows)
    same_file(fitted(via), fitted(direct))

    mode = ["--scorer", "match", "--inspect-confidence", "first-token"]
    insp = summarize(tmp_path, "insp.cbs", INSPECT, *mode)
    assert run(["fit", insp, "--method", "platt", "-o", via, "-q"]).exit_code == 0
    assert run(["fit", INSPECT, *mode, "--method", "platt", "-o", direct, "-q"]).exit_code == 0
    assert fitted(via)["fitted_on"]["inspect_confidence"] == "first-token"
    same_file(fitted(via), fitted(direct))
