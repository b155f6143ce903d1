"""Names from the data (groups, the --by field) as every table shows them: as they are, or as
their Python literal when they spell a table's own label, have a space at either end, hold a
character that is not printable (an escape sequence, a line break, a lone surrogate, a no-break
or zero-width space) or start with a quote. Every group's figures are on a row of their own
under a name no other group's row shows, a failing group's row says fail, no name is read as
markup, and a stdout that cannot encode a character gets escapes, never a crash.

The figures are hand counts: every group's rows sit at five confidences (0.55 to 0.95, twenty
rows each per unit of its size), right as often as the confidence says (a calibrated group:
accuracy 0.75, ECE 0) or 0.4 less often (a failing group: accuracy 0.35, ECE 0.4)."""

from __future__ import annotations

import html
import io
import json
import os
import pty
import re
import subprocess
import sys
from contextlib import redirect_stdout

import pytest
from harness import read_pty, run
from hypothesis import given, settings
from hypothesis import strategies as st
from rich import box
from rich.console import Console

from calibcli.render import terminal
from calibcli.render.digits import group_cell
from calibcli.render.plain_table import table_lines
from calibcli.reports import as_shown

CONFIDENCES = (0.55, 0.65, 0.75, 0.85, 0.95)
RIGHT = {False: (11, 13, 15, 17, 19), True: (3, 5, 7, 9, 11)}  # right answers of 20 per bin
GATE = ["--max-ece", "0.1", "--gate-each", "-q"]


def _rows(name, size, failing, field="g"):
    """``100 * size`` rows of group ``name``: accuracy 0.35 and ECE 0.4 when ``failing``, else
    accuracy 0.75 and ECE 0."""
    rows = []
    for confidence, right in zip(CONFIDENCES, RIGHT[failing], strict=True):
        for i in range(20 * size):
            rows.append({field: name, "confidence": confidence, "correct": i % 20 < right})
    return rows


def _write(path, groups, field="g"):
    """One JSONL file of the groups ``(name, size, failing)``; JSON escapes keep a lone
    surrogate writable."""
    rows = [row for name, size, failing in groups for row in _rows(name, size, failing, field)]
    lines = (json.dumps({"id": f"q{i}", **r}) + "\n" for i, r in enumerate(rows))
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _table(lines, title):
    """The body rows of the table titled ``title`` (up to its blank line)."""
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rule = start + 2  # the title, the header, the rule
    end = next((i for i in range(rule + 1, len(lines)) if not lines[i].strip()), len(lines))
    return lines[rule + 1 : end]


def _group_rows(lines):
    """``{shown name: (N, accuracy, ECE)}`` of the --by table; each row's name is what is left
    of it before its nine figure cells (N, accuracy, confidence, ECE, "5 of 10", Brier,
    smECE), which hold no spaces of their own."""
    rows = {}
    for line in _table(lines, "By "):
        name, n, accuracy, _, ece, *_ = line.rsplit(maxsplit=9)
        assert name.strip() not in rows, f"two rows show the name {name.strip()!r}"
        rows[name.strip()] = (n, accuracy, ece)
    return rows


def _gate_rows(lines):
    """``[(shown group, value, result)]`` of the gate table, in its order."""
    rows = []
    for line in _table(lines, "Gate: "):
        head, value, _, result = line.rsplit(maxsplit=3)
        assert head.startswith("ece ")
        rows.append((head[len("ece") :].strip(), value, result))
    return rows


