"""Options that change nothing are said, or refused, never dropped without a word: summarize
says each option only the other kind of rows uses (and refuses --kind auto on rows of either
kind given an option of calibration rows), apply --by with a calibrator of one map says --by
is not used, and compare --unpaired refuses --allow-unmatched as it refuses --id-field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run

NOT_USED = "which do not use it; the option is not used"
AS_PERPLEXITY = "the rows are summarized as perplexity rows (NLL and tokens), " + NOT_USED
AS_CALIBRATION = "the rows are summarized as calibration rows (confidences and correctness), "
AS_CALIBRATION += NOT_USED


def write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def perplexity_rows(tmp_path):
    rows = [{"nll": 2.0, "tokens": 3}, {"nll": 1.0, "tokens": 2}]
    return write(tmp_path / "ppl.jsonl", rows)


def calibration_rows(tmp_path):
    rows = [{"confidence": c, "correct": k} for c, k in ((0.2, False), (0.9, True), (0.6, True))]
    return write(tmp_path / "cal.jsonl", rows)


# rows of either kind: an NLL and tokens, a confidence p and correctness; the p values'
# mean is (0.2 + 0.6 + 0.7 + 0.9) / 4 = 0.6, the accuracy 2/4
BOTH = [
    {"nll": 2.0, "tokens": 3, "p": 0.2, "correct": False},
    {"nll": 1.0, "tokens": 2, "p": 0.6, "correct": True},
    {"nll": 4.0, "tokens": 5, "p": 0.7, "correct": False},
    {"nll": 3.0, "tokens": 4, "p": 0.9, "correct": True},
]


def summarize(tmp_path, name, *args):
    """The summarize run and the bytes it wrote (None when it wrote nothing)."""
    out = tmp_path / name
    result = run(["summarize", *args, "-o", str(out)])
    return result, out.read_bytes() if out.exists() else None


def warnings_of(result):
    return [line.removeprefix("warning: ") for line in result.stderr.splitlines()]


CALIBRATION_OPTIONS = [
    (["--bins", "20"], "--bins 20"),
    (["--table", "never"], "--table never"),
    (["--confidence-field", "p"], "--confidence-field p"),
    (["--correct-field", "ok"], "--correct-field ok"),
    (["--mc-norm", "chars"], "--mc-norm chars"),
    (["--scorer", "s"], "--scorer s"),
    (["--inspect-confidence", "sequence"], "--inspect-confidence sequence"),
    (["--gold-field", "g"], "--gold-field g"),
    (["--choices", "A,B"], "--choices A,B"),
]


@pytest.mark.parametrize("kind", [[], ["--kind", "perplexity"]])
@pytest.mark.parametrize(("option", "shown"), CALIBRATION_OPTIONS)
def test_summarize_says_an_option_of_calibration_rows_on_perplexity_rows(
    tmp_path, kind, option, shown
):
    rows = perplexity_rows(tmp_path)
    plain, expected = summarize(tmp_path, "plain.cbs", rows, *kind, "-q")
    assert plain.exit_code == 0, plain.stderr
    assert plain.stderr == ""
    result, written = summarize(tmp_path, "given.cbs", rows, *kind, *option, "-q")
    assert result.exit_code == 0, result.stderr
    # -q silences the closing line, not warnings, as in every command
    assert warnings_of(result) == [f"{shown}: {AS_PERPLEXITY}"]
    assert written == expected  # the summary is that of the rows read without it


@pytest.mark.parametrize("kind", [[], ["--kind", "calibration"]])
def test_summarize_says_each_option_of_perplexity_rows_on_calibration_rows(tmp_path, kind):
    rows = calibration_rows(tmp_path)
    plain, expected = summarize(tmp_path, "plain.cbs", rows, *kind, "-q")
    assert plain.exit_code == 0, plain.stderr
    given = ["--nll-field", "x", "--tokens-field", "y", "--bytes-field", "b"]
    given += ["--words-field", "w", "--logprobs-field", "lp"]
    result, written = summarize(tmp_path, "given.cbs", rows, *kind, *given, "-q")
    assert result.exit_code == 0, result.stderr
    assert warnings_of(result) == [
        f"--nll-field x: {AS_CALIBRATION}",
        f"--tokens-field y: {AS_CALIBRATION}",
        f"--bytes-field b: {AS_CALIBRATION}",
        f"--words-field w: {AS_CALIBRATION}",
        f"--logprobs-field lp: {AS_CALIBRATION}",
    ]
    assert written == expected


def test_summarize_says_nothing_of_options_the_rows_use(tmp_path):
    rows = write(tmp_path / "both.jsonl", BOTH)
    result, _ = summarize(tmp_path, "p.cbs", rows, "--nll-field", "nll", "--tokens-field", "tokens")
    assert result.exit_code == 0, result.stderr
    assert "warning" not in result.stderr
    cal = calibration_rows(tmp_path)
    result, _ = summarize(tmp_path, "c.cbs", cal, "--bins", "20", "--table", "always", "-q")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("given", "named", "them"),
    [
        (["--confidence-field", "p"], "--confidence-field is an option", "it"),
        (
            ["--bins", "20", "--confidence-field", "p"],
            "--bins, --confidence-field are options",
            "them",
        ),
    ],
)
def test_summarize_kind_auto_refuses_rows_of_either_kind_given_a_calibration_option(
    tmp_path, given, named, them
):
    rows = write(tmp_path / "both.jsonl", BOTH)
    result, written = summarize(tmp_path, "both.cbs", rows, *given)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "Error: --kind auto: the rows read as perplexity rows (NLL and tokens) and as "
        f"calibration rows (confidences and correctness), and {named} of calibration rows: "
        f"give --kind calibration, or --kind perplexity without {them}"
    ]
    assert written is None


def test_summarize_of_either_kind_takes_the_kind_given(tmp_path):
    rows = write(tmp_path / "both.jsonl", BOTH)
    made, _ = summarize(
        tmp_path, "cal.cbs", rows, "--kind", "calibration", "--confidence-field", "p"
    )
    assert made.exit_code == 0, made.stderr
    measured = run(["calibrate", str(tmp_path / "cal.cbs"), "--json", "-q"])
    assert measured.exit_code == 0, measured.stderr
    body = json.loads(measured.stdout)
    assert body["n"] == 4
    assert body["mean_confidence"] == pytest.approx(0.6)
    assert body["accuracy"] == pytest.approx(0.5)
    _, expected = summarize(tmp_path, "plain.cbs", rows, "--kind", "perplexity", "-q")
    result, written = summarize(
        tmp_path, "ppl.cbs", rows, "--kind", "perplexity", "--confidence-field", "p", "-q"
    )
    assert result.exit_code == 0, result.stderr
    assert warnings_of(result) == [f"--confidence-field p: {AS_PERPLEXITY}"]
    assert written == expected


# ----- apply --by with a calibrator of one map

GROUPED = [
    {"id": i, "g": "ab"[i % 2], "confidence": c, "correct": k}
    for i, (c, k) in enumerate(
        [(0.9, True), (0.8, False), (0.7, True), (0.3, False), (0.6, True), (0.2, False)] * 5
    )
]
BY_UNUSED = (
    "--by g: the calibrator holds one map, fitted without --by; every row takes it, so the "
    "option is not used"
)


def fitted(tmp_path, rows, *by):
    out = tmp_path / f"cal{len(by)}.json"
    made = run(["fit", rows, "--method", "isotonic", *by, "-o", str(out), "-q"])
    assert made.exit_code == 0, made.stderr
    return str(out)


def held_out(tmp_path):
    """Rows the calibrators were not fitted on: GROUPED's, each confidence 0.05 lower."""
    return write(
        tmp_path / "held.jsonl", [{**r, "confidence": r["confidence"] - 0.05} for r in GROUPED]
    )


