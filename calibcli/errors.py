"""The one error for bad input, below every stage: reading, formats and the commands share it."""

from __future__ import annotations


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
