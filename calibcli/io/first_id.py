"""A run appended to its file again: native rows read without ``--id-field`` are watched for a
row that carries the file's first row's ``id``.

A native row has no id unless ``--id-field`` names one, and checking every id costs a hash and
8 bytes a row. But the commonest way rows come to count twice, a run appended to its file again
(``>> preds.jsonl`` run twice, ``cat`` of two runs), repeats every question of the run, the
first row's among them. So when the first row carries a string or number ``id`` (a vLLM
output's ``request_id``), every later
row of the file is watched for it, at the cost of one byte search a block: the first row's
``"id": <value>`` text is searched for, and a line holding it is parsed to confirm that its own
top-level ``id`` is that value (the same JSON type: the number 1 and the string "1" differ). A
row of a whole document (a JSON array, CSV, Parquet) is compared as it is read.

Read with ``--by``, ids are taken to be numbered within each group (a file of several subjects,
each numbered from 0): a row repeats the first row only when it is of the first row's group too.

The watch is of the file's first row, whatever range of the file a process reads, so a file
cut into parts or shares is watched as the whole file is. It sees a repeat of the first row's
id only: a repeated id among the other rows, and rows repeated across files, need
``--id-field``. A Batch API output line's own key is its request's ``custom_id``, unique within
a batch: a file whose first row is one has every row identified by its request
(:mod:`calibcli.io.batch_ids`), in the file and across files, and the watch says so
(:attr:`FirstId.requests`); a later row repeats the first only when its response names the
first's model too.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, replace
from typing import Any

from calibcli.errors import InputError, shown_name
from calibcli.io.batch_ids import BATCH_ID, is_batch_line
from calibcli.io.ids import id_key, show_id
from calibcli.io.response_models import row_model
from calibcli.io.strict_json import loads_line

REPEATED_FIRST = (
    "a run appended to its file again would count twice (pass --all-runs to pool the rows on "
    "purpose, or --id-field to name the field that identifies a row)"
)

# bytes that continue a JSON number: a needle for the number 1 found in "id": 10 is no match
_NUMBER_GOES_ON = frozenset(b"0123456789.eE+-")


@dataclass(frozen=True)
class FirstId:
    """The first row's id (``value``), its line, and the text it is written with
    (``needle``: the key, the colon and the value as that line has them; None for a row of a
    whole document, compared as it is read). ``skip`` is the line not to count as a repeat,
    the first row's own; None where the rows read cannot hold it. With ``by``, the first row's
    group's name (``group``)."""

    value: Any
    line: int | str
    needle: bytes | None
    skip: int | str | None
    by: str | None = None
    group: str | None = None
    field: str = "id"  # the key that holds it: "id", a vLLM output's "request_id", "custom_id"
    model: str | None = None  # a Batch output line's model (calibcli.io.batch_ids)

    @classmethod
    def of(
        cls, row: Any, line: int | str, raw: bytes | None = None, by: str | None = None
    ) -> FirstId | None:
        """The watch of a file whose first row is ``row`` (at ``line``, written as ``raw``;
        read grouped ``by`` a field); None when the row carries no string or number ``id``,
        no group, or ``raw`` does not hold the id written as JSON writes it. A Batch output
        line's watch needs neither: every row's request is checked, whatever its group (a
        batch's custom_ids are unique across its groups), and none is searched for."""
        if not isinstance(row, dict):
            return None
        field = id_field_of(row)
        value = row.get(field)
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return None
        if field == BATCH_ID:
            return cls(value, line, None, line, field=field, model=row_model(row))
        group = None
        if by is not None:
            group = _group(row, by)
            if group is None:
                return None  # the decoder words what is wrong with the row
        needle = None
        if raw is not None:
            needle = _needle(raw, value, field)
            if needle is None:
                return None
        return cls(value, line, needle, line, by, group, field)

    @property
    def requests(self) -> bool:
        """Whether the file's rows are Batch API output lines, each identified by its request
        (:func:`~calibcli.io.batch_ids.request_key`): every row is checked, not the first's
        repeats alone."""
        return self.field == BATCH_ID

    def elsewhere(self) -> FirstId:
        """This watch for rows that cannot hold the first row (a worker's later share, whose
        lines are numbered from the share's start)."""
        return replace(self, skip=None)

    def is_first(self, value: Any) -> bool:
        """Whether ``value`` is the first row's id written alike: the same type and the same
        value (the number 1 is not the string "1", nor 1.0, which ``--id-field`` takes as 1:
        the byte search finds the first row's text only, and a document's rows are held to
        the same rule)."""
        if value != self.value or isinstance(value, bool):
            return False
        return type(value) is type(self.value) and repr(value) == repr(self.value)

    def repeats(self, row: Any) -> bool:
        """Whether ``row`` carries the first row's id (and, read with ``by``, its group)."""
        if not isinstance(row, dict) or row.get(self.field) != self.value:
            return False
        if not self.is_first(row[self.field]):
            return False
        if self.requests and row_model(row) != self.model:
            return False  # another model's answer to the request
        return self.by is None or _group(row, self.by) == self.group

    def error(self, name: str, line: int | str) -> InputError:
        """The error for a row at ``line`` (or a table's locator) that repeats the first."""
        place = self.line
        where = f"line {place}" if isinstance(place, int) else shown_name(place).strip()
        return InputError(
            name,
            line,
            f"the row of id {show_id(id_key(self.value))} repeats the id of the file's first "
            f"row ({where}): {REPEATED_FIRST}",
        )

    def find(self, block: Any, first_line: int, name: str) -> InputError | None:
        """The error for the first row of a block (``block`` from
        :func:`~calibcli.io.sources.blocks`, its first line numbered ``first_line``) that
        carries the first row's id, or None."""
        needle = self.needle
        if needle is None:
            return None
        data = block.obj if isinstance(block, memoryview) else block
        if not isinstance(data, (bytes, bytearray)):
            data = bytes(block)
        end = len(block)
        number = not isinstance(self.value, str)  # a needle a longer number may open
        at = data.find(needle, 0, end)
        while at >= 0:
            after = at + len(needle)
            stop = data.find(b"\n", after, end)
            stop = end if stop < 0 else stop
            if not (number and after < end and data[after] in _NUMBER_GOES_ON):
                start = data.rfind(b"\n", 0, at) + 1
                line = first_line + data.count(b"\n", 0, start)
                if line != self.skip and self._holds(bytes(data[start:stop])):
                    return self.error(name, line)
                at = stop  # one look at each line
            at = data.find(needle, at + 1, end)
        return None

    def _holds(self, line: bytes) -> bool:
        """Whether a line is a row whose top-level id is the first row's (a line that does not
        parse is left to the decoder, which words what is wrong with it)."""
        try:
            row = loads_line(line)
        except ValueError:
            return False
        return self.repeats(row)

    def find_rows(
        self, items: list[tuple[Any, Any]], name: str, start: int = 0
    ) -> InputError | None:
        """The error for the first of a whole document's rows, ``(locator, row)`` pairs from
        ``items[start:]``, that carries the first row's id, or None (the rows of a document
        on one line share its locator: the first row is skipped by position)."""
        value = self.value
        for locator, row in itertools.islice(items, start, None):
            if isinstance(row, dict) and row.get(self.field) == value and self.repeats(row):
                return self.error(name, locator)
        return None


