"""An option that decides which rows are read, or how a value is taken from them, given twice
with two values is refused, as a gate is: click keeps the last value of a single-valued option
without a word, so `--by task` appended after a CI's `--by subject`, or a second
--confidence-field, would change every figure and gate without a word.

Every option of every command is classified here: a reading option (tested below), a gate or
a setting a gate reads (tests/test_gates_given_once.py), one whose last value is kept because
no figure depends on it (outputs, resources), or one that is repeated by design. A new option
fails the classification until it is placed."""

from __future__ import annotations

import json

import pytest
import typer.main
from harness import run, write_jsonl
from test_gates_given_once import GATES

from calibcli.cli import app

# two values each reading option accepts, by option; each is tested on every command having it
VALUES = {
    "--confidence-field": ("confidence", "c2"),
    "--correct-field": ("correct", "ok"),
    "--format": ("jsonl", "auto"),
    "--mc-norm": ("none", "bytes"),
    "--scorer": ("match", "includes"),
    "--inspect-confidence": ("auto", "sequence"),
    "--gold-field": ("gold", "answer"),
    "--choices": ("A,B", "A,B,C"),
    "--by": ("task", "subject"),
    "--id-field": ("id", "key"),
    "--nll-field": ("nll", "nll2"),
    "--tokens-field": ("tokens", "tokens2"),
    "--bytes-field": ("bytes", "bytes2"),
    "--words-field": ("words", "words2"),
    "--logprobs-field": ("logprobs", "lp"),
    "--kind": ("calibration", "auto"),
    "--part": ("1/2", "2/2"),
    "--table": ("always", "auto"),
    "--bootstrap-samples": ("200", "300"),
    "--seed": ("0", "1"),
    "--method": ("platt", "isotonic"),
    "--bins": ("10", "5"),  # where no gate reads it, the figures and the bins shown still do
}
READ = "give it once: the rows read, and every figure and gate on them, depend on it"
RESAMPLES = "give it once: the resamples kept, and the intervals from them, depend on it"
THEN = {
    "--table": "give it once: the figures the summary can give depend on it",
    "--bootstrap-samples": RESAMPLES,
    "--seed": RESAMPLES,
    "--method": "give it once: the calibrator fitted depends on it",
    "--bins": "give it once: the binned figures a gate reads depend on it",
}
# given twice, the last value is kept: where the report goes, and what reading may cost
LAST_WINS = {
    "-o",
    "--output",
    "--plot",
    "--html",
    "--summary",
    "--annotations",
    "--workers",
    "--max-line-mb",
    "--max-document-mb",
}
# repeated by design: each value adds one (a series label, a fit file, a figure's margin)
REPEATED = {"--label", "--fit", "--max-increase", "--max-decrease"}


def _options():
    """(command, option, param) of every option of every command."""
    for name, command in typer.main.get_command(app).commands.items():
        for param in command.params:
            if param.param_type_name == "option":
                yield name, param.opts[0], param


def _reading():
    """(command, option) of every reading option, in the order of the commands' options."""
    gated = set(GATES)
    return [
        (name, option)
        for name, option, _ in _options()
        if option in VALUES and (name, option) not in gated
    ]


READING = _reading()


def test_every_option_of_every_command_is_classified():
    gated = set(GATES)
    unplaced = []
    for name, option, param in _options():
        if (name, option) in gated or option in LAST_WINS or option in REPEATED:
            continue
        if getattr(param, "is_flag", False) or option in VALUES:
            continue
        unplaced.append((name, option))
    assert unplaced == []


