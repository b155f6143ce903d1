"""Large terminal tables are written without rich's per-cell layout, line for line as rich
prints them: the reference is rich itself, printing the same table without styles, on random
tables of the terminal renderer's shape (wide and combining characters, empty cells, titles
wider than the table, cells rich would not keep on one line)."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from calibcli.render import terminal
from calibcli.render.plain_table import table_lines

pieces = st.sampled_from(
    ["a", "Z", "0", "9.5", ",", " ", "-", "é", "日", "本", "e\u0301", "|", "…"]
)
cell = st.lists(pieces, max_size=9).map("".join)
odd = st.sampled_from(["a\nb", "tab\there", "\x1b[1m", "zero\u200bwidth"])


def _rich_lines(table, width):
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, highlight=False)
    console.print(table)
    return out.getvalue().split("\n")[:-1]


@settings(max_examples=300, deadline=None)
@given(
    title=st.one_of(st.none(), cell, st.text(alphabet="abc ", min_size=30, max_size=60)),
    columns=st.integers(1, 5),
    right_from=st.integers(0, 3),
    rows=st.integers(0, 6),
    data=st.data(),
)
def test_lines_are_richs_lines(title, columns, right_from, rows, data):
    headers = [data.draw(cell) for _ in range(columns)]
    table = terminal._table(title, *headers, right_from=right_from)
    for _ in range(rows):
        terminal._row(table, *(data.draw(st.one_of(cell, odd)) for _ in range(columns)))
    got = table_lines(table)
    console = Console(file=io.StringIO(), width=80, color_system=None)
    natural = terminal._natural_width(console, table)
    if got is None:  # rich draws it: a line break, a control character or a wide title
        return
    lines, width = got
    assert width == natural
    assert lines == _rich_lines(table, max(width, 1))


def test_the_group_table_of_a_large_report_prints_as_rich_prints_it(monkeypatch):
    """The terminal renderer takes the fast lines from its threshold of rows on: the same
    output as rich's, byte for byte."""
    groups = {
        f"g{k}{'日' * (k % 3)}": {
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
        out = io.StringIO()
        monkeypatch.setattr(terminal, "_PLAIN_ROWS", rows)
        monkeypatch.setattr(
            terminal,
            "_console",
            lambda width=None: terminal._Stdout(
                file=out, highlight=False, color_system=None, width=width
            ),
        )
        terminal._print_figures("Calibration", report, terminal.CALIBRATION, "g")
        return out.getvalue()

    import calibcli.render.plain_table as plain_table

    made = []

    def spy(table):
        made.append(table_lines(table))
        return made[-1]

    monkeypatch.setattr(plain_table, "table_lines", spy)
    rich_text = printed(10**9)
    assert not made
    assert printed(1) == rich_text
    assert len(made) == 2 and all(m is not None for m in made)  # both tables, fast
    assert "g299日日" in rich_text and "all (pooled)" in rich_text
