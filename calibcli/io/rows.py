"""What a valid row is: one spec per row kind, the only place row rules and their messages live
(beside :mod:`calibcli.io.sums_rows`, the rows of sums under other tools' names,
:mod:`calibcli.io.logprob_rows`, a row's per-token logprobs beside its totals, and
:mod:`calibcli.io.logprob_counts`, beside its bytes and words).

A spec turns one decoded row into its values and raises ``ValueError`` with a message that names
the field and the value as written (the reader prefixes ``path:line: ``). Each rule is written
once, as an expression that holds for a Python number and element-wise for a numpy column, so the
vectorised check of a decoded block and the per-row check that words the message cannot drift
apart. Checks on a column only say *whether* a block is valid; the per-row check then names the
first bad line and what is wrong with it.

Column layout of a decoded block:

- calibration: ``(confidence float64, correct bool)``;
- perplexity: ``(nll float64, tokens, bytes, words, nulls, sentinels, overflowed)``, the counts
  int64 with -1 for "the row lacks this field", or a column of None when no row of the block has
  it; ``overflowed`` is 1 for a row whose NLL is +inf only because its finite per-token terms sum
  beyond the largest double (logprobs rows).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from calibcli.io.strict_json import NOT_AN_OBJECT, TOO_DEEP, LongInteger, loads_line

MAX_COUNT = 1 << 62
"""Largest token/byte/word count accepted: totals of many rows stay exact in int64."""


# --------------------------------------------------------------------------- rules
#
# Each takes a Python number or a numpy array (of float64 or int64) and returns a bool or a bool
# array: ``&`` and ``|`` rather than ``and``/``or`` so the same expression serves both.


def confidence_ok(x: Any) -> Any:
    """A confidence lies in [0, 1] (NaN does not)."""
    return (x >= 0.0) & (x <= 1.0)


def nll_ok(x: Any) -> Any:
    """A negative log-likelihood is >= 0; +inf (a zero-probability token) is valid, NaN not."""
    return x >= 0.0


def count_ok(x: Any) -> Any:
    """A count lies in [0, MAX_COUNT]."""
    return (x >= 0) & (x <= MAX_COUNT)


def nll_tokens_ok(nll: Any, tokens: Any) -> Any:
    """A sequence of 0 tokens has an NLL of 0."""
    return (tokens != 0) | (nll <= 0.0)


def scored_count_ok(tokens: Any, count: Any) -> Any:
    """A sequence of 0 scored tokens has no bytes or words: they are those of its scored
    tokens (-1, "absent", passes)."""
    return (tokens != 0) | (count <= 0)


# --------------------------------------------------------------------------- messages


def show(value: Any) -> str:
    """A value as it would read in JSON, shortened for an error message."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        # a value of a type JSON lacks (a decimal, a timestamp, binary) as its text, not its repr
        if isinstance(value, bytes | bytearray):
            text = value.decode("utf-8", "backslashreplace")
        else:
            decimal = type(value).__name__ == "Decimal"
            if decimal and value.is_finite():  # its digits at its scale: 0E-30 as 0.000...0
                text = format(value, "f")
            else:
                text = str(value) if decimal or _table_type(value) else repr(value)
    except RecursionError:
        text = "[...]" if isinstance(value, list) else "{...}"
    return text if len(text) <= 40 else text[:37] + "..."


def missing(name: str) -> str:
    return f'missing field "{name}"'


def _table_type(v: Any) -> str | None:
    """The type a table's value of no JSON counterpart has, as a message names it, else None."""
    import datetime as dt

    kinds = ((dt.datetime, "a timestamp"), (dt.date, "a date"), (dt.time, "a time of day"))
    kinds += ((dt.timedelta, "a duration"), (bytes | bytearray, "binary data"))
    return next((named for kind, named in kinds if isinstance(v, kind)), None)


def _not_a_number(name: str, v: Any) -> ValueError:
    if isinstance(v, LongInteger):  # a number all the same, of more digits than are read
        return ValueError(f"{name} {v.why()}")
    if (kind := _table_type(v)) is not None:
        return ValueError(f"{name} {show(v)} is {kind}, not a number")
    if type(v).__name__ in ("Decimal", "Fraction"):  # exact numbers, of no JSON counterpart
        return ValueError(f"{name} {show(v)} is a {type(v).__name__}: give it as a float")
    return ValueError(f"{name} {show(v)} is not a number")


def _outside_unit(name: str, v: Any) -> ValueError:
    return ValueError(f"{name} {show(v)} is outside [0, 1]")


