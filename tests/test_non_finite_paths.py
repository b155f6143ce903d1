"""The paths of a report's ``non_finite`` map name one value each, whatever the --by group names
hold: a key with ``.``, ``[``, ``]`` or ``\\`` has them escaped by a backslash, every renderer
reads the paths with one parser, and the inf goes back in that group's cell and nowhere else.
Names without those characters keep the paths they always had."""

from __future__ import annotations

import json
import math
import re

from harness import run, write_jsonl

from calibcli.render.html import restore_non_finite
from calibcli.reports import as_shown
from calibcli.reports.paths import path_to, split_path
from calibcli.reports.report import finish

BACKSLASH = "b\\s"  # the four characters b, backslash, s
INFINITE = ["a.b", "c.ci", "x[0]", BACKSLASH]  # groups whose one sequence has an infinite NLL


def test_a_key_with_the_path_syntax_is_escaped_and_reads_back():
    assert path_to("", "perplexity") == "perplexity"
    assert path_to("groups", "a.b") == "groups.a\\.b"
    assert path_to("groups", "x[0]") == "groups.x\\[0\\]"
    assert path_to("groups", BACKSLASH) == "groups.b\\\\s"
    assert split_path("groups.a\\.b.perplexity") == ["groups", "a.b", "perplexity"]
    assert split_path("groups.x\\[0\\].ci.nll[1]") == ["groups", "x[0]", "ci", "nll", 1]
    assert split_path("groups.b\\\\s.perplexity") == ["groups", BACKSLASH, "perplexity"]
    assert split_path("gate.checks[0].value") == ["gate", "checks", 0, "value"]
    for name in ["a.b", "c.ci", "x[0]", BACKSLASH, "a\\.b", "]", "[", "\\", "", "a[1]b"]:
        assert split_path(path_to(path_to("groups", name), "ece")) == ["groups", name, "ece"]


def _perplexity_rows(tmp_path):
    lines = [f'{{"nll": 1e309, "tokens": 5, "g": {json.dumps(g)}}}\n' for g in INFINITE]
    # group c: NLL 3 over 5 tokens, perplexity exp(0.6) = 1.8221, 0.6 / ln 2 = 0.8656 bits
    lines.append('{"nll": 3.0, "tokens": 5, "g": "c"}\n')
    return write_jsonl(tmp_path / "p.jsonl", [], raw_lines=lines)


def _table_cells(out: str, name: str) -> list[str]:
    """The cells after ``name`` on its row of the groups table (``name`` then 4 cells)."""
    found = re.findall(rf"^{re.escape(name)} +(\S+) +(\S+) +(\S+) +(\S+) *$", out, re.M)
    assert len(found) == 1, (name, out)
    return list(found[0])


def _gate_cell(out: str, name: str) -> str:
    found = re.findall(rf"^perplexity +{re.escape(name)} +(\S+) +100 +(?:pass|fail) *$", out, re.M)
    assert len(found) == 1, (name, out)
    return found[0]


def _check_terminal(out: str) -> None:
    for name in INFINITE:
        assert _table_cells(out, name) == ["inf", "inf", "5", "1"]
        assert _gate_cell(out, name) == "inf"
    assert _table_cells(out, "c") == ["1.8221", "0.8656", "5", "1"]
    assert _gate_cell(out, "c") == "1.8221"


def test_perplexity_groups_named_with_the_path_syntax_show_inf(tmp_path):
    # the table is drawn from the report's JSON body too (as_shown), the page by render
    rows, report, page = _perplexity_rows(tmp_path), tmp_path / "r.json", tmp_path / "r.html"
    gate = ["--by", "g", "--max-perplexity", "100", "--gate-each"]
    live = run(["perplexity", rows, *gate])
    assert live.exit_code == 1, live.stderr
    _check_terminal(live.stdout)
    assert run(["perplexity", rows, *gate, "-q", "-o", report]).exit_code == 1
    body = json.loads(report.read_text())
    groups = {k: v for k, v in body["non_finite"].items() if k.startswith("groups.")}
    assert sorted(groups) == sorted(
        f"groups.{escaped}.{key}"
        for escaped in ["a\\.b", "c\\.ci", "x\\[0\\]", "b\\\\s"]
        for key in ["total_nll", "mean_nll", "perplexity", "bits_per_token"]
    )
    # the page drawn later from the saved JSON
    assert run(["render", report, "--html", page]).exit_code == 0
    html = page.read_text()
    for name in INFINITE:
        assert f'<th scope="row">{name}</th><td>inf</td><td>inf</td><td>5</td><td>1</td>' in html
    assert '<th scope="row">c</th><td>1.8221</td><td>0.8656</td><td>5</td><td>1</td>' in html


