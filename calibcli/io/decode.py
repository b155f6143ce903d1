"""Block decoding: one newline-aligned block of JSONL bytes -> numpy columns of one row kind.

Fast path: msgspec decodes the block with ``decode_lines``. Native rows without grouping decode
into a typed struct (the struct's types carry the type rules), a piece of the block at a time
(:data:`PIECE`), and the columns are pulled out with a list comprehension per field; the ranges
are checked on the columns
(:meth:`~calibcli.io.rows.CalibrationRow.columns_ok`). Other formats, and native rows read with
``by``, decode into dicts that the row spec converts one by one.

Precise path, line by line: taken when the block fails to decode or to check, or when its row count
differs from its count of lines opening with ``{`` and closing with ``}`` (blank or indented lines,
a value split across lines, two values on one line), since ``decode_lines`` accepts all of those.
Each line is decoded on its own, and a line msgspec refuses is read by ``json.loads``, which also
accepts what the input rules allow (``Infinity``, and ``1e999`` as an NLL of +inf); the row spec
names the exact line and what is wrong. Counting the lines that close an object too keeps an object
split across lines whose continuation opens with ``{`` from making up for a line holding two
objects.

Small inputs (a first block under ``SMALL_BLOCK``) take the precise path with ``json.loads``
only, which spares importing msgspec on small runs. msgspec skips a field no rule reads without
checking its text, so a block is checked to be UTF-8 first, and one that is not is read line by
line with each line checked: text that is not UTF-8 is refused wherever it sits, as json.loads
refuses it on the other paths.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from calibcli.errors import InputError
from calibcli.io.rows import (
    GROUP_NAMES_KEPT,
    NOT_AN_OBJECT,
    TOO_DEEP,
    group_name,
    group_names,
    parse_line,
)
from calibcli.io.sources import is_utf8, lines_of
from calibcli.io.strict_json import strict_text

SMALL_BLOCK = 64 << 10
"""A decoder whose first block is smaller than this decodes with json.loads, line by line."""


_UNSAFE_NAME = re.compile(r'["\\\x00-\x1f]')
"""What msgspec refuses in a struct field's JSON name: a quote, a backslash, a control character."""


def struct_names_ok(names: Iterable[str]) -> bool:
    """Whether msgspec takes ``names`` as the JSON names of one struct's fields: it refuses a
    name holding ``"``, ``\\`` or a control character, one it cannot write as UTF-8 (a lone
    surrogate), and a name given to two fields (two options naming one field: a byte-level
    model's ``--tokens-field bytes``). Rows read by such names decode into dicts, as rows read
    by a dotted name do, and give the same values and messages."""
    names = list(names)
    if len(set(names)) != len(names):
        return False
    return not any(_UNSAFE_NAME.search(name) or not _utf8(name) for name in names)


