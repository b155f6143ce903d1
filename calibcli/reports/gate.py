"""CI gate checks: pure functions from report sections to a verdict.

A check compares one figure (or, with ``bound="upper"``, the upper end of its bootstrap
interval) with a threshold. A check *fails closed* — fails whatever the value — when the
section says the data cannot carry the figure (``closed`` maps the figure to the reason: no
rows, too few populated bins, zero tokens, too few rows for an interval's end) or the value is
undefined.

A gate on the upper end of a percentile bootstrap interval needs a sample the resampling can
vary (:func:`upper_bound_reason`): at least :data:`MIN_UPPER_ROWS` rows, and for the figures
that need both right and wrong answers, :data:`MIN_UPPER_CLASS` of each. The other figures
(the calibration errors, the Brier score, the NLL) vary with the confidences alone, but the
bootstrap cannot show a class it rarely draws: with fewer than :data:`MIN_UPPER_CLASS` members of
the rarer class their check compares the larger of the upper end and the rare-class floor, the
figure with that class raised to its exact binomial upper count
(:mod:`calibcli.metrics.rare_class`, :func:`with_floors`); a paired comparison's checks also
read the discordance floor, NEW's own errors raised to their exact upper count
(:mod:`calibcli.metrics.discordance`, :func:`larger_floor`). Never "the replicates are all equal":
a large sample of right answers at confidence 1 − 1e-6 also gives equal replicates, its floor
is small, and it rightly passes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

MIN_UPPER_ROWS = 30
"""Rows an upper-bound gate needs. The percentile bootstrap resamples the rows it has: on a
few, its resamples repeat most of them, the interval is too narrow (n identical rows give one
of zero width) and its upper end can pass a threshold by luck. 30 is the usual size from which
the sampling distribution of a mean is close to normal and the percentile interval's coverage
approaches its level."""

MIN_UPPER_CLASS = 10
"""Right answers, and wrong ones, an upper-bound gate on :data:`BOTH_CLASSES` figures needs (on
each side of a comparison). A resample leaves out a class of k rows with probability about
e^(−k) (the figure is then undefined or fixed, and the replicate says nothing), and the figure
moves in steps of about 1/k: below 10 the interval is lumpy and its end tells little."""

BOTH_CLASSES = frozenset({"accuracy", "auroc"})
"""Figures the bootstrap cannot vary without both right and wrong answers: accuracy is the same
in every resample of one class, and AUROC is undefined. The calibration errors, the Brier score
and the NLL vary with the confidences alone, but a sample of one class does not bound them: on
30 rows all right at confidence 0.95 every resample holds no wrong answer, though a calibrated
model gives such a sample 21% of the time. Their upper-end checks take the rare-class floor
instead (:func:`with_floors`)."""


def upper_bound_reason(
    figure: str,
    rows: int,
    classes: tuple[tuple[str, int, int], ...] = (),
    *,
    questions: bool = False,
) -> str | None:
    """Why the upper end of a bootstrap interval of ``figure`` cannot support a gate, or None.

    ``rows`` are the rows resampled (matched pairs in a paired comparison, the smaller side in
    an unpaired one); ``classes`` the (name, right, wrong) counts of each side's rows (the
    name is "" for a single sample). With ``questions`` the rows repeat their questions and
    the bootstrap draws whole questions, so the counts are of questions: ``rows`` the distinct
    questions, ``classes`` those with a right answer and those with a wrong one."""
    if rows < MIN_UPPER_ROWS:
        unit = "question" if questions else "row"
        drawn = " (the bootstrap draws each with all its rows)" if questions else ""
        return (
            f"only {rows:,} {unit}{'s' if rows != 1 else ''}{drawn}: the upper end of a "
            f"bootstrap interval needs at least {MIN_UPPER_ROWS} to show how {figure} varies"
        )
    if figure in BOTH_CLASSES:
        for name, right, wrong in classes:
            if min(right, wrong) < MIN_UPPER_CLASS:
                who = f"{name} has only" if name else "only"
                counted = (
                    f"{right:,} questions with a right answer and {wrong:,} with a wrong one"
                    if questions
                    else f"{right:,} right and {wrong:,} wrong answers"
                )
                return (
                    f"{who} {counted}: the upper end of a bootstrap interval of {figure} "
                    f"needs at least {MIN_UPPER_CLASS} of each"
                )
    return None


class Shortfall(str):
    """A floor's reason to fail closed (:func:`floor_reason`), carrying what it counted
    instead of the check's ``value``: the questions (``questions``) the rows hold, or the
    tokens of those questions (``question_tokens``), and whether that count is exact. The check
    records them beside the value, as a consumer comparing the value with the minimum would
    otherwise read a pass."""

    counted: int
    exact: bool
    unit: str

    def __new__(cls, text: str, counted: int, exact: bool, unit: str = "questions") -> Shortfall:
        made = super().__new__(cls, text)
        made.counted, made.exact, made.unit = counted, exact, unit
        return made

    def recorded(self) -> dict[str, Any]:
        """The check's keys saying what was counted: ``{unit: counted, unit_exact: exact}``."""
        return {self.unit: self.counted, f"{self.unit}_exact": self.exact}