def _differences(a, b, path=()):
    """The key/index paths where two JSON-like values differ."""
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return [d for k in a for d in _differences(a[k], b[k], (*path, k))]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differences(x, y, (*path, i))
        ]
    return [] if a == b else [path]


def test_a_group_named_like_a_path_into_another_group_changes_only_itself(tmp_path):
    # groups c and c.ci; in c.ci a right answer at confidence 0 has an infinite NLL, and the
    # upper end of its 95% interval is inf (about 64% of resamples draw that row), as pooled
    rows = [
        {"confidence": 0.3 + 0.6 * (i % 10) / 10, "correct": i % 3 != 0, "g": g}
        for g in ("c", "c.ci")
        for i in range(40)
    ] + [{"confidence": 0.0, "correct": True, "g": "c.ci"}]
    args = ["calibrate", write_jsonl(tmp_path / "c.jsonl", rows), "--by", "g", "--ci", "0.95"]
    result = run([*args, "--bootstrap", "200", "--json"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["non_finite"] == {
        "nll": "inf",
        "ci.nll[1]": "inf",
        "groups.c\\.ci.nll": "inf",
        "groups.c\\.ci.ci.nll[1]": "inf",
    }
    marked = [
        ("nll",),
        ("ci", "nll", 1),
        ("groups", "c.ci", "nll"),
        ("groups", "c.ci", "ci", "nll", 1),
    ]
    for shown in (as_shown(body), restore_non_finite(body)):
        assert sorted(_differences(body, shown), key=str) == sorted(marked, key=str)
        assert shown["groups"]["c.ci"]["nll"] == math.inf
        assert shown["groups"]["c"]["ci"]["nll"] == body["groups"]["c"]["ci"]["nll"]
    assert json.loads(result.stdout) == body  # neither changed the body it was given


def test_plain_names_keep_their_paths(tmp_path):
    lines = ['{"nll": 1e309, "tokens": 5, "g": "a"}\n', '{"nll": 3.0, "tokens": 5, "g": "b"}\n']
    rows, report = write_jsonl(tmp_path / "p.jsonl", [], raw_lines=lines), tmp_path / "r.json"
    gate = ["--by", "g", "--max-perplexity", "100", "--gate-each", "-q", "-o", report]
    assert run(["perplexity", rows, *gate]).exit_code == 1
    text = report.read_text()
    marks = ", ".join(
        f'"{path}": "inf"'
        for path in [
            *["total_nll", "mean_nll", "perplexity", "bits_per_token"],
            *["groups.a.total_nll", "groups.a.mean_nll", "groups.a.perplexity"],
            *["groups.a.bits_per_token", "macro.perplexity", "macro.bits_per_token"],
            *["gate.checks[0].value", "gate.checks[1].value"],
        ]
    )
    assert f'"non_finite": {{{marks}}}' in text


def test_the_unexplained_null_warning_names_the_escaped_path():
    body = {"groups": {"a.b": {"x": math.inf}, "a": {"b": {"x": 1.0}}}}
    report = finish(body, [], [], mark_infinite=True)
    assert report.body["non_finite"] == {"groups.a\\.b.x": "inf"}
    assert report.body["warnings"] == [
        "1 value(s) are not finite numbers and were written as null: groups.a\\.b.x"
    ]
    shown = as_shown(json.loads(json.dumps(report.body)))
    assert shown["groups"] == {"a.b": {"x": math.inf}, "a": {"b": {"x": 1.0}}}
