"""The HTML report (``--html PATH``, ``calibcli render``): a pure function of the JSON body.

Three kinds of test: the function itself (escaping, figures equal to the JSON's numbers, no
reference to anything outside the page, the size bound, the body's newer keys), the CLI wiring,
and the page in a real browser (headless Chromium from the system's packages): the DOM it
builds, a screenshot that is not blank in light and dark mode, a printed PDF, and a network log
without a single request from the page. The browser tests skip locally when Chromium is not
installed and fail on CI, whose .ci/run installs it.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from harness import run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibcli.render.digits import group_cell
from calibcli.render.html import CSP, NotAReport, html_report
from calibcli.reports.figures import CALIBRATION, lookup

ROOT = Path(__file__).resolve().parent.parent
OVER = ROOT / "sample_data" / "overconfident.jsonl"
WELL = ROOT / "sample_data" / "well_calibrated.jsonl"
UNDER = ROOT / "sample_data" / "underconfident.jsonl"
PPL = ROOT / "sample_data" / "perplexity.jsonl"
MINUS = "\u2212"


def shown(x: float, digits: int = 4) -> str:
    """How the page writes a float: fixed decimals, a true minus sign."""
    text = f"{x:.{digits}f}"
    if text.startswith("-") and not text.strip("-0."):
        text = text[1:]
    return text.replace("-", MINUS)


# --------------------------------------------------------------------------- page parsing


class Page(HTMLParser):
    """What a test reads of a page: its tables (caption, headers, rows of cell texts and
    ``<data value>``), every element's attributes, the charts' titles, and the texts of
    descriptions, captions, paragraphs and list items."""

    VOID = frozenset({"meta", "link", "br", "img", "input", "hr"})
    TEXTS = frozenset({"title", "desc", "caption", "p", "li", "h2", "figcaption"})

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self.elements: list[tuple[str, dict]] = []
        self.texts: dict[str, list[str]] = {}
        self.chart_titles: list[str] = []  # the <title> of each <svg>, not the tooltips
        self._stack: list[str] = []
        self._open: list[tuple[str, str | None, list[str]]] = []  # text elements being read
        self._cell: list[str] | None = None
        self._values: list[str] = []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs))
        parent = self._stack[-1] if self._stack else None
        if tag not in self.VOID:
            self._stack.append(tag)
        if tag == "table":
            self.tables.append({"caption": "", "headers": [], "rows": [], "values": []})
        elif tag == "tr":
            self._row, self._row_values = [], []
        elif tag in ("td", "th"):
            self._cell, self._values = [], []
        elif tag == "data":
            self._values.append(attrs["value"])
        if tag in self.TEXTS:
            self._open.append((tag, parent, []))

    def handle_endtag(self, tag):
        while self._stack and self._stack.pop() != tag:
            pass
        if tag in self.TEXTS and self._open and self._open[-1][0] == tag:
            _, parent, parts = self._open.pop()
            text = "".join(parts)
            self.texts.setdefault(tag, []).append(text)
            if tag == "title" and parent == "svg":
                self.chart_titles.append(text)
            if tag == "caption":
                self.tables[-1]["caption"] = text
        if tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell)
            if "thead" in self._stack:
                self.tables[-1]["headers"].append(text)
            else:
                self._row.append(text)
                self._row_values.append(self._values[0] if self._values else None)
            self._cell = None
        elif tag == "tr" and "thead" not in self._stack and self._row:
            self.tables[-1]["rows"].append(self._row)
            self.tables[-1]["values"].append(self._row_values)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        for _, _, parts in self._open:
            parts.append(data)

    def table(self, caption: str) -> dict:
        found = [t for t in self.tables if t["caption"].startswith(caption)]
        assert len(found) == 1, [t["caption"] for t in self.tables]
        return found[0]

    def rows(self, caption: str) -> dict[str, list[str]]:
        return {row[0]: row[1:] for row in self.table(caption)["rows"]}

    def all(self, tag: str, css: str | None = None) -> list[dict]:
        return [
            a
            for t, a in self.elements
            if t == tag and (css is None or css in (a.get("class") or "").split())
        ]


# --------------------------------------------------------------------------- bodies


def report(*args: object) -> dict:
    result = run(args)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[Path, Path]:
    """The first 400 rows of the well-calibrated and the over-confident samples (the same
    questions): enough for a comparison by subject, in a fraction of the bootstrap's time."""
    folder = tmp_path_factory.mktemp("small")
    out = []
    for source in (WELL, OVER):
        lines = source.read_text().splitlines(keepends=True)[:400]
        (folder / source.name).write_text("".join(lines))
        out.append(folder / source.name)
    return out[0], out[1]