def floor_reason(rows: int, questions: int, least: int, *, exact: bool = True) -> str | None:
    """Why a floor on the rows (``--min-rows least``) fails closed on rows that repeat their
    questions (a :class:`Shortfall`), or None: each question counts once, and ``rows`` rows
    hold ``questions`` of them (``exact=False``: at least that many, all that is known without
    their keys). None also when each row is a question of its own (a group of rows that repeat
    none): the floor then fails on the rows themselves."""
    if questions >= least or (exact and questions == rows):
        return None
    held = f"{questions:,}" if exact else f"as few as {questions:,}"
    return Shortfall(
        f"the {rows:,} rows repeat their questions (see the warning) and hold {held}, fewer "
        f"than {least:,}; each question counts once",
        questions,
        exact,
    )


DEBIASED = "rmsce_debiased"
"""The binned figure whose bins need two rows each: the debiased RMSCE subtracts each bin's
sampling variance ō(1 − ō)/(n − 1), which a bin of one row cannot estimate, so its sum leaves
such bins out while N still counts their rows; on bins of one row each the sum is empty and the
figure 0.0, whatever the gaps. It speaks for the rows in bins of 2 or more alone."""


def debiased_reason(
    carried: int,
    populated: int,
    rows: int,
    least: int,
    side: str = "",
    *,
    repeats: int | None = None,
    lone: int | None = None,
) -> str | None:
    """Why a check of the debiased RMSCE fails closed, or None: fewer than ``least`` (the
    populated-bins minimum) of the ``populated`` bins hold the 2 or more rows its variance term
    needs (``carried`` of them do), or more than a tenth of the ``rows`` lie in bins of one row
    (the ``populated - carried`` others), which its sum leaves out: the figure then speaks for
    too few of the rows it is divided by. ``side`` names the side of a comparison ("NEW").

    On rows that repeat their questions (``repeats``: no question holds more rows than that)
    both rules count questions, as the small-sample warning does: a bin of c rows holds as few
    as c / ``repeats`` questions, and a bin of one question cannot estimate its variance
    either (identical answers give it none, so nothing is subtracted). ``carried`` are then
    the bins of 2 × ``repeats`` rows or more, and ``lone`` the rows of the other populated
    bins: their share of the rows is, so counted, the share of the questions they hold."""
    on = f" on {side}" if side else ""
    scored = f"a run scored each question up to {repeats} times"
    if carried < least:
        if repeats:
            return (
                f"only {carried} of {populated} populated bins "
                f"{'holds' if carried == 1 else 'hold'} 2 or more questions{on} "
                f"({2 * repeats} or more rows: {scored}), which the debiased RMSCE's variance "
                f"term needs (minimum {least})"
            )
        return (
            f"only {carried} of {populated} populated bins {'holds' if carried == 1 else 'hold'} "
            f"2 or more rows{on}, which the debiased RMSCE's variance term needs (minimum {least})"
        )
    if lone is None:
        lone = populated - carried  # a populated bin not holding 2 rows holds one
    if 10 * lone > rows:  # exactly a tenth may
        if repeats:
            return (
                f"{lone:,} of {rows:,} rows{on} {'lies' if lone == 1 else 'lie'} in bins of "
                f"fewer than 2 questions (fewer than {2 * repeats} rows: {scored}), which the "
                "debiased RMSCE's variance term cannot carry (at most a tenth may)"
            )
        held = "lies in a bin" if lone == 1 else "lie in bins"
        return (
            f"{lone:,} of {rows:,} rows{on} {held} of one row, which the debiased RMSCE's "
            "variance term leaves out (at most a tenth may)"
        )
    return None


