"""The fit report: the fitted map's parameters and its in-sample figures before and after."""

from __future__ import annotations

from typing import Any

from calibcli.reports.calibrate import calibrate_figures
from calibcli.reports.group_repeats import own_repeats
from calibcli.reports.recalibration import before_after
from calibcli.reports.reliability import counted
from calibcli.reports.report import (
    SCHEMA_VERSION,
    SMALL_BIN_COUNT,
    Note,
    Report,
    finish,
    group_notes,
    input_formats,
    input_notes,
    strict,
)


def fitted_on(
    summary: Any,
    files: list[str],
    mc_norm: str,
    inspect_confidence: str | None,
    read_as: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What a calibrator file records of the rows it was fitted on: their count, files,
    format and fields, for lm-eval rows the multiple-choice normalisation of their scores, and
    for inspect-ai rows the --inspect-confidence mode their confidences were taken by
    (``inspect_confidence``, auto resolved; None for no inspect-ai rows): a calibrator applied
    to rows read another way would map other numbers. ``read_as`` adds what the reader knows
    of them (:func:`calibcli.io.provenance.read_as`: scorer, gold field, answer options, the
    models and tasks their runs name), after the keys every file records."""
    found: dict[str, Any] = {
        "n": summary.n,
        "files": list(files),
        "format": summary.fmt,
        "confidence_field": summary.settings.confidence_field,
        "correct_field": summary.settings.correct_field,
    }
    if summary.fmt == "lm-eval":
        found["mc_norm"] = mc_norm
    if inspect_confidence is not None:  # the files of other formats record as they did
        found["inspect_confidence"] = inspect_confidence
    return {**found, **(read_as or {})}


def fit_report(summary: Any, calibrators: Any, *, bins: int, after: Any = None) -> Report:
    """What ``calibcli fit`` shows: the fitted parameters (pooled and per group) and the
    figures before and after the map on the rows it was fitted on — in-sample, so the "after"
    flatters the map; the calibrator file itself is
    :meth:`~calibcli.summaries.recalibrate.CalibratorFile.to_json`. ``after`` is the summary
    of the mapped rows when the caller has it (temperature over lm-eval choices)."""
    from calibcli.summaries import apply_to_data

    before = strict(calibrate_figures(summary, bins=bins))
    if after is None:
        after = apply_to_data(summary, calibrators, bins=bins)
    after_figures = strict(calibrate_figures(after, bins=bins, reorder_ok=True))
    body: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "command": "fit",
        "format": summary.fmt,
        **input_formats(summary),
        "method": calibrators.method,
        "n": summary.n,
        "params": calibrators.calibrator.to_dict(),
        "in_sample": before_after(before, after_figures),
    }
    if summary.group_names is not None:
        body["by"] = calibrators.by
        body["groups"] = {
            name: {
                "n": calibrators.group_rows.get(name),
                "params": calibrators.groups[name].to_dict(),
                "in_sample": before_after(before["groups"][name], after_figures["groups"][name]),
            }
            for name in calibrators.groups
        }
    from calibcli.summaries import most_epochs

    groups = summary.by_group()
    pooled = " of the pooled rows" if groups is not None else ""
    repeats = most_epochs(summary.sources)  # rows that repeat their questions count questions
    own = {str(name): own_repeats(summary, str(name), repeats) for name in groups or {}}
    notes = _one_class(summary.pooled().columns, calibrators.method, pooled)
    notes += _few_of_a_class(summary.pooled(), calibrators.method, pooled, repeats)
    notes += _decreasing(calibrators.calibrator, pooled) + _at_bound(calibrators.calibrator, pooled)
    notes += _thin_bins(calibrators.calibrator, summary.pooled().columns, pooled, repeats)
    notes += group_notes(
        {
            str(name): _one_class(view.columns, calibrators.method)
            + _few_of_a_class(view, calibrators.method, repeats=own[str(name)])
            + _decreasing(calibrators.groups.get(str(name)))
            + _at_bound(calibrators.groups.get(str(name)))
            + _thin_bins(calibrators.groups.get(str(name)), view.columns, repeats=own[str(name)])
            for name, view in (groups or {}).items()
        }
    )
    return finish(body, input_notes(summary) + notes, [], mark_infinite=True)


def _one_class(columns: Any, method: str, rows: str = "") -> list[Note]:
    """A warning when the rows a map was fitted on hold one class only (the methods that fit
    such rows, isotonic and histogram): the map then sends every confidence it saw to that
    class's 1 or 0, whatever the confidence was; it learnt the class, not a calibration."""
    if columns is None:
        return []
    right, wrong = int(columns.conf_correct.shape[0]), int(columns.conf_wrong.shape[0])
    if (right and wrong) or not (right or wrong):
        return []
    which, value = ("right", 1) if right else ("wrong", 0)
    text = (
        f"all {right + wrong:,} answers{rows} are {which}: the {method} map sends the "
        f"confidences it was fitted on to {value}: it learnt the class, not a calibration"
    )
    general = (
        f"every answer of these groups is right, or every one wrong: the {method} map sends the "
        "confidences it was fitted on to 1 or 0: it learnt the class, not a calibration"
    )
    return [Note("one_class", text, detail=f"all {which}", general=general)]


EVENTS_PER_PARAMETER = 10
"""Answers of the rarer class per fitted parameter below which ``fit`` warns: the usual least
for a logistic fit whose coefficients hold beyond its rows (Peduzzi et al. 1996); 10 for a map
fitted by counting."""


def _few_of_a_class(
    view: Any, method: str, rows: str = "", repeats: int | None = None
) -> list[Note]:
    """A warning when the rows a map was fitted on hold both classes but few of one: fewer
    than :data:`EVENTS_PER_PARAMETER` answers of the rarer class per parameter the map fits.
    Where the map sends a confidence then rests on those few answers, and may not hold on other
    rows. The temperature over lm-eval choices learns from every row's gold choice, and is not
    judged so. On rows that repeat their questions (``repeats``: the most rows a question
    holds) the answers of one question are not independent, so the classes are counted in
    questions: exactly with the rows' keys, else as few as the rows can be."""
    from calibcli.metrics import RECALIBRATION_METHODS

    known = {m.name: m for m in RECALIBRATION_METHODS}.get(method)
    columns = view.columns
    if columns is None or known is None:
        return []
    right, wrong = int(columns.conf_correct.shape[0]), int(columns.conf_wrong.shape[0])
    total, unit, exact = right + wrong, "answers", True
    if repeats:
        unit = "questions"
        if view.keys is not None:
            from calibcli.metrics import question_counts

            q = question_counts(*view.keys)
            total, right, wrong = q.questions, q.right, q.wrong
        else:
            total, right, wrong = (-(-k // repeats) for k in (total, right, wrong))
            exact = False
    rarer, which = (wrong, "wrong") if wrong <= right else (right, "right")
    least = EVENTS_PER_PARAMETER * (known.parameters or 1)
    if not rarer or rarer >= least:  # one class: _one_class says so, or the fit refuses it
        return []
    why = f" ({EVENTS_PER_PARAMETER} per parameter the map fits)" if known.parameters else ""
    effect = f"the {method} map rests on them and may not hold on other rows"
    if unit == "answers":
        counted = f"only {rarer:,} of the {total:,} answers{rows} are {which}"
    else:
        some = f"only {rarer:,}" if exact else f"as few as {rarer:,}"
        counted = f"{some} of the {total:,} questions{rows} have a {which} answer"
    text = f"{counted}, fewer than {least}{why}: {effect}"
    general = (
        f"fewer than {least} answers of these groups are right, or fewer than {least} "
        f"wrong{why}: {effect}"
        if unit == "answers"
        else f"fewer than {least} questions of these groups have a right answer, or fewer than "
        f"{least} a wrong one{why}: {effect}"
    )
    return [Note("few_of_a_class", text, detail=f"{rarer} {which}", general=general)]


def _decreasing(calibrator: Any, rows: str = "") -> list[Note]:
    """A warning when a platt map decreases (a < 0, as scikit-learn's fit allows): it sends
    higher confidences lower, so it ranks every row the other way round, wherever it is
    applied; on the rows it was fitted on, higher confidences went with wrong answers (or
    there were too few rows to tell)."""
    a = getattr(calibrator, "a", None) if getattr(calibrator, "method", None) == "platt" else None
    if a is None or not a < 0:
        return []
    text = (
        f"the platt map{rows} decreases (a = {a:.4g}): it ranks every confidence the other way "
        "round, as on the rows it was fitted on higher confidences went with wrong answers"
    )
    general = (
        "the platt map of these groups decreases (a < 0): it ranks every confidence the other "
        "way round, as on the rows it was fitted on higher confidences went with wrong answers"
    )
    return [Note("decreasing", text, detail=f"a = {a:.4g}", general=general)]


def _at_bound(calibrator: Any, rows: str = "") -> list[Note]:
    """A warning when a temperature is at an end of the range it is searched in: the
    likelihood keeps improving beyond it, so the map is the range's end, not a fitted value;
    at the upper end (the confidences carried no information, or inverted information) it
    sends every confidence to about 0.5, at the lower end (they separated right from wrong
    answers) to about 0 or 1: logit(0.5 + x) / 1e-4 is about 40,000·x. Over an lm-eval row's
    k choices the tempered softmax is then about even, its largest share about 1/k, or all on
    the highest choice, about 1."""
    from calibcli.metrics import T_MAX, T_MIN
    from calibcli.summaries import MULTICLASS

    t = getattr(calibrator, "temperature", None)
    if t not in (T_MIN, T_MAX):
        return []
    where = "upper" if t == T_MAX else "lower"
    if getattr(calibrator, "method", None) == MULTICLASS:
        effect = (
            "about 1/k for a row of k choices"
            if t == T_MAX
            else "about 1 (all but rows whose two highest loglikelihoods lie within 0.001)"
        )
    else:
        effect = "about 0.5" if t == T_MAX else "about 0 or 1 (all but those within 0.001 of 0.5)"
    text = (
        f"the temperature{rows} is the {where} end of its range, {t:g}: the likelihood keeps "
        f"improving beyond it, so it is no fitted value; the map sends every confidence to "
        f"{effect}"
    )
    general = (
        "the temperature of these groups is an end of its range (1e-04 or 1e+04): the "
        "likelihood keeps improving beyond it, so it is no fitted value"
    )
    return [Note("temperature_bound", text, detail=f"T = {t:g}", general=general)]


def _thin_bins(
    calibrator: Any, columns: Any, rows: str = "", repeats: int | None = None
) -> list[Note]:
    """A warning when a map built from bins (histogram: each bin's accuracy) has bins too thin
    to carry it, by the rule of calibrate's small-bins warning: the median populated bin holds
    fewer than ``SMALL_BIN_COUNT`` rows (on rows that repeat their questions, ``repeats`` the
    most a question holds, its rows over ``repeats``, the fewest questions they can be). Each
    bin's value is then the accuracy of a few rows, mostly 0, 1/2 or 1: the map follows the
    rows it was fitted on, its in-sample figures flatter it, and it may not hold on other
    rows. The warning names fewer bins whose median populated bin holds that many rows (the
    most found by halving between 1 and these), or says the rows are too few for any. Other
    methods build no bins (isotonic pools adjacent rows by their outcomes, not into bins)."""
    import numpy as np

    bins = getattr(calibrator, "bins", None) if calibrator is not None else None
    if getattr(calibrator, "method", None) != "histogram" or columns is None or not bins:
        return []
    conf = np.concatenate([columns.conf_correct, columns.conf_wrong])
    least = SMALL_BIN_COUNT * (repeats or 1)
    median = _median_populated(conf, bins)
    if median is None or median >= least:
        return []
    held = counted(median, "prediction")
    if repeats:
        held += f", as few as {counted(median / repeats, 'question')} (a run scored each up "
        held += f"to {repeats} times)"
    advice = (
        "the rows are too few for any bins to hold that many: fit a map of fewer parameters "
        "(platt, temperature)"
    )
    if (_median_populated(conf, 1) or 0) >= least:
        lo, hi = 1, bins  # the median populated bin holds ``least`` at lo bins, not at hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if (_median_populated(conf, mid) or 0) >= least else (lo, mid)
        advice = (
            f"fit with fewer bins (with --bins {lo} the median populated bin holds "
            f"{_median_populated(conf, lo):g} predictions)"
        )
    effect = (
        "each bin's value is the accuracy of a few rows, so the map follows the rows it was "
        "fitted on: its in-sample figures flatter it, and it may not hold on other rows"
    )
    text = (
        f"the histogram map{rows} has {bins:,} bins and its median populated bin holds {held} "
        f"(fewer than {SMALL_BIN_COUNT}): {effect}; {advice}"
    )
    general = (
        f"the histogram maps of these groups have {bins:,} bins and their median populated bin "
        f"holds fewer than {SMALL_BIN_COUNT} predictions: {effect}; fit with fewer bins"
    )
    return [Note("thin_bins", text, detail=f"{median:g}", general=general)]


def _median_populated(conf: Any, bins: int) -> float | None:
    """The median count of the populated bins among ``bins`` equal-width bins of ``conf`` (as
    ``np.median`` gives it; None without rows)."""
    import numpy as np

    from calibcli.metrics import bin_edges, bin_index

    if not conf.shape[0]:
        return None
    count = np.bincount(bin_index(conf, bin_edges(bins)), minlength=bins)
    return float(np.median(count[count > 0]))
