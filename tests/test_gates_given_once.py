"""A gate given twice with two values is refused, on every command and every gate option.

click keeps the last value of a single-valued option without a word, so a looser gate appended
after a CI's own (a Makefile's flags, then a job's) would loosen it. The gates are found from the
commands themselves: an option whose help starts with "Gate" decides the exit code. So do the
settings of one: --ci, whose level sets the gate under --gate-on upper, --min-populated-bins,
which closes the binned gates on too few populated bins, --bins (one bin's ECE never exceeds ten
bins', by the triangle inequality) and --strategy, and the settings of the guaranteed threshold
that threshold's --min-coverage reads: --target-accuracy, --delta, --method and --grid (an
appended --target-accuracy 0.5 accepts more rows than a CI's 0.6). The bootstrap's settings
(--bootstrap, --seed, --bootstrap-scheme) decide the interval a gate on its upper end reads, and
--calibrator, --recalibrate and --folds the recalibrated figures the gates then read."""

from __future__ import annotations

import json

import pytest
import typer.main
from harness import make_rows, run, write_jsonl

from calibcli.cli import app

# two values each gate option accepts, the second looser than the first
VALUES = {
    "--gate-on": ("upper", "estimate"),
    "--min-coverage": ("0.5", "0.1"),
    "--min-rows": ("1000", "1"),
    "--min-tokens": ("1000", "1"),
    "--max-increase": ("ece=0.01", "ece=0.5"),
    "--max-decrease": ("auroc=0.01", "auroc=0.5"),
    "--ci": ("0.95", "0.5"),
    "--min-populated-bins": ("3", "1"),
    "--bins": ("10", "1"),
    "--strategy": ("uniform", "quantile"),
    "--target-accuracy": ("0.6", "0.5"),
    "--delta": ("0.05", "0.5"),
    "--method": ("ltt", "sgr"),
    "--grid": ("121", "0"),
    "--bootstrap": ("300", "200"),
    "--seed": ("0", "1"),
    "--bootstrap-scheme": ("multinomial", "poisson"),
    "--recalibrate": ("platt", "isotonic"),
    "--folds": ("5", "2"),
}
BINNED = "give it once: the binned figures a gate reads depend on it"
GUARANTEED = "give it once: the guaranteed threshold a gate reads depends on it"
RESAMPLED = "give it once: the interval a gate on its upper end reads depends on it"
RECALIBRATED = (
    "give it once: the figures, and the gates that read them, are those after recalibration"
)
# what the error says to do, for the settings that are not gates themselves
THEN = {
    "--strategy": BINNED,
    "--target-accuracy": GUARANTEED,
    "--delta": GUARANTEED,
    "--method": GUARANTEED,
    "--grid": GUARANTEED,
    "--bootstrap": RESAMPLED,
    "--seed": RESAMPLED,
    "--bootstrap-scheme": RESAMPLED,
    "--calibrator": RECALIBRATED,
    "--recalibrate": RECALIBRATED,
    "--folds": RECALIBRATED,
    "--ci": "give it once: under --gate-on upper it sets the gate",
    "--min-populated-bins": "give it once: it closes the binned gates on too few bins",
    "--bins": BINNED,
}
SETTINGS = [
    ("calibrate", "--ci"),
    ("compare", "--ci"),
    ("calibrate", "--min-populated-bins"),
    ("compare", "--min-populated-bins"),
    ("calibrate", "--bins"),
    ("compare", "--bins"),
    ("calibrate", "--strategy"),
    ("threshold", "--target-accuracy"),
    ("threshold", "--delta"),
    ("threshold", "--method"),
    ("threshold", "--grid"),
    ("calibrate", "--bootstrap"),
    ("calibrate", "--seed"),
    ("calibrate", "--bootstrap-scheme"),
    ("compare", "--bootstrap"),
    ("compare", "--seed"),
    ("calibrate", "--calibrator"),
    ("reliability", "--calibrator"),
    ("threshold", "--calibrator"),
    ("calibrate", "--recalibrate"),
    ("calibrate", "--folds"),
]
THRESHOLD = ("0.05", "0.5")  # every --max-FIGURE of calibrate and perplexity
# --gate-on says which end a gate reads: it needs one
READ_BY_GATE_ON = {
    "calibrate": ["--max-ece", "0.5", "--bootstrap", "200"],
    "compare": ["--max-increase", "ece=0.5"],
}
# what else a setting needs on calibrate to be read at all
NEEDS = {
    "--bootstrap": ["--ci", "0.9"],
    "--seed": ["--ci", "0.9", "--bootstrap", "200"],
    "--bootstrap-scheme": ["--ci", "0.9", "--bootstrap", "200"],
    "--folds": ["--recalibrate", "platt"],
}


def _gates():
    """(command, option) of every option whose help starts with "Gate"."""
    found = []
    for name, command in typer.main.get_command(app).commands.items():
        for param in command.params:
            if (getattr(param, "help", None) or "").startswith("Gate"):
                found.append((name, param.opts[0]))
    return found


GATES = _gates() + SETTINGS


