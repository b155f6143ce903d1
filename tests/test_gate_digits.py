"""A failed gate's line on stderr and its GitHub annotation show the value with as many digits
as put it on its side of the limit (at least 6 significant ones), and the limit as given: an
ECE of 0.05000001 against --max-ece 0.05 reads ``ece = 0.05000001 exceeds --max-ece 0.05``,
never ``ece = 0.05 exceeds --max-ece 0.05``. And under a gate on the upper end of the bootstrap
interval, a floor's count (``--min-rows``) shows in every renderer: a count has no interval.

The inputs hold rows of one confidence c, all right, so that every row falls in one bin and the
ECE is exactly 1 - c (hand-computed with fractions below); the limits sit within 1e-8 of it,
closer than 6 significant digits tell apart."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest
from harness import run, write_jsonl

from calibcli.reports.gate import Gate, evaluate

FAILED = re.compile(r"^gate failed: (\S+) = (\S+) (?:exceeds|is below) (--\S+) (\S+)$")
ANNOTATED = re.compile(
    r"^::error title=calibcli gate::(\S+) = (\S+) (?:exceeds|is below) (--\S+) (\S+)$"
)


def failure_lines(stderr: str) -> list[tuple[str, str, str, str]]:
    """(figure, value, option, limit) of each "gate failed:" line, then of each annotation."""
    lines = stderr.splitlines()
    said = [m.groups() for m in map(FAILED.match, lines) if m]
    annotated = [m.groups() for m in map(ANNOTATED.match, lines) if m]
    assert said and said == annotated, stderr
    return said


def one_confidence(path, confidence: str, n: int = 20):
    """n rows at ``confidence``, all right: one populated bin, ECE = 1 - confidence."""
    rows = [{"id": i, "confidence": float(confidence), "correct": True} for i in range(n)]
    return write_jsonl(path, rows)


@pytest.mark.parametrize(
    ("confidence", "limit"),
    [
        ("0.94999999", "0.05"),  # ECE 0.05000001: 6 digits give 0.05, the limit itself
        ("0.9499999951", "0.050000004"),  # ECE 0.0500000049: 6 digits give 0.05, below it
        ("0.69999999", "0.30000000000000004"),  # ECE 0.30000001; a limit that :g shows as 0.3
    ],
)
def test_a_failed_max_reads_above_its_limit(tmp_path, confidence, limit):
    ece = 1 - Fraction(confidence)
    assert ece > Fraction(float(limit))  # the check fails: the value lies above the limit
    rows = one_confidence(tmp_path / "rows.jsonl", confidence)
    args = ["--max-ece", limit, "--min-populated-bins", "1", "-q", "--annotations", "github"]
    result = run(["calibrate", rows, *args])
    assert result.exit_code == 1
    [(figure, value, option, shown_limit)] = failure_lines(result.stderr)
    assert (figure, option) == ("ece", "--max-ece")
    assert float(shown_limit) == float(limit)  # the limit as given, read back exactly
    assert float(value) > float(limit)


def test_a_compare_margin_reads_above_its_limit(tmp_path):
    base = write_jsonl(
        tmp_path / "base.jsonl",
        [{"id": i, "confidence": 1.0, "correct": True} for i in range(20)],  # ECE 0
    )
    new = one_confidence(tmp_path / "new.jsonl", "0.98999999")  # ECE 0.01000001
    args = ["--max-increase", "ece=0.01", "--gate-on", "estimate", "--min-populated-bins", "1"]
    result = run(["compare", base, new, *args, "-q", "--annotations", "github"])
    assert result.exit_code == 1
    [(figure, value, option, shown_limit)] = failure_lines(result.stderr)
    assert (figure, option, shown_limit) == ("ece_increase", "--max-increase", "ece=0.01")
    assert float(value) > 0.01


class Section:
    """A report section as the gate reads it."""

    def __init__(self, **figures):
        self.figures = figures
        self.closed = {}


@pytest.mark.parametrize(
    ("figure", "value", "limit"),
    [
        ("perplexity", 1.0000001e20, 1e20),  # 6 digits: 1e+20, the limit
        ("perplexity", 12.345641, 12.34564),  # 6 digits: 12.3456, below the limit
        ("ece", 0.1 + 0.2, 0.3),  # 0.30000000000000004: 17 digits apart from 0.3
    ],
)
def test_a_maximum_reads_above_its_limit(figure, value, limit):
    [line] = evaluate(Gate({figure: limit}), Section(**{figure: value})).failures
    shown, option = re.fullmatch(rf"{figure} = (\S+) exceeds (--max-{figure} \S+)", line).groups()
    assert float(shown) > limit
    assert float(option.split()[1]) == limit


@pytest.mark.parametrize(
    ("value", "limit"),
    [
        (0.79999999, 0.8),  # 6 digits: 0.8, the limit
        (0.6666669, 0.66666695),  # 6 digits: 0.666667, above the limit
        (0.1 + 0.2, 0.30000000000000009),  # a limit :g shows as 0.3, below the value
    ],
)
def test_a_minimum_reads_below_its_limit(value, limit):
    gate = Gate({}, minimums={"coverage": limit})
    [line] = evaluate(gate, Section(coverage=value)).failures
    shown, given = re.fullmatch(r"coverage = (\S+) is below --min-coverage (\S+)", line).groups()
    assert float(shown) < limit
    assert float(given) == limit


# --------------------------------------------------------------------------- counts, gated upper


def plain(text: str) -> str:
    """An HTML page's text: tags dropped, spaces collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", text).split())