def field(obj: dict, name: str) -> Any:
    """The value of ``name`` in a row: a key written whole, else a dotted path into nested
    objects (a struct column of a table, a nested JSON object)."""
    try:
        return obj[name]
    except KeyError:
        if "." in name:
            from calibcli.formats import has_path, lookup

            if has_path(obj, name):
                return lookup(obj, name)
        raise ValueError(missing(name)) from None


def parse_line(line: bytes) -> dict:
    """One JSON object from one physical line of UTF-8 (accepts ``Infinity`` and ``1e999``)."""
    obj = loads_line(line)
    if not isinstance(obj, dict):
        raise ValueError(NOT_AN_OBJECT)
    return obj


def parse_row(name: str, line_no: int, line: bytes) -> dict:
    """:func:`parse_line` for a reader: a bad line is an InputError naming ``name:line_no``."""
    from calibcli.errors import InputError

    try:
        return parse_line(line)
    except RecursionError:
        raise InputError(name, line_no, TOO_DEEP) from None
    except ValueError as exc:
        raise InputError(name, line_no, str(exc)) from None


def group_name(value: Any) -> str:
    """Group key of a ``--by`` value, keeping the JSON type: distinct values, distinct names.

    Numbers, booleans and null are written as JSON text (``1``, ``1.5``, ``true``, ``null``,
    ``NaN``, ``Infinity``); equal numbers are one group, as they are one id
    (:func:`~calibcli.io.ids.id_key`): a whole float is named by the integer it equals, so
    ``1``, ``1.0`` and ``1e0`` are ``1``, and ``1e16`` and ``10000000000000000`` are
    ``10000000000000000``. A string is written as it is (``physics``) unless it would read as
    one of those or opens with a double quote; then it is written as a JSON string, in quotes:
    the number 1 is ``1`` and the string "1" is ``"1"``; null is ``null`` and "null" is
    ``"null"``. An integer of more digits than are read (:class:`LongInteger`) is refused; a
    table's other values as :func:`~calibcli.io.tables.group_value` reads them.
    """
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if _looks_typed(value) else value
    if isinstance(value, float):
        if not math.isfinite(value):
            return show(value)
        if value.is_integer():
            return str(int(value))
    try:
        return json.dumps(value)
    except TypeError:
        if isinstance(value, LongInteger):
            raise ValueError(value.why()) from None
        from calibcli.io.tables import group_value

        return group_name(group_value(value))


GROUP_NAMES_KEPT = 1 << 20
"""String group values whose names :func:`group_names` remembers (its dict is then cleared)."""


def group_names(values: list, names: dict[str, str]) -> list[str] | None:
    """Each value's :func:`group_name`, or None when one is an object or a list (the caller's
    row-by-row path then words the error). String values' names are remembered in ``names``,
    up to ``GROUP_NAMES_KEPT`` of them: a group's name is computed once, not per row."""
    strings = _string_names(values, names)
    if strings is not None:
        return strings
    out = []
    for v in values:
        if type(v) in (dict, list):
            return None
        if type(v) is not str:  # 1 and True: equal keys, other names
            out.append(group_name(v))
            continue
        out.append(_remembered(v, names))
    return out


def _remembered(value: str, names: dict[str, str]) -> str:
    """A string value's :func:`group_name`, computed once and kept in ``names`` (which holds
    at most ``GROUP_NAMES_KEPT`` of them)."""
    name = names.get(value)
    if name is None:
        name = group_name(value)
        if len(names) >= GROUP_NAMES_KEPT:
            names.clear()
        names[value] = name
    return name


def _string_names(values: list, names: dict[str, str]) -> list[str] | None:
    """:func:`group_names` of values that are all strings, each distinct one named once (a
    set of them, then a lookup per row in C); None when any value is not a string. Only
    strings: 1 and True are one key of a set but two names, and a string never equals
    a value of another type, so a set of strings only comes from strings."""
    try:
        distinct = set(values)
    except TypeError:  # an object or a list
        return None
    if not all(type(v) is str for v in distinct):
        return None
    lookup = {v: _remembered(v, names) for v in distinct}
    return list(map(lookup.__getitem__, values))


_LITERALS = frozenset(("true", "false", "null", "NaN", "Infinity", "-Infinity"))

# First characters float() never accepts: after Unicode whitespace it reads a sign, a digit
# (of any script), a point, "inf", "infinity" or "nan"; every other printable ASCII character
# fails it, so names such as "t1" skip the exception a failed float() costs.
_NOT_A_NUMBER_START = frozenset(
    c for c in map(chr, range(0x21, 0x7F)) if not (c.isdigit() or c in "+-.iInN")
)


