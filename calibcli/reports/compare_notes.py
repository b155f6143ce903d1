"""The warnings of a comparison's figures (:mod:`calibcli.reports.compare`): figures infinite
or undefined on a side, and binned figures resting on too few bins, with the gate checks the
latter close."""

from __future__ import annotations

import math
from typing import Any

from calibcli.reports.compare_sides import WAYS
from calibcli.reports.gate import DEBIASED, debiased_bins, debiased_reason
from calibcli.reports.report import Note

INFINITE = "infinite"
UNDEFINED_AUROC = "auroc_undefined"
GROUP_KINDS = (INFINITE, UNDEFINED_AUROC)
"""The kinds of a --by group's warnings that the report repeats, merged across groups."""


def few_bins(
    base: tuple[Any, Any],
    new: tuple[Any, Any],
    settings: Any,
    questions: tuple[Any, Any] = (None, None),
) -> tuple[dict[str, str], list[Note]]:
    """The binned figures' checks (ECE, MCE, RMSCE and its debiased form) that fail
    closed because a side populates fewer than ``settings.min_bins`` bins (capped at the
    bins), with the warning that says so: a difference of estimates resting on one or two bins
    says nothing of calibration, though it may be small. And the debiased RMSCE's checks when
    fewer than that many of a side's bins hold 2 or more rows, or more than a tenth of its rows
    lie in bins of one: its sum leaves out bins of one row
    (:func:`~calibcli.reports.gate.debiased_reason`), so both sides may read 0.0. On a side
    whose rows repeat their questions (``questions``: BASE's and NEW's labels of each row's
    question, either None) those rules count questions (:func:`~calibcli.reports.gate.
    debiased_bins`): identical answers to one question give its bin no variance to subtract."""
    import numpy as np

    from calibcli.reports.calibrate import BINNED_GATES
    from calibcli.summaries import side_stats

    least = min(settings.min_bins, settings.bins)
    closed: dict[str, str] = {}
    notes: list[Note] = []
    for name, rows, labels in (("BASE", base, questions[0]), ("NEW", new, questions[1])):
        count = side_stats(rows, settings.bins).count
        populated = int(np.count_nonzero(count))
        if populated >= least:
            k = most_rows(labels)
            _, carried, total, lone = debiased_bins(count, k)
            why = debiased_reason(carried, populated, total, least, name, repeats=k, lone=lone)
            for way in WAYS if why is not None else ():
                closed.setdefault(f"{DEBIASED}_{way}", why)
            continue
        why = f"only {populated} of {settings.bins} bins are populated on {name} (minimum {least})"
        notes.append(
            Note(
                "few_bins",
                f"{why}; its binned figures (ECE, MCE, RMSCE) rest on too few bins",
                f"{name}: {populated} of {settings.bins}",
                general=f"fewer than {least} bins are populated on a side; its binned figures "
                "(ECE, MCE, RMSCE) rest on too few bins",
            )
        )
        for key in sorted(BINNED_GATES):
            for way in WAYS:
                closed.setdefault(f"{key}_{way}", why)
    return closed, notes


def most_rows(labels: Any) -> int | None:
    """The most rows one question holds, given each row's question label; None when no
    question holds more than one (or without labels)."""
    import numpy as np

    if labels is None or not len(labels):
        return None
    most = int(np.unique(np.asarray(labels), return_counts=True)[1].max())
    return most if most > 1 else None


def infinite_notes(result: Any) -> list[Note]:
    """A warning for each figure infinite on a side (nll: a confidence of exactly 1 on a wrong
    answer, or 0 on a right one), explaining its nulls: the side's value, the difference it
    leaves infinite or undefined, and that difference's interval."""
    from calibcli.metrics import SCALAR_KEYS

    why = (
        "a confidence of exactly 1 on a wrong answer (or 0 on a right one); written as null, "
        "as is the difference it leaves infinite or undefined, and that difference has no "
        "interval (the resamples that miss such a row estimate another quantity)"
    )
    notes = []
    for key in SCALAR_KEYS:
        sides = [n for n, v in (("BASE", result.base), ("NEW", result.new)) if math.isinf(v[key])]
        if not sides:
            continue
        on = " and ".join(sides)
        text = f"{key} is infinite on {on}: {why}"
        general = f"{key} is infinite on BASE or NEW in these groups: {why}"
        notes.append(Note(INFINITE, text, detail=on, explains=(key,), general=general))
    return notes


def undefined_auroc(base: tuple[Any, Any], new: tuple[Any, Any]) -> tuple[Note, str] | None:
    """A warning when AUROC is undefined on a side, every one of its answers right or every
    one wrong (the figure, its difference and that difference's interval are null), and what
    the report's ``auroc_test`` says instead of a test (its ``reason``); None when both sides
    hold both."""
    import numpy as np

    said = []
    for name, (_, correct) in (("BASE", base), ("NEW", new)):
        right = int(np.count_nonzero(correct))
        if right in (0, correct.shape[0]):
            said.append((name, "right" if right else "wrong"))
    if not said:
        return None
    on = " and ".join(f"{name} (every answer {how})" for name, how in said)
    sides = " and ".join(name for name, _ in said)
    why = "it needs both right and wrong answers"
    text = (
        f"auroc is undefined on {on}: {why}; written as null, as is the difference NEW - BASE, "
        "which has no interval"
    )
    general = (
        f"auroc is undefined on BASE or NEW in these groups (every answer right, or every "
        f"answer wrong): {why}; written as null, as is the difference, which has no interval"
    )
    note = Note(UNDEFINED_AUROC, text, detail=sides, explains=("auroc",), general=general)
    return note, f"undefined on {on}, so there is no test and no interval"