def test_a_count_shows_in_every_renderer_under_an_upper_gate(tmp_path):
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [{"confidence": 0.5 + 0.01 * i, "correct": i % 3 != 0} for i in range(40)],
    )
    page, summary, report = tmp_path / "r.html", tmp_path / "r.md", tmp_path / "r.json"
    args = ["--max-ece", "0.9", "--min-rows", "5000", "--gate-on", "upper", "--bootstrap", "200"]
    result = run(["calibrate", rows, *args, "-q", "--html", page, "--summary", summary])
    assert result.exit_code == 1
    assert re.search(r"^n\s+\(pooled\)\s+40\s+40\s+>= 5,000\s+fail\s*$", result.stdout, re.M)
    assert "n (pooled) 40 40 ≥ 5,000 fail" in plain(page.read_text(encoding="utf-8"))
    assert "| n | >= 5,000 | 40 | **no** |" in summary.read_text(encoding="utf-8")
    assert "gate failed: n = 40 is below --min-rows 5000" in result.stderr
    run(["calibrate", rows, *args, "-q", "-o", report])
    rendered = tmp_path / "again.html"
    assert run(["render", report, "--html", rendered]).exit_code == 0
    assert "n (pooled) 40 40 ≥ 5,000 fail" in plain(rendered.read_text(encoding="utf-8"))


def test_compare_s_row_count_shows_under_its_upper_gate(tmp_path):
    def side(name, shift):
        rows = [
            {"id": i, "confidence": 0.5 + 0.01 * i - shift, "correct": i % 3 != 0}
            for i in range(40)
        ]
        return write_jsonl(tmp_path / name, rows)

    base, new = side("base.jsonl", 0.0), side("new.jsonl", 0.001)
    page = tmp_path / "c.html"
    args = ["--max-increase", "ece=0.5", "--min-rows", "500", "--bootstrap", "200", "-q"]
    result = run(["compare", base, new, *args, "--html", page])
    assert result.exit_code == 1
    assert re.search(r"^rows\s+\(pooled\)\s+40\s+40\s+>= 500\s+fail\s*$", result.stdout, re.M)
    assert "rows (pooled) 40 40 ≥ 500 fail" in plain(page.read_text(encoding="utf-8"))
    report = json.loads(run(["compare", base, new, *args, "--json"]).stdout)
    [rows] = [c for c in report["gate"]["checks"] if c["metric"] == "rows"]
    assert (rows["minimum"], rows["value"]) == (500, 40)