def test_apply_by_with_a_calibrator_of_one_map_says_by_is_not_used(tmp_path):
    rows = write(tmp_path / "rows.jsonl", GROUPED)
    pooled = fitted(tmp_path, rows)
    rows = held_out(tmp_path)
    plain = run(["apply", pooled, rows, "-q"])
    assert plain.exit_code == 0, plain.stderr
    assert plain.stderr == ""
    grouped = run(["apply", pooled, rows, "--by", "g", "-q"])
    assert grouped.exit_code == 0, grouped.stderr
    assert warnings_of(grouped) == [BY_UNUSED]
    assert grouped.stdout == plain.stdout  # every row took the one map either way


def test_apply_by_with_a_calibrator_per_group_says_nothing_of_by(tmp_path):
    rows = write(tmp_path / "rows.jsonl", GROUPED)
    per_group = fitted(tmp_path, rows, "--by", "g")
    result = run(["apply", per_group, held_out(tmp_path), "--by", "g", "-q"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""


# ----- compare --unpaired


def test_compare_unpaired_refuses_allow_unmatched(tmp_path):
    base = write(tmp_path / "base.jsonl", GROUPED)
    new = write(tmp_path / "new.jsonl", GROUPED[::-1])
    result = run(["compare", base, new, "--unpaired", "--allow-unmatched", "--json"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "Error: --allow-unmatched lets rows go unmatched; --unpaired matches none"
    ]
    # each alone is taken
    for alone in ("--unpaired", "--allow-unmatched"):
        taken = run(["compare", base, new, alone, "--json", "-q"])
        assert taken.exit_code == 0, taken.stderr


def test_the_api_refuses_unpaired_with_allow_unmatched_as_the_command_does():
    import calibcli
    from calibcli.errors import InputError

    samples = Path(__file__).resolve().parent.parent / "sample_data"
    rows = calibcli.read_predictions(samples / "overconfident.jsonl")
    other = calibcli.read_predictions(samples / "well_calibrated.jsonl")
    with pytest.raises(InputError, match="--allow-unmatched lets rows go unmatched; --unpaired"):
        calibcli.compare(rows, other, unpaired=True, allow_unmatched=True)
    assert calibcli.compare(rows, other, unpaired=True).passed