def test_the_gates_are_the_ones_expected():
    # a new gate option is covered by the tests below once it is here
    assert ("calibrate", "--max-ece") in GATES
    assert ("calibrate", "--gate-on") in GATES and ("compare", "--gate-on") in GATES
    assert ("perplexity", "--max-perplexity") in GATES
    assert ("threshold", "--min-coverage") in GATES
    assert ("compare", "--max-increase") in GATES
    assert len(GATES) >= 16


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gates")
    rows = make_rows(60, seed=5)
    calibration = write_jsonl(folder / "preds.jsonl", rows)
    perplexity = write_jsonl(
        folder / "nll.jsonl", [{"nll": 2.0 + i / 10, "tokens": 3} for i in range(10)]
    )
    made = {"calibration": calibration, "perplexity": perplexity}
    for method in ("platt", "temperature"):
        made[method] = folder / f"{method}.json"
        fitted = run(["fit", calibration, "--method", method, "-o", made[method], "-q"])
        assert fitted.exit_code == 0, fitted.output
    return made


def _args(command, inputs, out, option=None):
    if option == "--gate-on":
        return [*_args(command, inputs, out), *READ_BY_GATE_ON[command]]
    if command == "perplexity":
        return [command, inputs["perplexity"], "-o", out]
    if command == "compare":
        c = inputs["calibration"]
        resamples = [] if option == "--bootstrap" else ["--bootstrap", "200"]
        return [command, c, c, "-o", out, "-q", *resamples]
    if command == "threshold":
        target = [] if option == "--target-accuracy" else ["--target-accuracy", "0.6"]
        return [command, inputs["calibration"], *target, "-o", out]
    needs = NEEDS.get(option, []) if command == "calibrate" else []
    return [command, inputs["calibration"], "-o", out, "-q", *needs]


def _values(option, inputs):
    if option == "--calibrator":
        return str(inputs["platt"]), str(inputs["temperature"])
    return VALUES.get(option, THRESHOLD)


@pytest.mark.parametrize(("command", "option"), GATES)
def test_a_gate_given_twice_with_two_values_is_refused(tmp_path, inputs, command, option):
    first, then = _values(option, inputs)
    out = tmp_path / "report.json"
    result = run([*_args(command, inputs, out, option), option, first, option, then])
    assert result.exit_code == 2, result.output
    if option in ("--max-increase", "--max-decrease"):
        figure = first.split("=")[0]
        message = f"Error: {option} {figure} is given twice ({first}, then {then}): "
        message += "give each figure once\n"
    else:
        shown = [first, then]
        if option != "--calibrator":
            shown = [str(float(v)) if "." in v or "max" in option else v for v in shown]
        message = f"Error: {option} is given twice ({shown[0]}, then {shown[1]}): "
        message += f"{THEN.get(option, 'give each gate once')} (see 'calibcli {command} -h')\n"
    assert result.stderr == message
    assert result.stdout == ""
    assert not out.exists()


@pytest.mark.parametrize(("command", "option"), GATES)
def test_the_same_gate_twice_is_the_gate_once(tmp_path, inputs, command, option):
    first, _ = _values(option, inputs)
    once = tmp_path / "once.json"
    twice = tmp_path / "twice.json"
    a = run([*_args(command, inputs, once, option), option, first])
    b = run([*_args(command, inputs, twice, option), option, first, option, first])
    assert a.exit_code in (0, 1), a.output
    assert (b.exit_code, b.stderr) == (a.exit_code, a.stderr)
    assert twice.read_text() == once.read_text()


def test_a_gate_not_given_keeps_its_default(tmp_path, inputs):
    # calibrate gates on the estimate unless told otherwise; compare on the interval's end
    out = tmp_path / "report.json"
    result = run([*_args("calibrate", inputs, out), "--max-ece", "0.9"])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["gate"]["bound"] == "estimate"


def test_a_gate_value_is_still_checked(tmp_path, inputs):
    out = tmp_path / "report.json"
    result = run([*_args("calibrate", inputs, out), "--max-ece", "0.05", "--max-ece", "nan"])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: Invalid value for '--max-ece': nan is not a finite")
    assert not out.exists()


def test_the_settings_not_given_keep_their_defaults(tmp_path, inputs):
    out = tmp_path / "report.json"
    result = run(_args("threshold", inputs, out))
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert (report["target_accuracy"], report["delta"]) == (0.6, 0.05)
    assert (report["method"], report["grid"]) == ("ltt", 121)
    result = run(_args("calibrate", inputs, out))
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["strategy"] == "uniform"


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("--target-accuracy", "1.5", "1.5 is not strictly between 0 and 1"),
        ("--delta", "1.5", "1.5 is not strictly between 0 and 1"),
        ("--grid", "1", "1 is not 0 (every distinct confidence) or 2 to 1,000,000"),
    ],
)
def test_a_threshold_setting_is_still_checked(tmp_path, inputs, option, value, reason):
    out = tmp_path / "report.json"
    args = [*_args("threshold", inputs, out, option), option, value, option, value]
    result = run(args)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: Invalid value for '{option}': {reason}")
    assert not out.exists()


def test_the_target_accuracy_is_still_required(tmp_path, inputs):
    result = run(["threshold", inputs["calibration"]])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: Missing option '--target-accuracy'.")


@pytest.mark.parametrize("command", ["calibrate", "reliability", "threshold"])
def test_one_calibrator_named_two_ways_is_given_once(tmp_path, inputs, command):
    platt = inputs["platt"]
    other_name = platt.parent / ".." / platt.parent.name / platt.name  # the same file
    once, twice = tmp_path / "once.json", tmp_path / "twice.json"
    a = run([*_args(command, inputs, once), "--calibrator", platt])
    b = run([*_args(command, inputs, twice), "--calibrator", platt, "--calibrator", other_name])
    assert a.exit_code == 0, a.output
    assert (b.exit_code, b.stderr) == (a.exit_code, a.stderr)
    assert twice.read_text() == once.read_text()
