"""Every ``--by`` group's calibrate figures held as columns, and their JSON written directly.

A report of 100,000 groups built as dicts holds a hundred Python values per group and hands
them all to ``json.dumps`` and to the strict-JSON walk. :class:`GroupTable` keeps the figures
as the (groups × bins) arrays and per-figure lists and arrays they were computed as, gives one
group's figures as the same dict on demand (``table[name]``), and writes the JSON text of all
groups itself, chunk by chunk: each number as ``json.dumps`` writes it (``repr`` of the Python float
or int), the keys in the same order, non-finite values as ``null`` (only the figures named
``loose`` can be non-finite; :func:`~calibcli.reports.report.strict` is told about those).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np

from calibcli.metrics import DECOMPOSITION_TERMS

DECOMPOSITION = (*DECOMPOSITION_TERMS, "brier")  # the keys of a group's brier_decomposition
CHUNK = 1024  # groups written at once: their text, not every group's, is alive at a time


class GroupTable(Mapping):
    """The calibrate figures of every group (name -> figures dict, built on access), from
    columns: ``scalars`` (``n`` then the section's scalar figures, in report order, one value
    per group), the Brier decomposition's ``terms`` and the per-bin tables ``count``,
    ``correct`` and ``sum_conf``, from which each bin's mean confidence, accuracy and Wilson
    bounds are made a chunk of groups at a time (:func:`bin_figures`; read only where
    ``count > 0``).

    Every value is finite except, possibly, those of the figures in ``loose``; ``nulls``
    (set by :meth:`strict`) writes those as None, as the strict-JSON walk would."""

    def __init__(
        self,
        names: list[str],
        scalars: dict[str, list | np.ndarray],
        terms: dict[str, list | np.ndarray],
        tables: dict[str, np.ndarray],
        *,
        bins: int,
        strategy: str,
        edges: list[float],
        loose: tuple[str, ...],
        nulls: bool = False,
    ) -> None:
        self.names = names
        self.scalars = scalars
        self.terms = terms
        self.tables = tables
        self.bins = bins
        self.strategy = strategy
        self.edges = edges
        self.loose = loose
        self.nulls = nulls
        self._index: dict[str, int] | None = None
        self._bins: tuple[int, dict[str, np.ndarray]] | None = None

    # ----------------------------------------------------------------- as a mapping

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __getitem__(self, name: str) -> dict[str, Any]:
        if self._index is None:
            self._index = {n: g for g, n in enumerate(self.names)}
        return self.figures(self._index[name])

    def figures(self, g: int) -> dict[str, Any]:
        """Group ``g``'s figures, as the one-group section holds them."""
        out: dict[str, Any] = {"n": self.scalars["n"][g], "bins": self.bins}
        out["strategy"] = self.strategy
        out["bins_used"] = self.bins
        for key, column in self.scalars.items():
            if key == "n":
                continue
            value = _item(column, g)
            if self.nulls and key in self.loose and not _finite(value):
                value = None
            out[key] = value
        out["brier_decomposition"] = {t: _item(self.terms[t], g) for t in DECOMPOSITION}
        count = self.tables["count"][g].tolist()
        a, bins = self._bins_around(g)
        conf, acc, lower, upper = (bins[k][g - a].tolist() for k in _BIN_FIGURES)
        out["reliability"] = {
            "bin_lower": self.edges[:-1],
            "bin_upper": self.edges[1:],
            "confidence": [c if k else None for c, k in zip(conf, count, strict=True)],
            "accuracy": [a if k else None for a, k in zip(acc, count, strict=True)],
            "count": count,
            "accuracy_ci": [
                [lo, hi] if k else None for lo, hi, k in zip(lower, upper, count, strict=True)
            ],
        }
        return out

    def _bins_around(self, g: int) -> tuple[int, dict[str, np.ndarray]]:
        """:func:`bin_figures` of the chunk of :data:`CHUNK` groups holding group ``g``, and
        its first group (the last chunk is kept: groups are mostly read in order)."""
        a = g - g % CHUNK
        if self._bins is None or self._bins[0] != a:
            self._bins = (a, bin_figures(self.tables, a, min(a + CHUNK, len(self.names))))
        return self._bins

    # ----------------------------------------------------------------- strict JSON

    def strict(self, path: str, bad: list[tuple[str, float]] | None) -> GroupTable:
        """What :func:`~calibcli.reports.report.strict` makes of the table: the same table
        writing its non-finite values as None, each ``(path, value)`` appended to ``bad`` in
        the order the walk over every group's dict meets them (the floats of the usual case
        as one :class:`~calibcli.reports.report.NonFiniteCells`, whose paths are made when
        read)."""
        from calibcli.reports.paths import path_to
        from calibcli.reports.report import NonFiniteCells, strict

        columns = [self.scalars[k] for k in self.loose]
        names = self.names
        if all(set(map(type, column)) <= {float} for column in columns):
            if bad is not None:  # each non-finite float, listed as strict lists it
                bad.append(NonFiniteCells(path, names, self.loose, columns))
        else:
            suspects = sorted({g for column in columns for g in _not_plain_finite(column)})
            for g in suspects:
                for key, column in zip(self.loose, columns, strict=True):
                    v = column[g]
                    if not _plain_finite(v):
                        strict(v, path_to(path_to(path, names[g]), key), bad)
        return GroupTable(
            self.names,
            self.scalars,
            self.terms,
            self.tables,
            bins=self.bins,
            strategy=self.strategy,
            edges=self.edges,
            loose=self.loose,
            nulls=True,
        )

    # ----------------------------------------------------------------- JSON text

    def to_json(self) -> str:
        """The text ``json.dumps`` writes for ``{name: figures}`` of every group (strict:
        non-finite values as ``null``)."""
        return "".join(self.json_pieces())

    def json_pieces(self) -> Iterator[str]:
        """:meth:`to_json` in pieces of :data:`CHUNK` groups, made one at a time."""
        parts, kinds = self._template()
        yield "{"
        for a in range(0, len(self.names), CHUNK):
            b = min(a + CHUNK, len(self.names))
            columns = [
                (_texts if kind == "text" else _numbers)(_listed(self.scalars[k], a, b))
                for k, kind in kinds
            ]
            columns += [_numbers(_listed(self.terms[t], a, b)) for t in DECOMPOSITION]
            columns += self._bin_texts(a, b)
            # each group's text is its key, then the template's constant parts and its values
            # in turn: the texts of a chunk are joined in one call
            opening = f": {parts[0]}"
            keys = [f", {encode_basestring_ascii(name)}{opening}" for name in self.names[a:b]]
            if not a:
                keys[0] = keys[0][2:]
            streams: list = [keys]
            for column, part in zip(columns, parts[1:], strict=True):
                streams += (column, itertools.repeat(part, b - a))
            yield "".join(itertools.chain.from_iterable(zip(*streams, strict=True)))
        yield "}"

    def _template(self) -> tuple[list[str], list[tuple[str, str]]]:
        """The constant parts of one group's JSON, between which its values' texts go, and
        how each scalar column is written (``raw``: Python ints and finite floats, by
        :func:`_numbers`; ``text``: by :func:`_texts`)."""
        from json import dumps

        kinds = []
        pieces = [f'"n": %s, "bins": {dumps(self.bins)}, "strategy": {dumps(self.strategy)}']
        pieces.append(f'"bins_used": {dumps(self.bins)}')
        for key, column in self.scalars.items():
            if key == "n":
                continue
            raw = key not in self.loose and _numbers_only(column)
            kinds.append((key, "raw" if raw else "text"))
            pieces.append(f"{dumps(key)}: %s")
        n = self.scalars["n"]
        ints = n.dtype.kind in "iu" if isinstance(n, np.ndarray) else set(map(type, n)) <= {int}
        kinds.insert(0, ("n", "raw" if ints else "text"))
        for t in DECOMPOSITION:
            if not _numbers_only(self.terms[t]):
                raise TypeError(f"brier_decomposition.{t} holds other than numbers")
        terms = ", ".join(f"{dumps(t)}: %s" for t in DECOMPOSITION)
        pieces.append(f'"brier_decomposition": {{{terms}}}')
        lows, highs = dumps(self.edges[:-1]), dumps(self.edges[1:])
        pieces.append(
            f'"reliability": {{"bin_lower": {lows}, "bin_upper": {highs}, "confidence": [%s], '
            '"accuracy": [%s], "count": [%s], "accuracy_ci": [%s]}'
        )
        # split at the values' places; no constant holds "%s" (keys and the strategy are
        # figure names, the edges numbers)
        return ("{" + ", ".join(pieces) + "}").split("%s"), kinds

    def _bin_texts(self, a: int, b: int) -> list[list[str]]:
        """The JSON of groups ``a:b``'s per-bin lists, without their brackets: confidence,
        accuracy, count and accuracy_ci (null in the empty bins)."""
        t = bin_figures(self.tables, a, b)
        count = self.tables["count"][a:b]
        empty = count == 0
        conf = t["confidence"]
        if (_in_plain_range(conf) | empty).all():  # NaN is written null
            conf_rows = _rows(np.where(empty, np.nan, conf))
        else:
            listed = conf.tolist()
            for g, k in zip(*(e.tolist() for e in np.nonzero(empty)), strict=True):
                listed[g][k] = None
            conf_rows = _lists(listed)
        # a bin's accuracy and interval are those of its (right answers, count): written once
        # per distinct pair, as most pairs repeat across groups
        flat = count.reshape(-1)
        keys = self.tables["correct"][a:b].reshape(-1) * (int(flat.max()) + 1) + flat  # int64
        _, first, where = np.unique(keys, return_index=True, return_inverse=True)
        populated = flat[first] > 0
        acc = _floats(t["accuracy"].reshape(-1)[first], populated)
        lower = _floats(t["lower"].reshape(-1)[first], populated)
        upper = _floats(t["upper"].reshape(-1)[first], populated)
        ci = [
            f"[{lo}, {hi}]" if k else "null"
            for lo, hi, k in zip(lower, upper, populated.tolist(), strict=True)
        ]
        where = where.reshape(count.shape)
        return [
            conf_rows,
            _joined(np.array(acc, dtype=object)[where].tolist()),
            _rows(count),
            _joined(np.array(ci, dtype=object)[where].tolist()),
        ]