def _check(stdout, expected, pooled_n):
    """Each group of ``expected`` (shown name -> (size, failing)) on a row of its own with its
    hand-counted figures; in the gate, each once under the same name, failing where it fails;
    the pooled rows under their own labels only."""
    lines = stdout.splitlines()
    groups = _group_rows(lines)
    wanted = {
        shown: (str(100 * size), "0.3500" if failing else "0.7500", "0.4000" if failing else "")
        for shown, (size, failing) in expected.items()
    }
    pooled = groups.pop("all (pooled)")
    assert pooled[0] == f"{pooled_n:,}"
    assert set(groups) == set(wanted)
    for shown, (n, accuracy, ece) in wanted.items():
        assert groups[shown][:2] == (n, accuracy), shown
        if ece:
            assert groups[shown][2] == ece, shown
        else:  # calibrated: zero up to rounding
            assert float(groups[shown][2]) < 5e-5, shown
    gate = _gate_rows(lines)
    assert gate[0][0] == "(pooled)"
    named = [row[0] for row in gate[1:]]
    assert sorted(named) == sorted(wanted) and len(set(named)) == len(named)
    for shown, value, result in gate[1:]:
        failing = expected[shown][1]
        assert result == ("fail" if failing else "pass"), shown
        if failing:
            assert value == "0.4000"


# --------------------------------------------------------------------------- the rule


ORDINARY = [
    "ok",
    "é",
    "日本",
    "a b",
    "x[/]",
    "[red]x[/red]",
    "a|b",
    "",
    "(pooled)x",
    "\\udc80",
    "a\\nb",
]
ODD = [
    "\udc80",
    "'\\udc80'",
    "(pooled)",
    "'(pooled)'",
    "all (pooled)",
    "macro (by sequences)",
    "(pooled) ",
    " (pooled)",
    "(pooled)\xa0",
    "(pooled)\u200b",
    "all (pooled)\u200b",
    "a\nb",
    "zz\x1b[2A",
    "\x1b[31mred",
    '"quoted"',
    "'",
    "\u202eevil",
]


def test_ordinary_names_show_as_they_are():
    for name in ORDINARY:
        assert group_cell(name) == name
        assert group_cell(name, "utf-8") == name
    assert group_cell("é", "cp1252") == "é"


def test_odd_names_show_as_their_literal():
    for name in ODD:
        assert group_cell(name) == repr(name)
        assert eval(group_cell(name)) == name  # reads back as the one name it was made from
        assert group_cell(name).isprintable()


@pytest.mark.parametrize("encoding", [None, "utf-8", "cp1252", "ascii", "latin-1"])
def test_no_two_names_show_alike_and_each_can_be_written(encoding):
    names = ORDINARY + ODD + ["\xe9", "'\\xe9'", "\\xe9", "日", "'\\u65e5'", "\\u65e5"]
    shown = [group_cell(n, encoding) for n in names]
    assert len(set(shown)) == len(set(names))
    for text in shown:
        text.encode(encoding or "utf-8")  # never raises
        assert "\n" not in text and "\x1b" not in text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=6), min_size=2, max_size=6, unique=True))
def test_different_names_never_show_alike(names):
    for encoding in (None, "ascii", "cp1252"):
        shown = [group_cell(n, encoding) for n in names]
        assert len(set(shown)) == len(names)


def test_the_shown_report_keeps_two_names_that_escape_alike():
    body = {
        "command": "calibrate",
        "by": "g\udc80",
        "groups": {"\udc80": {"n": 1}, "\\udc80": {"n": 2}, "é\udc81": {"n": 3}},
        "gate": {"checks": [{"group": "\udc80"}, {"group": "\\udc80"}]},
        "warnings": ["group \udc80"],
    }
    shown = as_shown(body)
    assert shown["groups"] == body["groups"]
    assert [c["group"] for c in shown["gate"]["checks"]] == ["\udc80", "\\udc80"]
    assert shown["by"] == "g\udc80"
    assert shown["warnings"] == ["group \\udc80"]  # other text is made printable as before


# --------------------------------------------------------------------------- the tables


def test_a_lone_surrogate_and_its_escape_are_two_rows(tmp_path):
    path = _write(
        tmp_path / "s.jsonl", [("\udc80", 2, True), ("\\udc80", 1, False), ("ok", 3, False)]
    )
    result = run(["calibrate", path, "--by", "g", *GATE])
    assert result.exit_code == 1
    expected = {"'\\udc80'": (2, True), "\\udc80": (1, False), "ok": (3, False)}
    _check(result.stdout, expected, 600)


