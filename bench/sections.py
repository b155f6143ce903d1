"""BENCHMARKS.md is shared: bench/run.py writes the main tables, and each other benchmark
(bench/ab.py, bench/shards.py, ...) owns a section between ``<!-- NAME:start -->`` and
``<!-- NAME:end -->`` markers that the others keep when they rewrite the file."""

from __future__ import annotations

import re
from pathlib import Path

_SECTION = re.compile(r"<!-- ([a-z-]+):start -->.*?<!-- \1:end -->", re.S)


def write_section(path: Path, section: str, start: str, end: str) -> None:
    """Replace the file's section between ``start`` and ``end``, or append one."""
    text = path.read_text() if path.exists() else ""
    a, b = text.find(start), text.find(end)
    if a >= 0 and b > a:
        text = text[:a] + section.rstrip("\n") + text[b + len(end) :]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section
    path.write_text(text if text.endswith("\n") else text + "\n")


def with_sections(text: str, path: Path) -> str:
    """``text`` followed by every marked section of the file at ``path`` (the sections other
    benchmarks wrote there), in their order."""
    old = path.read_text() if path.exists() else ""
    kept = [m.group(0) for m in _SECTION.finditer(old)]
    return text.rstrip("\n") + "".join("\n\n" + k for k in kept) + "\n"
