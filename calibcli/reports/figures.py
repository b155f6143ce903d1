"""The one list of figures each command reports.

Every consumer reads it: the report (which scalars a section holds, which can be gated and which
fail closed), the estimators and the bootstrap (which scalars get an interval), the rich tables,
the Markdown summary and the ``--max-*`` options. Adding a figure to a command is one line here
(plus the code that computes it).

Pure data, no imports beyond the standard library, so every layer may read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Figure:
    """One reported figure.

    ``key`` is its place in the JSON report (a dotted path for a nested value, e.g.
    ``brier_decomposition.reliability``); ``label`` its name in tables and summaries; ``kind``
    how it prints (``float``: 4 decimals, ``count``: an integer with thousands separators,
    ``bins``: "k of M", ``threshold``: 4 decimals, more when needed to keep it apart from 0
    and 1). ``gate`` is the help text's noun for ``--max-KEY`` (None: no gate);
    ``fails_closed`` makes that gate fail when too few bins are populated, since a binned estimate
    then rests on nothing (the debiased RMSCE's also when too few bins hold the 2 rows its
    variance term needs: :func:`~calibcli.reports.gate.debiased_reason`). ``interval`` says
    the bootstrap (``--ci``) gives it an interval.
    ``column`` is its header in the per-group table (None: not shown there); ``summary`` whether
    the Markdown summary lists it; ``level`` 1 indents it under the figure above. ``better``
    says which way a change is an improvement (``compare --max-increase`` gates the figures
    where lower is better, ``--max-decrease`` those where higher is better). ``rows`` says, for a
    threshold chosen on other rows (``--fit``), which rows the figure comes from: ``"fit"``
    (the rows the threshold was chosen on; shown only when they are other rows) or
    ``"evaluated"`` (the rows of FILE...); :func:`shown` names them in its labels. ``floor``
    names the ``--min-FLOOR N`` option of a count (``rows``, ``tokens``): a gate that fails
    unless the count is at least N, the size below which a CI job will not trust the figures.
    """

    key: str
    label: str
    kind: str = "float"
    gate: str | None = None
    fails_closed: bool = False
    interval: bool = False
    column: str | None = None
    summary: bool = True
    level: int = 0
    better: str | None = None  # "lower" or "higher": which way a change is an improvement
    rows: str | None = None  # "fit" or "evaluated": the rows a threshold figure comes from
    floor: str | None = None  # the noun of a --min-NOUN gate on this count (rows, tokens)

    @property
    def top_level(self) -> bool:
        """True when the figure is a key of the report section itself (not nested)."""
        return "." not in self.key


def _decomposition(term: str, label: str) -> Figure:
    return Figure(f"brier_decomposition.{term}", label, interval=True, summary=False, level=1)


CALIBRATION: tuple[Figure, ...] = (
    Figure("n", "N", kind="count", column="N", floor="rows"),
    Figure("accuracy", "accuracy", interval=True, column="accuracy", better="higher"),
    Figure("mean_confidence", "mean confidence", interval=True, column="confidence"),
    Figure(
        "ece", "ECE", gate="ECE", fails_closed=True, interval=True, column="ECE", better="lower"
    ),
    Figure("populated_bins", "populated bins", kind="bins", column="bins"),
    Figure("brier", "Brier", gate="the Brier score", interval=True, column="Brier", better="lower"),
    _decomposition("reliability", "reliability"),
    _decomposition("resolution", "resolution"),
    _decomposition("uncertainty", "uncertainty"),
    _decomposition("within_bin_variance", "within-bin variance"),
    _decomposition("within_bin_covariance", "within-bin covariance"),
    Figure("mce", "MCE", gate="MCE", fails_closed=True, interval=True, better="lower"),
    Figure("rmsce", "RMSCE", gate="RMSCE", fails_closed=True, interval=True, better="lower"),
    Figure(
        "rmsce_debiased",
        "RMSCE (debiased)",
        gate="the debiased RMSCE",
        fails_closed=True,
        interval=True,
        better="lower",
    ),
    Figure("smece", "smECE", gate="smooth ECE", interval=True, column="smECE", better="lower"),
    Figure("smece_bandwidth", "smECE bandwidth", interval=True, summary=False, level=1),
    Figure("ece_1bin", "ECE (1 bin)", interval=True, better="lower"),
    Figure("nll", "NLL (log loss)", interval=True, better="lower"),
    Figure("auroc", "AUROC", interval=True, better="higher"),
)

RELIABILITY: tuple[Figure, ...] = (
    Figure("n", "N", kind="count", column="N"),
    Figure("populated_bins", "populated bins", kind="bins", column="populated bins"),
    Figure("accuracy", "accuracy", column="accuracy"),
    Figure("mean_confidence", "mean confidence", column="confidence"),
    Figure("ece", "ECE"),
    Figure("brier", "Brier"),
)

PERPLEXITY: tuple[Figure, ...] = (
    Figure(
        "perplexity", "perplexity (per token)", gate="the token perplexity", column="perplexity"
    ),
    Figure("mean_nll", "mean NLL (nats/token)"),
    Figure("bits_per_token", "bits per token", column="bits/token"),
    Figure("total_tokens", "tokens", kind="count", column="tokens", floor="tokens"),
    Figure("sequences", "sequences", kind="count", column="sequences", floor="rows"),
    Figure("total_nll", "total NLL (nats)", summary=False),
    Figure("total_bytes", "bytes", kind="count", summary=False),
    Figure("bits_per_byte", "bits per byte", gate="bits per byte", column="bits/byte"),
    Figure("byte_perplexity", "byte perplexity"),
    Figure("total_words", "words", kind="count", summary=False),
    Figure("word_perplexity", "word perplexity", gate="the word perplexity", column="word ppl"),
    Figure("null_logprobs", "null logprobs (skipped)", kind="count", summary=False),
    Figure("sentinel_logprobs", "sentinel logprobs (<= -9999)", kind="count", summary=False),
)

_FIT, _EVALUATED = "fit", "evaluated"

# The figures of a threshold chosen on --fit rows come from two sets of rows: those it was
# chosen on (``guaranteed``/``plug_in`` outside ``realised``, ``fit_n``) and those it is
# evaluated on (``n``, ``coverage``, the ``realised`` blocks, the curve and its summary
# figures). Without --fit they are the same rows, the fit-row figures are not shown, and the
# labels name no rows.
THRESHOLD: tuple[Figure, ...] = (
    Figure("n", "N", kind="count", column="N", rows=_EVALUATED),
    Figure("fit_n", "N", kind="count", column="N", rows=_FIT),
    Figure("guaranteed.threshold", "guaranteed threshold", kind="threshold", column="threshold"),
    Figure("guaranteed.coverage", "coverage", column="coverage", rows=_FIT),
    Figure("guaranteed.accuracy", "accuracy above it", column="accuracy", rows=_FIT),
    Figure("guaranteed.accuracy_lower_bound", "accuracy lower bound", rows=_FIT),
    Figure("coverage", "coverage", column="coverage", rows=_EVALUATED),
    Figure("guaranteed.realised.accuracy", "accuracy above it", column="accuracy", rows=_EVALUATED),
    Figure(
        "guaranteed.realised.accuracy_lower_bound",
        "accuracy lower bound",
        column="lower bound",
        rows=_EVALUATED,
    ),
    Figure(
        "plug_in.threshold", "plug-in threshold (no guarantee)", kind="threshold", column="plug-in"
    ),
    Figure("plug_in.coverage", "plug-in coverage", rows=_FIT),
    Figure("plug_in.realised.coverage", "plug-in coverage", rows=_EVALUATED),
    Figure("aurc", "AURC", column="AURC", rows=_EVALUATED),
    Figure("e_aurc", "E-AURC", rows=_EVALUATED),
    Figure("selective_accuracy.10", "accuracy at 10% coverage", rows=_EVALUATED),
    Figure("selective_accuracy.50", "accuracy at 50% coverage", rows=_EVALUATED),
    Figure("selective_accuracy.90", "accuracy at 90% coverage", rows=_EVALUATED),
)

# what a recalibration's before/after comparison shows
RECALIBRATION: tuple[Figure, ...] = tuple(
    f
    for f in CALIBRATION
    if f.key in {"accuracy", "mean_confidence", "ece", "brier", "nll", "smece", "auroc"}
)

BY_COMMAND: dict[str, tuple[Figure, ...]] = {
    "calibrate": CALIBRATION,
    "reliability": RELIABILITY,
    "perplexity": PERPLEXITY,
    "threshold": THRESHOLD,
}


def gateable(figures: tuple[Figure, ...]) -> tuple[Figure, ...]:
    """The figures a ``--max-KEY`` option can gate, in report order."""
    return tuple(f for f in figures if f.gate is not None)


def floored(figures: tuple[Figure, ...]) -> tuple[Figure, ...]:
    """The counts a ``--min-FLOOR`` option can gate, in report order."""
    return tuple(f for f in figures if f.floor is not None)


def floor_options(figures: tuple[Figure, ...], floors: Mapping[str, int]) -> dict[str, str]:
    """Each ``{key: N}`` floor as the option that gave it (``--min-rows 1000``), the words a
    gate's messages use; ValueError for a key no floor gates."""
    nouns = {f.key: f.floor for f in floored(figures)}
    for key in floors:
        if key not in nouns:
            known = ", ".join(repr(k) for k in nouns)
            raise ValueError(f"no floor gates {key!r}: the counts with one are {known}")
    return {key: f"--min-{nouns[key]} {least}" for key, least in floors.items()}