EVIL = "zz\x1b[2A\x1b[1G\x1b[2Kece     bad     0.0400        0.1    pass\x1b[2B\x1b[1G\x1b[2K"


def test_escape_sequences_and_line_breaks_are_shown_not_run(tmp_path):
    groups = [("bad", 1, True), (EVIL, 2, False), ("a\nb", 3, False), ("\x1b[8mhidden", 4, False)]
    path = _write(tmp_path / "e.jsonl", groups)
    result = run(["calibrate", path, "--by", "g", *GATE])
    assert result.exit_code == 1
    assert "\x1b" not in result.stdout
    expected = {
        "bad": (1, True),
        repr(EVIL): (2, False),
        "'a\\nb'": (3, False),
        "'\\x1b[8mhidden'": (4, False),
    }
    _check(result.stdout, expected, 1000)


def test_on_a_terminal_the_only_escape_sequences_are_styles(tmp_path):
    path = _write(tmp_path / "e.jsonl", [("bad", 1, True), (EVIL, 2, False)])
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm-256color"}
    for name in ("FORCE_COLOR", "NO_COLOR"):
        env.pop(name, None)
    args = [sys.executable, "-m", "calibcli", "calibrate", str(path), "--by", "g", *GATE]
    proc = subprocess.Popen(args, stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    text = read_pty(leader)
    assert proc.wait(timeout=120) == 1
    sequences = re.findall(r"\x1b\[[0-9;]*[A-Za-z]", text)
    assert sequences and all(s.endswith("m") for s in sequences)  # colours, never a move
    assert text.count("\x1b") == len(sequences)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text).replace("\r\n", "\n")
    _check(plain, {"bad": (1, True), repr(EVIL): (2, False)}, 300)


SPOOFS = [
    ("(pooled) ", 1, True),
    (" (pooled)", 2, False),
    ("(pooled)\xa0", 3, False),
    ("(pooled)\u200b", 4, False),
    ("all (pooled)\u200b", 5, False),
    ("'(pooled)'", 6, False),
    ("(pooled)", 7, False),
]


def test_names_that_spell_a_tables_own_label_are_quoted(tmp_path):
    path = _write(tmp_path / "p.jsonl", SPOOFS)
    result = run(["calibrate", path, "--by", "g", *GATE])
    assert result.exit_code == 1
    expected = {repr(name): (size, failing) for name, size, failing in SPOOFS}
    _check(result.stdout, expected, 2800)
    gate = _gate_rows(result.stdout.splitlines())
    assert [row[0] for row in gate].count("(pooled)") == 1  # the pooled check's own row


def test_the_markdown_and_html_gate_name_each_group_apart(tmp_path):
    groups = [("\udc80", 2, True), ("\\udc80", 1, False), ("(pooled) ", 3, False)]
    path = _write(tmp_path / "s.jsonl", groups)
    summary, page = tmp_path / "s.md", tmp_path / "s.html"
    result = run(["calibrate", path, "--by", "g", *GATE, "--summary", summary, "--html", page])
    assert result.exit_code == 1
    lines = summary.read_text(encoding="utf-8").splitlines()
    # the Markdown escapes each backslash of the name as shown
    assert "| ece ('\\\\udc80') | 0.1 | 0.4000 | **no** |" in lines
    assert "| ece (\\\\udc80) | 0.1 | 0.0000 | yes |" in lines
    assert "| ece ('(pooled) ') | 0.1 | 0.0000 | yes |" in lines
    found = re.findall(
        r'<tr( class="fail")?><th scope="row">ece</th><td>([^<]*)</td>', page.read_text()
    )
    checks = {html.unescape(name): bool(fail) for fail, name in found}
    assert len(checks) == len(found) == 4
    assert checks == {"(pooled)": True, "'\\udc80'": True, "\\udc80": False, "'(pooled) '": False}