@pytest.fixture(scope="module")
def bodies(small) -> dict[str, dict]:
    """Real report bodies from the sample data, one per page kind."""
    ci = ("--ci", "0.95", "--bootstrap", "200")
    return {
        "calibrate": report("calibrate", OVER, "--json", *ci, "--max-ece", "0.05"),
        "calibrate_by": report(
            "calibrate", OVER, "--json", "--by", "subject", "--max-ece", "0.3", "--gate-each"
        ),
        "recalibrated": report("calibrate", OVER, "--json", "--recalibrate", "platt"),
        "reliability": report("reliability", OVER, "--json"),
        "reliability_well": report("reliability", WELL, "--json"),
        "reliability_under": report("reliability", UNDER, "--json"),
        "threshold": report(
            "threshold",
            OVER,
            "--target-accuracy",
            "0.8",
            "--json",
            "--by",
            "subject",
            "--min-coverage",
            "0.1",
        ),
        "compare": report(
            "compare",
            *small,
            "--json",
            "--by",
            "subject",
            "--max-increase",
            "ece=0.01",
            "--bootstrap",
            "200",
        ),
        "perplexity": report("perplexity", PPL, "--json"),
    }


def _side(body: dict) -> dict:
    keys = ("n", "populated_bins", "accuracy", "mean_confidence", "ece", "brier", "reliability")
    return {k: body[k] for k in keys}


@pytest.fixture(scope="module")
def extended(bodies) -> dict[str, dict]:
    """Bodies with the keys being added to the reports: ``per_file``, both reliability
    sections of a recalibration, a threshold's ``coverage_curve`` and compare's ``sides``."""
    files = copy.deepcopy(bodies["reliability"])
    files["per_file"] = {
        "sample_data/well_calibrated.jsonl": _side(bodies["reliability_well"]),
        "sample_data/overconfident.jsonl": _side(bodies["reliability"]),
    }
    recal = copy.deepcopy(bodies["recalibrated"])
    recal["recalibration"]["before"]["reliability"] = bodies["reliability"]["reliability"]
    recal["recalibration"]["after"]["reliability"] = recal["reliability"]
    thresh = copy.deepcopy(bodies["threshold"])
    coverage = [(i + 1) / 400 for i in range(400)]
    thresh["coverage_curve"] = {
        "coverage": coverage,
        "accuracy": [0.95 - 0.4 * c for c in coverage],
    }
    comp = copy.deepcopy(bodies["compare"])
    comp["sides"] = {
        "base": _side(bodies["reliability_well"]),
        "new": _side(bodies["reliability"]),
    }
    return {"per_file": files, "recalibrated": recal, "threshold": thresh, "compare": comp}


# --------------------------------------------------------------------------- self-contained


def _assert_self_contained(page: str) -> None:
    lowered = page.lower()
    assert re.findall(r"http(?!-equiv=)", lowered) == []  # the CSP's meta is http-equiv
    assert "//" not in page
    assert re.findall(r"url\(", lowered) == []
    assert "@import" not in lowered and "<script" not in lowered
    parsed = Page(page)
    for tag, attrs in parsed.elements:
        for name in ("src", "href", "srcset", "action", "data", "poster", "xlink:href"):
            if name in attrs:
                assert attrs[name] in ("#gate", "data:,"), (tag, attrs)
    policy = [a["content"] for a in parsed.all("meta") if a.get("http-equiv")]
    assert policy == [CSP] == ["default-src 'none'; style-src 'unsafe-inline'; img-src data:"]


def test_every_page_is_self_contained(bodies, extended):
    for body in [*bodies.values(), *extended.values()]:
        page = html_report(body, sources=["sample_data/overconfident.jsonl"])
        _assert_self_contained(page)
        assert page.startswith("<!DOCTYPE html>")
        assert "@media (prefers-color-scheme:dark)" in page and "@media print" in page