def debiased_bins(count: Any, repeats: int | None = None) -> tuple[int, int, int, int]:
    """The counts :func:`debiased_reason` reads of bins holding ``count`` rows each: the
    populated bins, those carrying the variance term (2 or more rows; 2 × ``repeats`` or more
    on rows that repeat their questions), the rows and the rows of the populated bins that do
    not carry it (without ``repeats``: those bins, one row each)."""
    import numpy as np

    count = np.asarray(count)
    populated = count > 0
    carries = count >= 2 * (repeats or 1)
    bins, carried = int(np.count_nonzero(populated)), int(np.count_nonzero(carries))
    # one answer a question: the populated bins not holding 2 rows hold one each
    lone = int(count[populated & ~carries].sum()) if repeats else bins - carried
    return bins, carried, int(count.sum()), lone


class Gated(Protocol):
    """What a check reads of a report section."""

    figures: dict[str, Any]
    closed: Mapping[str, str]


@dataclass(frozen=True)
class Gate:
    """What the user asked the gate to check."""

    thresholds: dict[str, float]  # figure -> maximum allowed value (--max-*), in check order
    bound: str = "estimate"  # "estimate" or "upper" (upper end of the bootstrap interval)
    each: bool = False  # also check every --by group
    minimums: dict[str, float] = field(default_factory=dict)  # figure -> least value (--min-*)
    # figure -> the option as the user wrote it, for messages (default "--max-FIGURE X", or
    # "--min-FIGURE X" for a minimum)
    options: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.thresholds or self.minimums)


@dataclass(frozen=True)
class Verdict:
    """The report's ``gate`` object and one failure line per failed check."""

    body: dict[str, Any]
    failures: list[str] = field(default_factory=list)


def limit_text(limit: float) -> str:
    """A limit as the user gave it, as short as it reads back exactly: ``0.05``, and
    ``0.049999999999999996`` (not ``0.05``) for the double just below it."""
    if isinstance(limit, int):  # a count, whole
        return str(limit)
    short = f"{limit:g}"
    return short if float(short) == limit else repr(limit)


def value_text(value: float, limit: float, least: int = 6) -> str:
    """``value`` beside ``limit`` in a failure line: to the fewest significant digits, at least
    ``least``, at which it reads on its side of the limit. An ECE of 0.05000001 against
    ``--max-ece 0.05`` reads ``0.05000001``, where 6 digits (``0.05``) would contradict
    "exceeds"."""
    if isinstance(value, int):  # a count, whole
        return str(value)
    side = (value > limit) - (value < limit)
    for digits in range(least, 17):
        shown = f"{value:.{digits}g}"
        if (float(shown) > limit) - (float(shown) < limit) == side:
            return shown
    return repr(value)  # the shortest text that reads back as the value itself


