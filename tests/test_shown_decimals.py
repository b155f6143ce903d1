"""Numbers that differ read differently in the terminal, Markdown and HTML outputs.

Bin edges and per-bin means get as many decimals as keep distinct values apart (200 bins'
edges are 0.005 apart; quantile bins above 0.999 end within 1e-4 of each other), and a gate's
limit is shown as given while its value gets as many decimals as put it on its side of the
limit (an ECE of 0.05004 read ``0.0500`` beside a limit of ``0.0500`` and failed). Every
expected string below is worked out by hand from the rows.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from calibcli.cli import app
from calibcli.render import terminal
from calibcli.render.html_blocks import Ids, bins_table, gate
from calibcli.render.markdown import markdown_summary

runner = CliRunner()


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _rows(confidence, right, wrong):
    return [{"confidence": confidence, "correct": True}] * right + [
        {"confidence": confidence, "correct": False}
    ] * wrong


def _plain(renderable) -> str:
    out = io.StringIO()
    Console(file=out, width=300, color_system=None).print(renderable)
    return out.getvalue()


def _html_cells(html: str) -> list[str]:
    """The text of each table cell and row header, tags dropped."""
    return [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", html)]


# --------------------------------------------------------------------------- bins


def _two_close_bins(tmp_path):
    """Bins [0.340, 0.345) and [0.345, 0.350) of 200: 3 rows at 0.34496 (2 right: 2/3 =
    0.66667) and 1,000 rows at 0.34504 (667 right: 0.667). At 3 decimals both means read
    0.345 and both accuracies 0.667; the means part at 5 (0.34496, 0.34504), the
    accuracies at 4 (0.6667, 0.6670)."""
    rows = _rows(0.34496, 2, 1) + _rows(0.34504, 667, 333)
    return _write(tmp_path / "close.jsonl", rows)


def test_200_bins_terminal_labels_and_means_are_distinct(tmp_path):
    result = runner.invoke(app, ["reliability", _two_close_bins(tmp_path), "--bins", "200", "-q"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.startswith("[")]
    labels = [line.split(")")[0].split("]")[0] for line in lines]
    assert len(lines) == 200 and len(set(labels)) == 200
    assert lines[0].startswith("[0.000, 0.005)") and lines[-1].startswith("[0.995, 1.000]")
    first = next(line.split() for line in lines if line.startswith("[0.340, 0.345)"))
    second = next(line.split() for line in lines if line.startswith("[0.345, 0.350)"))
    assert first[2:5] == ["3", "0.34496", "0.6667"]
    assert second[2:5] == ["1,000", "0.34504", "0.6670"]


def test_200_bins_html_labels_and_means_are_distinct(tmp_path):
    page = tmp_path / "r.html"
    result = runner.invoke(
        app,
        ["reliability", _two_close_bins(tmp_path), "--bins", "200", "-q", "--html", str(page)],
    )
    assert result.exit_code == 0, result.output
    cells = _html_cells(page.read_text().split(">bin</th>", 1)[1].split("</table>", 1)[0])
    # more than 50 bins: the table lists the two populated ones
    assert cells[cells.index("[0.340, 0.345)") :][1:4] == ["3", "0.34496", "0.6667"]
    assert cells[cells.index("[0.345, 0.350)") :][1:4] == ["1,000", "0.34504", "0.6670"]


def test_ten_uniform_bins_keep_two_and_three_decimals(tmp_path):
    rows = _rows(0.05, 1, 1) + _rows(0.95, 3, 1)
    result = runner.invoke(app, ["reliability", _write(tmp_path / "u.jsonl", rows), "-q"])
    lines = [line.split() for line in result.stdout.splitlines() if line.startswith("[")]
    assert [line[0] + " " + line[1] for line in lines] == [
        f"[{k / 10:.2f}, {(k + 1) / 10:.2f}{']' if k == 9 else ')'}" for k in range(10)
    ]
    assert lines[0][2:5] == ["2", "0.050", "0.500"] and lines[9][2:5] == ["4", "0.950", "0.750"]


# Quantile bins of confidences near 1: the edges 0.999, 0.9995, 0.9998 and 1 part at 4
# decimals; the means 0.5, 0.9992, 0.9996 and 0.99996 at 5 (at 4, 0.99996 reads 1.0000, as
# if every prediction were certain); the accuracies 0.5, 0.6667, 0.66674 and 1 at 5.
NEAR_ONE = {
    "bin_lower": [0.0, 0.999, 0.9995, 0.9998],
    "bin_upper": [0.999, 0.9995, 0.9998, 1.0],
    "count": [10, 10, 10, 10],
    "confidence": [0.5, 0.9992, 0.9996, 0.99996],
    "accuracy": [0.5, 0.6667, 0.66674, 1.0],
}
NEAR_ONE_ROWS = [
    ["[0.0000, 0.9990)", "10", "0.50000", "0.50000"],
    ["[0.9990, 0.9995)", "10", "0.99920", "0.66670"],
    ["[0.9995, 0.9998)", "10", "0.99960", "0.66674"],
    ["[0.9998, 1.0000]", "10", "0.99996", "1.00000"],
]


def test_quantile_bins_near_one_terminal():
    text = _plain(terminal.reliability_table(NEAR_ONE, "t", ascii_only=True))
    rows = [line.split()[:5] for line in text.splitlines() if line.startswith("[")]
    assert [[f"{r[0]} {r[1]}", *r[2:]] for r in rows] == NEAR_ONE_ROWS


def test_quantile_bins_near_one_html():
    cells = _html_cells(bins_table(NEAR_ONE, "t"))
    body = cells[5:]  # after the five column headers: bin, count, confidence, accuracy, gap
    assert [body[i * 5 : i * 5 + 4] for i in range(4)] == NEAR_ONE_ROWS


# --------------------------------------------------------------------------- gates


def _outputs(tmp_path, args):
    """The terminal's gate rows, the Markdown gate rows and the HTML gate cells of a run."""
    summary, page = tmp_path / "s.md", tmp_path / "p.html"
    result = runner.invoke(app, [*args, "-q", "--summary", str(summary), "--html", str(page)])
    assert result.exit_code == 1, result.output
    shown = result.stdout.split("Gate: FAILED", 1)[1].splitlines()[3:]
    md = [line for line in summary.read_text().splitlines() if "**no**" in line]
    html = _html_cells(page.read_text().split("<caption>Gate checks</caption>", 1)[1])
    return [line.split() for line in shown if line.strip()], md, html