def test_the_same_body_gives_the_same_page(bodies):
    body = bodies["calibrate_by"]
    assert html_report(copy.deepcopy(body)) == html_report(body)


def test_unknown_keys_are_ignored(bodies):
    body = bodies["calibrate"]
    extra = {**body, "some_future_key": {"x": [1, 2, "<b>"]}, "another": None}
    assert html_report(extra) == html_report(body)


# --------------------------------------------------------------------------- figures


def test_headline_figures_equal_the_json(bodies):
    body = bodies["calibrate"]
    table = Page(html_report(body)).table("Figures")
    assert table["headers"] == ["figure", "value", "95% interval"]
    rows = {
        row[0].strip(): (row, value)
        for row, value in zip(table["rows"], table["values"], strict=True)
    }
    checked = 0
    for figure in CALIBRATION:
        row, values = rows[figure.label]
        x = lookup(body, figure.key)
        if figure.kind == "bins":
            assert row[1] == f"{x} of {body['bins_used']}"
            continue
        if figure.kind == "count":
            assert row[1] == f"{x:,}"
            continue
        assert float(values[1]) == x  # the full precision, as the JSON holds it
        assert row[1] == shown(x)
        lo, hi = body["ci"][figure.key]
        assert row[2] == f"[{shown(lo)}, {shown(hi)}]"
        checked += 1
    assert checked == sum(f.interval for f in CALIBRATION)


def test_per_bin_table_and_diagram_equal_the_bins(bodies):
    body = bodies["reliability"]
    rel = body["reliability"]
    page = Page(html_report(body))
    rows = page.table("Reliability per bin")["rows"]
    assert len(rows) == len(rel["count"])
    for i, row in enumerate(rows):
        assert row[1] == f"{rel['count'][i]:,}"
        if rel["count"][i] == 0:
            assert row[2:4] == ["n/a", "n/a"]
            continue
        acc, conf = rel["accuracy"][i], rel["confidence"][i]
        lo, hi = rel["accuracy_ci"][i]
        assert row[2:6] == [
            shown(conf, 3),
            shown(acc, 3),
            f"[{shown(lo, 3)}, {shown(hi, 3)}]",
            ("+" if conf > acc else "") + shown(conf - acc, 3),
        ]
    bars = page.all("rect", "acc")
    populated = [i for i, c in enumerate(rel["count"]) if c]
    assert [int(b["data-bin"]) for b in bars] == populated
    for bar in bars:
        i = int(bar["data-bin"])
        assert float(bar["data-accuracy"]) == rel["accuracy"][i]
        assert float(bar["height"]) == pytest.approx(200 * rel["accuracy"][i], abs=0.01)
    counts = page.all("rect", "count")
    assert [int(c["data-count"]) for c in counts] == [rel["count"][i] for i in populated]
    tallest = max(counts, key=lambda c: float(c["height"]))
    assert int(tallest["data-count"]) == max(rel["count"])
    over = page.all("rect", "gap-over")  # every bin of the over-confident sample
    assert [float(g["data-confidence"]) for g in over] == [rel["confidence"][i] for i in populated]
    assert len(page.all("path", "diag")) == 1 and len(page.all("path", "ci")) == len(populated)


def test_every_chart_has_a_text_alternative(bodies, extended):
    for body in [*bodies.values(), *extended.values()]:
        page = Page(html_report(body))
        ids = {a["id"] for _, a in page.elements if "id" in a}
        assert len(ids) == sum(1 for _, a in page.elements if "id" in a)  # unique
        for svg in page.all("svg"):
            assert svg["role"] == "img"
            assert all(part in ids for part in svg["aria-labelledby"].split())
        assert len(page.chart_titles) == len(page.all("svg"))
        for desc in page.texts.get("desc", []):
            assert len(desc) > 80
        for table in page.tables:
            assert table["caption"] and table["headers"]
        for tag, attrs in page.elements:
            if tag == "th":
                assert attrs.get("scope") in ("col", "row")


