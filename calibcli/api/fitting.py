"""``calibcli fit`` from Python: :func:`fit`."""

from __future__ import annotations

from typing import Any

from calibcli.api.predictions import ARRAYS, given, summary_of
from calibcli.api.result import Calibrator
from calibcli.errors import InputError
from calibcli.reports import one_of, whole

WHERE = "fit"


def fit(
    confidence: Any,
    correct: Any = None,
    *,
    method: str,
    group: Any = None,
    by: str | None = None,
    bins: int = 10,
) -> Any:
    """A recalibration map fitted on held-out rows: the :class:`~calibcli.api.Calibrator`
    that ``calibcli fit`` writes (its ``to_json()`` is the command's ``--json`` output and
    ``-o`` file), with ``apply(confidence)`` and the fit's ``report``.

    With z = logit(c) (c clipped to [1e-12, 1 − 1e-12]) and σ the logistic function, each
    map fitted by maximum likelihood:

    * ``"temperature"``: c' = σ(z / T), T > 0 (Guo et al. 2017); on lm-eval rows read from
      files, the choices' loglikelihoods are scaled instead
    * ``"platt"``: c' = σ(a·z + b), fitted to Platt's smoothed targets
    * ``"isotonic"``: pool-adjacent-violators, linear between the fitted points
    * ``"histogram"``: c' = the accuracy of c's bin among ``bins`` equal-width bins
    * ``"beta"``: c' = σ(a·ln c − b·ln(1 − c) + m), a, b >= 0 (Kull et al. 2017)

    ``confidence``, ``correct``, ``group`` and ``by`` as for :func:`~calibcli.api.calibrate`;
    with groups one map per group is fitted too, and rows of a group the calibrator does not
    know take the pooled map.

    >>> import calibcli
    >>> platt = calibcli.fit([0.9, 0.8, 0.7, 0.6, 0.9, 0.6], [1, 1, 0, 0, 1, 1], method="platt")
    >>> platt.method, platt.apply([0.6, 0.9]).round(3).tolist()
    ('platt', [0.455, 0.834])
    """
    from calibcli.reports import RECALIBRATION_METHODS, fit_report, fitted_on
    from calibcli.reports import options as checks
    from calibcli.summaries import choices_data, fit_choices, fit_data

    rows = given(confidence, correct, group=group, by=by)
    method = one_of(WHERE, "method", method, [m.name for m in RECALIBRATION_METHODS])
    bins = whole(WHERE, "bins", bins, 1, checks.MAX_BINS)
    summary = summary_of(rows, bins=bins)
    files = list(rows.files) or [ARRAYS]
    provenance = fitted_on(summary, files, rows.mc_norm, rows.inspect_confidence, rows.read_as)
    # lm-eval rows: temperature scales the choices' loglikelihoods, read again from the files
    choices = None
    if rows.format == "lm-eval" and method == "temperature" and rows.files:
        choices = _choices(rows)
    try:
        if choices is None:
            calibrators = fit_data(
                summary, method=method, bins=bins, fitted_on=provenance, by=rows.by
            )
        else:
            calibrators = fit_choices(choices, fitted_on=provenance, by=rows.by)
    except ValueError as exc:
        raise InputError(WHERE, None, f"cannot fit {method}: {exc}") from None
    after = None if choices is None else choices_data(choices, calibrators, bins=bins)
    report = fit_report(summary, calibrators, bins=bins, after=after)
    calibrators = calibrators.fitted(_as_read(summary, rows), report.warnings)
    return Calibrator(calibrators, report, rows.files)


def _as_read(summary: Any, rows: Any) -> Any:
    """The summary with each file's source as the command's reading records it: the identity
    of the file's bytes and the multiset hash of its rows, which a calibrator file records of
    the inputs its fit read (so that the file is the command's byte for byte). The sources are
    the files' in row order (:attr:`~calibcli.api.Predictions.parts`)."""
    import os
    from dataclasses import replace

    from calibcli.io import file_content_id
    from calibcli.summaries import RowFingerprint, calibration_hashes

    sources, start = [], 0
    for source in summary.sources:
        stop = start + source.rows
        held = RowFingerprint()
        held.add(calibration_hashes(rows.confidence[start:stop], rows.correct[start:stop]))
        content = file_content_id(source.name) if os.path.isfile(source.name) else ""
        sources.append(replace(source, content=content, rows_hash=held.key()))
        start = stop
    return replace(summary, sources=tuple(sources))


def _choices(rows: Any) -> Any:
    """The rows again with every choice's score, read from the files they were read from
    (``parts``: a folder's results files, rolling tasks and older re-runs left out as the
    reading left them out, as ``calibcli fit`` reads its summary's sources) with the same
    bounds; rows that are not the rows read (their files changed) are an InputError."""
    from calibcli.io import read_choices

    files = [name for name, _, _ in rows.parts] if rows.parts else list(rows.files)
    choices = read_choices(files, mc_norm=rows.mc_norm, by=rows.by, **rows.bounds)
    if choices.n != len(rows):
        raise InputError(
            WHERE,
            None,
            f"the files now hold {choices.n:,} rows where {len(rows):,} were read: their "
            "choices are not the rows' (read the files again)",
        )
    return choices