def _looks_typed(text: str) -> bool:
    """Whether a string's plain rendering could be mistaken for another JSON value's."""
    if not text or text.startswith('"') or text in _LITERALS:
        return True
    if text[0] in _NOT_A_NUMBER_START:
        return False
    try:  # float() reads every JSON number (and more: "inf", " 1 "; quoting them is harmless)
        float(text)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------- values


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _same_number(v: Any, x: float | int) -> bool:
    """Whether a JSON value is a number equal to ``x`` (exactly: an int is not rounded)."""
    return _is_number(v) and v == x


def check_confidence(v: Any, name: str) -> float:
    if not _is_number(v):
        raise _not_a_number(name, v)
    try:
        x = float(v)
    except OverflowError:
        raise _outside_unit(name, v) from None
    if math.isnan(x):
        raise _not_a_number(name, x)
    if not confidence_ok(x):
        raise _outside_unit(name, v)
    return x


def check_correct(v: Any, name: str) -> bool:
    if isinstance(v, bool):
        return v
    if type(v) is int and v in (0, 1):
        return bool(v)
    if isinstance(v, LongInteger):
        raise _not_a_number(name, v)
    kind = _table_type(v)
    raise ValueError(f"{name} {show(v)} is {f'{kind}, ' if kind else ''}not true/false/0/1")


def check_nll(v: Any, name: str) -> float:
    if not _is_number(v):
        raise _not_a_number(name, v)
    try:
        x = float(v)
    except OverflowError:
        x = math.inf if v > 0 else -math.inf
    if math.isnan(x):
        raise _not_a_number(name, x)
    if not nll_ok(x):
        raise ValueError(f"{name} {show(v)} is negative (expected a negative log-likelihood >= 0)")
    return x


def check_count(v: Any, name: str) -> int:
    if type(v) is not int or v < 0:
        if isinstance(v, LongInteger):
            raise _not_a_number(name, v)
        raise ValueError(f"{name} {show(v)} is not a non-negative integer")
    if not count_ok(v):
        raise ValueError(f"{name} {show(v)} is too large")
    return v


def check_nll_tokens(nll: float, tokens: int, nll_field: str, tokens_field: str) -> None:
    if not nll_tokens_ok(nll, tokens):
        raise ValueError(f"{nll_field} {show(nll)} > 0 with 0 {tokens_field}")


def check_scored(tokens: int | None, counts: tuple, names: tuple = ("bytes", "words")) -> None:
    """ValueError for bytes or words (``counts``, named by ``names``) given to a sequence that
    scores no token: a sequence's counts are those of its scored tokens, so such a row would
    add text to the totals that no NLL stands for."""
    for kind, v, name in zip(("bytes", "words"), counts, names, strict=True):
        if tokens is not None and v is not None and not scored_count_ok(tokens, v):
            raise ValueError(
                f"{name} {show(v)} with no scored token: the {kind} of a sequence must be "
                "those of its scored tokens"
            )


def check_counts(values: tuple) -> tuple:
    """The values of a perplexity row another format gave (nll, tokens, bytes, words, ...),
    its counts held to the native rows' range: ValueError for one beyond MAX_COUNT, which
    neither a block's int64 columns nor the exact totals hold, or for bytes or words of a
    sequence that scores no token (:func:`check_scored`)."""
    for kind, v in zip(("token", "byte", "word"), values[1:4], strict=True):
        if v is not None and not count_ok(v):
            raise ValueError(f"{kind} count {show(v)} is too large")
    check_scored(values[1], values[2:4])
    return values


# --------------------------------------------------------------------------- row kinds