def test_the_gate_and_warnings_are_shown(bodies):
    body = bodies["calibrate_by"]
    page = Page(html_report(body))
    checks = page.table("Gate checks")["rows"]
    assert len(checks) == len(body["gate"]["checks"]) == 5
    assert [r[1] for r in checks] == ["(pooled)", "algebra", "biology", "history", "law"]
    assert [r[-2] for r in checks] == ["pass", "pass", "pass", "pass", "fail"]
    assert any("✗ Gate FAILED" in p for p in page.texts["p"])
    groups = page.rows("By group")
    assert list(groups) == ["algebra", "biology", "history", "law", "all (pooled)"]
    assert groups["law"][3] == shown(body["groups"]["law"]["ece"])
    assert len(page.all("svg")) == 1 + 4  # the pooled diagram and one per group
    threshold = Page(html_report(bodies["threshold"]))
    warnings = threshold.texts["li"]
    assert warnings == bodies["threshold"]["warnings"]


def test_threshold_curve_marks_the_chosen_threshold(bodies, extended):
    body = bodies["threshold"]
    page = Page(html_report(body))
    (curve,) = page.all("polyline", "curve")
    drawn = body.get("coverage_curve") or body["curve"]  # the denser curve when the body has it
    assert int(curve["data-points"]) == len(drawn["coverage"])
    (mark,) = page.all("path", "mark")
    assert float(mark["data-coverage"]) == body["guaranteed"]["coverage"]
    (plug,) = page.all("path", "plug")
    assert float(plug["data-coverage"]) == body["plug_in"]["coverage"]
    (target,) = page.all("path", "target")
    assert float(target["data-accuracy"]) == body["target_accuracy"]
    assert len(page.all("polyline", "lower")) == 1
    chosen = page.rows("Chosen thresholds")
    for key, name in (("guaranteed", "guaranteed"), ("plug_in", "plug-in (no guarantee)")):
        block, text = body[key], chosen[name][0]
        # t rounded, to as many decimals as accept the rows t accepts (tested by hand counts
        # in test_threshold_shown_digits.py)
        assert text == shown(block["threshold"], max(4, len(text.split(".")[1])))
        assert block["highest_rejected"] < float(text) <= block["lowest_accepted"]
    table = page.table("Risk–coverage")["rows"]
    # each row's threshold is cut (a prefix of its digits), above the next confidence down, so
    # it accepts that row's rows; the column has one width
    rows = zip(table, body["curve"]["threshold"], body["curve"]["highest_rejected"], strict=True)
    for row, t, below in rows:
        assert (repr(t) + "0" * 20).startswith(row[0]) and float(row[0]) <= t
        assert below is None or float(row[0]) > below
    assert len({len(r[0]) for r in table}) == 1
    assert any("t = " + chosen["guaranteed"][0] in d for d in page.texts["desc"])
    # the denser coverage_curve, when the body has one, is the curve drawn
    dense = Page(html_report(extended["threshold"]))
    (curve,) = dense.all("polyline", "curve")
    assert int(curve["data-points"]) == 400


def test_compare_table_tests_and_sides(bodies, extended):
    body = bodies["compare"]
    page = Page(html_report(body))
    rows = page.rows("Comparison (NEW − BASE)")
    ece = body["figures"]["ece"]
    lo, hi = ece["interval"]
    assert rows["ECE"] == [
        shown(ece["base"]),
        shown(ece["new"]),
        "+" + shown(ece["difference"]),
        f"[{shown(lo)}, {shown(hi)}]",
        "NEW worse",
    ]
    assert rows["accuracy"][-1] == "same"
    assert any("McNemar's exact test p = 1.0000" in p for p in page.texts["p"])
    assert any("DeLong's test" in p for p in page.texts["p"])
    assert list(page.rows("By group")) == ["algebra", "biology", "history", "law"]
    older = {k: v for k, v in body.items() if k != "sides"}  # a report without the sides
    assert Page(html_report(older)).all("svg") == []
    sides = Page(html_report(extended["compare"]))
    assert list(sides.rows("Each side")) == ["BASE", "NEW"]
    assert sides.chart_titles == ["Reliability diagram: BASE", "Reliability diagram: NEW"]


