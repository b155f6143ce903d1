"""Each side of a comparison on its own: its reliability section (what --plot draws as two
overlaid diagrams), its rows in one order for the unpaired bootstrap, the questions of pairs
that repeat them numbered by what the pairs hold for the paired one, the checks that fail
closed on too few rows or questions, ``--min-rows`` counted in questions when an unpaired
side's rows repeat them, and the bias allowance an upper-end margin on a figure that sampling
noise inflates adds to the difference's upper end (BASE's null value)."""

from __future__ import annotations

import math
from typing import Any

from calibcli.reports import figures as registry
from calibcli.reports.gate import (
    BOTH_CLASSES,
    MIN_UPPER_CLASS,
    Verdict,
    floor_reason,
    upper_bound_reason,
    value_text,
    with_floors,
)

WAYS = ("increase", "decrease")  # each figure's two gate checks: NEW worse by an increase or not


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


def in_one_order_each(
    base: tuple[Any, Any], new: tuple[Any, Any], labels: Any
) -> tuple[tuple[Any, Any], tuple[Any, Any], Any]:
    """Each unpaired side's rows in one order whatever the files' lines
    (:func:`~calibcli.summaries.in_one_order`: by confidence, then outcome) and, for a side
    with question ``labels`` (BASE's, NEW's, either None), its questions numbered by what their
    rows hold (:func:`numbered_by_rows`), its rows by confidence, outcome, then that number;
    with each side's numbers in that order (None for a side whose rows are each their own
    question)."""
    import numpy as np

    from calibcli.summaries import in_one_order

    if labels is None:
        return in_one_order(base), in_one_order(new), None
    sides, numbers = [], []
    for rows, asked in zip((base, new), labels, strict=True):
        number = None if asked is None else numbered_by_rows(rows[0], rows[1], asked)
        if number is None:
            sides.append(in_one_order(rows))
            numbers.append(None)
            continue
        order = np.lexsort((number, rows[1], rows[0]))
        sides.append((rows[0][order], rows[1][order]))
        numbers.append(number[order])
    drawn = None if all(x is None for x in numbers) else tuple(numbers)
    return sides[0], sides[1], drawn