def interval_keys(figures: tuple[Figure, ...]) -> tuple[str, ...]:
    """Keys of the figures that get a bootstrap interval, in report order."""
    return tuple(f.key for f in figures if f.interval)


def shown(figures: tuple[Figure, ...], body: dict) -> tuple[Figure, ...]:
    """The figures a renderer shows of a report ``body``, labelled for it: when a threshold was
    chosen on other rows (the body has ``fit_n``), each figure's label and column name the rows
    it comes from ("coverage (evaluated rows)", "accuracy (fit)"); otherwise the fit-row
    figures, the same as the evaluated ones, are left out and the labels name no rows."""
    if "fit_n" not in body:
        return tuple(f for f in figures if f.rows != _FIT)
    return tuple(
        f
        if f.rows is None
        else replace(
            f,
            label=f"{f.label} ({f.rows} rows)",
            column=None if f.column is None else f"{f.column} ({f.rows})",
        )
        for f in figures
    )


def confidence(delta: float, *, percent: bool = False) -> str:
    """1 − δ as a label shows it (``0.95``, or ``95%``); ``1 - 1e-17`` when 1 − δ would print
    as 1 (a δ below 5e-7 for 6 significant digits)."""
    shown = f"{(1 - delta) * 100:g}%" if percent else f"{1 - delta:g}"
    if shown in ("1", "100%"):
        shown = f"100% - {delta * 100:g}%" if percent else f"1 - {delta:g}"
    return shown


def lookup(section: dict, key: str) -> object:
    """The value at a dotted ``key`` of a report section (None where a part is missing)."""
    value: object = section
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def has(section: dict, key: str) -> bool:
    """True when the section carries a dotted ``key`` (even as null)."""
    *parents, leaf = key.split(".")
    for part in parents:
        section = section.get(part) if isinstance(section.get(part), Mapping) else {}
    return leaf in section