def test_recalibration_draws_before_and_after(bodies, extended):
    older = json.loads(json.dumps(bodies["recalibrated"]))  # a report without the curves
    for side in ("before", "after"):
        older["recalibration"][side].pop("reliability", None)
    plain = Page(html_report(older))
    assert plain.chart_titles == ["Reliability diagram: after recalibration"]
    assert list(plain.rows("Before and after recalibration"))[:3] == [
        "accuracy",
        "mean confidence",
        "ECE",
    ]
    both = Page(html_report(extended["recalibrated"]))
    assert both.chart_titles == [
        "Reliability diagram: after recalibration",
        "Reliability diagram: before",
        "Reliability diagram: after",
    ]
    before = extended["recalibrated"]["recalibration"]["before"]["reliability"]
    bars = both.all("rect", "acc")
    after = sum(1 for c in extended["recalibrated"]["reliability"]["count"] if c)
    drawn = [float(b["data-accuracy"]) for b in bars][
        after : after + sum(map(bool, before["count"]))
    ]
    assert drawn == [a for a in before["accuracy"] if a is not None]


def test_per_file_sections(extended):
    body = extended["per_file"]
    page = Page(html_report(body))
    rows = page.rows("By input file")
    assert list(rows) == [*body["per_file"], "all (pooled)"]
    well = body["per_file"]["sample_data/well_calibrated.jsonl"]
    assert rows["sample_data/well_calibrated.jsonl"][0] == f"{well['n']:,}"
    assert page.chart_titles[1:] == [
        "Reliability diagram: sample_data/well_calibrated.jsonl",
        "Reliability diagram: sample_data/overconfident.jsonl",
    ]


def test_non_finite_values_show_as_inf_and_nan(bodies):
    body = copy.deepcopy(bodies["perplexity"])
    body.update(perplexity=None, bits_per_token=None, mean_nll=None, byte_perplexity=None)
    body["groups"] = {"a": {"sequences": 1, "perplexity": None}, "b": {"sequences": 1}}
    body["non_finite"] = {
        "perplexity": "Infinity",
        "bits_per_token": "-Infinity",
        "mean_nll": "NaN",
        "groups.a.perplexity": "Infinity",
    }
    page = Page(html_report(body))
    rows = page.rows("Figures")
    assert rows["perplexity (per token)"] == ["inf"]
    assert rows["bits per token"] == [f"{MINUS}inf"]
    assert rows["mean NLL (nats/token)"] == ["NaN"]
    assert rows["byte perplexity"] == ["n/a"]  # null, and not named by non_finite
    assert page.rows("By group")["a"][0] == "inf"
    # list items are named key[i]
    rel = copy.deepcopy(bodies["reliability"])
    rel["reliability"]["accuracy"][6] = None
    rel["non_finite"] = {"reliability.accuracy[6]": "NaN"}
    assert Page(html_report(rel)).table("Reliability per bin")["rows"][6][3] == "NaN"


HOSTILE = [
    "<script>alert(1)</script>",
    "a & b &amp; c",
    "\"quoted\" 'single'",
    "lone \ud800 surrogate",
    "nul \x00 and bell \x07",
    "</table><h1>x",
    "http://example.invalid/x.png",
]


def test_every_string_is_escaped(bodies):
    body = copy.deepcopy(bodies["calibrate_by"])
    sections = list(body["groups"].values())
    body["groups"] = {name: sections[i % 4] for i, name in enumerate(HOSTILE)}
    body["warnings"] = [*HOSTILE]
    body["gate"]["checks"][1]["group"] = HOSTILE[0]
    body["gate"]["failed_groups"] = HOSTILE
    page = html_report(body, sources=["<in>&.jsonl"])
    page.encode("utf-8")  # lone surrogates are written as escapes: the page is valid UTF-8
    assert "<script" not in page and "</table><h1>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "a &amp; b &amp;amp; c" in page
    assert "&quot;quoted&quot; &#x27;single&#x27;" in page
    assert "lone \\ud800 surrogate" in page and "nul \\x00 and bell \\x07" in page
    assert "<code>&lt;in&gt;&amp;.jsonl</code>" in page
    parsed = Page(page)
    expected = [
        h.replace("\ud800", "\\ud800").replace("\x00", "\\x00").replace("\x07", "\\x07")
        for h in HOSTILE
    ]
    # group names by the tables' rule for names (a quote, a non-printable: the literal)
    assert list(parsed.rows("By group"))[:-1] == [group_cell(h) for h in HOSTILE]
    assert parsed.texts["li"] == expected


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([1, 2], "not an object"),
        ({"schema_version": 1}, "no 'command'"),
        ({"schema_version": 1, "command": "bogus"}, "unknown command 'bogus'"),
        ({"schema_version": 1, "command": "calibrator"}, "unknown command"),
        ({"schema_version": 2, "command": "calibrate"}, "schema_version 2"),
        ({"command": "calibrate"}, "schema_version None"),
    ],
)
def test_what_is_not_a_report(body, message):
    with pytest.raises(NotAReport, match=re.escape(message)):
        html_report(body)


