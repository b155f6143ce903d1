"""What ``compare`` checks of its two sides before comparing them: that enough rows matched by
id (:func:`check_matching`), that the sides are runs of one task (:func:`tasks_apart`) and
that they were graded by one scorer (:func:`scorers_apart`): runs of different tasks ask
different questions, and logs graded by different scorers judge a right answer differently, so
their differences would compare the tasks or the scorers as well as the models, and every gate
fails closed on them (:func:`sides_apart`), as on sides whose inspect-ai confidences were taken
two ways (:func:`~calibcli.reports.compare_sides.taken_two_ways`) and on sides the Python API
read with different options that compute their confidences (:func:`scored_apart`)."""

from __future__ import annotations

from typing import Any

MAX_UNMATCHED_SHARE = 0.05  # more unmatched rows than this on either side is an error by default

# a table's cells are typed as JSON spells them: its id 12 is a number
TABLE_IDS = '; a table\'s id 12 reads as the number 12, which matches 12 in JSON, not "12"'

# how each format's runs name what they ask, and where the name is read
_TASK_WORDS = {
    "lm-eval": ("lm-eval task", "lm-eval tasks", "as their files' names say"),
    "inspect-ai": ("inspect-ai task", "inspect-ai tasks", "as their logs' eval.task says"),
    "helm": (
        "HELM scenario",
        "HELM scenarios",
        "as their run folders' names say, the model left out",
    ),
}
SHOWN = 3  # tasks named on a side; the rest are counted


def check_matching(
    matched: Any, base: str, new: str, allow_unmatched: bool, tables: bool = False
) -> None:
    """ValueError when no row of ``base`` matches one of ``new`` by id (naming the sides'
    tasks when they are runs of different ones, :func:`tasks_apart`), or when more than
    :data:`MAX_UNMATCHED_SHARE` of a side's rows have no partner and ``allow_unmatched`` is
    not given (``matched``: the :class:`~calibcli.summaries.PairedRows`; ``base`` and ``new``
    name the sides; ``tables``: a side is a CSV or TSV table, and the error says how a
    table's ids read)."""
    from pathlib import Path

    if matched.base[0].shape[0] == 0:
        named = _named(getattr(matched, "tasks", None), paired=True)
        if named is not None:
            raise ValueError(
                f"no row of {base} matches a row of {new} by id: they are runs of different "
                f"tasks ({named[0]}), which ask different questions; compare runs of one task"
            )
        raise ValueError(
            f"no row of {base} matches a row of {new} by id; check --id-field, or use --unpaired"
            + (TABLE_IDS if tables else "")
        )
    for name, unmatched, total in (
        (base, matched.unmatched_base, matched.base_rows),
        (new, matched.unmatched_new, matched.new_rows),
    ):
        if not allow_unmatched and unmatched > MAX_UNMATCHED_SHARE * total:
            raise ValueError(
                f"{unmatched} of {total} rows of {Path(name).name} have no partner "
                f"(more than {MAX_UNMATCHED_SHARE:.0%}); pass --allow-unmatched to compare the "
                f"{matched.base[0].shape[0]} matched rows"
            )


def tasks_apart(
    tasks: Any, *, paired: bool, same_questions: bool = False
) -> tuple[str, str] | None:
    """(the warning, every gate check's reason to fail closed) when the compared sides are runs
    of different tasks; None when they are of one, or a side's are not known. ``tasks``:
    BASE's and NEW's, each a tuple of (format, task, the questions it chooses: a HELM
    scenario's without the arguments that set how they were prompted), None where not known
    (:attr:`~calibcli.io.compared.TaskedRows.tasks`); tasks are compared by their questions,
    as :func:`same_task` compares them. Unpaired, each side's figures are of its own tasks'
    questions: the sides differ when their tasks do. Paired, only matched rows are compared,
    and a task both sides ran pairs its own questions: the sides differ when they share no
    task (ids that number each task's questions alike then pair questions of different
    tasks), unless ``same_questions``: every matched row's document is known on both sides
    and the two agree (:attr:`~calibcli.io.compared.TaskedRows.same_questions`), so each
    matched pair asks one question, whatever its tasks are called."""
    if paired and same_questions:
        return None
    named = _named(tasks, paired=paired)
    if named is None:
        return None
    shown, where = named
    if paired:
        why = "both number their questions alike, so the matched rows pair one task's "
        why += "questions with the other's"
    else:
        why = "each side's figures are of its own questions"
    warning = (
        f"BASE and NEW are runs of different tasks ({shown}, {where}): {why}; the differences "
        "compare the tasks as well as the models, and a gate on them fails; compare runs of "
        "one task"
    )
    return warning, "BASE and NEW are runs of different tasks (see the warning)"


def sides_apart(matched: Any, *, paired: bool) -> list[tuple[str, str, str]]:
    """Why the sides of ``matched`` (:class:`~calibcli.io.compared.TaskedRows`; rows given as
    such know neither) are not comparable: each (the warning's kind, the warning, every gate
    check's reason to fail closed), runs of different tasks (:func:`tasks_apart`) first, then
    logs graded by different scorers (:func:`scorers_apart`), then rows read with different
    options that grade them (:func:`graded_apart`), then rows read with different options that
    compute their confidences (:func:`scored_apart`); none when they are."""
    asked = bool(getattr(matched, "same_questions", False))
    found = [
        (
            "tasks",
            tasks_apart(getattr(matched, "tasks", None), paired=paired, same_questions=asked),
        ),
        (
            "scorers",
            scorers_apart(
                getattr(matched, "scorers", None),
                read_with=bool(getattr(matched, "scorers_given", False)),
            ),
        ),
        ("grading", graded_apart(getattr(matched, "graded", ()))),
        ("scoring", scored_apart(getattr(matched, "scored", ()))),
    ]
    return [(kind, *said) for kind, said in found if said is not None]


