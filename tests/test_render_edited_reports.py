"""``calibcli render`` refuses a saved report that was edited or relabelled into something
calibcli never wrote (exit 2, one line naming the file and the field) rather than drawing it:
a report relabelled as another command, a figure of the wrong JSON type, a gate whose verdict
contradicts its own checks. Every report calibcli writes still renders, and the terminal and
Markdown renderers show a contradictory gate as failed.
"""

from __future__ import annotations

import copy
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from harness import refused, run

from calibcli.render import markdown_summary, print_report
from calibcli.reports import as_shown

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"
OVER = str(SAMPLE / "overconfident.jsonl")
WELL = str(SAMPLE / "well_calibrated.jsonl")
UNDER = str(SAMPLE / "underconfident.jsonl")
PPL = str(SAMPLE / "perplexity.jsonl")

WRITTEN = {
    "calibrate gated by group": [
        "calibrate",
        OVER,
        "--by",
        "subject",
        "--max-ece",
        "0.05",
        "--gate-each",
    ],
    "calibrate --ci": ["calibrate", OVER, "--ci", "0.9", "--bootstrap", "200", "--max-ece", "0.5"],
    "calibrate --recalibrate": ["calibrate", OVER, "--recalibrate", "platt", "--by", "subject"],
    "reliability": ["reliability", OVER, "--by", "subject"],
    "threshold": ["threshold", OVER, "--target-accuracy", "0.8", "--min-coverage", "0.2"],
    "threshold --fit": ["threshold", OVER, "--target-accuracy", "0.7", "--fit", UNDER],
    "compare paired": ["compare", WELL, OVER, "--bootstrap", "200", "--max-increase", "ece=0.01"],
    "compare unpaired": ["compare", WELL, UNDER, "--unpaired", "--bootstrap", "200"],
    "perplexity": ["perplexity", PPL, "--by", "source", "--max-perplexity", "5"],
    "threshold --calibrator --by": [
        "threshold",
        OVER,
        "--target-accuracy",
        "0.7",
        "--calibrator",
        "{map}",
        "--by",
        "subject",
        "--min-coverage",
        "0.1",
        "--gate-each",
    ],
    "calibrate --calibrator": ["calibrate", OVER, "--calibrator", "{map}", "--max-brier", "0.5"],
}
# no rows: every estimate is null, and threshold and compare have nothing to choose or compare
NO_ROWS = {
    "calibrate": ["calibrate", "{empty}", "--ci", "0.9", "--max-ece", "0.05", "--by", "subject"],
    "reliability": ["reliability", "{empty}"],
    "threshold": ["threshold", "{empty}", "--target-accuracy", "0.8", "--min-coverage", "0.1"],
    "perplexity": ["perplexity", "{empty}", "--max-perplexity", "5"],
    "compare": ["compare", "{empty}", "{empty}", "--unpaired"],
}
WRITTEN.update({f"{name} of no rows": args for name, args in NO_ROWS.items()})


def saved(tmp_path: Path, args: list[str]) -> dict:
    path = tmp_path / "report.json"
    result = run([*args, "-o", path, "-q"])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def calibrate(tmp_path_factory) -> dict:
    args = ["calibrate", OVER, "--by", "subject", "--max-ece", "0.05"]
    return saved(tmp_path_factory.mktemp("cal"), args)


def render_refused(tmp_path: Path, body: dict) -> str:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(body))
    page = tmp_path / "page.html"
    line = refused("render", path, "--html", page)
    assert str(path) in line
    assert not page.exists()
    return line


@pytest.mark.parametrize("name", WRITTEN)
def test_every_report_calibcli_writes_renders(tmp_path, name):
    empty, calibrator = tmp_path / "empty.jsonl", tmp_path / "map.json"
    empty.write_text("")
    assert run(["fit", WELL, "--method", "platt", "-o", calibrator, "-q"]).exit_code == 0
    args = [a.format(empty=empty, map=calibrator) for a in WRITTEN[name]]
    body = saved(tmp_path, args)
    page = tmp_path / "page.html"
    result = run(["render", tmp_path / "report.json", "--html", page])
    assert result.exit_code == 0, result.stderr
    assert page.read_text().startswith("<!DOCTYPE html>")
    if "gate" in body:  # the verdict shown is the one calibcli wrote
        said = "passed" if body["gate"]["passed"] else "FAILED"
        assert f"<title>calibcli {body['command']} report — gate {said}</title>" in page.read_text()


def test_render_draws_a_calibrator_file(tmp_path):
    path = tmp_path / "map.json"
    assert run(["fit", OVER, "--method", "platt", "-o", path, "-q"]).exit_code == 0
    assert run(["render", path, "--html", tmp_path / "p.html"]).exit_code == 0


@pytest.mark.parametrize(
    ("command", "field"),
    [("threshold", "target_accuracy"), ("compare", "paired"), ("perplexity", "sequences")],
)
def test_a_relabelled_report_is_refused_naming_the_field(tmp_path, calibrate, command, field):
    body = {**calibrate, "command": command}
    line = render_refused(tmp_path, body)
    assert f"not a calibcli {command} report" in line and repr(field) in line


def test_a_gate_passed_against_its_failed_check_is_refused(tmp_path, calibrate):
    assert calibrate["gate"]["checks"][0]["passed"] is False
    body = copy.deepcopy(calibrate)
    body["gate"]["passed"] = True
    line = render_refused(tmp_path, body)
    assert "gate.passed is true but 1 of 1 checks failed" in line


def test_a_gate_without_checks_is_refused(tmp_path, calibrate):
    body = copy.deepcopy(calibrate)
    body["gate"].update(passed=True, checks=[])
    assert "gate.checks is []" in render_refused(tmp_path, body)


def test_a_gate_failed_with_every_check_passed_is_refused(tmp_path, calibrate):
    body = copy.deepcopy(calibrate)
    body["gate"]["checks"][0]["passed"] = True
    assert "gate.passed is false but 0 of 1 checks failed" in render_refused(tmp_path, body)


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        (("ece",), "0.01", 'ece is "0.01", not a number or null'),
        (("ece",), True, "ece is true, not a number or null"),
        (("n",), -5, "n is -5, not a whole number"),
        (("gate", "passed"), "false", 'gate.passed is "false", not true or false'),
        (("groups", "law", "brier"), "0.2", 'groups["law"].brier is "0.2"'),
        (("brier_decomposition", "resolution"), [1], "brier_decomposition.resolution is [1]"),
    ],
)
def test_a_figure_of_the_wrong_type_is_refused(tmp_path, calibrate, path, value, said):
    body = copy.deepcopy(calibrate)
    section = body
    for part in path[:-1]:
        section = section[part]
    section[path[-1]] = value
    assert said in render_refused(tmp_path, body)


def test_a_missing_figure_is_refused(tmp_path, calibrate):
    body = {k: v for k, v in calibrate.items() if k != "ece"}
    assert "it has no 'ece'" in render_refused(tmp_path, body)


def test_terminal_and_markdown_show_a_contradictory_gate_failed(calibrate):
    body = copy.deepcopy(calibrate)
    body["gate"]["passed"] = True  # its one check failed
    out = io.StringIO()
    with redirect_stdout(out):
        print_report(as_shown(body))
    assert "Gate: FAILED" in out.getvalue() and "Gate: passed" not in out.getvalue()
    summary = markdown_summary(as_shown(body), ["x.jsonl"])
    assert "gate FAILED" in summary and "gate passed" not in summary
    body["gate"].update(checks=[])
    assert "gate FAILED" in markdown_summary(as_shown(body), ["x.jsonl"])