@pytest.mark.parametrize(
    ("confidence", "limit", "value"),
    [
        # 1 bin: ECE = |mean confidence - accuracy| = 0.55004 - 0.5 = 0.05004; at 4 decimals
        # it read 0.0500 beside a limit of 0.0500
        (0.55004, "0.05", "0.05004"),
        # ECE 0.0414 against 0.04139: the limit as given (it read 0.0414, as the value),
        # the value at 4 decimals, already above it
        (0.5414, "0.04139", "0.0414"),
        # ECE 0.54139 - 0.5 = 0.04139000000000004 in doubles, above 0.04139: it fails, and
        # reads above it (never 0.04139, as if equal)
        (0.54139, "0.04139", "0.0414"),
    ],
)
def test_calibrate_gate_value_reads_apart_from_its_limit(tmp_path, confidence, limit, value):
    preds = _write(tmp_path / "p.jsonl", _rows(confidence, 1, 1))
    args = ["calibrate", preds, "--bins", "1", "--min-populated-bins", "1", "--max-ece", limit]
    rows, md, html = _outputs(tmp_path, args)
    assert rows == [["ece", "(pooled)", value, limit, "fail"]]
    assert md == [f"| ece | {limit} | {value} | **no** |"]
    assert html[html.index("ece") :][:5] == ["ece", "(pooled)", value, f"≤ {limit}", "fail"]


def test_compare_margin_reads_apart_from_the_increase(tmp_path):
    """1 bin, 50 rows a side, half right: BASE's ECE 0.55 - 0.5 = 0.05, NEW's 0.56004 - 0.5 =
    0.06004; the increase 0.01004 exceeds the margin 0.01 and read 0.0100 beside 0.0100."""
    base = _write(tmp_path / "b.jsonl", _rows(0.55, 25, 25))
    new = _write(tmp_path / "n.jsonl", _rows(0.56004, 25, 25))
    args = ["compare", base, new, "--unpaired", "--bins", "1", "--min-populated-bins", "1"]
    args += ["--max-increase", "ece=0.01", "--gate-on", "estimate"]
    rows, md, html = _outputs(tmp_path, args)
    assert rows == [["ece_increase", "(pooled)", "0.01004", "0.01", "fail"]]
    assert md == ["| ece_increase | 0.01 | 0.01004 | **no** |"]
    cells = html[html.index("ece_increase") :][:5]
    assert cells == ["ece_increase", "(pooled)", "0.01004", "≤ 0.01", "fail"]


