"""``calibcli calibrate`` from Python: :func:`calibrate`."""

from __future__ import annotations

from typing import Any

from calibcli.api.predictions import given, summary_of
from calibcli.api.result import Result
from calibcli.reports import flag, one_of, option, usage, whole

WHERE = "calibrate"


def calibrate(
    confidence: Any,
    correct: Any = None,
    *,
    group: Any = None,
    by: str | None = None,
    bins: int = 10,
    strategy: str = "uniform",
    min_populated_bins: int = 3,
    ci: float | None = None,
    bootstrap: int | None = None,
    seed: int | None = None,
    gate_on: str = "estimate",
    gate_each: bool = False,
    workers: int | None = None,
    min_rows: int | None = None,
    **limits: float,
) -> Any:
    """Calibration figures of predictions: ``calibcli calibrate``'s report, as a
    :class:`~calibcli.api.Result` whose ``to_json()`` is the command's ``--json`` output for
    the same rows and options.

    ``confidence`` (numbers in [0, 1]) and ``correct`` (booleans or 0/1) are one entry per
    row, or ``confidence`` is :class:`~calibcli.api.Predictions` from
    :func:`~calibcli.api.read_predictions`; ``group`` gives each row's group, reported under
    ``by`` (default ``"group"``; ``by`` without ``group`` is refused), as ``--by`` does.
    Options have the command's names: ``bins`` (1 to 10,000), ``strategy`` (``"uniform"`` or
    ``"quantile"`` bins), ``min_populated_bins``; ``ci=0.95`` adds percentile bootstrap
    intervals (``bootstrap`` resamples, 200 to 1,000,000, default 1,000; ``seed``, default
    0; ``workers`` processes); switches such as ``gate_each`` are True or False. Gates:
    ``max_ece=0.05`` (and ``max_brier``, ``max_mce``, ``max_rmsce``, ``max_smece``, ...)
    make ``result.passed`` False when the figure exceeds it (on the upper end of its interval
    with ``gate_on="upper"``), and ``min_rows=1000`` when fewer rows are given;
    ``gate_each=True`` checks every group too.

    With N rows of confidence c_i and outcome y_i (1 right, 0 wrong), and bin k holding n_k
    rows of mean confidence c̄_k and accuracy ā_k, gap_k = |ā_k − c̄_k|:

    * ece = Σ_k (n_k / N)·gap_k; mce = max_k gap_k; rmsce = sqrt(Σ_k (n_k / N)·gap_k²)
    * brier = (1/N)·Σ_i (c_i − y_i)², with Murphy's decomposition reliability − resolution +
      uncertainty (+ the within-bin terms)
    * nll = −(1/N)·Σ_i [y_i·ln c_i + (1 − y_i)·ln(1 − c_i)]
    * auroc = P(c of a right answer > c of a wrong one) + ½·P(equal)
    * smece: the smooth ECE of Błasiok & Nakkiran (2023), kernel-smoothed, without bins

    >>> import calibcli
    >>> result = calibcli.calibrate([0.9, 0.8, 0.3, 0.6], [1, 1, 0, 1], bins=2, max_ece=0.2)
    >>> result["accuracy"], round(result["ece"], 4), result.passed
    (0.75, 0.25, False)
    >>> result.failures
    ['ece = 0.25 exceeds --max-ece 0.2']
    """
    from calibcli.reports import (
        BIN_STRATEGIES,
        CALIBRATION,
        Gate,
        bootstrap_for,
        calibrate_options,
        calibrate_report,
        floor_options,
        gateable,
    )
    from calibcli.reports import options as checks

    gate_each = flag(WHERE, "gate_each", gate_each)
    rows = given(confidence, correct, group=group, by=by)
    bins = whole(WHERE, "bins", bins, 1, checks.MAX_BINS)
    strategy = one_of(WHERE, "strategy", strategy, [s.name for s in BIN_STRATEGIES])
    min_bins = whole(WHERE, "min_populated_bins", min_populated_bins, 1)
    if ci is not None:
        ci = option(WHERE, "ci", checks.ci_level, ci)
    if bootstrap is not None:
        bootstrap = whole(WHERE, "bootstrap", bootstrap, checks.MIN_BOOTSTRAP, checks.MAX_BOOTSTRAP)
    if seed is not None:
        seed = whole(WHERE, "seed", seed, 0)
    if workers is not None:
        workers = whole(WHERE, "workers", workers, 1)
    gate_on = one_of(WHERE, "gate_on", gate_on, ("estimate", "upper"))
    thresholds = gate_limits(limits, [f.key for f in gateable(CALIBRATION)])
    floors = {} if min_rows is None else {"n": whole(WHERE, "min_rows", min_rows, 1)}
    ci = usage(
        WHERE,
        calibrate_options,
        grouped=rows.by is not None,
        gate_each=gate_each,
        limits=thresholds,
        floors=floors,
        gate_on=gate_on,
        ci=ci,
        bootstrap=bootstrap,
        seed=seed,
    )
    summary = summary_of(rows, bins=bins)
    report = calibrate_report(
        summary,
        bins=bins,
        strategy=strategy,
        min_bins=min_bins,
        bootstrap=bootstrap_for(ci, bootstrap, seed, workers, "multinomial"),
        gate=Gate(
            thresholds,
            gate_on,
            gate_each,
            minimums=floors,
            options=floor_options(CALIBRATION, floors),
        ),
        reorder_ok=True,  # the summary's kept rows are its own copies
    )
    return Result(report, rows.files)


def gate_limits(limits: dict[str, Any], keys: list[str]) -> dict[str, float]:
    """``max_FIGURE=threshold`` keywords as ``{figure: threshold}``, each checked as the
    command checks ``--max-FIGURE``, in the registry's order (the order of the gate's
    checks); another keyword is a TypeError, as Python gives for an unknown keyword."""
    from calibcli.reports import options as checks

    given = {}
    for name, value in limits.items():
        key = name.removeprefix("max_")
        if not name.startswith("max_") or key not in keys:
            raise TypeError(f"{WHERE}() got an unexpected keyword argument {name!r}")
        if value is not None:
            given[key] = float(option(WHERE, name, checks.finite_threshold, value))
    return {key: given[key] for key in keys if key in given}