def test_the_html_group_table_holds_each_group_on_its_own_row(tmp_path):
    groups = [("\udc80", 2, True), ("\\udc80", 1, False), ("all (pooled)", 3, False)]
    path = _write(tmp_path / "s.jsonl", groups)
    page = tmp_path / "s.html"
    assert run(["calibrate", path, "--by", "g", *GATE, "--html", page]).exit_code == 1
    text = page.read_text(encoding="utf-8")
    table = text.split("<caption>By g", 1)[1].split("</table>", 1)[0]
    names = [html.unescape(n) for n in re.findall(r'<th scope="row">([^<]*)</th>', table)]
    # each group once, under a name of its own
    assert sorted(names) == ["'\\udc80'", "'all (pooled)'", "\\udc80"]


def test_compare_and_fit_group_tables_show_names_by_the_rule(tmp_path):
    groups = [(EVIL, 1, False), ("a\nb", 1, False), ("ok", 1, False)]
    base = _write(tmp_path / "base.jsonl", groups)
    new = _write(tmp_path / "new.jsonl", groups)
    shown = [repr(EVIL), "'a\\nb'", "ok"]
    compared = run(["compare", base, new, "--by", "g", "--bootstrap", "200", "-q"])
    fitted = run(["fit", base, "--by", "g", "--method", "platt", "-q", "-o", tmp_path / "cal.json"])
    for result in (compared, fitted):
        assert result.exit_code == 0, result.stderr
        assert "\x1b" not in result.stdout
        rows = _table(result.stdout.splitlines(), "By g")
        named = [[name for name in shown if row.startswith(name + "  ")] for row in rows]
        assert sorted(names[0] for names in named if len(names) == 1) == sorted(shown)
        assert len(rows) == len(shown)


@pytest.mark.parametrize("field", ["x[/]", "[red]grp[/red]", "[bold]"])
def test_a_field_name_is_text_not_markup(tmp_path, field):
    path = _write(tmp_path / "b.jsonl", [("c", 1, False), ("d", 1, True)], field=field)
    report = tmp_path / "r.json"
    result = run(["calibrate", path, "--by", field, *GATE, "-o", report])
    assert result.exit_code == 1, result.stderr
    lines = result.stdout.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("By "))
    assert lines[title].rstrip() == f"By {field}"
    assert lines[title + 1].startswith(field + "  ")
    assert json.loads(report.read_text())["by"] == field
    _check(result.stdout, {"c": (1, False), "d": (1, True)}, 200)


# --------------------------------------------------------------------------- encodings


def _cli(args, encoding):
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    env.pop("NO_COLOR", None)
    command = [sys.executable, "-m", "calibcli", *map(str, args)]
    return subprocess.run(command, capture_output=True, env=env, check=False)


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_a_stdout_without_a_character_gets_escapes_and_the_report(tmp_path, encoding):
    groups = [("é", 1, False), ("日本", 2, True), ("\udc80", 3, False), ("ok", 4, False)]
    path = _write(tmp_path / "w.jsonl", groups)
    report = tmp_path / "r.json"
    result = _cli(["calibrate", path, "--by", "g", *GATE, "-o", report], encoding)
    assert result.returncode == 1, result.stderr
    assert b"Traceback" not in result.stderr
    assert set(json.loads(report.read_text())["groups"]) == {"é", "日本", "\udc80", "ok"}
    stdout = result.stdout.decode(encoding)
    accented = "é" if encoding == "cp1252" else "'\\xe9'"
    expected = {
        accented: (1, False),
        "'\\u65e5\\u672c'": (2, True),
        "'\\udc80'": (3, False),
        "ok": (4, False),
    }
    # rich draws the tables in ASCII: columns apart by " |", a rule of "-" crossed by "+"
    _check(stdout.replace(" |", "  "), expected, 1000)
    assert "-+-" in stdout


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_a_large_table_on_such_a_stdout_prints(tmp_path, encoding):
    """From 200 rows on, the table is written without rich's layout: in ASCII there too."""
    groups = [(f"g{k:03d}", 1, k == 7) for k in range(210)]
    path = _write(tmp_path / "m.jsonl", groups)
    report = tmp_path / "r.json"
    result = _cli(["calibrate", path, "--by", "g", *GATE, "-o", report], encoding)
    assert result.returncode == 1, result.stderr
    assert len(json.loads(report.read_text())["groups"]) == 210
    stdout = result.stdout.decode(encoding)
    expected = {f"g{k:03d}": (1, k == 7) for k in range(210)}
    _check(stdout.replace(" |", "  "), expected, 21000)


