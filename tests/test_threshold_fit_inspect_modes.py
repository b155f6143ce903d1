"""threshold --fit of inspect-ai rows whose confidences the two sides took in other ways: read
with other --inspect-confidence modes (a summary file keeps the mode it was made with), they are
refused as other --mc-norm scores are, and as --calibrator refuses them (exit 2, one line naming
the summary files and both modes, with a remedy that the inputs as given can follow); read with
one mode (auto's per-sample choice), they are warned of with advice that works on that route,
and a --min-coverage gate fails closed. The Python API's ``threshold(fit=...)`` alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import run
from test_compare_inspect_modes import side

import calibcli
from calibcli.errors import InputError

ARITHMETIC = Path(__file__).resolve().parent / "fixtures" / "inspect_ai" / "toy_arithmetic.eval"
GATED = ["--target-accuracy", "0.3", "--min-coverage", "0.1"]
CUT = (
    "a cut on one kind of number accepts other rows held against another, and a summary file's "
    "rows cannot be read again another way"
)
KIND = "another kind of number"
CLOSED = (
    "the threshold was chosen on inspect-ai confidences taken another way (see the warning): a "
    "cut on one kind of number accepts other rows held against another"
)


def summarize(source, out, *args):
    scorer = ["--scorer", "match"] if source == ARITHMETIC else []  # its samples' scorers
    result = run(["summarize", source, *scorer, *args, "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    return out


def threshold(*args):
    return run(["threshold", *args, "--json", "-q"])


def refused(result, line):
    assert result.exit_code == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [f"Error: {line}"]


def test_summaries_read_in_two_modes_are_refused_either_way_round(tmp_path):
    """The finding: the same log summarized by sequence and by first-token passed a gate with
    a warning whose advice (--inspect-confidence) the summaries then refuse."""
    sequence = summarize(ARITHMETIC, tmp_path / "seq.cbs", "--inspect-confidence", "sequence")
    first = summarize(ARITHMETIC, tmp_path / "first.cbs", "--inspect-confidence", "first-token")
    refused(
        threshold(first, "--fit", sequence, *GATED),
        f"{sequence}, {first}: the threshold is chosen on --inspect-confidence sequence "
        "confidences (--fit); the evaluated rows are read with --inspect-confidence "
        f"first-token: {CUT}: summarize the --fit inputs again with --inspect-confidence "
        "first-token, or the evaluated ones with --inspect-confidence sequence",
    )
    refused(
        threshold(sequence, "--fit", first, *GATED),
        f"{first}, {sequence}: the threshold is chosen on --inspect-confidence first-token "
        "confidences (--fit); the evaluated rows are read with --inspect-confidence "
        f"sequence: {CUT}: summarize the --fit inputs again with --inspect-confidence "
        "sequence, or the evaluated ones with --inspect-confidence first-token",
    )
    # the remedy: the --fit inputs summarized again in the evaluated rows' mode
    again = summarize(ARITHMETIC, tmp_path / "again.cbs", "--inspect-confidence", "first-token")
    result = threshold(first, "--fit", again, *GATED)
    assert result.exit_code in (0, 1), result.stderr
    assert KIND not in result.stdout + result.stderr


@pytest.mark.parametrize("summary_side", ["fit", "evaluated"])
def test_a_summary_beside_files_read_another_way_is_refused(tmp_path, summary_side):
    """A first-token summary on one side, the log read with auto (the sequence, as its samples
    have no choices) on the other: refused; each remedy named then reads both one way."""
    first = summarize(ARITHMETIC, tmp_path / "first.cbs", "--inspect-confidence", "first-token")
    log = ARITHMETIC
    if summary_side == "fit":
        sides = [log, "--fit", first]
        line = (
            f"{first}: the threshold is chosen on --inspect-confidence first-token confidences "
            "(--fit); the evaluated rows are read with --inspect-confidence auto (sequence on "
            f"these samples): {CUT}: give --inspect-confidence first-token to read the "
            "evaluated files so too, or summarize the --fit inputs again with "
            "--inspect-confidence sequence"
        )
    else:
        sides = [first, "--fit", log]
        line = (
            f"{first}: the threshold is chosen on --inspect-confidence auto (sequence on these "
            "samples) confidences (--fit); the evaluated rows are read with "
            f"--inspect-confidence first-token: {CUT}: give --inspect-confidence first-token to "
            "read the --fit files so too, or summarize the evaluated inputs again with "
            "--inspect-confidence sequence"
        )
    refused(threshold(*sides, "--scorer", "match", *GATED), line)
    # give the summary file's own mode: the log is read in it too
    given = threshold(*sides, "--scorer", "match", "--inspect-confidence", "first-token", *GATED)
    assert given.exit_code in (0, 1), given.stderr
    assert KIND not in given.stdout + given.stderr
    # or summarize its inputs again in the mode the log's samples took
    seq = summarize(ARITHMETIC, tmp_path / "seq.cbs", "--inspect-confidence", "sequence")
    again = [log, "--fit", seq] if summary_side == "fit" else [seq, "--fit", log]
    result = threshold(*again, "--scorer", "match", *GATED)
    assert result.exit_code in (0, 1), result.stderr
    assert KIND not in result.stdout + result.stderr


@pytest.fixture
def two_kinds(tmp_path):
    """Two logs of one model read with auto: the --fit one's 100 samples without an answer line
    (their whole completions' probabilities, 0.14 to 0.22), the evaluated one's all with one
    (the answer letters', 0.6 to 0.96); 2 in 3 right on each. A threshold cut on the first
    kind accepts every row of the second: the coverage check alone would pass."""
    fit, _ = side(tmp_path / "fit.json", shift=0.0, lines=0)
    evaluated, _ = side(tmp_path / "eval.json", shift=0.01, lines=100)
    return fit, evaluated


GATE = ["--target-accuracy", "0.5", "--min-coverage", "0.5"]
OPENING = (
    "the threshold was chosen on inspect-ai confidences taken by sequence (--fit) and is "
    f"evaluated on ones taken by answer-token, {KIND}: "
)


def warned(result, advice):
    """The warning with its advice, on stderr and in the report, and the gate failed closed
    on its account though the coverage alone passes."""
    assert result.exit_code == 1, result.stderr
    body = json.loads(result.stdout)
    assert [w for w in body["warnings"] if KIND in w] == [OPENING + advice]
    assert f"warning: {OPENING}{advice}" in result.stderr.splitlines()
    (check,) = body["gate"]["checks"]
    assert check["reason"] == CLOSED
    assert check["value"] == 1.0


def test_files_read_with_one_mode_that_took_two_kinds_fail_the_gate_closed(two_kinds):
    fit, evaluated = two_kinds
    warned(
        threshold(evaluated, "--fit", fit, *GATE), "give --inspect-confidence to take both one way"
    )
    # the advice: one mode for both
    result = threshold(evaluated, "--fit", fit, *GATE, "--inspect-confidence", "sequence")
    assert result.exit_code == 0, result.stderr
    assert KIND not in result.stdout + result.stderr


@pytest.mark.parametrize("summarized", ["fit", "evaluated", "both"])
def test_a_summary_read_with_auto_is_told_to_be_summarized_again(two_kinds, tmp_path, summarized):
    """Both sides read with auto, a summary file among them: the warning's advice is not to
    give --inspect-confidence (the summary file refuses another mode) but to summarize again;
    following it reads both one way."""
    fit, evaluated = two_kinds
    made = {}
    for name, path in (("fit", fit), ("evaluated", evaluated)):
        if summarized in (name, "both"):
            made[name] = summarize(path, tmp_path / f"{name}.cbs")
    advice = {
        "fit": "summarize the --fit inputs again with one --inspect-confidence other than auto, "
        "and give it here to read the evaluated files so too",
        "evaluated": "summarize the evaluated inputs again with one --inspect-confidence other "
        "than auto, and give it here to read the --fit files so too",
        "both": "summarize the inputs of both sides again with one --inspect-confidence other "
        "than auto to take both one way",
    }[summarized]
    sides = [made.get("evaluated", evaluated), "--fit", made.get("fit", fit)]
    warned(threshold(*sides, *GATE), advice)
    again = {
        name: summarize(path, tmp_path / f"{name}.seq.cbs", "--inspect-confidence", "sequence")
        for name, path in (("fit", fit), ("evaluated", evaluated))
        if name in made
    }
    sides = [again.get("evaluated", evaluated), "--fit", again.get("fit", fit)]
    result = threshold(*sides, *GATE, "--inspect-confidence", "sequence")
    assert result.exit_code == 0, result.stderr
    assert KIND not in result.stdout + result.stderr


def test_the_api_refuses_and_warns_as_the_command(two_kinds):
    """threshold(fit=...) of rows read with other inspect_confidence modes: an InputError
    whose remedies are its arguments; of rows read with auto that took two kinds: the warning,
    advising its arguments, and a min_coverage gate failed closed."""
    read = calibcli.read_predictions
    held_out = read(str(ARITHMETIC), scorer="match", inspect_confidence="sequence")
    rows = read(str(ARITHMETIC), scorer="match", inspect_confidence="first-token")
    with pytest.raises(InputError) as caught:
        calibcli.threshold(rows, fit=held_out, target_accuracy=0.3, min_coverage=0.1)
    assert str(caught.value) == (
        "--fit: the threshold is chosen on inspect_confidence=sequence confidences (--fit); the "
        "evaluated rows are read with inspect_confidence=first-token: a cut on one kind of "
        "number accepts other rows held against another: read the evaluated rows with "
        "inspect_confidence='sequence', or read the fit rows with "
        "inspect_confidence='first-token'"
    )
    same = read(str(ARITHMETIC), scorer="match", inspect_confidence="first-token")
    calibcli.threshold(rows, fit=same, target_accuracy=0.3, min_coverage=0.1)

    fit, evaluated = two_kinds
    result = calibcli.threshold(
        read(str(evaluated)), fit=read(str(fit)), target_accuracy=0.5, min_coverage=0.5
    )
    body = json.loads(result.to_json())
    advice = "read both sides with one inspect_confidence other than 'auto' to take both one way"
    assert [w for w in body["warnings"] if KIND in w] == [OPENING + advice]
    assert result.passed is False
    assert body["gate"]["checks"][0]["reason"] == CLOSED
    one_way = calibcli.threshold(
        read(str(evaluated), inspect_confidence="sequence"),
        fit=read(str(fit), inspect_confidence="sequence"),
        target_accuracy=0.5,
        min_coverage=0.5,
    )
    assert one_way.passed is True