def _utf8(name: str) -> bool:
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class BlockDecoder:
    """Decodes blocks of one row kind into columns.

    ``spec`` is a row spec from :mod:`calibcli.io.rows`. ``convert`` (row dict -> values, or
    ValueError) is given for other formats and for grouped reading; without it the rows are
    native and take the typed fast path. ``key`` (row dict -> group value) names each row's group.
    With ``many``, ``convert`` returns a list of values per decoded JSON value (an OpenAI response
    holds one sequence per choice), each on the line of that value.

    :meth:`block` returns ``(columns, keys, lines)``: a tuple of numpy arrays, each row's group
    name (or None), and each row's line number (or None when row i is on line first_line + i).
    With ``ident`` (row dict -> its id), each decoded row's id is left in :attr:`ids`.
    """

    def __init__(
        self,
        spec: Any,
        *,
        convert: Callable[[dict], tuple] | None = None,
        key: Callable[[dict], Any] | None = None,
        many: bool = False,
        ident: Callable[[dict], Any] | None = None,
        group_field: str | None = None,
    ) -> None:
        self.spec = spec
        self.many = many
        self.ident = ident
        # how a --by value's error names its field
        self._by = "the --by value" if group_field is None else group_field
        self.ids: list[Any] | None = None  # the ids of the rows of the last call
        # the locator of each of those rows, for rows of a whole document (:meth:`rows`)
        self.id_places: list[Any] | None = None
        # native rows grouped by a top-level field: the typed struct carries that field too,
        # so grouping keeps the fast path (``key`` and ``convert`` still word any error)
        self.group_field = group_field if key is not None and not many else None
        self.typed = ident is None and (
            (convert is None and key is None) or self.group_field is not None
        )
        if not spec.flat:  # a dotted field name: rows decode into dicts that field() reads
            self.typed, self.group_field = False, None
        self._names: dict[str, str] = {}  # string group value -> name, see group_names
        # string group value -> its code, an index into _code_names (see _group_keys); None
        # once more than GROUP_NAMES_KEPT were met
        self._codes: dict[str, int] | None = {}
        self._code_names: list[str] = []
        self._convert = spec.check if convert is None else convert
        self.key = key
        self._decoder: Any = None  # msgspec, built on the first block of SMALL_BLOCK or more
        self._errors: tuple = ()
        # the typed decoders without and with the keys checked beside (see _pick_decoder)
        self._narrow: Any = None
        self._wide: Any = None

    @property
    def modes(self) -> Counter[str]:
        """The modes the inspect-ai rows decoded so far took their confidences by, each with
        its samples (none for other formats; see :class:`~calibcli.io.route.InspectRows`)."""
        from calibcli.io.route import taken_modes

        return taken_modes(self._convert)

    @property
    def filtered(self) -> int:
        """The sequences the rows decoded so far left out for the content filter (none for
        formats other than OpenAI responses; see :class:`~calibcli.io.route.FilteredRows`)."""
        return getattr(self._convert, "filtered", 0)

    def _load_msgspec(self) -> None:
        import msgspec

        if self.typed:
            fields, rename = self.spec.struct_fields()
            beside = getattr(self.spec, "checked_keys", ())
            names = [*rename.values(), *beside]
            if self.group_field is not None:
                names.append(self.group_field)
            # --by one of the row's own fields (or a key checked beside them), two roles read
            # from one field, or a name the struct cannot hold: the rows decode into dicts
            if not struct_names_ok(names):
                self.typed, self.group_field = False, None
                self._decoder = msgspec.json.Decoder()
                self._errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
                return
            self._decoder = self._narrow = self._typed_decoder(fields, rename)
            if beside:
                self._wide = self._typed_decoder(*self.spec.struct_fields(beside=True))
        else:
            self._decoder = msgspec.json.Decoder()
        # RecursionError: a value nested deeper than msgspec goes; json.loads words the error
        self._errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)

    def _typed_decoder(self, fields: list, rename: dict) -> Any:
        import msgspec

        if self.group_field is not None:
            # first: a required field may not follow the optional counts; any JSON value
            # decodes, and a non-scalar one sends the block to the precise path
            fields, rename = [("g", Any), *fields], {**rename, "g": self.group_field}
        row_type = msgspec.defstruct("Row", fields, rename=rename, gc=False)
        return msgspec.json.Decoder(row_type)

    def _pick_decoder(self, block: memoryview) -> None:
        """Native perplexity rows: the typed decoder that also names the keys checked beside
        the row's own fields (other sums' totals ``nll_sum``, ``sum_logprob``; the per-token
        list, ``logprobs``) for a block that may hold one, so that a row giving one fails to
        decode and its check compares them; the narrow one, which skips those names unread,
        for a block that cannot hold them (a test of a few bytes, see :func:`_may_hold`, where
        looking for the names themselves would cost more)."""
        if self._wide is None or not self.typed:
            return
        keys = [_quoted(key) for key in self.spec.checked_keys]
        self._decoder = self._wide if any(_may_hold(block, k) for k in keys) else self._narrow

    def block(
        self,
        block: memoryview,
        first_line: int,
        name: str,
        expected: int,
        consecutive: bool | None = None,
    ) -> tuple:
        """Decode one block from :func:`~calibcli.io.sources.blocks`; InputError on a bad row.
        ``consecutive`` says whether the block is free of empty lines (True: row i is on line
        first_line + i), as its reader counted them; None when not known. A known answer
        spares searching the block for an empty line again."""
        if self._decoder is None:
            if len(block) < SMALL_BLOCK:
                return self._precise(block, first_line, name)
            self._load_msgspec()
        self._pick_decoder(block)
        if not is_utf8(block):  # msgspec skips a field no rule reads without checking it
            return self._precise(block, first_line, name, utf8=False)
        if self.typed and self.group_field is None:
            cols = self._typed_columns(block, expected)
            if cols is None:
                return self._checked_beside(block, first_line, name, expected, consecutive)
            lines = None if consecutive else _row_lines(block, first_line, consecutive is None)
            return cols, None, lines
        rows = None
        with contextlib.suppress(*self._errors):
            rows = self._decoder.decode_lines(block)
        if rows is None or len(rows) != expected:
            return self._precise(block, first_line, name)
        # a block whose rows fill every line needs no search for empty lines
        lines = None if consecutive else _row_lines(block, first_line, consecutive is None)
        if self.typed:
            cols = _STRUCT_COLUMNS[self.spec.kind](
                self.spec, rows, _counts_present(self.spec, block)
            )
            if cols is not None and self.spec.columns_ok(cols):
                if self.group_field is None:
                    return cols, None, lines
                keys = self._group_keys([r.g for r in rows])
                if keys is not None:
                    return cols, keys, lines
            return self._precise(block, first_line, name)
        self.ids = None if self.ident is None else []
        values: list = []
        keys: list[str] | None = None if self.key is None else []
        # with several values per row (many), each value's line; else each row's (or None)
        value_lines: list[int] | None = [] if self.many else None
        for i, row in enumerate(rows):
            line = first_line + i if lines is None else int(lines[i])
            try:
                taken = self._take(row, values, keys)
            except ValueError as e:
                raise InputError(name, line, str(e)) from None
            if value_lines is not None:
                value_lines.extend([line] * taken)
        return self.spec.columns(values), keys, lines if value_lines is None else value_lines

    def _typed_columns(self, block: memoryview | bytes, expected: int) -> tuple | None:
        """The columns of a block of native rows read without grouping, decoded into the typed
        struct a piece of :data:`PIECE` bytes at a time; None when the block must go line by
        line. The pieces end at line ends, so either they decode to the rows the whole block
        decodes to, or one fails and the block goes line by line, as a failed block does."""
        if expected < 0:
            return None  # a line that does not open an object: never one row per line
        import numpy as np

        spec = self.spec
        data = _searchable(block)
        present = _counts_present(spec, block)
        decode = self._decoder.decode_lines
        take = _STRUCT_COLUMNS[spec.kind]
        view = block if isinstance(block, memoryview) else memoryview(block)
        end = len(view)
        pieces = []
        got = start = 0
        try:
            while start < end:
                stop = end
                if end - start > PIECE:
                    stop = data.find(b"\n", start + PIECE, end) + 1 or end
                rows = decode(view[start:stop])
                got += len(rows)
                pieces.append(take(spec, rows, present))
                del rows  # freed before the next piece is decoded, to reuse its memory
                start = stop
        except self._errors:
            return None
        if got != expected or any(p is None for p in pieces):
            return None
        if len(pieces) == 1:
            cols = pieces[0]
        else:
            cols = tuple(
                None if col is None else np.concatenate([p[k] for p in pieces])
                for k, col in enumerate(pieces[0])
            )
        return cols if spec.columns_ok(cols) else None

    def _checked_beside(
        self, block: memoryview, first_line: int, name: str, expected: int, consecutive: Any
    ) -> tuple:
        """A block of native rows that the typed struct refused and that may hold a key
        checked beside the rows' own fields (:meth:`_pick_decoder`): decoded into dicts, each
        row read by the spec's check, as rows read with ``--id-field`` are; line by line
        (:meth:`_precise`) when it does not decode so, or holds no such key."""
        if self._wide is None or self._decoder is not self._wide:
            return self._precise(block, first_line, name)
        import msgspec

        rows = None
        with contextlib.suppress(*self._errors):
            rows = msgspec.json.Decoder().decode_lines(block)
        if rows is None or len(rows) != expected:
            return self._precise(block, first_line, name)
        lines = None if consecutive else _row_lines(block, first_line, consecutive is None)
        values: list = []
        for i, row in enumerate(rows):
            try:
                self._take(row, values, None)
            except ValueError as e:
                line = first_line + i if lines is None else int(lines[i])
                raise InputError(name, line, str(e)) from None
        return self.spec.columns(values), None, lines

    def rows(self, items: list[tuple[Any, Any]], name: str) -> tuple:
        """Decode rows already parsed, ``(locator, row)`` pairs of a whole document: returns
        ``(columns, keys, locators)``; InputError names the row's locator."""
        self.ids = None if self.ident is None else []
        # a row giving several values (choices) on one line with other rows: its values'
        # locators cannot tell where it starts, so each identified row's is kept
        places = self.id_places = None if self.ids is None else []
        # native rows are checked in bulk, then row by row only when one breaks a rule
        bulk = getattr(self.spec, "dict_columns", None)
        plain = self.key is None and self.ident is None and not self.many
        if bulk is not None and plain and self._convert == self.spec.check:
            cols = bulk([row for _, row in items])
            if cols is not None:
                return cols, None, [locator for locator, _ in items]
        values: list = []
        keys: list[str] | None = None if self.key is None else []
        where: list = []
        for locator, row in items:
            try:
                taken = self._take(row, values, keys)
            except ValueError as e:
                raise InputError(name, locator, str(e)) from None
            where.extend([locator] * taken)
            if places is not None and len(places) < len(self.ids):
                places.append(locator)
        return self.spec.columns(values), keys, where

    def _take(self, row: Any, values: list, keys: list[str] | None) -> int:
        """Append the values of one decoded row; return how many."""
        if not isinstance(row, dict):
            raise ValueError(NOT_AN_OBJECT)
        try:
            if self.many:
                got = self._convert(row)
                values.extend(got)
                taken = len(got)
            else:
                values.append(self._convert(row))
                taken = 1
            if keys is not None:
                value = self.key(row)  # its own errors say what is wrong
                try:
                    name = group_name(value)
                except ValueError as e:  # an integer of more digits than are read
                    raise ValueError(f"{self._by} {e}") from None
                keys.extend([name] * taken)
            if self.ids is not None and taken:
                # formats with ids give one row per value; a value giving none (every choice
                # left out for the content filter) has no row to identify
                self.ids.append(self.ident(row))
        except RecursionError:
            raise ValueError(TOO_DEEP) from None
        return taken

    def _group_keys(self, values: list) -> Any:
        """Each row's group: as codes into this reader's names when every value is a string
        (:class:`~calibcli.summaries.rows.GroupCodes`: one dict lookup per row, in C, and no
        list of names), else as :meth:`_group_names` gives them (None: an object or a list)."""
        from calibcli.summaries import GroupCodes

        codes = self._codes
        if codes is not None:
            found = self._new_codes(values, codes)
            if found is not None:
                return GroupCodes(found, self._code_names)
        return self._group_names(values)

    def _new_codes(self, values: list, codes: dict[str, int]) -> Any:
        """Each value's code (intp): one lookup per row, in C, with -1 for a value not met
        before; those values are then named (and coded) in order of first appearance. None,
        ``codes`` unchanged, when a value is not a string."""
        import itertools

        import numpy as np

        n = len(values)
        try:  # the keys are strings only, and a string never equals a value of another type
            found = np.fromiter(map(codes.get, values, itertools.repeat(-1, n)), np.intp, n)
        except TypeError:  # an object or a list
            return None
        new = np.flatnonzero(found < 0)
        if new.shape[0] == 0:
            return found
        unmet = list(map(values.__getitem__, new.tolist()))
        distinct = dict.fromkeys(unmet)  # hashable: every value was looked up above
        if not set(map(type, distinct)) <= {str}:
            return None
        names = self._code_names
        codes.update(zip(distinct, range(len(names), len(names) + len(distinct)), strict=True))
        names.extend(map(group_name, distinct))
        if len(names) > GROUP_NAMES_KEPT:  # bounded, as group_names' memory is
            self._codes = None
        found[new] = np.fromiter(map(codes.__getitem__, unmet), np.intp, len(unmet))
        return found

    def _group_names(self, values: list) -> list[str] | None:
        """:func:`~calibcli.io.rows.group_names`, remembering names across this reader's
        blocks."""
        return group_names(values, self._names)

    def _precise(self, block: memoryview, first_line: int, name: str, utf8: bool = True) -> tuple:
        """Line by line; InputError names the exact line. ``utf8=False``: the block is not all
        UTF-8, so each line is checked before msgspec decodes it (json.loads checks its own)."""
        self.ids = None if self.ident is None else []
        values: list = []
        keys: list[str] | None = None if self.key is None else []
        lines: list[int] = []
        decoder, typed, from_struct = self._decoder, self.typed, self.spec.from_struct
        for line_no, line in lines_of(block, first_line):
            try:
                row = None
                if not utf8:
                    strict_text(line)
                if decoder is not None:
                    with contextlib.suppress(*self._errors):
                        row = decoder.decode(line)
                if typed and row is not None:
                    checked = from_struct(row)
                    group = None
                    if checked is not None and keys is not None:
                        group = self._group_names([row.g])
                    if checked is not None and (keys is None or group is not None):
                        values.append(checked)
                        lines.append(line_no)
                        if keys is not None and group is not None:
                            keys.extend(group)
                        continue
                    row = None  # a rule fails: the dict check words the message
                taken = self._take(parse_line(line) if row is None else row, values, keys)
            except ValueError as e:
                raise InputError(name, line_no, str(e)) from None
            lines.extend([line_no] * taken)
        return self.spec.columns(values), keys, lines