class CalibrationRow:
    """A calibration row: ``confidence`` a number in [0, 1], ``correct`` true/false or 0/1."""

    kind = "calibration"
    # both fields are required: a row lacking a dotted name's whole key fails the typed struct
    # and is read line by line, where field() follows the path
    flat = True

    def __init__(self, confidence_field: str = "confidence", correct_field: str = "correct"):
        self.confidence_field = confidence_field
        self.correct_field = correct_field

    def struct_fields(self) -> tuple[list, dict]:
        """msgspec struct fields (name, type) and their JSON names: the types carry the type
        rules; the range is checked on the columns (cheaper than a constrained decoder type)."""
        from typing import Annotated

        from msgspec import Meta

        fields = [("c", float), ("y", bool | Annotated[int, Meta(ge=0, le=1)])]
        return fields, {"c": self.confidence_field, "y": self.correct_field}

    @staticmethod
    def from_struct(row: Any) -> tuple | None:
        """Values of a row decoded into the struct, or None when a rule fails (:meth:`check`
        on the row as a dict then words the message)."""
        if not confidence_ok(row.c):
            return None
        return row.c, bool(row.y)

    def check(self, obj: dict) -> tuple[float, bool]:
        """Values of a native row; ValueError naming the first field that is wrong."""
        cf, yf = self.confidence_field, self.correct_field
        return check_confidence(field(obj, cf), cf), check_correct(field(obj, yf), yf)

    def dict_columns(self, rows: list) -> tuple | None:
        """The values :meth:`check` gives of native rows already parsed, checked in bulk; None
        when one breaks a rule (:mod:`calibcli.io.bulk_rows`)."""
        from calibcli.io.bulk_rows import calibration_columns

        return calibration_columns(self, rows)

    @staticmethod
    def columns_ok(cols: tuple) -> bool:
        """Whether every row of decoded columns keeps the rules (the types are already checked)."""
        conf = cols[0]
        return conf.shape[0] == 0 or bool(confidence_ok(conf.min()) and confidence_ok(conf.max()))

    @staticmethod
    def columns(values: list) -> tuple:
        import numpy as np

        n = len(values)
        conf = np.fromiter((v[0] for v in values), np.float64, n)
        corr = np.fromiter((v[1] for v in values), np.bool_, n)
        return conf, corr


PERPLEXITY_COUNTS = ("tokens", "bytes", "words")
"""The count columns of a perplexity block (after the NLL), as named in :class:`PerplexityRow`."""


