"""Renderers: the terminal tables and diagram, the image and the Markdown summary, each drawn
from a report's JSON body alone (``json.loads(report.to_json())``, with
:func:`calibcli.reports.as_shown`)."""