# --------------------------------------------------------------------------- typed columns
#
# A list comprehension per field (specialised slot reads) then np.fromiter over the list is the
# cheapest way found to pull columns out of decoded structs (see BENCHMARKS.md).


PIECE = 1 << 18
"""Bytes of a block decoded per msgspec call on the typed path. The rows of a piece fit in one of
Python's 1 MiB object arenas, which its allocator keeps from piece to piece; the rows of a whole
1 MB block span about three, two of which went back to the OS and were faulted in again on
every block."""


def _counts_present(spec: Any, block: memoryview | bytes) -> tuple[bool, ...]:
    """Whether the block may hold each optional count field's key (perplexity rows: bytes,
    words; calibration rows have none). A block in which a key never occurs has no row
    carrying the field: its column is not read. A column read for nothing holds -1 ("absent")
    in every row, so a wrong yes costs time, never a figure."""
    if spec.kind != "perplexity":
        return ()
    return tuple(_holds_key(block, spec.count_keys[kind]) for kind in ("bytes", "words"))


def _holds_key(block: memoryview | bytes, key: bytes) -> bool:
    """Whether a block may hold the JSON key ``key`` (quoted, in UTF-8 as a file writes it).

    A key may also be spelled with escapes (``"\\u0062ytes"``, ``"gr\\u00f6\\u00dfe"``),
    which msgspec decodes to the same name. Only a block free of the escapes that could spell
    it rules the key out: ``\\u`` for most names, any backslash for a name holding a
    character with a short escape (``"``, ``\\``, ``/``, a control character)."""
    return _contains(block, key) or _contains(block, _escape_of(key))


