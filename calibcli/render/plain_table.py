"""The lines of a large terminal table, laid out without rich's per-cell machinery.

rich measures and renders every cell of a table through its general layout, about a third of
a millisecond a cell: the ``--by`` table of 20,000 groups took a minute to print. The tables of
:mod:`calibcli.render.terminal` have one shape (``box.SIMPLE_HEAD`` without edges, no padding
at the edges, padding collapsed between columns, no wrapping, one line per cell), and printed
without styles (stdout not a colour terminal, or ``NO_COLOR``) their layout is plain: each
column as wide as its widest cell (header included, in terminal cells), cells justified as
their column and separated by two spaces (one of padding, one of the box's blank rule), a
rule of ``─`` under the header, and the title on its own line, left-justified and padded to
the table's width. Where stdout's encoding has no box characters rich draws the table in
``box.ASCII`` (the caller sets it, as rich would): each column's padding then comes before a
``|`` and the rule is of ``-`` crossed by ``+``. :func:`table_lines` writes those lines and
returns None for any other table (another box or option, a cell or title rich would wrap, a
cell holding a line break, a control character or a space at either end), which rich then
draws; ``tests/test_plain_table.py`` compares its lines with rich's own on random tables.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.cells import cell_len
from rich.text import Text


def table_lines(table: Any) -> tuple[list[str], int] | None:
    """The lines rich prints for ``table`` without styles, and the table's width in terminal
    cells; None when the table is not of the shape above."""
    if not _plain_shape(table):
        return None
    headers = [_plain(c.header) for c in table.columns]
    columns = [[_plain(cell) for cell in c._cells] for c in table.columns]
    if any(x is None for x in headers) or any(x is None for col in columns for x in col):
        return None
    widths = [
        max(cell_len(h), max(map(cell_len, col), default=0))
        for h, col in zip(headers, columns, strict=True)
    ]
    last = len(widths) - 1
    width = sum(widths) + 2 * last  # one padding cell and one rule between columns
    if not width:
        return None  # nothing to show: rich draws its own one-cell table
    title = None
    if table.title:  # rich draws no line for an empty title
        title = _plain(table.title)
        if title is None or cell_len(title) > width:
            return None  # rich wraps a title wider than its table
    rights = [c.justify == "right" for c in table.columns]

    def line(cells: list[str], between: str) -> str:
        out = []
        for text, w, right in zip(cells, widths, rights, strict=True):
            gap = " " * (w - cell_len(text))
            out.append(gap + text if right else text + gap)
        return between.join(out)

    drawn = table.box
    lines = [] if title is None else [title + " " * (width - cell_len(title))]
    lines.append(line(headers, " " + drawn.head_vertical))
    # each column's cells with their padding (one cell, but the last column's) under the rule
    lines.append(drawn.get_row([w + 1 for w in widths[:-1]] + widths[-1:], "head", edge=False))
    lines += [line(list(row), " " + drawn.mid_vertical) for row in zip(*columns, strict=True)]
    return lines, width


def _plain_shape(table: Any) -> bool:
    """Whether rich lays ``table`` out as :func:`table_lines` does."""
    if not (
        table.box in (box.SIMPLE_HEAD, box.ASCII)
        and not table.show_edge
        and not table.pad_edge
        and table.collapse_padding
        and tuple(table.padding) == (0, 1, 0, 1)
        and table.show_header
        and not table.show_footer
        and not table.show_lines
        and not table.leading
        and not table.expand
        and table.caption is None
        and table.width is None
        and table.min_width is None
        and not table.row_styles
        and table.title_justify == "left"
        and table.columns
    ):
        return False
    return all(
        c.no_wrap
        and c.justify in ("left", "right")
        and c.width is None
        and c.min_width is None
        and c.max_width is None
        and c.ratio is None
        for c in table.columns
    )


def _plain(value: Any) -> str | None:
    """A cell's text when it is one line of printable characters without a space at either
    end (rich trims those as it justifies), else None."""
    text = value.plain if isinstance(value, Text) else value
    if not isinstance(text, str) or not text.isprintable() or text != text.strip(" "):
        return None
    return text