def numbered_by_rows(conf: Any, corr: Any, labels: Any) -> Any:
    """Each row's question numbered 0..C-1 in increasing order of what its rows hold: the
    question's (confidence, outcome) pairs sorted, compared as sequences (a prefix first);
    questions holding the same rows, interchangeable, in the order of their labels. None when
    each row is its own question. The command and the Python API hash a question's id
    differently, and a side's rows come in the files' order: numbered by their rows, the
    questions are drawn alike whatever the hashes and the order."""
    import numpy as np

    distinct, number = np.unique(np.asarray(labels), return_inverse=True)
    number = number.reshape(-1)
    count = int(distinct.shape[0])
    if count == number.shape[0]:
        return None
    # each row's (confidence, outcome) ranked among the side's distinct pairs
    by_value = np.lexsort((corr, conf))
    conf_sorted, corr_sorted = conf[by_value], corr[by_value]
    step = np.empty(by_value.shape[0], np.intp)
    step[0] = 0
    step[1:] = (conf_sorted[1:] != conf_sorted[:-1]) | (corr_sorted[1:] != corr_sorted[:-1])
    rank = np.empty_like(step)
    rank[by_value] = np.cumsum(step)
    # each question's ranks in increasing order, then the questions by those sequences (a
    # stable sort: questions holding the same rows keep their labels' order)
    order = np.lexsort((rank, number))
    values = rank[order].tolist()
    ends = np.cumsum(np.bincount(number, minlength=count)).tolist()
    held = [tuple(values[a:b]) for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    ranked = sorted(range(count), key=held.__getitem__)
    renumber = np.empty(count, np.intp)
    renumber[ranked] = np.arange(count)
    return renumber[number]


def too_few(
    base: tuple[Any, Any],
    new: tuple[Any, Any],
    questions: Any,
    *,
    upper_gate: bool,
    floor: int | None,
    side_questions: Any = None,
) -> dict[str, str]:
    """The gate's checks that fail closed on too few rows: an interval's upper end (too few
    rows, or right or wrong answers on a side) and, on pairs labelled by ``questions``, the
    same counted in questions, which the bootstrap draws whole, and ``floor`` (--min-rows).
    Unpaired, ``side_questions`` (BASE's labels, NEW's, either None) count each side's
    questions, which its bootstrap draws whole, and the fewer of the two is what is drawn."""
    import numpy as np

    from calibcli.metrics import SCALAR_KEYS, question_counts

    small: dict[str, str] = {}
    if not upper_gate and (floor is None or questions is None):
        return small
    n_base, n_new = int(base[0].shape[0]), int(new[0].shape[0])
    rows = min(n_base, n_new)  # paired: both sides hold the matched rows
    sides = (("BASE", base[1], n_base), ("NEW", new[1], n_new))
    by_question = questions is not None
    if questions is None and side_questions is None:
        classes = tuple(
            (name, int(np.count_nonzero(right)), n - int(np.count_nonzero(right)))
            for name, right, n in sides
        )
        counted = rows
    else:
        given = (questions, questions) if questions is not None else side_questions
        masks = [np.asarray(right, bool) for _, right, _ in sides]
        counts = []
        for (_, _, n), m, labels in zip(sides, masks, given, strict=True):
            if labels is None:  # each row its own question
                right = int(np.count_nonzero(m))
                counts.append((n, right, n - right))
            else:
                q = question_counts(np.asarray(labels)[m], np.asarray(labels)[~m])
                counts.append((q.questions, q.right, q.wrong))
        classes = tuple(
            (name, right, wrong)
            for (name, _, _), (_, right, wrong) in zip(sides, counts, strict=True)
        )
        counted = min(c[0] for c in counts)
        # unpaired, the questions are said when a side's rows repeat them
        by_question = by_question or any(
            c[0] < n for c, (_, _, n) in zip(counts, sides, strict=True)
        )
    if upper_gate:
        for key in SCALAR_KEYS:
            why = upper_bound_reason(key, counted, classes, questions=by_question)
            if why is not None:
                small.update({f"{key}_{way}": why for way in WAYS})
    if floor is not None and questions is not None:
        why = floor_reason(rows, counted, floor)
        if why is not None:
            small["rows"] = why
    return small


def numbered_by_pairs(
    base: tuple[Any, Any], new: tuple[Any, Any], labels: Any, order: Any
) -> tuple[Any, Any] | None:
    """Paired rows that repeat their questions (``labels``: each pair's question; ``order``:
    each pair's place in the order of its id's hash, or None): each pair's question numbered
    0..C-1 in increasing order of what its pairs hold, and each pair's place in the draw (by
    that number, then ``order``). None when each pair is its own question.

    A question's pairs are written BASE first, (BASE's confidence, BASE's outcome, NEW's
    confidence, NEW's outcome), and NEW first, each set sorted; the questions are ranked by the
    smaller of the two sequences (compared as sequences, a prefix first), so that exchanging
    BASE and NEW numbers them alike. Questions ranked alike hold the same pairs, or the same
    with BASE and NEW exchanged: they are taken in the order of their first pair in ``order``
    (of their labels when None). The command and the Python API hash a question differently,
    and the pairs come in the files' order: numbered by their pairs, the questions are drawn
    alike whatever the hashes, the order or which side is BASE."""
    import numpy as np

    distinct, number = np.unique(np.asarray(labels), return_inverse=True)
    number = number.reshape(-1)
    count, n = int(distinct.shape[0]), int(number.shape[0])
    if count == n:
        return None
    (b_conf, b_corr), (n_conf, n_corr) = base, new
    # every pair written BASE first (0..n-1) and NEW first (n..2n-1), ranked among all of them
    first_conf, second_conf = np.concatenate([b_conf, n_conf]), np.concatenate([n_conf, b_conf])
    first_corr = np.concatenate([b_corr, n_corr]).astype(bool)
    second_corr = np.concatenate([n_corr, b_corr]).astype(bool)
    columns = (first_conf, first_corr, second_conf, second_corr)
    by_value = np.lexsort(columns[::-1])
    step = np.zeros(2 * n, np.intp)
    for column in columns:
        ranked = column[by_value]
        step[1:] |= ranked[1:] != ranked[:-1]
    rank = np.empty_like(step)
    rank[by_value] = np.cumsum(step)
    ends = np.cumsum(np.bincount(number, minlength=count)).tolist()
    starts = [0, *ends[:-1]]

    def held(ranks: Any) -> list[tuple[int, ...]]:
        """Each question's ranks in increasing order."""
        values = ranks[np.lexsort((ranks, number))].tolist()
        return [tuple(values[a:b]) for a, b in zip(starts, ends, strict=True)]

    key = [min(pair) for pair in zip(held(rank[:n]), held(rank[n:]), strict=True)]
    if order is None:
        first = list(range(count))  # the labels' order
    else:
        least = np.full(count, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(least, number, np.asarray(order, np.int64))
        first = least.tolist()
    ranked_questions = sorted(range(count), key=lambda q: (key[q], first[q]))
    renumber = np.empty(count, np.intp)
    renumber[ranked_questions] = np.arange(count)
    numbers = renumber[number]
    within = np.arange(n) if order is None else np.asarray(order)
    place = np.empty(n, np.intp)
    place[np.lexsort((within, numbers))] = np.arange(n)
    return numbers, place


def taken_two_ways(modes: Any) -> tuple[str, str] | None:
    """(the warning, every gate check's reason to fail closed) when the compared inspect-ai
    rows took their confidences by both of --inspect-confidence auto's modes: a side's rows
    mix them, so its figures mix two definitions of confidence, or BASE's rows are all of one
    and NEW's all of the other, so the differences compare two quantities. ``modes``: BASE's
    and NEW's logs, each (name, samples taken by answer-token, samples taken by sequence),
    either side None where not known; None itself for rows read in another mode. None when
    every row took its confidence one way."""
    from calibcli.reports.report import AUTO_MODES, taken_by

    if modes is None:
        return None
    sides = dict(zip(("BASE", "NEW"), (logs or () for logs in modes), strict=True))
    ways = {side: _way(logs) for side, logs in sides.items()}
    mixing = [side for side, way in ways.items() if way == "auto"]
    if mixing:
        logs = [log for side in mixing for log in sides[side]]
        whose = " and ".join(f"{side}'s" for side in mixing)
        what = f"{whose} rows mix the two"
        reason = f"{whose} inspect-ai confidences mix answer-token and sequence"
        figures = "each side's figures" if len(mixing) == 2 else "its figures"
        why = f"{figures} mix two definitions of confidence, so a gate on the differences fails"
    elif set(ways.values()) == {"answer-token", "sequence"}:
        logs = [*sides["BASE"], *sides["NEW"]]
        what = f"BASE's rows took every confidence by {ways['BASE']}, NEW's by {ways['NEW']}"
        reason = f"BASE's inspect-ai confidences are {ways['BASE']}, NEW's {ways['NEW']}"
        why = "the differences compare two definitions of confidence, so a gate on them fails"
    else:
        return None
    named = [taken_by(log[0], log[1] + log[2], _way([log]), log[1:]) for log in logs[:5]]
    said = "; ".join(named) + ("; ..." if len(logs) > 5 else "")
    remedy = "give --inspect-confidence answer-token or sequence"
    warning = f"{AUTO_MODES}; {what} ({said}): {why}; {remedy} to choose one"
    return warning, f"{reason} (see the warning): {remedy}"


def _way(logs: Any) -> str | None:
    """The mode logs' samples took their confidences by (``auto``: both); None for none."""
    answer, sequence = (sum(log[k] for log in logs) for k in (1, 2))
    if answer and sequence:
        return "auto"
    return "answer-token" if answer else "sequence" if sequence else None


ALLOWANCE = "_increase"  # the checks that carry an allowance: an increase of a NULL_KEYS figure


def allowance_keys(gate: Any) -> frozenset[str]:
    """The figures whose ``--max-increase`` margin, read on the upper end, carries BASE's bias
    allowance: those sampling noise inflates (:data:`~calibcli.metrics.NULL_KEYS`)."""
    from calibcli.metrics import NULL_KEYS

    if not gate or gate.bound != "upper":
        return frozenset()
    asked = {name.removesuffix(ALLOWANCE) for name in gate.thresholds if name.endswith(ALLOWANCE)}
    return frozenset(asked & set(NULL_KEYS))


def floor_keys(gate: Any) -> tuple[str, ...]:
    """The figures whose margin, read on the upper end, reads a floor of NEW − BASE where it
    is larger (:func:`new_floor`): every ``--max-increase`` figure, and the ``--max-decrease``
    ones (accuracy, AUROC: :data:`~calibcli.reports.gate.BOTH_CLASSES`, which fail closed on a
    rare class) for the paired discordance floor alone."""
    if not gate or gate.bound != "upper":
        return ()
    return tuple(
        name.removesuffix(f"_{way}")
        for name in gate.thresholds
        for way in WAYS
        if name.endswith(f"_{way}")
    )


def accuracy_difference(base_right: Any, new_right: Any) -> float:
    """NEW's accuracy less BASE's (``*_right``: each row's outcome, either side's rows), the
    correctly rounded double of the exact difference of the two count ratios: 64/100 − 65/100 is
    −0.01, where subtracting the two rounded quotients gives −0.010000000000000009, above a
    ``--max-decrease accuracy=0.01`` margin the true drop only meets."""
    from fractions import Fraction

    import numpy as np

    counts = [(int(np.count_nonzero(y)), int(np.shape(y)[0])) for y in (base_right, new_right)]
    return float(Fraction(*counts[1]) - Fraction(*counts[0]))


def counted_difference(value: float, rows: int) -> float:
    """``value``, a difference of two count ratios over the same ``rows`` (k₁/n − k₀/n, each
    quotient rounded before the subtraction), as the correctly rounded double of the exact
    (k₁ − k₀)/n: ``value`` lies within 3·2⁻⁵³ of it, so n·value lies within 0.5 of the integer
    k₁ − k₀ for any n below 10¹⁵ and rounding it recovers that count. Not finite: as it is."""
    from fractions import Fraction

    if not math.isfinite(value) or rows <= 0:
        return value
    return float(Fraction(round(value * rows), rows))


def new_floor(
    new: tuple[Any, Any],
    keys: tuple[str, ...],
    settings: Any,
    labels: Any,
    base: tuple[Any, Any],
    table: dict[str, Any],
) -> tuple[Any, dict[str, float]] | None:
    """The floor of NEW − BASE for each figure in ``keys``, keyed by its check
    (``ece_increase``, ``accuracy_decrease``), and what the gate subtracts from it (``table``:
    the comparison's figures, each with BASE's estimate); None when no floor applies.

    Unpaired (``settings.paired`` false): NEW's rare-class floor
    (:func:`~calibcli.metrics.rare_class_floor`, on the comparison's bins, counted in questions
    with ``labels``, each NEW row's question) less BASE's estimate, for the figures not in
    :data:`~calibcli.reports.gate.BOTH_CLASSES`, when NEW's rarer class holds fewer than
    ``MIN_UPPER_CLASS``. Only NEW's figure is raised: that raises NEW − BASE, and leaving
    BASE's as estimated keeps the floor conservative.

    Paired (``base`` row for row with ``new``, ``labels`` each pair's question), nothing
    subtracted, each check reading the larger of two floors
    (:func:`~calibcli.reports.gate.larger_floor`): the paired rare-class floor
    (:func:`paired_floor`, the same questions turned on both sides), and the discordance floor
    (:func:`~calibcli.metrics.discordance_floor`: questions NEW gets wrong where BASE is right,
    fewer than ``MIN_UPPER_CLASS``, raised to their exact upper count by turning NEW alone), so
    a file against itself has a small positive floor on many questions and an honest one on
    few."""
    from dataclasses import replace

    import numpy as np

    from calibcli.metrics import PredictionColumns, discordance_floor, rare_class_floor
    from calibcli.reports.gate import larger_floor

    def keyed(found: Any) -> Any:
        """``found`` with its values keyed by check."""
        if found is None:
            return None
        way = {k: "decrease" if k in BOTH_CLASSES else "increase" for k in found.values}
        return replace(found, values={f"{k}_{way[k]}": v for k, v in found.values.items()})

    rare_keys = tuple(k for k in keys if k not in BOTH_CLASSES)
    if settings.paired:
        rare = paired_floor(base, new, rare_keys, settings, labels) if rare_keys else None
        both = discordance_floor(
            base,
            new,
            keys,
            level=settings.level,
            least=MIN_UPPER_CLASS,
            bins=settings.bins,
            labels=labels,
        )
        if both is not None and "accuracy" in both.values:
            # BASE's accuracy less NEW's with the turned rows, both over the pairs: exact
            rows = int(np.shape(new[1])[0])
            exact = counted_difference(both.values["accuracy"], rows)
            both = replace(both, values={**both.values, "accuracy": exact})
        found = larger_floor(keyed(rare), keyed(both))
        return None if found is None else (found, {})
    if not rare_keys:
        return None
    conf, right = np.asarray(new[0], np.float64), np.asarray(new[1], bool)
    asked = None if labels is None else (np.asarray(labels)[right], np.asarray(labels)[~right])
    found = rare_class_floor(
        PredictionColumns(conf[right], conf[~right]),
        rare_keys,
        level=settings.level,
        least=MIN_UPPER_CLASS,
        bins=settings.bins,
        questions=asked,
    )
    if found is None:
        return None
    placed = {f"{k}{ALLOWANCE}": v for k, v in found.placed.items()}
    offsets = {f"{k}{ALLOWANCE}": table[k]["base"] for k in rare_keys}
    return replace(keyed(found), placed=placed), offsets


def paired_floor(
    base: tuple[Any, Any], new: tuple[Any, Any], keys: tuple[str, ...], settings: Any, labels: Any
) -> Any:
    """The paired rare-class floor of NEW − BASE (:class:`~calibcli.metrics.RareClassFloor`,
    ``values`` by figure key): NEW's rarer class and its upper count m of k
    (as :func:`~calibcli.metrics.rare_class_floor` counts them, in questions with ``labels``), and
    m − k whole questions (every row of each, on both sides) turned to that class, chosen among
    those whose pairs are all of the other class on both sides (both right, for wrong answers
    rare), at most as many as there are. A question is chosen where turning it raises NEW's
    figure less BASE's the most: for the Brier score, by the sum over its rows of 2(c_new −
    c_base) (2(c_base − c_new) when right answers are rare), for the NLL by the difference of
    the log-odds, each the exact maximum of its difference; every other figure takes the Brier
    score's questions. Each figure is then NEW's less BASE's, each on its turned rows."""
    from dataclasses import replace

    import numpy as np

    from calibcli.metrics import (
        PredictionColumns,
        RareClassFloor,
        calibration_estimates,
        rare_class_floor,
    )

    c_new, y_new = np.asarray(new[0], np.float64), np.asarray(new[1], bool)
    c_base, y_base = np.asarray(base[0], np.float64), np.asarray(base[1], bool)
    label = np.arange(c_new.shape[0]) if labels is None else np.asarray(labels)
    counted = rare_class_floor(  # no figure: NEW's rare class, m and k alone
        PredictionColumns(c_new[y_new], c_new[~y_new]),
        (),
        level=settings.level,
        least=MIN_UPPER_CLASS,
        bins=settings.bins,
        questions=None if labels is None else (label[y_new], label[~y_new]),
    )
    if counted is None:
        return None
    found = counted.rare
    other = found.rare == "wrong"  # the outcome turned: right answers made wrong, or the mirror
    _, question = np.unique(label, return_inverse=True)
    question = question.reshape(-1)
    count = int(question.max()) + 1 if question.size else 0
    blocked = np.bincount(question, (y_new != other) | (y_base != other), count) > 0
    sign = 1.0 if other else -1.0  # a turned row's cost rises with its confidence, or falls
    with np.errstate(divide="ignore", invalid="ignore"):
        costs = {
            "brier": 2.0 * sign * (c_new - c_base),
            "nll": sign * (np.log(c_new / (1 - c_new)) - np.log(c_base / (1 - c_base))),
        }
    want = max(0, found.bound - found.count)
    values: dict[str, float] = {}
    turned = 0
    for cost in ("brier", "nll"):
        asked = [k for k in keys if (k == "nll") == (cost == "nll")]
        if not asked:
            continue
        total = np.bincount(question, np.nan_to_num(costs[cost], nan=0.0), count)
        chosen = np.flatnonzero(~blocked)
        chosen = chosen[np.argsort(-total[chosen], kind="stable")][:want]
        flip = np.isin(question, chosen)
        turned = max(turned, int(flip.sum()))
        sides = []
        for conf, right in ((c_new, y_new), (c_base, y_base)):
            right = np.where(flip, not other, right)
            est = calibration_estimates(
                PredictionColumns(conf[right], conf[~right]),
                bins=settings.bins,
                smooth="smece" in asked,
            )
            sides.append(est)
        values.update({k: float(getattr(sides[0], k)) - float(getattr(sides[1], k)) for k in asked})
    return RareClassFloor(replace(found, turned=turned), {k: values[k] for k in keys})


def with_new_floors(
    verdict: Verdict, gate: Any, sections: dict[str | None, Any], level: float
) -> Verdict:
    """The verdict with each open upper-end check of a section holding a floor of NEW − BASE
    (:func:`new_floor`; ``sections``: the gate views, None the pooled one) read as the larger
    of its upper end and that floor (less BASE's estimate, unpaired)
    (:func:`~calibcli.reports.gate.with_floors`)."""
    floors = {k: v.figures.get("floor") for k, v in sections.items()}
    offsets = {k: v.figures.get("floor_offsets") for k, v in sections.items()}
    return Verdict(
        *with_floors(verdict.body, verdict.failures, gate, floors, level, offsets=offsets)
    )


def base_allowance(
    conf: Any, keys: frozenset[str], settings: Any, questions: Any = None
) -> dict[str, float]:
    """``{"ece_increase": a, ...}``: each figure's null value on BASE's confidences ``conf``
    (:func:`~calibcli.metrics.calibrated_null`, its draws seeded by the comparison's seed),
    what the figure reads on rows calibrated by construction: the most sampling noise can raise
    BASE's estimate, so the most it can pull NEW − BASE down. ``questions``: each BASE row's
    question when its rows repeat them (their outcomes are drawn together, which widens the
    noise). Nothing without rows or keys."""
    from calibcli.metrics import NULL_DRAWS, calibrated_null
    from calibcli.reports.calibrate import bootstrap_workers

    if not keys or conf.shape[0] == 0:
        return {}
    # each draw evaluates every confidence twice (once as a wrong answer, once as a right one)
    workers = bootstrap_workers(settings.workers, 2 * conf.shape[0] * NULL_DRAWS)
    null = calibrated_null(
        conf,
        keys=keys,
        bins=settings.bins,
        seed=settings.seed,
        workers=workers,
        questions=questions,
    )
    return {f"{key}{ALLOWANCE}": value for key, value in null.mean.items()}


def with_allowance(
    verdict: Verdict, gate: Any, sections: dict[str | None, Any], level: float
) -> Verdict:
    """The verdict with each open upper-end check of an allowance figure read as upper end +
    allowance (``sections``: the gate views, None the pooled one, each holding its
    ``allowance``): the check records ``allowance``, ``value`` becomes the sum (what is
    compared with the margin) and a failure line says both parts."""
    if not any(view.figures.get("allowance") for view in sections.values()):
        return verdict
    old = iter(verdict.failures)
    failures: list[str] = []
    failed_groups: list[str] = []
    for check in verdict.body["checks"]:
        line = None if check["passed"] else next(old)
        group = check.get("group")
        allowed = sections[group].figures.get("allowance") or {}
        metric = check["metric"]
        if metric in allowed and "reason" not in check:
            # the upper end, or the rare-class floor where larger (already in the value)
            upper = check["value"] if "floor" in check else check["upper"]
            extra, margin = allowed[metric], check["threshold"]
            del check["value"], check["passed"]  # recorded again after the allowance
            check["allowance"] = extra
            check["value"] = upper + extra
            check["passed"] = bool(check["value"] <= margin)
            line = None if check["passed"] else _allowance_line(check, gate, group, level)
        if line is not None:
            failures.append(line)
            if group is not None and group not in failed_groups:
                failed_groups.append(group)
    body = {**verdict.body, "passed": not failures}
    if "failed_groups" in body:
        body["failed_groups"] = failed_groups
    return Verdict(body, failures)


def _allowance_line(check: dict[str, Any], gate: Any, group: str | None, level: float) -> str:
    """A failed allowance check's line: the upper end and the allowance, each to the digits
    that put it on its side of what the margin leaves it."""
    metric, upper, extra, margin = (check[k] for k in ("metric", "upper", "allowance", "threshold"))
    key = metric.removesuffix(ALLOWANCE)
    label = next(f.label for f in registry.CALIBRATION if f.key == key)
    where = f" in group {group!r}" if group is not None else ""
    read = f"upper end of the {level:g} interval"
    if check.get("floor") is not None and check["floor"] > upper:
        kind = "discordance" if check.get("floor_kind") == "discordant" else "rare-class"
        upper, read = check["floor"], f"the {kind} floor of NEW − BASE, above the {read}"
    return (
        f"{metric}{where} = {value_text(upper, margin)} ({read}) + "
        f"{value_text(extra, margin - upper)} (BASE's {label} on rows calibrated by "
        f"construction: the most sampling noise can raise it) exceeds {gate.options[metric]}"
    )