_BIN_FIGURES = ("confidence", "accuracy", "lower", "upper")


def bin_figures(tables: dict[str, np.ndarray], a: int, b: int) -> dict[str, np.ndarray]:
    """Each bin's mean confidence, accuracy and Wilson bounds for groups ``a:b``, from the
    ``count``, ``correct`` and ``sum_conf`` tables (0.0 in the empty bins but the bounds,
    nan there; read only where ``count > 0``). Elementwise: the same floats whatever the
    slice."""
    from calibcli.metrics import wilson_interval

    count = tables["count"][a:b]
    correct = tables["correct"][a:b]
    populated = count > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {
            "confidence": np.where(populated, tables["sum_conf"][a:b] / count, 0.0),
            "accuracy": np.where(populated, correct / count, 0.0),
        }
    out["lower"], out["upper"] = wilson_interval(correct, count)
    return out


def _item(column: list | np.ndarray, g: int) -> Any:
    """Value ``g`` of a column (a list, or a numpy array of ints or floats) as a Python
    value."""
    value = column[g]
    return value.item() if isinstance(column, np.ndarray) else value


def _listed(column: list | np.ndarray, a: int, b: int) -> list:
    """Values ``a:b`` of a column as a list of Python values."""
    part = column[a:b]
    return part.tolist() if isinstance(part, np.ndarray) else part