def _checks(
    section: Gated, gate: Gate, group: str | None, level: float | None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Evaluate the thresholds on one section; return the check records and failure messages."""
    checks, failures = [], []
    where = f" in group {group!r}" if group is not None else ""
    figures = section.figures
    for metric, threshold in gate.thresholds.items():
        estimate = figures.get(metric)
        check: dict[str, Any] = {"metric": metric, "threshold": threshold}
        if group is not None:
            check["group"] = group
        reason = section.closed.get(metric)
        value = estimate
        if gate.bound == "upper":
            upper = (figures.get("ci") or {}).get(metric, (None, None))[1]
            check["estimate"], check["upper"] = estimate, upper
            value = upper
            if reason is None and (upper is None or math.isnan(upper)):
                reason = f"the bootstrap gives no upper bound for {metric}"
        if reason is None and (value is None or math.isnan(value)):
            reason = f"{metric} is undefined on this data"
        check["value"] = value
        if reason is not None:
            check["passed"] = False
            check["reason"] = reason
            option = gate.options.get(
                metric, f"--max-{metric.replace('_', '-')} {limit_text(threshold)}"
            )
            failures.append(f"{metric}{where}: {reason}; cannot support {option}")
        else:
            check["passed"] = bool(value <= threshold)
            if not check["passed"]:
                bound = (
                    "" if gate.bound == "estimate" else f" (upper end of the {level:g} interval)"
                )
                option = gate.options.get(
                    metric, f"--max-{metric.replace('_', '-')} {limit_text(threshold)}"
                )
                failures.append(
                    f"{metric}{where} = {value_text(value, threshold)}{bound} exceeds {option}"
                )
        checks.append(check)
    for metric, least in gate.minimums.items():
        value = figures.get(metric)
        check = {"metric": metric, "minimum": least}
        if group is not None:
            check["group"] = group
        reason = section.closed.get(metric)
        if reason is None and (value is None or math.isnan(value)):
            reason = f"{metric} is undefined on this data"
        check["value"] = value
        option = gate.options.get(metric, f"--min-{metric} {limit_text(least)}")
        if isinstance(reason, Shortfall):  # counted in questions: the value counts rows
            check.update(reason.recorded())
        if reason is not None:
            check.update(passed=False, reason=reason)
            failures.append(f"{metric}{where}: {reason}; cannot support {option}")
        else:
            check["passed"] = bool(value >= least)
            if not check["passed"]:
                failures.append(f"{metric}{where} = {value_text(value, least)} is below {option}")
        checks.append(check)
    return checks, failures


def evaluate(
    gate: Gate,
    pooled: Gated,
    groups: Mapping[str, Gated] | None = None,
    *,
    level: float | None = None,
    pooled_decides: bool = True,
) -> Verdict:
    """Check the pooled section (and, with ``gate.each``, every group) against the thresholds.

    With ``pooled_decides=False`` the pooled checks are shown but do not decide: each records
    ``"decides": false`` beside its result, and the groups' checks alone give the verdict."""
    checks, failures = _checks(pooled, gate, None, level)
    if not pooled_decides:
        checks, failures = [{**c, "decides": False} for c in checks], []
    failed_groups: list[str] = []
    if gate.each and groups:
        for name, section in groups.items():
            group_checks, group_failures = _checks(section, gate, name, level)
            checks += group_checks
            failures += group_failures
            if group_failures:
                failed_groups.append(name)
    body: dict[str, Any] = {"passed": not failures, "bound": gate.bound, "checks": checks}
    if gate.each:
        body["failed_groups"] = failed_groups
    return Verdict(body, failures)


def floor_text(floor: Any, level: float, *, side: str | None = None) -> str:
    """What a rare-class floor (:class:`~calibcli.metrics.RareClassFloor`) rests on, for a
    failure line: the class raised and the exact bound that gives its count. ``side``: None
    for a figure of its own; ``"new"`` for NEW's figure in a comparison, less BASE's estimate;
    ``"paired"`` for NEW's figure less BASE's, the same questions turned on both sides."""
    rare = floor.rare
    counted = (
        f"{rare.count:,} of {rare.total:,} questions with a {rare.rare} answer"
        if rare.per_question > 1
        else f"{rare.count:,} of {rare.total:,} rows {rare.rare}"
    )
    turned = f"{rare.turned:,} more {rare.rare} answers"
    if side == "paired":
        said = f"NEW's figure less BASE's, with the same {turned} on both sides"
    elif side == "new":
        said = f"NEW's figure with {turned} less BASE's estimate"
    else:
        said = f"the figure with {turned}"
    on = " on NEW" if side else ""
    return (
        f"{said}; {counted}{on}, raised to {rare.bound:,}, the one-sided {(1 + level) / 2:g} "
        "Clopper-Pearson upper count"
    )


def with_floors(
    body: dict[str, Any],
    failures: list[str],
    gate: Gate,
    floors: Mapping[str | None, Any],
    level: float,
    *,
    offsets: Mapping[str | None, Mapping[str, float]] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The gate's body and failure lines with each open upper-end check whose section has a
    rare-class floor (``floors``: by group, None the pooled section; each a
    :class:`~calibcli.metrics.RareClassFloor` whose ``values`` are keyed by check metric) read
    as max(upper end, floor): the check records ``floor`` and ``floor_flips`` (the rows turned)
    beside ``upper``, its ``value`` is the larger, and a failure line says when the floor was
    used. ``offsets`` (by group, by metric) are subtracted from a floor first: compare's NEW
    floor minus BASE's estimate. A floor that is not a finite number (an NLL with a confidence
    of exactly 1 turned wrong) fails its check closed. Checks without a floor are left as they
    are, key for key."""
    if not any(f is not None for f in floors.values()):
        return body, failures
    old = iter(failures)
    lines: list[str] = []
    failed_groups: list[str] = []
    for check in body["checks"]:
        lined = not check["passed"] and decides(check)  # one failure line each, in order
        line = next(old) if lined else None
        group = check.get("group")
        floor, metric = floors.get(group), check["metric"]
        if floor is not None and metric in floor.values and _open_upper(check):
            subtracted = (offsets or {}).get(group) or {}
            # compare: NEW's floor less BASE's estimate, or (paired) a difference already
            side = None if offsets is None else "new" if metric in subtracted else "paired"
            value = floor.values[metric] - subtracted.get(metric, 0.0)
            decided = getattr(floor, "decided", {}).get(metric, floor)
            line = _floored(check, decided, value, gate, level, side)
        if line is not None:
            lines.append(line)
            if group is not None and group not in failed_groups:
                failed_groups.append(group)
    out = {**body, "passed": not lines}
    if "failed_groups" in out:
        out["failed_groups"] = failed_groups
    return out, lines


def decides(check: Mapping[str, Any]) -> bool:
    """Whether a check decides the gate's verdict: all do but those recording ``"decides":
    false``, shown beside the checks that decide (:func:`evaluate`)."""
    return check.get("decides", True) is not False


def _open_upper(check: dict[str, Any]) -> bool:
    """Whether a check reads an upper end against a maximum and is not failed closed."""
    return "reason" not in check and "upper" in check and "threshold" in check


def _floored(
    check: dict[str, Any], floor: Any, value: float, gate: Gate, level: float, side: str | None
) -> str | None:
    """Record ``value``, the check's floor, in ``check`` (in place) and read the check on the
    larger of it and the upper end; its failure line, or None when it passes."""
    metric, upper, threshold = check["metric"], check["upper"], check["threshold"]
    where = f" in group {check['group']!r}" if "group" in check else ""
    option = gate.options.get(metric, f"--max-{metric.replace('_', '-')} {limit_text(threshold)}")
    del check["value"], check["passed"]  # recorded again after the floor
    discordant = hasattr(floor, "discordance")
    turned = floor.discordance.turned if discordant else floor.rare.turned
    kind = "discordant" if discordant else "rare class"
    named = "discordance floor" if discordant else "rare-class floor"
    rests = (
        discordance_text(floor, level, metric)
        if discordant
        else floor_text(floor, level, side=side)
    )
    said = {} if side is None else {"floor_kind": kind}  # compare: which floor decided
    if not math.isfinite(value):
        check.update(floor=None, floor_flips=turned, **said, value=None, passed=False)
        check["reason"] = f"its {named} ({rests}) is not a finite number"
        return f"{metric}{where}: {check['reason']}; cannot support {option}"
    check.update(floor=value, floor_flips=turned, **said, value=max(upper, value))
    check["passed"] = bool(check["value"] <= threshold)
    if check["passed"]:
        return None
    shown = value_text(check["value"], threshold)
    if value <= upper:
        return f"{metric}{where} = {shown} (upper end of the {level:g} interval) exceeds {option}"
    return (
        f"{metric}{where} = {shown} ({named}, above the upper end of the {level:g} "
        f"interval {value_text(upper + 0.0, threshold)}: {rests}) exceeds {option}"
    )


def discordance_text(floor: Any, level: float, metric: str) -> str:
    """What a paired comparison's discordance floor
    (:class:`~calibcli.metrics.DiscordanceFloor`) rests on, for a failure line: the questions
    NEW gets wrong where BASE is right, their exact upper count, and the questions turned."""
    found = floor.discordance
    many = "s" if found.questions != 1 else ""
    turned = f"{found.questions:,} more question{many} made NEW-wrong where both were right"
    said = (
        f"BASE's figure less NEW's with {turned}"
        if metric.endswith("_decrease")
        else f"NEW's figure with {turned}, less BASE's"
    )
    return (
        f"NEW wrong where BASE is right on {found.count:,} of {found.total:,} questions: up to "
        f"{found.bound:,} cannot be ruled out at {(1 + level) / 2:g} (the one-sided "
        f"Clopper-Pearson upper count); {said}"
    )


@dataclass(frozen=True)
class LargerFloor:
    """A section's floors read as one: ``values`` (check metric -> the largest of the floors
    holding it, one that is not a finite number before any other, so that its check fails
    closed) and ``decided`` (check metric -> the floor whose value that is)."""

    values: dict[str, float]
    decided: dict[str, Any]


def larger_floor(*floors: Any) -> LargerFloor | None:
    """The larger of ``floors`` (each None, or with ``values`` keyed by check metric) for each
    metric; on a tie the earlier floor. None when every floor is None."""
    given = [f for f in floors if f is not None]
    if not given:
        return None
    values: dict[str, float] = {}
    decided: dict[str, Any] = {}
    for floor in given:
        for metric, value in floor.values.items():
            held = values.get(metric)
            if held is not None and (not math.isfinite(held) or value <= held):
                continue
            if held is None or not math.isfinite(value) or value > held:
                values[metric], decided[metric] = value, floor
    return LargerFloor(values, decided)
