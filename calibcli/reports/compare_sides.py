"""Each side of a comparison on its own: its reliability section (what --plot draws as two
overlaid diagrams), and ``--min-rows`` counted in questions when an unpaired side's rows
repeat them."""

from __future__ import annotations

from typing import Any

from calibcli.reports.gate import floor_reason


def each_side(matched: Any, settings: Any) -> dict[str, Any]:
    """``{"sides": {"base": ..., "new": ...}}``: each side's reliability section."""
    from types import SimpleNamespace

    from calibcli.reports.reliability import reliability_section
    from calibcli.summaries import side_stats

    return {
        "sides": {
            name: reliability_section(
                SimpleNamespace(stats=side_stats(rows, settings.bins)), 0
            ).figures
            for name, rows in (("base", matched.base), ("new", matched.new))
        }
    }


def sides_floor(least: int | None, asked: Any) -> dict[str, str]:
    """The ``rows`` check (``--min-rows least``) failing closed on unpaired sides whose rows
    repeat their questions (``asked``: each side's (rows, questions), see
    :attr:`~calibcli.summaries.PairedRows.asked`), as calibrate fails it: each question counts
    once, and the side holding the fewest questions (of those, the fewest rows) is compared on
    that many. Nothing when that side's rows are each their own question: the rows counted say
    it."""
    if least is None or asked is None:
        return {}
    rows, questions = min(asked, key=lambda side: (side[1], side[0]))
    why = None if questions == rows else floor_reason(rows, questions, least)
    return {} if why is None else {"rows": why}