def _numbers_only(column: list | np.ndarray) -> bool:
    """Whether a column holds Python ints and floats only (a numpy array: of ints or floats)."""
    if isinstance(column, np.ndarray):
        return column.dtype.kind in "iuf"
    return set(map(type, column)) <= {int, float}


def _joined(rows: list[list[str]]) -> list[str]:
    """Each row of JSON texts as the inside of a JSON list."""
    return list(map(", ".join, rows))


def _lists(rows: list[list]) -> list[str]:
    """Each row's JSON without its brackets: the list's repr (finite floats, ints) with None
    written null."""
    return "\0".join(map(repr, rows)).replace("None", "null")[1:-1].split("]\0[")


def _not_plain_finite(column: list) -> list[int]:
    """The indices of the values that are not finite Python floats."""
    if set(map(type, column)) <= {float}:
        return np.flatnonzero(~np.isfinite(np.asarray(column, dtype=np.float64))).tolist()
    return [g for g, v in enumerate(column) if not _plain_finite(v)]


def _plain_finite(v: Any) -> bool:
    return type(v) is float and v - v == 0.0


def _finite(v: Any) -> bool:
    try:
        return math.isfinite(v)
    except TypeError:
        return False


# --------------------------------------------------------------------------- numbers as text
#
# msgspec writes a float as repr() does (the shortest text that reads back the same) wherever
# repr() writes no exponent and msgspec does not either: 0.0, -0.0 and 1e-4 <= |v| < 1e16.
# Outside that range the two exponent forms differ ("1e-05" against "0.00001"), so those
# values are written by repr(). One msgspec call writes thousands of floats some twenty times
# faster than repr() one by one.


