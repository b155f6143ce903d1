"""How many train trials a HELM run scored each instance with, read from its
``per_instance_stats.json`` before its rows are.

HELM runs each instance once per train trial (``--num-train-trials``: an independent draw of
in-context examples each time) and writes one ``PerInstanceStats`` per (instance, trial), with
``train_trial_index`` counting from 0. The trials of an instance are answers to one question,
as an inspect-ai run's epochs are. A ``.json`` file (HELM's name, compressed or not) is
searched only when its first 64 KiB hold the key ``"train_trial_index"`` (no other format
writes it); its trials are then the highest index found in the whole text, plus one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping

from calibcli.io.compression import open_path, read_errors, without_suffix
from calibcli.io.content import file_version

HEAD_BYTES = 1 << 16
_KEY = b'"train_trial_index"'
_TRIAL = re.compile(rb'"train_trial_index"\s*:\s*(\d+)')
_BLOCK = 1 << 22  # bytes searched at a time
_OVERLAP = 64  # kept from the end of a block, so an index cut by the block's end is found


def helm_trials(path: str) -> int | None:
    """The train trials of a HELM ``per_instance_stats.json`` (its highest
    ``train_trial_index`` + 1); None for one trial, for any other file, and when the file
    cannot be read (the reader says why)."""
    if path == "-" or not without_suffix(path.lower()).endswith(".json"):
        return None
    found = file_version(path)
    return None if found is None else _trials(*found)


@functools.lru_cache(maxsize=64)
def _trials(path: str, _mtime: int, _size: int) -> int | None:
    try:
        with open_path(path) as stream:
            head = stream.read(HEAD_BYTES)
            if _KEY not in head:
                return None
            most, tail = -1, b""
            block = head
            while block:
                text = tail + block
                for match in _TRIAL.finditer(text):
                    most = max(most, int(match[1]))
                tail = text[-_OVERLAP:]
                block = stream.read(_BLOCK)
    except read_errors():
        return None
    return most + 1 if most >= 1 else None


def forget_trials() -> None:
    """Forget what was read of the files, as after they changed."""
    _trials.cache_clear()


def unperturbed(entries: Iterator[tuple], notes: Callable[[str], None] | None) -> Iterator[tuple]:
    """The elements of a JSON array (``(line, value, ...)`` tuples) without HELM's perturbed
    entries: a ``PerInstanceStats`` with an entry-level ``perturbation`` is an instance
    rewritten for HELM's robustness or fairness figures (typos, dialect, ...), whose statistics
    HELM names with that perturbation and reports apart. ``notes`` is told once, after the
    last element, how many were left out of each perturbation."""
    left: dict[str, int] = {}
    for entry in entries:
        value = entry[1]
        moved = value.get("perturbation") if isinstance(value, Mapping) else None
        if moved and "instance_id" in value and "stats" in value:
            name = moved.get("name") if isinstance(moved, Mapping) else None
            key = name if isinstance(name, str) and name else "unnamed"
            left[key] = left.get(key, 0) + 1
            continue
        yield entry
    if left and notes is not None:
        total = sum(left.values())
        named = ", ".join(f"{name} {count:,}" for name, count in left.items())
        notes(
            f"{total:,} perturbed HELM entr{'y' if total == 1 else 'ies'} left out ({named}): "
            "HELM reports perturbed instances apart (robustness, fairness); the figures are "
            "the unperturbed instances'"
        )