def test_threshold_min_coverage_reads_apart_from_the_coverage(tmp_path):
    """20 right rows at 0.99 and 20 wrong at 0.1, A = 0.8: accepting the 20 right rows
    passes (P[Binom(20, 0.2) = 0] = 0.8^20 = 0.0115 <= 0.05), adding the wrong ones does not;
    the coverage 0.5 is below 0.50001, and read 0.5000 beside 0.5000: the limit as given."""
    preds = _write(tmp_path / "t.jsonl", _rows(0.99, 20, 0) + _rows(0.1, 0, 20))
    args = ["threshold", preds, "--target-accuracy", "0.8", "--min-coverage", "0.50001"]
    rows, md, html = _outputs(tmp_path, args)
    assert rows == [["coverage", "(pooled)", "0.5000", ">=", "0.50001", "fail"]]
    assert md == ["| coverage | >= 0.50001 | 0.5000 | **no** |"]
    cells = html[html.index("coverage", html.index("limit")) :][:5]
    assert cells == ["coverage", "(pooled)", "0.5000", "≥ 0.50001", "fail"]


GATES = [
    # (check, upper bound?, terminal cells, Markdown "limit | value", HTML cells)
    (
        {"metric": "perplexity", "threshold": 12.5, "value": 12.500001, "passed": False},
        False,
        ["12.500001", "12.5"],
        "12.5 | 12.500001",
        ["12.500001", "≤ 12.5"],
    ),
    (
        {"metric": "tokens", "minimum": 1000, "value": 999, "passed": False},
        False,
        ["999", ">=", "1,000"],
        ">= 1,000 | 999",
        ["999", "≥ 1,000"],
    ),
    (
        {"metric": "ece", "threshold": 0.05, "value": 0.05, "passed": True},
        False,  # equal: the value reads as the limit does, to the usual 4 decimals
        ["0.0500", "0.05"],
        "0.05 | 0.0500",
        ["0.0500", "≤ 0.05"],
    ),
    (
        {"metric": "ece", "threshold": 0.04139, "value": 0.04139, "passed": True},
        False,  # equal: at 4 decimals the value would read 0.0414, above the limit
        ["0.04139", "0.04139"],
        "0.04139 | 0.04139",
        ["0.04139", "≤ 0.04139"],
    ),
    (
        # upper bound: the estimate 0.0499996 and the upper end 0.0500004 read below and
        # above 0.05 at 7 decimals (at 4 to 6 both read 0.05), and the row shows both at 7
        {
            "metric": "ece",
            "threshold": 0.05,
            "estimate": 0.0499996,
            "upper": 0.0500004,
            "value": 0.0500004,
            "passed": False,
        },
        True,
        ["0.0499996", "0.0500004", "0.05"],
        "0.05 | 0.0500004",
        ["0.0499996", "0.0500004", "≤ 0.05"],
    ),
]


@pytest.mark.parametrize(("check", "upper", "term", "md", "html"), GATES)
def test_every_gate_kind_in_every_output(check, upper, term, md, html):
    found = {"passed": check["passed"], "bound": "upper" if upper else "estimate"}
    found["checks"] = [check]
    text = _plain(terminal._gate({"gate": found})[0])
    row = next(line.split() for line in text.splitlines() if line.startswith(check["metric"]))
    assert row[2:-1] == term
    summary = markdown_summary({"command": "calibrate", "gate": found}, ["x.jsonl"])
    assert f"| {check['metric']} | {md} |" in summary
    cells = _html_cells(gate(Ids(), found))
    first = cells.index(check["metric"], cells.index("reason"))
    assert cells[first + 2 : first + 2 + len(html)] == html


def test_quantile_bins_near_one_chart_tips():
    """The chart's hover text gives the edges as the per-bin table does: apart from each other
    and from 0 and 1 (ten uniform bins keep two decimals)."""
    from calibcli.render.svg import reliability_chart

    chart = reliability_chart(NEAR_ONE, uid="c", title="t", summary="s")
    tips = re.findall(r"<title>bin \[([^\]]*)\]", chart)
    assert tips == ["0.0000, 0.9990", "0.9990, 0.9995", "0.9995, 0.9998", "0.9998, 1.0000"]
    uniform = {
        "bin_lower": [k / 10 for k in range(10)],
        "bin_upper": [(k + 1) / 10 for k in range(10)],
        "count": [1] * 10,
        "confidence": [(k + 0.5) / 10 for k in range(10)],
        "accuracy": [0.5] * 10,
    }
    tips = re.findall(
        r"<title>bin \[([^\]]*)\]", reliability_chart(uniform, uid="u", title="t", summary="s")
    )
    assert tips == [f"{k / 10:.2f}, {(k + 1) / 10:.2f}" for k in range(10)]