def _in_plain_range(values: np.ndarray) -> np.ndarray:
    """Whether each float64 is one msgspec writes exactly as repr() does (0 or 1e-4 <= |v| <
    1e16; NaN and the infinities are not)."""
    size = np.abs(values)
    return ((size >= 1e-4) & (size < 1e16)) | (size == 0.0)


def _floats(values: np.ndarray, finite: np.ndarray | None = None) -> list[str]:
    """repr() of each value of a float64 array (``finite``: where it is known finite; the
    other values are written "null")."""
    return _float_texts(values.tolist(), values, finite)


def _float_texts(
    listed: list[float], values: np.ndarray, finite: np.ndarray | None = None
) -> list[str]:
    """:func:`_floats` of ``values`` given also as the list of its Python floats."""
    import msgspec

    if not listed:
        return []
    texts = msgspec.json.encode(listed)[1:-1].decode().split(",")
    odd = ~_in_plain_range(values)
    odd &= np.isfinite(values) if finite is None else finite
    for i in np.flatnonzero(odd).tolist():
        texts[i] = repr(listed[i])
    if finite is not None and not finite.all():
        for i in np.flatnonzero(~finite).tolist():
            texts[i] = "null"
    return texts


def _numbers(values: list) -> list[str]:
    """The JSON text of each value of a list of Python ints and finite floats, as json.dumps
    writes it (its repr)."""
    if set(map(type, values)) == {float}:
        return _float_texts(values, np.asarray(values, dtype=np.float64))
    return list(map(repr, values))


def _rows(table: np.ndarray) -> list[str]:
    """Each row of a 2-D table of ints, or of floats msgspec writes as repr() does (NaN
    written null), as json.dumps writes the inside of a list: ``1, 2``."""
    import msgspec

    text = msgspec.json.encode(table.tolist()).decode().replace(",", ", ")
    return text[2:-2].split("], [")


def _texts(values: list) -> list[str]:
    """Each value as strict JSON writes it: a number's repr (numpy scalars as the Python
    number), a non-finite float or None as null."""
    if set(map(type, values)) == {float}:
        return _float_texts(values, np.asarray(values, dtype=np.float64))
    out = []
    for v in values:
        if type(v) is not float and hasattr(v, "item"):
            v = v.item()
        if v is None or (type(v) is float and v - v != 0.0):
            out.append("null")
        elif type(v) in (int, float):
            out.append(repr(v))
        else:
            raise TypeError(f"a group's figure is not a number: {v!r}")
    return out


class GroupFigures(Mapping):
    """One group's figures in a :class:`GroupTable` (what a group's section holds), built as
    a dict when first read."""

    __slots__ = ("_figures", "_g", "_table")

    def __init__(self, table: GroupTable, g: int) -> None:
        self._table, self._g = table, g
        self._figures: dict[str, Any] | None = None

    def _dict(self) -> dict[str, Any]:
        if self._figures is None:
            self._figures = self._table.figures(self._g)
        return self._figures

    def __getitem__(self, key: str) -> Any:
        return self._dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._dict())

    def __len__(self) -> int:
        return len(self._dict())


class GroupSections(Mapping):
    """Sections by group name, each made when read: group g's figures (from ``figures``, the
    table of every group's), and the notes and closed gates it shares with the other groups of
    code ``codes[g]`` (``notes[code]``, ``closed[code]``). ``table`` is the figures as one
    :class:`GroupTable` for the report body (``whole``: every value checked finite), or None
    when the sections' own figures are to be used."""

    def __init__(
        self,
        names: list[str],
        figures: GroupTable,
        codes: list[int],
        notes: list[list],
        closed: list[dict[str, str]],
        *,
        whole: bool,
    ) -> None:
        self.names = names
        self.figures = figures
        self.codes = codes
        self.notes = notes
        self.closed = closed
        self.whole = whole
        self.table: GroupTable | None = figures if whole else None
        self._index: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __getitem__(self, name: str) -> Any:
        if self._index is None:
            self._index = {n: g for g, n in enumerate(self.names)}
        return self.section(self._index[name])

    def section(self, g: int) -> Any:
        """Group ``g``'s section (its figures a :class:`GroupFigures` of the table when the
        table is whole, else the dict the table gives)."""
        from calibcli.reports.report import Section

        figures = GroupFigures(self.figures, g) if self.whole else self.figures.figures(g)
        code = self.codes[g]
        return Section(figures, self.notes[code], self.closed[code])

    def coded_notes(self) -> tuple[list[str], list[int], list[list]]:
        """Each group's notes as a code into a list of notes lists: what
        :func:`~calibcli.reports.report.coded_group_notes` reads."""
        return self.names, self.codes, self.notes