def _json_values():
    leaves = st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False)
    leaves = leaves | st.text(max_size=8)
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=6,
    )


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*path, i))


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_report_renders_or_is_refused(bodies, extended, data):
    """Whatever one value of a real report is replaced with, the page is drawn or the body is
    refused as no report; it never crashes."""
    name = data.draw(st.sampled_from(sorted(bodies) + ["x" + k for k in sorted(extended)]))
    body = copy.deepcopy(extended[name[1:]] if name.startswith("x") else bodies[name])
    paths = [p for p in _paths(body) if p]
    path = data.draw(st.sampled_from(paths))
    parent = body
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = data.draw(_json_values())
    try:
        page = html_report(body)
    except NotAReport:
        return
    page.encode("utf-8")


def _many_groups(body: dict, groups: int, *, gate: bool) -> dict:
    """``body`` with ``groups`` --by groups copied from its own (long names, as real ones can
    be) and, with ``gate``, one gate check per group."""
    big = copy.deepcopy(body)
    sections = list(body["groups"].values())
    names = [f"subject <{i:04d}> & a rather long group name" for i in range(groups)]
    big["groups"] = {n: sections[i % len(sections)] for i, n in enumerate(names)}
    if gate:
        check = body["gate"]["checks"][-1]
        big["gate"]["checks"] = [check] + [{**check, "group": n} for n in names]
    return big


@pytest.mark.parametrize("name", ["calibrate_by", "threshold", "compare"])
def test_a_thousand_groups_stay_under_a_megabyte(bodies, name):
    body = bodies[name]
    big = _many_groups(body, 1000, gate=name == "calibrate_by")
    if name == "calibrate_by":
        big["recalibration"] = copy.deepcopy(bodies["recalibrated"]["recalibration"])
        ba = {k: big["recalibration"][k] for k in ("before", "after")}
        big["recalibration"]["groups"] = {n: ba for n in big["groups"]}
    page = html_report(big)
    size = len(page.encode("utf-8"))
    assert size <= 1_000_000, size
    rows = Page(page).rows("By group")
    assert len(rows) >= 1000


# --------------------------------------------------------------------------- CLI


def test_calibrate_writes_the_page_beside_the_other_outputs(tmp_path):
    page_path, json_path = tmp_path / "report.html", tmp_path / "report.json"
    args = ["calibrate", OVER, "--max-ece", "0.05", "-o", json_path]
    plain = run(args)
    result = run([*args, "--html", page_path])
    assert result.exit_code == plain.exit_code == 1  # the gate fails; the page is written
    assert result.stdout == plain.stdout
    body = json.loads(json_path.read_text())
    assert page_path.read_text(encoding="utf-8") == html_report(body, sources=[str(OVER)])


@pytest.mark.parametrize(
    "args",
    [
        ["reliability", OVER],
        ["threshold", OVER, "--target-accuracy", "0.8"],
        ["compare", OVER, OVER, "--bootstrap", "200", "--id-field", "id"],
        ["calibrate", OVER, "--recalibrate", "platt"],
    ],
)
def test_each_command_writes_its_page(tmp_path, args):
    page_path = tmp_path / "report.html"
    result = run([*args, "--html", page_path, "--json"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    sources = [] if args[0] == "compare" else [str(OVER)]
    assert page_path.read_text(encoding="utf-8") == html_report(body, sources=sources)


def test_an_unwritable_html_path_fails_before_reading(tmp_path):
    result = run(["calibrate", tmp_path / "missing.jsonl", "--html", tmp_path / "no" / "r.html"])
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {tmp_path / 'no' / 'r.html'}: cannot write the HTML report: folder "
        f"{tmp_path / 'no'} does not exist\n"
    )


def test_bad_input_leaves_the_page_untouched(tmp_path):
    page_path = tmp_path / "r.html"
    page_path.write_text("before")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"confidence": 2, "correct": true}\n')
    assert run(["calibrate", bad, "--html", page_path]).exit_code == 2
    assert page_path.read_text() == "before"


