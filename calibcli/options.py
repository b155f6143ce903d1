"""The command-line options shared by calibcli's commands, each declared once.

Annotated aliases (typer's ``Annotated[type, typer.Option(...)]``) and the choice enums; the
commands in :mod:`calibcli.cli` take their parameters from here, so cli.py keeps to wiring.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer


def _choices(name: str, *values: str) -> Any:
    return Enum(name, [(v.replace("-", "_"), v) for v in values], type=str)


Format = _choices("Format", "auto", "jsonl", "lm-eval", "logprobs")
McNorm = _choices("McNorm", "none", "chars", "bytes")
Strategy = _choices("Strategy", "uniform", "quantile")
GateOn = _choices("GateOn", "estimate", "upper")


def _ci_level(value: float | None) -> float | None:
    if value is not None and not 0.0 < value < 1.0:
        raise typer.BadParameter(f"{value:g} is not a level strictly between 0 and 1, e.g. 0.95")
    return value


def _opt(kind: Any, *decls: str, **options: Any) -> Any:
    """An Annotated option type, so options shared by several commands are declared once."""
    return Annotated[kind, typer.Option(*decls, **options)]


def _threshold(metric: str, what: str) -> Any:
    return _opt(
        float | None,
        f"--max-{metric}",
        metavar="X",
        min=0.0,
        help=f"Gate: exit 1 unless {what} <= X.",
    )


Files = Annotated[
    list[str],
    typer.Argument(
        metavar="FILE...",
        show_default=False,
        help="JSONL files (.gz read transparently), pooled; '-' reads standard input.",
    ),
]
Name = "NAME"
FormatOpt = _opt(Format, "--format", help="Input format; auto detects it from the first row.")
ByOpt = _opt(
    str | None,
    "--by",
    metavar="FIELD",
    help="Also report per group of FIELD (a dotted path such as doc.subject; 'task' for lm-eval "
    "files); groups are sorted and the pooled figures stay at the top level.",
)
GateEachOpt = _opt(bool, "--gate-each", help="Apply the --max-* gates to every --by group too.")
JsonOpt = _opt(bool, "--json", help="Print the JSON report on stdout instead of the table.")
OutputOpt = _opt(
    Path | None,
    "-o",
    "--output",
    metavar="PATH",
    help="Also write the JSON report to PATH (atomically).",
)
QuietOpt = _opt(bool, "--quiet", "-q", help="No progress bar and no 'detected format' line.")
SummaryOpt = _opt(
    Path | None,
    "--summary",
    metavar="PATH",
    help="Append a Markdown summary to PATH (for CI job summaries, e.g. $GITHUB_STEP_SUMMARY).",
)
ConfidenceField = _opt(str, "--confidence-field", metavar=Name, help="Confidence field.")
CorrectField = _opt(str, "--correct-field", metavar=Name, help="Correctness field.")
BinsOpt = _opt(int, "--bins", metavar="M", min=1, help="Number of confidence bins.")
McNormOpt = _opt(
    McNorm,
    "--mc-norm",
    help="lm-eval multiple choice: raw, per-character or per-byte normalised loglikelihoods.",
)
PlotOpt = _opt(
    Path | None,
    "--plot",
    metavar="PATH",
    help="Draw the reliability diagram to PATH (.png, .svg or .pdf; needs calibcli[plot]); one "
    "series per file, or per --by group.",
)
LabelOpt = _opt(
    list[str] | None, "--label", metavar=Name, help="Name of a --plot series (repeat, in order)."
)
# perplexity
NllField = _opt(str, "--nll-field", metavar=Name, help="Summed NLL of a sequence, in nats.")
TokensField = _opt(str, "--tokens-field", metavar=Name, help="Token count of a sequence.")
BytesField = _opt(str, "--bytes-field", metavar=Name, help="UTF-8 byte count (optional).")
WordsField = _opt(str, "--words-field", metavar=Name, help="Word count (optional).")
LogprobsField = _opt(
    str, "--logprobs-field", metavar=Name, help="Per-token logprobs list (logprobs format)."
)
# calibrate
StrategyOpt = _opt(Strategy, "--strategy", help="Equal-width, or equal-mass (quantile) bins.")
MinBinsOpt = _opt(
    int,
    "--min-populated-bins",
    metavar="K",
    min=1,
    help="Fewer populated bins than K (capped at --bins) prints a warning and makes a "
    "--max-ece/--max-mce/--max-rmsce gate fail closed.",
)
CiOpt = _opt(
    float | None,
    "--ci",
    metavar="LEVEL",
    callback=_ci_level,
    help="Add percentile bootstrap intervals at LEVEL (e.g. 0.95) to every estimate.",
)
BootstrapOpt = _opt(int, "--bootstrap", metavar="N", min=1, help="Bootstrap resamples for --ci.")
SeedOpt = _opt(int, "--seed", metavar="S", min=0, help="Bootstrap seed for --ci.")
MaxPerplexity = _threshold("perplexity", "the token perplexity")
MaxEce = _threshold("ece", "ECE")
MaxBrier = _threshold("brier", "the Brier score")
MaxMce = _threshold("mce", "MCE")
MaxRmsce = _threshold("rmsce", "RMSCE")
MaxSmece = _threshold("smece", "smooth ECE")
GateOnOpt = _opt(
    GateOn,
    "--gate-on",
    help="Gate on the estimate, or on the upper end of the bootstrap interval (implies --ci 0.95 "
    "unless --ci is given).",
)