def scorers_apart(scorers: Any, *, read_with: bool = False) -> tuple[str, str] | None:
    """(the warning, every gate check's reason to fail closed) when the compared sides'
    inspect-ai logs were graded by different scorers; None when by one, or a side's is not
    known. ``scorers``: BASE's and NEW's, each the one scorer its logs hold, None where not
    known (:attr:`~calibcli.io.compared.TaskedRows.scorers`; None when --scorer grades both
    sides alike). A scorer judges what a right answer is (match compares the answer's end with
    the target, includes looks for the target anywhere in it): one model's answers read right
    by one and wrong by the other. ``read_with``: a side's scorer was given to read it (the
    Python API reads each side with its own), and the warning says so."""
    if scorers is None or None in scorers or scorers[0] == scorers[1]:
        return None
    held = "the one scorer each side's samples hold"
    if read_with:
        held = "the scorer each side was read with, or the one its samples hold"
    warning = (
        f"BASE and NEW were graded by different scorers (BASE's inspect-ai logs by "
        f"{scorers[0]!r}; NEW's by {scorers[1]!r}, {held}): "
        "each judges a right answer its own way; the differences compare the scorers as well "
        "as the models, and a gate on them fails; compare logs graded by one scorer"
    )
    return warning, "BASE and NEW were graded by different scorers (see the warning)"


def graded_apart(graded: Any) -> tuple[str, str] | None:
    """(the warning, every gate check's reason to fail closed) when the two sides' rows were
    read with different options that say which answer is right (the Python API reads each side
    with its own options; the command reads both one way, so its rows have none): ``graded``,
    each such option as (its name, BASE's value, NEW's value); None when there is none."""
    if not graded:
        return None
    said = _each_side(graded)
    warning = (
        f"BASE and NEW were graded another way ({said}): each reading judges a right answer "
        "its own way; the differences compare the gradings as well as the models, and a gate "
        "on them fails; read both sides alike"
    )
    return warning, "BASE and NEW were graded another way (see the warning)"


def scored_apart(scored: Any) -> tuple[str, str] | None:
    """(the warning, every gate check's reason to fail closed) when the two sides' rows were
    read with different options that compute their confidences (the Python API reads each side
    with its own options; the command reads both one way, and compares no summary files):
    ``scored``, each such option as (its name, BASE's value, NEW's value), e.g. lm-eval's
    ``mc_norm`` or inspect-ai's ``inspect_confidence``; None when there is none. The
    differences would then be the options' as well as the models', so the reason names both
    sides' values."""
    if not scored:
        return None
    said = _each_side(scored)
    warning = (
        f"the sides' confidences were computed another way ({said}): the differences are also "
        "those of scoring the rows another way, which compare of the files never does"
    )
    reason = (
        f"BASE and NEW were read with different options that compute their confidences "
        f"({said}): the differences are the options' as well as the models'; read both sides "
        "with one value of each"
    )
    return warning, reason


def _each_side(options: Any) -> str:
    """Reading options that differ between the sides, each (its name, BASE's value, NEW's
    value), as the messages name them."""
    return "; ".join(f"{name}={base!r} on BASE, {new!r} on NEW" for name, base, new in options)


def _named(tasks: Any, *, paired: bool) -> tuple[str, str] | None:
    """(the two sides' tasks as a message names them, where their names were read) when
    ``tasks`` are of different tasks (:func:`tasks_apart`), else None. Sides of two formats
    name their tasks two ways, and are not compared."""
    if tasks is None or tasks[0] is None or tasks[1] is None:
        return None
    kinds = {fmt for side in tasks for fmt, *_ in side}
    if len(kinds) != 1 or not all(tasks):
        return None
    fmt = kinds.pop()
    asks = [{task[-1] for task in side} for side in tasks]
    shared = [(a, b) for a in asks[0] for b in asks[1] if same_task(fmt, a, b)]
    if paired:
        if shared:
            return None
    elif {a for a, _ in shared} == asks[0] and {b for _, b in shared} == asks[1]:
        return None
    base, new = ({task[1] for task in side} for side in tasks)
    one, many, where = _TASK_WORDS.get(fmt, ("task", "tasks", "as their runs say"))
    sides = [
        f"{side}'s {one if len(names) == 1 else many} {_listed(sorted(names))}"
        for side, names in (("BASE", base), ("NEW", new))
    ]
    return "; ".join(sides), where


def same_task(fmt: str, one: str, other: str) -> bool:
    """Whether two runs' task names (of format ``fmt``) name one task: the same name, or two
    inspect-ai names whose last ``/`` part is one when one of them has a package prefix and the
    other none (inspect-ai names a task ``inspect_evals/gpqa`` when it is run from an installed
    package and ``gpqa`` when run from its file). Two prefixes that differ are two packages'
    tasks, which may share a name."""
    if one == other:
        return True
    if fmt != "inspect-ai" or ("/" in one) == ("/" in other):
        return False
    return one.rpartition("/")[2] == other.rpartition("/")[2]


def _listed(names: list[str]) -> str:
    """Names quoted, the first :data:`SHOWN`, the rest counted."""
    shown = ", ".join(repr(n) for n in names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
