"""Rows written back out with one value changed: ``calibcli apply``'s rewriting of
confidences. Every byte of a row but the new value's is kept (a value's original text, key
order, spacing, other keys), so a tool downstream reads the same row with one number changed.
Rows stream batch by batch; a bad row is an InputError naming its line."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

BATCH = 8192  # rows mapped in one vectorised call
# A JSON number token: the text a confidence field holds (check_confidence accepted it).
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def rewrite_confidences(
    files: list[str],
    field: str,
    by: str | None,
    mapping: Callable[[str | None, Any], Any],
    write: Callable[[bytes], None],
) -> int:
    """Write every row of ``files`` with its confidence (``field``, a dotted path) replaced by
    ``mapping(group, confidences)`` of its ``by`` group (None without ``by``), batch by batch,
    every other byte of the row kept; returns the row count. InputError on a bad row."""
    import numpy as np

    from calibcli import formats
    from calibcli.formats import json_type
    from calibcli.io import InputError
    from calibcli.io.rows import check_confidence, group_name

    count = 0
    batch: list[tuple[Any, dict, list[str | int], str | None]] = []
    confidences: list[float] = []
    splice = _Splicer()

    def flush() -> None:
        names = [g for *_, g in batch]
        conf = np.fromiter(confidences, dtype=np.float64, count=len(confidences))
        mapped = np.empty_like(conf)
        for name in set(names):
            rows = np.fromiter((g == name for g in names), dtype=bool, count=len(names))
            mapped[rows] = mapping(name, conf[rows])
        lines = [
            splice(text, row, path, value)
            for (text, row, path, _), value in zip(batch, mapped.tolist(), strict=True)
        ]
        write(b"\n".join(lines) + b"\n")
        batch.clear()
        confidences.clear()

    for source in files:
        for name, line_no, row, text in _rows(source):
            try:
                if not isinstance(row, dict):
                    raise ValueError(f"the row is {json_type(row)}, not a JSON object")
                if "doc_id" in row and "filtered_resps" in row:
                    raise ValueError(
                        "an lm-eval row has no confidence field to rewrite; apply takes native "
                        "rows (use calibcli calibrate --calibrator on lm-eval rows)"
                    )
                c = check_confidence(formats.lookup(row, field), field)
                group = None if by is None else group_name(formats.by_value(row, by))
            except ValueError as exc:
                raise InputError(name, line_no, str(exc)) from None
            batch.append((text, row, _key_path(row, field), group))
            confidences.append(c)
            count += 1
            if len(batch) >= BATCH:
                flush()
    if batch:
        flush()
    return count


def _rows(source: str) -> Iterator[tuple[str, int | str, Any, bytes | str]]:
    """(display name, line or locator, row, the row's JSON text) of each row of ``source``: a
    JSON Lines line's bytes, or a whole document's row text (``str``)."""
    from calibcli.io.documents import document_records
    from calibcli.io.reader import whole_document_kind

    kind = whole_document_kind(source)
    if kind in ("parquet", "arrow"):
        from calibcli.errors import InputError

        raise InputError(
            source, None, f"apply writes JSON Lines: a {kind} table is read, not rewritten"
        )
    if kind is None:
        yield from _lines(source)
    else:
        yield from document_records(source, kind)


def _lines(source: str) -> Iterator[tuple[str, int, Any, bytes]]:
    """The rows of JSON Lines, as :func:`calibcli.io.records.records` reads them (same sources,
    same errors), decoded by msgspec (a third of json.loads' time); a line msgspec refuses (NaN,
    1e999, a lone surrogate, invalid JSON) goes to the row rules' own parser, which accepts what
    they accept and words the error."""
    import msgspec

    from calibcli.io import InputError
    from calibcli.io.rows import parse_line
    from calibcli.io.sources import BLOCK_SIZE, Source, blocks, lines_of

    decode = msgspec.json.Decoder().decode
    src = Source(source)
    src.probe()
    try:
        stream = src.stream()
        try:
            for first, view, _, _ in blocks(stream, src.name, BLOCK_SIZE):
                for line_no, line in lines_of(view, first):
                    try:
                        row = decode(line)
                    except (msgspec.DecodeError, RecursionError):
                        row = None
                    if type(row) is not dict:
                        try:
                            row = parse_line(line)
                        except RecursionError:
                            raise InputError(src.name, line_no, "JSON nested too deeply") from None
                        except ValueError as exc:
                            raise InputError(src.name, line_no, str(exc)) from None
                    yield src.name, line_no, row, line
        finally:
            stream.close()
    finally:
        src.close()


def _key_path(row: dict, dotted: str) -> list[str | int]:
    """The keys and list indices :func:`calibcli.formats.lookup` followed to ``dotted``."""
    if dotted in row:
        return [dotted]
    path: list[str | int] = []
    node: Any = row
    for part in dotted.split("."):
        key: str | int = int(part) if isinstance(node, list) else part
        path.append(key)
        node = node[key]
    return path


# A line break (and the indentation after it) inside a pretty-printed row: only whitespace
# between tokens can hold one (JSON strings escape control characters), so dropping it keeps
# every value's text; after a comma it becomes one space, as in the rows JSON Lines hold.
_BREAK = re.compile(r",?[ \t]*[\r\n][ \t\r\n]*")


def _one_line(text: str) -> str:
    return _BREAK.sub(lambda m: ", " if m.group().startswith(",") else "", text.strip())


class _Splicer:
    """A row's JSON text with the value at a key path replaced, every other byte kept.

    JSON Lines rows take a fast path: when the field's key occurs once in the line as a key
    (its JSON spelling followed by ``:``) and no escape could spell a key another way (``\\u``,
    ``\\/``), that
    occurrence is the field, whatever its depth (the decoded row has the key there, and text
    outside strings can hold a key's spelling only as a key). Otherwise the line is scanned
    (:func:`calibcli.formats.json_text.value_span`)."""

    def __init__(self) -> None:
        self._keys: dict[str, re.Pattern[bytes]] = {}

    def _key(self, key: str) -> re.Pattern[bytes]:
        pattern = self._keys.get(key)
        if pattern is None:
            spelled = json.dumps(key, ensure_ascii=False).encode("utf-8")
            pattern = re.compile(re.escape(spelled) + rb"[ \t\r\n]*:[ \t\r\n]*")
            self._keys[key] = pattern
        return pattern

    def __call__(self, text: bytes | str, row: dict, path: list[str | int], value: float) -> bytes:
        # float repr is json.dumps' text for a finite float, at a fraction of its cost
        new = repr(value) if math.isfinite(value) else json.dumps(value)
        if isinstance(text, bytes):
            leaf = path[-1]
            if isinstance(leaf, str) and b"\\u" not in text and b"\\/" not in text:
                key = self._key(leaf)
                first = key.search(text)
                if first is not None and key.search(text, first.end()) is None:
                    number = _NUMBER.match(text, first.end())
                    if number is not None:
                        return b"%s%s%s" % (
                            text[: number.start()],
                            new.encode(),
                            text[number.end() :],
                        )
            text = text.decode("utf-8")
        else:
            text = _one_line(text)
        from calibcli.formats import value_span

        span = value_span(text, path)
        if span is None:  # not reached for valid JSON; still keeps the output valid JSON
            _set(row, path, value)
            return json.dumps(row).encode("utf-8")
        return (text[: span[0]] + new + text[span[1] :]).encode("utf-8")


def _set(row: dict, path: list[str | int], value: float) -> None:
    node: Any = row
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