@pytest.mark.parametrize("stdin", [False, True])
def test_render_draws_a_saved_report(tmp_path, stdin):
    saved = tmp_path / "report.json"
    run(["threshold", OVER, "--target-accuracy", "0.8", "-o", saved])
    page_path = tmp_path / "report.html"
    if stdin:
        result = run(["render", "-", "--html", page_path], input=saved.read_text())
    else:
        result = run(["render", saved, "--html", page_path])
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    expected = html_report(json.loads(saved.read_text()))
    assert page_path.read_text(encoding="utf-8") == expected


def test_render_exits_0_whatever_the_gate_said(tmp_path):
    saved = tmp_path / "report.json"
    assert run(["calibrate", OVER, "--max-ece", "0.01", "-o", saved]).exit_code == 1
    assert run(["render", saved, "--html", tmp_path / "r.html"]).exit_code == 0


def test_render_draws_a_calibrator_file(tmp_path):
    saved = tmp_path / "platt.json"
    run(["fit", OVER, "--method", "platt", "--by", "subject", "-o", saved])
    page_path = tmp_path / "platt.html"
    assert run(["render", saved, "--html", page_path]).exit_code == 0
    page = Page(page_path.read_text(encoding="utf-8"))
    params = json.loads(saved.read_text())["params"]
    assert page.rows("Parameters") == {k: [shown(v)] for k, v in params.items()}
    assert list(page.rows("By group")) == ["algebra", "biology", "history", "law"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not a calibcli report: invalid JSON at line 1, column 2"),
        (b'{"schema_version": 1, "command": "nope"}', "unknown command 'nope'"),
        (b"[]", "not a calibcli report: the JSON is not an object"),
        (b'{"a": "\xff"}', "not a calibcli report: not UTF-8 text (byte 8)"),
        (b"", "not a calibcli report: invalid JSON at line 1, column 1"),
    ],
)
def test_render_refuses_what_is_not_a_report(tmp_path, content, message):
    saved = tmp_path / "report.json"
    saved.write_bytes(content)
    page_path = tmp_path / "r.html"
    result = run(["render", saved, "--html", page_path])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {saved}: ") and message in result.stderr
    assert result.stderr.count("\n") == 1
    assert not page_path.exists()


def test_render_a_missing_report(tmp_path):
    result = run(["render", tmp_path / "none.json", "--html", tmp_path / "r.html"])
    assert result.exit_code == 2
    assert "cannot read the report: No such file or directory" in result.stderr


def test_render_is_listed_after_compare():
    help_text = run(["--help"]).stdout
    assert help_text.index("compare") < help_text.index("render")


# --------------------------------------------------------------------------- a real browser

CHROMIUM = shutil.which("chromium")
ON_CI = bool(os.environ.get("CI"))
if CHROMIUM is None and ON_CI:  # .ci/run installs it: a skip there would hide a broken step
    pytest.fail("CI must run the browser tests: chromium is not installed", pytrace=False)
browser = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)"
)
# No host name resolves (the host-resolver rule), so nothing leaves the machine, not even the
# browser's own background requests; the other flags keep those few.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--hide-scrollbars",
)