class _Encoded(io.StringIO):
    """A stdout that declares an encoding, as rich reads it."""

    def __init__(self, encoding):
        super().__init__()
        self._encoding = encoding

    @property
    def encoding(self):
        return self._encoding


def test_the_fast_ascii_lines_are_richs_lines(monkeypatch):
    groups = {
        f"g{k}{'é' * (k % 3)}": {
            "n": k,
            "accuracy": k / 300,
            "mean_confidence": 0.5,
            "ece": 0.25,
            "populated_bins": k % 10,
            "bins_used": 10,
            "brier": 0.125,
        }
        for k in range(300)
    }
    report = {"n": 300, "accuracy": 0.5, "ece": 0.1, "groups": groups, "bins": 10}

    def printed(rows):
        out = _Encoded("cp1252")
        monkeypatch.setattr(terminal, "_PLAIN_ROWS", rows)
        monkeypatch.setenv("NO_COLOR", "1")
        with redirect_stdout(out):
            terminal._print_figures("Calibration", report, terminal.CALIBRATION, "g")
        return out.getvalue()

    rich_text = printed(10**9)
    assert printed(1) == rich_text
    assert "g299éé " in rich_text and "-+-" in rich_text and "─" not in rich_text


# cells without a space at either end, which rich would trim: every table is one of the shape
word = st.lists(st.sampled_from(["a", "Z", "0", "9.5", ",", "-", "|", "+", "é"]), max_size=9)
cell = word.map("".join)


@settings(max_examples=200, deadline=None)
@given(
    title=st.one_of(st.none(), cell),
    columns=st.integers(1, 5),
    right_from=st.integers(0, 3),
    rows=st.integers(0, 6),
    data=st.data(),
)
def test_ascii_box_lines_are_richs_lines(title, columns, right_from, rows, data):
    headers = [data.draw(cell.filter(bool)) for _ in range(columns)]
    table = terminal._table(title, *headers, right_from=right_from)
    for _ in range(rows):
        terminal._row(table, *(data.draw(cell) for _ in range(columns)))
    table.box = box.ASCII  # as rich draws it for a stdout without box characters
    got = table_lines(table)
    if got is None:  # only a title wider than its table is left to rich
        assert title
        return
    lines, width = got
    out = _Encoded("cp1252")
    Console(file=out, width=width, color_system=None, highlight=False).print(table)
    assert lines == out.getvalue().split("\n")[:-1]


def test_a_surrogate_group_is_drawn_under_its_literal(tmp_path, monkeypatch):
    import calibcli.render.image as image

    drawn = []

    def series(sections, labels=None, **options):
        made = report_series(sections, labels, **options)
        drawn.extend(s.label for s in made)
        return made

    report_series = image.report_series
    monkeypatch.setattr(image, "report_series", series)
    groups = [("\udc80", 1, True), ("\\udc80", 1, False)]
    path = _write(tmp_path / "s.jsonl", groups)
    plot = tmp_path / "s.png"
    result = run(["calibrate", path, "--by", "g", "-q", "--plot", plot])
    assert result.exit_code == 0, result.stderr
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert sorted(drawn) == ["'\\udc80'", "\\udc80"]  # two series, named apart
