"""Sentences that the terminal, the Markdown summary and the HTML page say alike, read from a
report body: how many questions and answers a comparison paired, McNemar's counts, and what a
plug-in threshold chosen on --fit rows does on the evaluated rows. Plain text; a renderer that
escapes passes its own way of showing a count (``shown``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calibcli.render.digits import as_given, fixed, gate_decimals
from calibcli.reports import lookup

UNPAIRED = "Unpaired, as asked: each side resampled on its own, without matching rows by id"
PLUG_IN = "the plug-in threshold reaches the target accuracy on the fit rows, with no guarantee"


def _count(value: Any) -> str:
    """A count with thousands separators (anything else, from a hand-edited report, as text)."""
    return f"{value:,}" if _is_count(value) else str(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _questions(body: dict[str, Any]) -> int | None:
    """The questions of a paired comparison whose matched rows repeat them (an inspect-ai run's
    epochs): fewer than its matched rows; None when each question is answered once."""
    questions, matched = lookup(body, "mcnemar.clustered.questions"), body.get("matched")
    if _is_count(questions) and _is_count(matched) and questions < matched:
        return questions
    return None


def paired_on(body: dict[str, Any], shown: Callable[[Any], str] = _count) -> str:
    """What a paired comparison paired: ``60 questions (180 answers)`` when its matched rows
    repeat their questions, else ``2,000 questions`` (one answer each)."""
    questions = _questions(body)
    if questions is None:
        return f"{shown(body.get('matched'))} questions"
    return f"{shown(questions)} questions ({shown(body.get('matched'))} answers)"


def mcnemar_counts(
    body: dict[str, Any],
    turns: tuple[str, str] = ("right → wrong", "wrong → right"),
    shown: Callable[[Any], str] = _count,
) -> str:
    """McNemar's discordant counts, each followed by its ``turns``: answers, over the questions
    they answer when the matched rows repeat their questions (``60 questions: 36 answers right
    → wrong, 24 wrong → right``)."""
    m = body.get("mcnemar") or {}
    questions = _questions(body)
    answers = "" if questions is None else " answers"
    said = f"{shown(m.get('right_to_wrong'))}{answers} {turns[0]}, "
    said += f"{shown(m.get('wrong_to_right'))} {turns[1]}"
    return said if questions is None else f"{shown(questions)} questions: {said}"


def plug_in_evaluated(body: dict[str, Any]) -> str | None:
    """The plug-in threshold chosen on --fit rows: it reaches the target there, and on the
    evaluated rows it accepts so many at such an accuracy, below the target or not (None without
    --fit or without a plug-in threshold). It has no guarantee: on held-out rows it falls below
    the target about half the time."""
    plug = body.get("plug_in")
    if "fit_n" not in body or not isinstance(plug, dict) or plug.get("threshold") is None:
        return None
    seen = plug.get("realised") if isinstance(plug.get("realised"), dict) else {}
    accepted, errors, accuracy = (seen.get(k) for k in ("accepted", "errors", "accuracy"))
    if not (_is_count(accepted) and _is_count(errors) and isinstance(accuracy, float)):
        return f"{PLUG_IN}: it accepts none of the evaluated rows" if accepted == 0 else None
    target = body.get("target_accuracy")
    shown = fixed(accuracy, gate_decimals([accuracy], target))  # read on its side of the target
    right = accepted - errors
    said = f"{PLUG_IN}: it accepts {accepted:,} of the evaluated rows with accuracy {shown} "
    said += f"({right:,} right)"
    if isinstance(target, (int, float)) and accuracy < target:
        said += f", below the target {as_given(target)}"
    return said