class PerplexityRow:
    """A perplexity row: ``nll`` (summed NLL in nats) >= 0, ``tokens`` a count, and optional
    ``bytes`` and ``words`` counts; a row of 0 tokens has an NLL of 0."""

    kind = "perplexity"

    def __init__(
        self,
        nll_field: str = "nll",
        tokens_field: str = "tokens",
        bytes_field: str = "bytes",
        words_field: str = "words",
        logprobs_field: str = "logprobs",
    ) -> None:
        self.nll_field = nll_field
        self.count_fields = dict(
            zip(PERPLEXITY_COUNTS, (tokens_field, bytes_field, words_field), strict=True)
        )
        # the keys as a UTF-8 file writes them (non-ASCII letters as they are), to scan a
        # block for them; a key spelled with escapes is left to the decoder (see decode.py)
        self.count_keys = {
            k: json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass")
            for k, v in self.count_fields.items()
        }
        self.logprobs_field = logprobs_field
        # a dotted name may reach into nested objects, which the typed struct (its keys read
        # whole) cannot: such rows decode into dicts and field() reads them
        self.flat = not any("." in name for name in (nll_field, *self.count_fields.values()))
        from calibcli.io.logprob_counts import CountedList
        from calibcli.io.sums_rows import other_totals

        # the sums pairs (nll_sum, sum_logprob) a native row may give beside its own fields,
        # and the per-token list checked against whichever totals and counts a row gives
        own = (nll_field, *self.count_fields.values())
        self.other_sums = other_totals(tokens_field, own)
        self.beside = CountedList(self)
        # the keys that send a native row from the typed struct to :meth:`check`
        found = (*(total for total, _, _ in self.other_sums), *self.beside.keys)
        self.checked_keys = tuple(k for k in dict.fromkeys(found) if k not in own)

    def struct_fields(self, *, beside: bool = False) -> tuple[list, dict]:
        """msgspec struct fields (name, type[, default]) and their JSON names. The optional
        counts default to -1 ("absent") and keep their range constraint so that -1 cannot be
        written; the ranges of nll and tokens are checked on the columns. With ``beside``, the
        struct also names the :attr:`checked_keys` (other sums' totals, the per-token list)
        with a type no value has: a row giving one fails to decode and is read as a dict,
        whose check compares them with the row's own fields."""
        from typing import Annotated

        from msgspec import Meta

        count = Annotated[int, Meta(ge=0, le=MAX_COUNT)]
        fields = [("nll", float), ("tokens", int), ("nbytes", count, -1), ("words", count, -1)]
        names = (self.nll_field, *self.count_fields.values())
        rename = dict(zip(("nll", "tokens", "nbytes", "words"), names, strict=True))
        if beside:
            never = Annotated[str, Meta(min_length=1, max_length=0)]
            for k, key in enumerate(self.checked_keys):
                fields.append((f"beside{k}", never, None))
                rename[f"beside{k}"] = key
        return fields, rename

    @staticmethod
    def from_struct(row: Any) -> tuple | None:
        """Values of a row decoded into the struct, or None when a rule fails (:meth:`check`
        on the row as a dict then words the message)."""
        nll, tokens = row.nll, row.tokens
        if not (nll_ok(nll) and count_ok(tokens) and nll_tokens_ok(nll, tokens)):
            return None
        if not (scored_count_ok(tokens, row.nbytes) and scored_count_ok(tokens, row.words)):
            return None
        nbytes = None if row.nbytes < 0 else row.nbytes
        words = None if row.words < 0 else row.words
        return nll, tokens, nbytes, words, 0, 0, 0

    def check(self, obj: dict) -> tuple:
        """Values of a native row; ValueError naming the first field that is wrong."""
        nf, tf = self.nll_field, self.count_fields["tokens"]
        nll = check_nll(field(obj, nf), nf)
        tokens = check_count(field(obj, tf), tf)
        check_nll_tokens(nll, tokens, nf, tf)
        counts = self.scored_counts(obj, tokens)
        if self.other_sums:
            from calibcli.io.sums_rows import check_native_sums

            check_native_sums(obj, nll, tokens, (nf, tf), self.other_sums)
        self.beside.check(obj)
        return nll, tokens, *counts, 0, 0, 0

    def scored_counts(self, obj: dict, tokens: int) -> tuple:
        """:meth:`optional`, refused when given to a sequence of no scored token."""
        counts = self.optional(obj)
        check_scored(tokens, counts, (self.count_fields["bytes"], self.count_fields["words"]))
        return counts

    def optional(self, obj: dict) -> tuple:
        """The bytes and words counts of a row, None where it lacks them."""
        out = []
        for kind in ("bytes", "words"):
            name = self.count_fields[kind]
            if name in obj:
                out.append(check_count(obj[name], name))
                continue
            if "." in name:  # a dotted path into nested objects, as field() reads it
                from calibcli.formats import has_path, lookup

                if has_path(obj, name):
                    out.append(check_count(lookup(obj, name), name))
                    continue
            out.append(None)
        return tuple(out)

    def converter(self, fmt: str) -> Callable[[dict], tuple]:
        """Row -> values for an input format (``jsonl``, ``lm-eval``, ``logprobs`` or
        ``sums``)."""
        if fmt == "jsonl":
            return self.check
        if fmt == "lm-eval":
            from calibcli.formats import lm_eval_rolling_row

            def rolling(obj: dict) -> tuple:
                nll, words, nbytes = lm_eval_rolling_row(obj)
                return check_counts((float(nll), None, nbytes, words, 0, 0, 0))

            return rolling
        if fmt == "sums":
            return self._sums
        import functools

        from calibcli.io.logprob_rows import logprobs_values

        return functools.partial(logprobs_values, self)

    def _sums(self, obj: dict) -> tuple:
        """Values of a row of per-sequence sums under another tool's names (``sums``, see
        :func:`~calibcli.io.sums_rows.sums_values`); bytes and words as in a native row."""
        from calibcli.io.sums_rows import sums_values

        nll, tokens = sums_values(obj)
        self.beside.check(obj)
        return nll, tokens, *self.scored_counts(obj, tokens), 0, 0, 0

    def dict_columns(self, rows: list) -> tuple | None:
        """The values :meth:`check` gives of native rows already parsed, checked in bulk; None
        when one breaks a rule or needs a check beside its own fields
        (:mod:`calibcli.io.bulk_rows`)."""
        from calibcli.io.bulk_rows import perplexity_columns

        return perplexity_columns(self, rows)

    @staticmethod
    def columns_ok(cols: tuple) -> bool:
        """Whether every row of decoded columns keeps the rules (the types are already checked)."""
        import numpy as np

        nll, tokens = cols[0], cols[1]
        if nll.shape[0] == 0:
            return True
        least = tokens.min()
        if not (nll_ok(nll.min()) and count_ok(least) and count_ok(tokens.max())):
            return False
        if least == 0:  # only a row of no scored token can break these
            counts = [c for c in cols[2:4] if c is not None]
            if not all(np.all(scored_count_ok(tokens, c)) for c in counts):
                return False
        return bool(np.all(nll_tokens_ok(nll, tokens)))

    @staticmethod
    def columns(values: list) -> tuple:
        import numpy as np

        n = len(values)
        nll = np.fromiter((v[0] for v in values), np.float64, n)
        ints = [
            np.fromiter((-1 if v[k] is None else v[k] for v in values), np.int64, n)
            for k in range(1, 7)
        ]
        return (nll, *ints)

    def pattern_broken(self, kind: str, *, has_it: bool) -> str:
        """Message for a row that breaks the pattern of ``kind`` (a count) set by earlier rows:
        a count is totalled only when every row carries it."""
        name = self.count_fields[kind]
        if has_it:
            return f'field "{name}" is given here but not on earlier rows'
        return f"{missing(name)} (earlier rows have it)"