def id_field_of(row: dict) -> str:
    """The key of a row's own identifier: ``id``, ``request_id`` for a vLLM output (which
    names its request so and holds no ``id``), or ``custom_id`` for a Batch API output line
    (whose ``id`` is new each time a batch runs)."""
    if is_batch_line(row):
        return BATCH_ID
    return "request_id" if "id" not in row and "prompt_logprobs" in row else "id"


def _needle(raw: bytes, value: Any, field: str = "id") -> bytes | None:
    """The text of the first row's ``"<field>": value`` (spaces as written) in its line, for
    the spellings JSON writers use (UTF-8 as is, or escaped to ASCII); None when neither is
    found."""
    spellings = [json.dumps(value, ensure_ascii=False), json.dumps(value)]
    key = json.dumps(field).encode("utf-8")
    for text in dict.fromkeys(spellings):
        found = re.search(re.escape(key) + rb"[ \t]*:[ \t]*" + re.escape(text.encode("utf-8")), raw)
        if found is not None:
            return found.group(0)
    return None


def watched(watch: Any, name: str, line_no: Any, row: dict, by: str | None) -> Any:
    """For readers that take a file's rows one by one: the watch of the file's first row's
    id, from ``row`` when it is the first (``watch`` None; False when it carries none);
    InputError when ``row``, a later one, carries that id."""
    if watch is None:
        return FirstId.of(row, line_no, by=by) or False
    if watch and row.get(watch.field) == watch.value and watch.repeats(row):
        raise watch.error(name, line_no)
    return watch


def _group(row: dict, by: str) -> str | None:
    """The name of a row's ``--by`` group, or None when it has none to give."""
    from calibcli import formats
    from calibcli.io.rows import group_name

    try:
        return group_name(formats.by_value(row, by))
    except ValueError:
        return None