def browse(tmp_path: Path, page: Path, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def _page_requests(net_log: Path) -> list[str]:
    """The URLs of the requests the page made: every URL request in Chromium's network log
    but the browser's own (an update check, an account check), which have no initiator."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [
        e["params"]["url"]
        for e in log["events"]
        if e["type"] == start
        and "url" in e.get("params", {})
        and e["params"].get("initiator") != "not an origin"
    ]


@browser
def test_the_browser_builds_the_page_and_fetches_nothing(tmp_path, bodies, extended):
    body = copy.deepcopy(extended["recalibrated"])
    body["groups"] = {h: bodies["calibrate_by"]["groups"]["law"] for h in HOSTILE[:4]}
    page_path = tmp_path / "report.html"
    page_path.write_text(html_report(body), encoding="utf-8")
    net_log = tmp_path / "net.json"
    dom = Page(browse(tmp_path, page_path, f"--log-net-log={net_log}", "--dump-dom").stdout)
    assert _page_requests(net_log) == []
    assert [t for t, _ in dom.elements].count("script") == 0
    # what the browser built: the diagrams, the bars with the JSON's numbers, the tables
    assert len(dom.all("svg")) == 3 + 4  # after; before and after; one per group
    accuracy = body["recalibration"]["after"]["reliability"]["accuracy"]
    before = body["recalibration"]["before"]["reliability"]["count"]
    # the bars of the pooled diagram (after) and of the "before" one come first
    first = sum(1 for c in body["reliability"]["count"] if c) + sum(1 for c in before if c)
    after = [float(b["data-accuracy"]) for b in dom.all("rect", "acc")]
    assert after[first : first + 8] == [a for a in accuracy if a is not None]
    figures = dom.rows("Figures")
    assert figures["ECE"] == [shown(body["ece"])]
    assert list(dom.rows("By group"))[:4] == [group_cell(h) for h in HOSTILE[:4]]
    # the check works: a page that does load an image shows up in the log
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><img src="http://calibcli.invalid/x.png" alt="x">')
    browse(tmp_path, control, f"--log-net-log={net_log}", "--dump-dom")
    assert _page_requests(net_log) == ["http://calibcli.invalid/x.png"]


def _pixels(png: Path):
    import matplotlib.image

    return (matplotlib.image.imread(png)[..., :3] * 255).round().astype(int)


def _share(pixels, colour: str) -> float:
    import numpy as np

    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)])
    return float((np.abs(pixels - rgb).max(axis=-1) <= 6).mean())


@browser
@pytest.mark.parametrize(
    ("scheme", "background", "bars"),
    [("light", "#ffffff", "#0072b2"), ("dark", "#16181b", "#56b4e9")],
)
def test_the_screenshot_shows_the_report(tmp_path, bodies, scheme, background, bars):
    page_path = tmp_path / "report.html"
    page_path.write_text(html_report(bodies["calibrate"]), encoding="utf-8")
    png = tmp_path / "shot.png"
    extra = ["--force-dark-mode"] if scheme == "dark" else []
    browse(tmp_path, page_path, *extra, "--window-size=1200,900", f"--screenshot={png}")
    pixels = _pixels(png)
    assert pixels.shape[:2] == (900, 1200)
    assert _share(pixels, background) > 0.5  # the page's background
    assert _share(pixels, bars) > 0.005  # the diagram's accuracy bars are drawn
    colours = {tuple(p) for p in pixels[::7, ::7].reshape(-1, 3)}
    assert len(colours) > 50  # text, lines and bars: not a blank page


@browser
def test_the_page_prints(tmp_path, bodies):
    page_path = tmp_path / "report.html"
    page_path.write_text(html_report(bodies["threshold"]), encoding="utf-8")
    pdf = tmp_path / "report.pdf"
    browse(
        tmp_path, page_path, "--force-dark-mode", "--no-pdf-header-footer", f"--print-to-pdf={pdf}"
    )
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 20_000


def test_shown_rounds_like_the_page():
    assert shown(-0.00001) == "0.0000" and shown(-0.25) == f"{MINUS}0.2500"
    assert math.isclose(float(shown(0.12345).replace(MINUS, "-")), 0.1235)


@pytest.mark.parametrize("target", ["0.9995", "0.8005", "0.8"])
def test_threshold_page_states_the_target_as_given(tmp_path, target):
    # 0.9995 to 3 decimals would read 1.000: a guarantee of every accepted row right
    body = report("threshold", OVER, "--target-accuracy", target, "--json")
    assert body["target_accuracy"] == float(target)
    page = html_report(body)
    assert f"their accuracy ≥ {target} with probability" in page
    assert f"target accuracy {target};" in page
    assert f">target {target}</text>" in page
