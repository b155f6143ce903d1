"""The one error for bad input, below every stage: reading, formats and the commands share it."""

from __future__ import annotations

import re
from typing import Any

# What would break a message's one line, or reach the terminal as a command: control
# characters (C0, DEL, C1 with NEL), the Unicode line and paragraph separators, and lone
# surrogates (a file name's undecodable bytes, or a JSON string's \ud800).
_UNSHOWABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def shown_name(name: str) -> str:
    """A file name (or a place inside a document) as messages show it: the name itself, or its
    Python repr when it holds a newline or another character that :func:`one_line` escapes,
    so that the message stays one line and the name reads back unambiguously
    (``'runs/a\\nb.jsonl':2: ...``)."""
    return repr(name) if _UNSHOWABLE.search(name) else name


def one_line(text: str) -> str:
    """A message as printed: each control character, line separator and lone surrogate written
    as its escape (``\\n``, ``\\x1b``, ``\\udcff``), so that whatever a message quotes (a
    file name, a field name, a group) it is one line on stderr and sends nothing to the
    terminal."""
    if _UNSHOWABLE.search(text) is None:
        return text
    return _UNSHOWABLE.sub(lambda m: repr(m.group())[1:-1], text)


class InputError(Exception):
    """Invalid or unreadable input. ``str(error)`` is one line naming the file and line:
    ``path:line: what is wrong``, or ``path: reason`` when the file cannot be read at all.
    ``line`` may also be a locator inside a whole document (``samples/3_epoch_1.json``). The
    path and a locator are shown by :func:`shown_name` (``path`` itself is kept as given)."""

    def __init__(self, path: str, line: int | str | None, detail: str) -> None:
        self.path = path
        self.line = line
        self.detail = detail
        where = shown_name(str(path))
        if line is not None:
            where += f":{shown_name(line) if isinstance(line, str) else line}"
        super().__init__(f"{where}: {detail}")

    def __reduce__(self):  # picklable across worker processes
        return (InputError, (self.path, self.line, self.detail))

    def shifted(self, offset: int) -> InputError:
        """This error as seen from the whole file, for a worker that numbered the lines of its
        share from the share's start."""
        return InputError(self.path, _shift(self.line, offset), self.detail)


class RepeatedRowError(InputError):
    """A row whose id an earlier row of the same reading had; the detail names that earlier row
    at ``earlier`` (path, line), between ``lead`` and ``tail``."""

    def __init__(
        self, path: str, line: int | str | None, lead: str, earlier: tuple[str, Any], tail: str
    ) -> None:
        self.lead, self.earlier, self.tail = lead, earlier, tail
        super().__init__(path, line, f"{lead}{_place(*earlier)}{tail}")

    def __reduce__(self):
        return (RepeatedRowError, (self.path, self.line, self.lead, self.earlier, self.tail))

    def shifted(self, offset: int) -> InputError:
        # a worker only knows the rows of its own share: an earlier row in the same file was
        # numbered from the share's start as well
        where, line = self.earlier
        if where == self.path:
            line = _shift(line, offset)
        return RepeatedRowError(
            self.path, _shift(self.line, offset), self.lead, (where, line), self.tail
        )


def _place(path: str, line: Any) -> str:
    """``path:line`` of a row, as :class:`InputError` shows them."""
    return f"{shown_name(path)}:{shown_name(line) if isinstance(line, str) else line}"


def _shift(line: Any, offset: int) -> Any:
    return line + offset if isinstance(line, int) else line
