"""The one error for bad input, below every stage: reading, formats and the commands share it."""

from __future__ import annotations

from typing import Any


class InputError(Exception):
    """Invalid or unreadable input. ``str(error)`` is one line naming the file and line:
    ``path:line: what is wrong``, or ``path: reason`` when the file cannot be read at all.
    ``line`` may also be a locator inside a whole document (``samples/3_epoch_1.json``)."""

    def __init__(self, path: str, line: int | str | None, detail: str) -> None:
        self.path = path
        self.line = line
        self.detail = detail
        super().__init__(f"{path}:{line}: {detail}" if line is not None else f"{path}: {detail}")

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
        super().__init__(path, line, f"{lead}{earlier[0]}:{earlier[1]}{tail}")

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


def _shift(line: Any, offset: int) -> Any:
    return line + offset if isinstance(line, int) else line