def _quoted(name: str) -> bytes:
    """A key as a UTF-8 file writes it, quoted."""
    import json

    return json.dumps(name, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _may_hold(block: memoryview | bytes, key: bytes) -> bool:
    """Whether a block may hold the JSON key ``key``, tested by its bytes alone: a block that
    lacks one of them, or any escape that could spell it, does not (:func:`_holds_key`
    without its search for the whole key)."""
    data, end = _searchable(block), len(block)
    if all(data.find(byte, 0, end) >= 0 for byte in _probe_bytes(key)):
        return True
    return _contains(block, _escape_of(key))


def _escape_of(key: bytes) -> bytes:
    """What every escaped spelling of a quoted JSON key holds (see :func:`_holds_key`):
    ``\\u``, or only a backslash when the name holds a character with a short escape: ``/``
    (``\\/``), or a quote, a backslash or a control character, which the key's own spelling
    already escapes."""
    return b"\\" if b"\\" in key or b"/" in key else b"\\u"


def _calibration_columns(spec: Any, rows: list, present: tuple) -> tuple:
    import numpy as np

    n = len(rows)
    conf = np.fromiter([r.c for r in rows], np.float64, n)
    # correct is True/False or the int 0/1 (the struct type checked it): bytes() packs the list
    # faster than np.fromiter(..., np.bool_), and numpy reads it as bool in place.
    corr = np.frombuffer(bytes([r.y for r in rows]), np.bool_)
    return conf, corr


def _perplexity_columns(spec: Any, rows: list, present: tuple) -> tuple | None:
    import numpy as np

    n = len(rows)
    nll = np.fromiter([r.nll for r in rows], np.float64, n)
    try:
        tokens = np.fromiter([r.tokens for r in rows], np.int64, n)
    except OverflowError:
        return None  # beyond int64: the precise path names the line
    nbytes = words = None
    if present[0]:
        nbytes = np.fromiter([r.nbytes for r in rows], np.int64, n)
    if present[1]:
        words = np.fromiter([r.words for r in rows], np.int64, n)
    return nll, tokens, nbytes, words, None, None, None


def _row_lines(block: memoryview, first_line: int, search: bool = True) -> Any:
    """Line number of each non-empty line of a block that has empty lines (numpy int64), else
    None (row i is then on line first_line + i). Without ``search`` the block is known to
    hold an empty line and is not searched for one."""
    import numpy as np

    if search and not (_contains(block, b"\n\n") or block[:1] == b"\n"):
        return None
    arr = np.frombuffer(block, np.uint8)
    starts = np.flatnonzero(arr == 10) + 1  # where each line after the first starts
    starts = np.concatenate(([0], starts[starts < arr.shape[0]]))
    return first_line + np.flatnonzero(arr[starts] != 10)


_STRUCT_COLUMNS = {"calibration": _calibration_columns, "perplexity": _perplexity_columns}


def _contains(block: memoryview | bytes, key: bytes) -> bool:
    """Whether ``key`` occurs in the block (a view from :func:`~calibcli.io.sources.blocks`
    starts at offset 0 of its buffer, so the buffer's own ``find`` searches it without a copy).

    A byte of the key that the block lacks rules the key out: each such test is one ``memchr``,
    while the search for the whole key stops at every quote, the commonest byte of JSON."""
    data, end = _searchable(block), len(block)
    for byte in _probe_bytes(key):
        if data.find(byte, 0, end) < 0:
            return False
    return data.find(key, 0, end) >= 0


def _searchable(block: memoryview | bytes) -> bytes | bytearray:
    """The object to search a block in (a view from :func:`~calibcli.io.sources.blocks` starts
    at offset 0 of its buffer)."""
    obj = block.obj if isinstance(block, memoryview) else block
    return obj if isinstance(obj, (bytes, bytearray)) else bytes(block)


_PROBES: dict[bytes, tuple[int, ...]] = {}


def _probe_bytes(key: bytes) -> tuple[int, ...]:
    """The distinct bytes of a key other than quotes, in the order they first occur."""
    probes = _PROBES.get(key)
    if probes is None:
        probes = _PROBES[key] = tuple(dict.fromkeys(b for b in key if b != 0x22))
    return probes