def test_the_reading_options_are_the_ones_expected():
    assert ("calibrate", "--confidence-field") in READING
    assert ("perplexity", "--nll-field") in READING
    assert ("apply", "--by") in READING and ("apply", "--confidence-field") in READING
    assert ("summarize", "--part") in READING and ("summarize", "--kind") in READING
    assert ("fit", "--method") in READING
    # the gate file covers calibrate's --seed (the bootstrap's); summarize's is its resamples'
    assert ("calibrate", "--seed") not in READING and ("summarize", "--seed") in READING
    # every reading option is met on some command
    assert {option for _, option in READING} == set(VALUES)
    assert len(READING) >= 70


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reading")
    rows = [
        {
            "id": i,
            "key": f"k{i}",
            "confidence": (i % 10 + 0.5) / 10,
            "c2": ((i * 7) % 10 + 0.5) / 10,
            "correct": i % 3 != 0,
            "ok": i % 4 != 0,
            "task": "ab"[i % 2],
            "subject": "xyz"[i % 3],
        }
        for i in range(60)
    ]
    nll = [
        {"id": i, "key": f"k{i}", "task": "ab"[i % 2], "nll": 2.0 + i / 10, "tokens": 3}
        for i in range(10)
    ]
    made = {
        "calibration": write_jsonl(folder / "preds.jsonl", rows),
        "perplexity": write_jsonl(folder / "nll.jsonl", nll),
        "calibrator": folder / "platt.json",
    }
    fitted = run(["fit", made["calibration"], "--method", "platt", "-o", made["calibrator"], "-q"])
    assert fitted.exit_code == 0, fitted.output
    return made


def _args(command, inputs, out, option):
    """The command with what it needs besides ``option``, writing its report or output to
    ``out``."""
    c, p = inputs["calibration"], inputs["perplexity"]
    if command == "perplexity":
        return [command, p, "-o", out, "-q"]
    if command == "compare":
        return [command, c, c, "-o", out, "-q"]
    if command == "threshold":
        return [command, c, "--target-accuracy", "0.6", "-o", out, "-q"]
    if command == "apply":
        return [command, inputs["calibrator"], c, "-o", out, "-q"]
    if command == "fit":
        method = [] if option == "--method" else ["--method", "platt"]
        return [command, c, "-o", out, "-q", *method]
    if command == "summarize":
        resamples = ["--bootstrap-samples", "200"] if option == "--seed" else []
        return [command, c, "--output", out, "-q", *resamples]
    return [command, c, "-o", out, "-q"]


@pytest.mark.parametrize(("command", "option"), READING)
def test_a_reading_option_given_twice_with_two_values_is_refused(tmp_path, inputs, command, option):
    first, then = VALUES[option]
    out = tmp_path / "out.json"
    result = run([*_args(command, inputs, out, option), option, first, option, then])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"Error: {option} is given twice ({first}, then {then}): "
        f"{THEN.get(option, READ)} (see 'calibcli {command} -h')\n"
    )
    assert result.stdout == ""
    assert not out.exists()


@pytest.mark.parametrize(("command", "option"), READING)
def test_the_same_reading_option_twice_is_the_option_once(tmp_path, inputs, command, option):
    first, _ = VALUES[option]
    once, twice = tmp_path / "once.json", tmp_path / "twice.json"
    a = run([*_args(command, inputs, once, option), option, first])
    b = run([*_args(command, inputs, twice, option), option, first, option, first])
    assert (b.exit_code, b.stdout) == (a.exit_code, a.stdout)
    assert b.stderr == a.stderr.replace(str(once), str(twice))
    assert twice.exists() == once.exists()
    if once.exists():
        assert twice.read_bytes() == once.read_bytes()


def test_the_options_not_given_keep_their_defaults(tmp_path, inputs):
    # --correct-field defaults to correct, --format to auto: the report is that of naming them
    plain, named = tmp_path / "plain.json", tmp_path / "named.json"
    c = inputs["calibration"]
    a = run(["calibrate", c, "-o", plain, "-q"])
    b = run(["calibrate", c, "-o", named, "-q", "--correct-field", "correct", "--format", "auto"])
    assert a.exit_code == b.exit_code == 0, a.output + b.output
    assert json.loads(plain.read_text()) == json.loads(named.read_text())
    assert json.loads(plain.read_text())["n"] == 60


def test_a_second_by_group_is_refused_not_taken(tmp_path, inputs):
    # the case that motivates the rule: a CI's own --by, then an appended one
    out = tmp_path / "report.json"
    c = inputs["calibration"]
    args = ["calibrate", c, "-o", out, "--by", "task", "--gate-each", "--max-ece", "0.9"]
    result = run([*args, "--by", "id"])
    assert result.exit_code == 2
    assert "--by is given twice (task, then id)" in result.stderr
    assert not out.exists()


def test_a_last_wins_option_keeps_its_last_value(tmp_path, inputs):
    first, last = tmp_path / "first.json", tmp_path / "last.json"
    result = run(["calibrate", inputs["calibration"], "-q", "-o", first, "-o", last])
    assert result.exit_code == 0, result.output
    assert last.exists() and not first.exists()
