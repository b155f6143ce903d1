"""What is known of each --by group's rows from the sources read: the one model a group's rows
are known to be (a group that is one model's sample), and the most times a run feeding it
scored each question (its own repeats, not those of re-runs that fed other groups).

A group's sources are known only where a source's rows all fall in one group: an lm-eval
file's rows under --by task are in the group its name gives (``task_of``), and a run's rows
under --by model in the group of the model it names, where its record spells the model as the
group is named (``named``); any other source's rows may be in any group, so they count towards
every group."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GroupSources:
    """``models``: each --by group known to be one model's, with that model; ``epochs``: each
    group with the most times a run feeding it scored each question (1 where none repeated);
    a group of neither mapping is not known. ``named``: read with --by model, the groups known
    to hold only the rows of the model they are named for (:func:`_named_groups`)."""

    models: Mapping[str, str] = field(default_factory=dict)
    epochs: Mapping[str, int] = field(default_factory=dict)
    named: frozenset[str] = frozenset()

    def repeats(self, group: str | None, most: int | None) -> int | None:
        """The most rows a question holds in ``group``'s rows (None: one each), where its
        sources are known; else ``most``, that of every run read (the pooled rows': None)."""
        if group is None or group not in self.epochs:
            return most
        own = self.epochs[group]
        return own if own > 1 else None


def group_sources(
    sources: Iterable[Any],
    groups: tuple[str, ...] | None,
    task_of: Callable[[str], str] | None,
    models_of: Callable[[str | None], list[str]],
) -> GroupSources:
    """What the ``sources`` read (skipped ones left out) say of each of the --by ``groups``
    (:class:`GroupSources`; ``models_of``: the models a source's recorded ``model`` names). A
    group holds the rows of its own sources and of every source whose group is not known; its
    model is known when those name one model between them, and none of them names none (rows
    of a source that names no model may be any model's); its repeats are the most of theirs
    (a source's epochs, or the rows of a question among re-runs pooled with it)."""
    anywhere: set[str] = set()
    found: dict[str, set[str]] = {}
    unnamed: set[str] = set()  # groups holding rows of a source that names no model
    unnamed_anywhere = False
    most_anywhere = 1
    most: dict[str, int] = {}
    read = [s for s in sources if s.format is not None and s.skipped is None]  # held rows
    for source in read:
        models = set(models_of(source.model))
        times = max(source.epochs or 1, source.pooled or 1)
        lm_eval = task_of is not None and source.format == "lm-eval"
        group = task_of(source.name) if lm_eval else None
        if group is not None and group in (groups or ()):
            found.setdefault(group, set()).update(models)
            most[group] = max(most.get(group, 1), times)
            if not models:
                unnamed.add(group)
        else:
            anywhere.update(models)
            unnamed_anywhere = unnamed_anywhere or not models
            most_anywhere = max(most_anywhere, times)
    models_known: dict[str, str] = {}
    for g in groups or ():
        held = found.get(g, set()) | anywhere
        if not unnamed_anywhere and g not in unnamed and len(held) == 1:
            models_known[g] = next(iter(held))
    epochs = {g: max(most.get(g, 1), most_anywhere) for g in groups or ()}
    return GroupSources(models_known, epochs, _named_groups(read, groups))


def _named_groups(sources: list[Any], groups: tuple[str, ...] | None) -> frozenset[str]:
    """Under --by model, the ``groups`` known to hold only the rows of the model they are named
    for. A row's group is the model its run names, so this is known where every source read
    (skipped ones left out) records one model, spelled as a group is named: then each group
    holds the rows of the runs that name it. Else none is: rows of a source that names no
    model, or several, may be in any group, and a run whose record spells its model otherwise
    than its group does (lm-eval model arguments) may be another run's model loaded another
    way, pooled in the group of that model's name."""
    named = set(groups or ())
    found: set[str] = set()
    for source in sources:
        if source.model not in named:
            return frozenset()
        found.add(source.model)
    return frozenset(found)
