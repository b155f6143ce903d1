"""Renderers: the terminal tables and diagram, the image and the Markdown summary, each drawn
from a report's JSON body alone (``json.loads(report.to_json())``, with
:func:`calibcli.reports.as_shown`). Loaded lazily: importing the package loads no renderer."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "print_report": "calibcli.render.terminal",
    "html_report": "calibcli.render.html",
    "html_fragment": "calibcli.render.html",
    "NotAReport": "calibcli.render.html",
    "markdown_summary": "calibcli.render.markdown",
    "PlotUnavailable": "calibcli.render.image",
    "coverage_image": "calibcli.render.image",
    "coverage_sections": "calibcli.render.image",
    "image_format": "calibcli.render.image",
    "reliability_image": "calibcli.render.image",
    "reliability_sections": "calibcli.render.image",
    "report_series": "calibcli.render.image",
    "group_cell": "calibcli.render.digits",
    "DiagramSeries": "calibcli.render.diagram",
    "render_diagram": "calibcli.render.diagram",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'calibcli.render' has no attribute {name!r}")
