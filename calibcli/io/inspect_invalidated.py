"""inspect-ai samples marked invalidated: a sample whose ``invalidation`` holds a record (the
time, and an author, a reason and metadata, written by inspect-ai's ``invalidate_samples``,
which also sets the log's ``invalidated``) is one its run should not be judged by, and an eval
set runs it again. Such samples are left out of the rows, as a sample that ended in an error
unscored is (:func:`calibcli.io.inspect_log.scored_samples`), and one warning per log counts
them and gives their reasons (:func:`invalidated_note`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

FIELD = "invalidation"
"""The sample field inspect-ai records an invalidation in (null, or absent, for a valid one)."""
REASONS = 2
"""Most distinct reasons quoted in the warning; the others are counted."""
REASON_CHARS = 100
"""Most characters of a reason quoted in the warning."""


def invalidation(sample: Any) -> Any:
    """A sample's invalidation record (a dict, or a typed struct and its text), or None for a
    valid sample: one whose ``invalidation`` is null, absent or empty."""
    if type(sample) is tuple:  # (struct, text) of the typed path
        found = getattr(sample[0], FIELD, None)
    elif isinstance(sample, Mapping):
        found = sample.get(FIELD)
    else:
        return None
    return None if found is None or found is False or found in ({}, "", []) else found


@functools.cache
def with_invalidation(struct: Any) -> Any:
    """The typed sample struct ``struct`` (:func:`calibcli.formats.inspect_typed.sample_type`)
    also holding the sample's ``invalidation`` as any JSON value, so that an invalidated
    sample is known without decoding it again; ``struct`` itself when it holds it already."""
    import msgspec

    if FIELD in struct.__struct_encode_fields__:
        return struct
    return msgspec.defstruct(struct.__name__, [(FIELD, Any, None)], bases=(struct,), gc=False)


def invalidated_note(records: list[Any], held: int) -> str:
    """The warning of a log holding ``held`` samples of which those of ``records`` (their
    invalidation records) are invalidated and left out, e.g. ``32 of 300 samples are
    invalidated (reason: answer leaked; an eval set runs them again): left out``."""
    reasons: dict[str, None] = {}
    for record in records:
        reason = record.get("reason") if isinstance(record, Mapping) else None
        if isinstance(reason, str) and reason.strip():
            first = reason.strip().split("\n", 1)[0].strip()
            if len(first) > REASON_CHARS:
                first = first[: REASON_CHARS - 3].rstrip() + "..."
            reasons[first] = None
    said = list(reasons)[:REASONS]
    more = len(reasons) - len(said)
    if not said:
        why = "no reason given"
    else:
        why = f"reason{'' if len(reasons) == 1 else 's'}: {'; '.join(said)}"
        why += f"; and {more} other{'' if more == 1 else 's'}" if more else ""
    left = len(records)
    them = "it" if left == 1 else "them"
    return (
        f"{left} of {held} sample{'' if held == 1 else 's'} "
        f"{'is' if left == 1 else 'are'} invalidated ({why}; an eval set runs {them} again): "
        "left out"
    )
