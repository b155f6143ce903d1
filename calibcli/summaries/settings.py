"""What calibration and perplexity settings share: how they are written into a summary
file's header and how two summaries' settings are told apart."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

OPTIONAL = ("choices", "gold_field", "id_field")
"""Settings written only where they were given: a summary read without them is written as it
was before they were recorded, and one written before then reads them as not given."""


def settings_dict(settings: Any) -> dict[str, Any]:
    """The settings as a summary file's header holds them."""
    return {
        f.name: getattr(settings, f.name)
        for f in fields(settings)
        if f.name not in OPTIONAL or getattr(settings, f.name) is not None
    }


ANY_IDS = ("id_field",)
"""Settings whose None agrees with any value: rows read without ``--id-field`` (or a summary
written before it was recorded, with it or not) merge with rows read with it, as they did
before it was recorded; the ids only add a check."""


def agree(name: str, mine: Any, theirs: Any) -> bool:
    """Whether two values of the setting ``name`` may be counted together."""
    return mine == theirs or (name in ANY_IDS and None in (mine, theirs))


def settings_differences(mine: Any, theirs: Any) -> list[str]:
    """``name: mine != theirs`` for each setting that differs (:func:`agree`)."""
    return [
        f"{f.name} {getattr(mine, f.name)!r} != {getattr(theirs, f.name)!r}"
        for f in fields(mine)
        if not agree(f.name, getattr(mine, f.name), getattr(theirs, f.name))
    ]
