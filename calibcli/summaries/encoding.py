"""Summaries as bytes: a versioned header and raw little-endian arrays.

Layout (all integers little-endian)::

    b"CALIBCLI SUMMARY"          16 bytes, the magic
    u32 format version            FORMAT_VERSION (5); 1 to 4 are read too, others refused
    u32 0                         reserved
    u64 header length             bytes of the header that follows
    header                        UTF-8 JSON, padded with spaces to a multiple of 8 bytes
    arrays                        each array's raw bytes in the order the header lists them,
                                  each padded with zeros to a multiple of 8 bytes

The header holds the summary's kind (``calibration`` or ``perplexity``), its settings, group
names, sources, warnings and scalars, and ``arrays``: ``[{"name", "dtype", "shape"}]`` with
dtypes ``<f8``, ``<i8``, ``<u4`` or ``<u8``. A table's exact sums are stored as ``<u4`` limbs
(see :mod:`calibcli.summaries.exact`) with the index of their lowest limb; the smooth ECE's grid
histograms sparse, per grid size m: each kept cell's flat index into its group's (2, m)
histogram (``<u4``), its value (``<f8``) and where each group's cells start (``<i8``, groups + 1
entries); a cell left out is +0.0 (:class:`calibcli.summaries.moments.SparseGrids`). Row ids
marked ``"inspect_task": false`` are a version 1 to 3 summary's, whose inspect-ai ids carry no
task; ``"model_ids": false`` a version 1 to 4 summary's, whose ids carry no run's model.
Any other program can read a summary with a JSON parser and, e.g., ``numpy.frombuffer``.
Nothing in it depends on the clock, so the same rows give the same bytes.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np

from calibcli.summaries import MAGIC
from calibcli.summaries.calibration import (
    CalibrationSettings,
    CalibrationSummary,
    Source,
)
from calibcli.summaries.exact import ExactSums
from calibcli.summaries.ids import RowIds, modelless_ids, taskless_ids
from calibcli.summaries.perplexity import PerplexitySettings, PerplexitySummary
from calibcli.summaries.sources import recorded_counts, recorded_cut, recorded_hashes
from calibcli.summaries.tables import BinTable, TotalsTable

FORMAT_VERSION = 5
READ_VERSIONS = (1, 2, 3, 4, 5)
"""Version 1 held the smooth-ECE grids dense; 1 and 2 hashed an id with the ids beside it; 1
to 3 left an inspect-ai sample's log task out of its id (``RowIds.taskless``), 1 to 4 the
model of an inspect-ai, HELM or OpenAI evals row's run (``RowIds.modelless``)."""
_PREFIX = struct.Struct("<16sIIQ")
_DTYPES = {"<f8": np.float64, "<i8": np.int64, "<u4": np.uint32, "<u8": np.uint64}
ROW_ARRAYS = ("rows.right", "rows.wrong", "rows.right_groups", "rows.wrong_groups")
"""The arrays that grow with the rows (a reader may receive them in place)."""


class SummaryError(ValueError):
    """Bytes that are not a summary this version reads; the message says what is wrong."""


# --------------------------------------------------------------------------- encoding


class _Arrays:
    def __init__(self) -> None:
        self.items: list[tuple[str, np.ndarray]] = []

    def ref(self, name: str, array: np.ndarray, dtype: str) -> str:
        self.items.append((name, np.ascontiguousarray(array, _DTYPES[dtype])))
        return name


def _sums(arrays: _Arrays, name: str, sums: ExactSums, cells: int) -> dict[str, Any]:
    lo, limbs = sums.trimmed()
    return {"lo": lo, "limbs": arrays.ref(name, limbs[:cells], "<u4")}


def _bin_table(arrays: _Arrays, name: str, table: BinTable) -> dict[str, Any]:
    cells = table.groups * table.bins
    return {
        "bins": table.bins,
        "groups": table.groups,
        "counts": arrays.ref(f"{name}.counts", table.counts[:cells], "<i8"),
        "conf": _sums(arrays, f"{name}.conf", table.conf, 2 * cells),
        "conf_sq": _sums(arrays, f"{name}.conf_sq", table.conf_sq, 2 * cells),
        "miss_sq": _sums(arrays, f"{name}.miss_sq", table.miss_sq, cells),
    }


def _totals_table(arrays: _Arrays, name: str, table: TotalsTable) -> dict[str, Any]:
    g = table.groups
    return {
        "groups": g,
        "ints": arrays.ref(f"{name}.ints", table.ints[:g], "<i8"),
        "counts": arrays.ref(f"{name}.counts", table.counts[:g], "<i8"),
        "nll": _sums(arrays, f"{name}.nll", table.nll, g),
    }


def _distinct(arrays: _Arrays, table: Any) -> dict[str, Any] | None:
    if table is None:
        return None
    out: dict[str, Any] = {"groups": table.groups}
    for side, (values, counts, offsets) in (("right", table.right), ("wrong", table.wrong)):
        wide = counts.shape[0] and int(counts.max()) >= 1 << 32
        out[side] = {
            "values": arrays.ref(f"distinct.{side}.values", values, "<f8"),
            "counts": arrays.ref(f"distinct.{side}.counts", counts, "<u8" if wide else "<u4"),
            "offsets": arrays.ref(f"distinct.{side}.offsets", offsets, "<i8"),
        }
    return out


def _moments(arrays: _Arrays, moments: Any) -> dict[str, Any] | None:
    if moments is None:
        return None
    return {
        "groups": moments.groups,
        "nll": _sums(arrays, "moments.nll", moments.nll, moments.groups),
        "infinite": arrays.ref("moments.infinite", moments.infinite, "<i8"),
        "grids": {str(m): _grid(arrays, m, grid) for m, grid in sorted(moments.grids.items())},
    }


def _grid(arrays: _Arrays, m: int, grid: Any) -> dict[str, str]:
    cells, values, offsets = grid.arrays()
    return {
        "cells": arrays.ref(f"moments.grid.{m}.cells", cells, "<u4"),
        "values": arrays.ref(f"moments.grid.{m}.values", values, "<f8"),
        "offsets": arrays.ref(f"moments.grid.{m}.offsets", offsets, "<i8"),
    }


def encode(summary: CalibrationSummary | PerplexitySummary) -> tuple[bytes, list[np.ndarray]]:
    """The header (prefix included) and the arrays, in order."""
    arrays = _Arrays()
    meta: dict[str, Any] = {
        "kind": summary.kind,
        "settings": summary.settings.to_dict(),
        "groups": None if summary.group_names is None else list(summary.group_names),
        "warnings": list(summary.warnings),
    }
    sources = []
    for i, s in enumerate(summary.sources):
        entry = s.recorded()
        if isinstance(summary, CalibrationSummary):
            entry["table"] = (
                None if s.table is None else _bin_table(arrays, f"sources.{i}.table", s.table)
            )
        sources.append(entry)
    meta["sources"] = sources
    if isinstance(summary, CalibrationSummary):
        meta["table"] = _bin_table(arrays, "table", summary.table)
        fp = summary.fingerprint
        meta["fingerprint"] = {
            "rows": fp.rows,
            "total": f"{fp.total:016x}",
            "sample": arrays.ref("fingerprint.sample", fp.sample, "<u8"),
        }
        meta["distinct"] = _distinct(arrays, summary.distinct)
        meta["moments"] = _moments(arrays, summary.moments)
        meta["missing"] = summary.missing
        meta["bootstrap"] = None
        if summary.bootstrap is not None:
            meta["bootstrap"] = {
                name: arrays.ref(f"bootstrap.{name}", array, "<u8" if name == "meta" else "<f8")
                for name, array in summary.bootstrap.to_arrays().items()
            }
        rows = summary.kept
        if rows is None:
            meta["rows"] = None
        else:
            meta["rows"] = {
                "right": arrays.ref("rows.right", rows.right, "<f8"),
                "wrong": arrays.ref("rows.wrong", rows.wrong, "<f8"),
            }
            if rows.right_groups is not None:
                meta["rows"]["right_groups"] = arrays.ref(
                    "rows.right_groups", rows.right_groups, "<i8"
                )
                meta["rows"]["wrong_groups"] = arrays.ref(
                    "rows.wrong_groups", rows.wrong_groups, "<i8"
                )
    else:
        meta["table"] = _totals_table(arrays, "table", summary.table)
        meta["present"] = list(summary.present)
    ids = summary.row_ids
    meta["row_ids"] = None
    if ids is not None:
        meta["row_ids"] = {
            "hashes": arrays.ref("row_ids.hashes", ids.hashes, "<u8"),
            "lines": arrays.ref("row_ids.lines", ids.lines, "<i8"),
        }
        if ids.taskless:  # kept as read, so that writing it again does not hide it
            meta["row_ids"]["inspect_task"] = False
        if ids.modelless:
            meta["row_ids"]["model_ids"] = False
        if ids.batched:  # likewise: its ids still match no other summary's
            meta["batched_ids"] = True
    meta["arrays"] = [
        {"name": name, "dtype": array.dtype.str, "shape": list(array.shape)}
        for name, array in arrays.items
    ]
    text = json.dumps(meta, separators=(",", ":"), allow_nan=False, ensure_ascii=True).encode()
    text += b" " * (-len(text) % 8)
    prefix = _PREFIX.pack(MAGIC, FORMAT_VERSION, 0, len(text))
    return prefix + text, [a for _, a in arrays.items]


def pieces(summary: CalibrationSummary | PerplexitySummary) -> list[bytes | memoryview]:
    """The summary's bytes as pieces to write one after the other: the header, then each
    array's own memory and its padding. A file is written without a copy of the whole."""
    header, arrays = encode(summary)
    out: list[bytes | memoryview] = [header]
    for array in arrays:
        out.append(memoryview(array.reshape(-1)).cast("B"))
        if array.nbytes % 8:
            out.append(b"\0" * (-array.nbytes % 8))
    return out


def to_bytes(summary: CalibrationSummary | PerplexitySummary) -> bytes:
    """The summary as one bytes object (see the module docstring)."""
    return b"".join(pieces(summary))


# --------------------------------------------------------------------------- decoding


def read_header(data: bytes | memoryview) -> tuple[dict[str, Any], int]:
    """The header's JSON and where the arrays start; SummaryError for anything else."""
    if len(data) < _PREFIX.size or bytes(data[:16]) != MAGIC:
        raise SummaryError("not a calibcli summary (no summary header)")
    _, version, _, length = _PREFIX.unpack(bytes(data[: _PREFIX.size]))
    if version not in READ_VERSIONS:
        raise SummaryError(
            f"a calibcli summary of format version {version}; this calibcli reads versions "
            f"{READ_VERSIONS[0]} to {READ_VERSIONS[-1]}"
        )
    end = _PREFIX.size + length
    if length > len(data) - _PREFIX.size:
        raise SummaryError("a truncated calibcli summary (the header is cut short)")
    try:
        # UTF-8 only (UnicodeDecodeError is a ValueError): json.loads of bytes would also
        # read UTF-16 and UTF-32
        meta = json.loads(bytes(data[_PREFIX.size : end]).decode("utf-8"))
    except (ValueError, RecursionError):
        raise SummaryError("a damaged calibcli summary (its header is not valid JSON)") from None
    if isinstance(meta, dict) and version < 3:  # its row ids are RowIds.batched
        meta["batched_ids"] = True
    if isinstance(meta, dict) and version < 5 and isinstance(meta.get("row_ids"), dict):
        meta["row_ids"]["model_ids"] = False  # its ids may be RowIds.modelless
        if version < 4:
            meta["row_ids"]["inspect_task"] = False  # ... and RowIds.taskless
    if not isinstance(meta, dict) or not isinstance(meta.get("arrays"), list):
        raise SummaryError("a damaged calibcli summary (its header lists no arrays)")
    return meta, end


def array_specs(meta: dict[str, Any]) -> list[tuple[str, Any, tuple[int, ...]]]:
    """(name, numpy dtype, shape) of each array the header lists, validated."""
    specs = []
    for item in meta["arrays"]:
        try:
            name, dtype, shape = item["name"], _DTYPES[item["dtype"]], tuple(item["shape"])
        except (KeyError, TypeError):
            raise SummaryError("a damaged calibcli summary (a bad array entry)") from None
        if not all(isinstance(d, int) and d >= 0 for d in shape):
            raise SummaryError(f"a damaged calibcli summary (array {name} has a bad shape)")
        specs.append((name, dtype, shape))
    return specs


def from_bytes(data: bytes | memoryview) -> CalibrationSummary | PerplexitySummary:
    """A summary from :func:`to_bytes`'s bytes; SummaryError when they are not one."""
    meta, pos = read_header(data)
    arrays = {}
    for name, dtype, shape in array_specs(meta):
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if pos + size > len(data):
            raise SummaryError("a truncated calibcli summary (an array is cut short)")
        arrays[name] = np.frombuffer(
            data, dtype, count=size // np.dtype(dtype).itemsize, offset=pos
        ).reshape(shape)
        pos += size + (-size % 8)
    if pos < len(data):  # read as it is, the rest would go unread: another summary, or junk
        joined = bytes(data[pos : pos + len(MAGIC)]) == MAGIC
        raise SummaryError(
            _JOINED
            if joined
            else f"a damaged calibcli summary ({len(data) - pos:,} bytes after its last array)"
        )
    return assemble(meta, arrays)


_JOINED = (
    "two calibcli summaries joined into one file (another starts after the first's last "
    "array): merge summaries with 'calibcli merge', or give each file"
)


def _get_sums(spec: Any, arrays: dict[str, np.ndarray], cells: int) -> ExactSums:
    try:
        limbs = arrays[spec["limbs"]]
        lo = int(spec["lo"])
    except (KeyError, TypeError, ValueError):
        raise SummaryError("a damaged calibcli summary (a table's sums are missing)") from None
    if limbs.ndim != 2 or limbs.shape[0] != cells or not 0 <= lo <= 80:
        raise SummaryError("a damaged calibcli summary (a table's sums have a bad shape)")
    if limbs.dtype != np.uint32 or not limbs.shape[1]:
        sums = ExactSums(0, lo)
        sums.limbs = np.zeros((cells, max(limbs.shape[1], 1)))
        sums.limbs[:, : limbs.shape[1]] = limbs
        return sums
    sums = ExactSums(0, lo, limbs.shape[1])
    if limbs.flags.writeable and limbs.flags.c_contiguous:
        sums.limbs = limbs  # packed as stored: a table received from a worker is not copied
    else:
        sums.limbs = np.array(limbs)
    return sums


def _get_bin_table(spec: Any, arrays: dict[str, np.ndarray]) -> BinTable:
    try:
        bins, groups = int(spec["bins"]), int(spec["groups"])
        counts = arrays[spec["counts"]]
    except (KeyError, TypeError, ValueError):
        raise SummaryError("a damaged calibcli summary (a bin table is incomplete)") from None
    if bins < 1 or groups < 0 or counts.shape != (groups * bins, 2) or (counts < 0).any():
        raise SummaryError("a damaged calibcli summary (a bin table has bad counts)")
    table = BinTable(bins, 0)  # its arrays are the ones read
    table.groups = groups
    table.counts = counts.astype(np.int64)
    cells = groups * bins
    table.conf = _get_sums(spec.get("conf"), arrays, 2 * cells)
    table.conf_sq = _get_sums(spec.get("conf_sq"), arrays, 2 * cells)
    table.miss_sq = _get_sums(spec.get("miss_sq"), arrays, cells)
    return table


def _get_totals(spec: Any, arrays: dict[str, np.ndarray]) -> TotalsTable:
    try:
        groups = int(spec["groups"])
        ints, counts = arrays[spec["ints"]], arrays[spec["counts"]]
    except (KeyError, TypeError, ValueError):
        raise SummaryError("a damaged calibcli summary (its totals are incomplete)") from None
    if ints.shape != (groups, 5) or counts.shape != (groups, 3, 2):
        raise SummaryError("a damaged calibcli summary (its totals have a bad shape)")
    table = TotalsTable(groups)
    table.ints = ints.astype(np.int64)
    table.counts = counts.astype(np.int64)
    table.nll = _get_sums(spec.get("nll"), arrays, groups)
    return table


def _source(entry: Any, table: BinTable | None) -> Source:
    try:
        # absent: not recorded (an older summary)
        mode, model, epochs = (entry.get(k) for k in ("inspect_confidence", "model", "epochs"))
        if any(v is not None and not isinstance(v, str) for v in (mode, model)):
            raise TypeError(mode)
        pooled = entry.get("pooled")  # re-runs whose ids repeat, pooled with --all-runs
        for count in (epochs, pooled):
            if count is not None and (type(count) is not int or count < 1):
                raise TypeError(count)
        return Source(
            name=str(entry["name"]),
            content=str(entry["content"]),
            format=entry["format"],
            rows=int(entry["rows"]),
            start=int(entry["start"]),
            stop=None if entry["stop"] is None else int(entry["stop"]),
            skipped=entry["skipped"],
            table=table,
            inspect_confidence=mode,
            **recorded_counts(entry),
            model=model,
            epochs=epochs,
            pooled=pooled,
            **recorded_cut(entry),
            **recorded_hashes(entry),
        )
    except (AttributeError, KeyError, TypeError, ValueError):
        raise SummaryError("a damaged calibcli summary (a bad source entry)") from None


def _row_ids(
    meta: dict[str, Any], arrays: dict[str, np.ndarray], settings: Any, sources: Any
) -> RowIds | None:
    spec = meta.get("row_ids")
    if spec is None:
        return None
    try:
        hashes, lines = arrays[spec["hashes"]], arrays[spec["lines"]]
    except (KeyError, TypeError):
        raise SummaryError("a damaged calibcli summary (its row ids are incomplete)") from None
    if hashes.shape != lines.shape or hashes.ndim != 1:
        raise SummaryError("a damaged calibcli summary (its row ids have a bad shape)")
    batched = meta.get("batched_ids") is True
    taskless = spec.get("inspect_task") is False and taskless_ids(settings, sources)
    modelless = spec.get("model_ids") is False and modelless_ids(settings, sources)
    return RowIds(hashes.astype(np.uint64), lines.astype(np.int64), batched, taskless, modelless)


def assemble(meta: dict[str, Any], arrays: dict[str, np.ndarray], *, table_in_rows: bool = False):
    """A summary from a decoded header and its arrays (by name). ``table_in_rows``: a
    worker's share whose kept rows carry its table (:meth:`CalibrationBuilder.share`), sent
    with an empty table. The records of the rows' count are checked to agree
    (:mod:`calibcli.summaries.row_records`)."""
    from calibcli.summaries.row_records import (
        check_calibration,
        check_perplexity,
        read_fingerprint,
        read_kept_rows,
    )

    kind = meta.get("kind")
    groups = meta.get("groups")
    if groups is not None and (
        not isinstance(groups, list)
        or not all(isinstance(g, str) for g in groups)
        or groups != sorted(set(groups))
    ):
        raise SummaryError("a damaged calibcli summary (its group names are not sorted strings)")
    names = None if groups is None else tuple(groups)
    warnings = tuple(str(w) for w in meta.get("warnings") or ())
    try:
        if kind == "calibration":
            settings = CalibrationSettings(**meta["settings"])
        elif kind == "perplexity":
            settings = PerplexitySettings(**meta["settings"])
        else:
            raise SummaryError(f"a calibcli summary of unknown kind {kind!r}")
    except (TypeError, ValueError, KeyError) as exc:  # a KeyError: no settings at all
        if isinstance(exc, SummaryError):
            raise
        raise SummaryError(f"a damaged calibcli summary (bad settings: {exc})") from None
    if kind == "perplexity":
        present = tuple(meta.get("present") or (None, None, None))
        sources = tuple(_source(e, None) for e in meta.get("sources") or ())
        table = _get_totals(meta.get("table"), arrays)
        if names is not None and table.groups != len(names):
            raise SummaryError("a damaged calibcli summary (groups and totals disagree)")
        row_ids = _row_ids(meta, arrays, settings, sources)
        summary = PerplexitySummary(settings, table, names, sources, warnings, present, row_ids)
        check_perplexity(summary)
        return summary
    table = _get_bin_table(meta.get("table"), arrays)
    groups = table.groups
    if table_in_rows and names is not None and meta.get("rows") is not None and not groups:
        groups = len(names)  # an empty table: the rows carry it
    if table.bins != settings.bins or (names is not None and groups != len(names)):
        raise SummaryError("a damaged calibcli summary (its table and settings disagree)")
    sources = tuple(
        _source(e, None if e.get("table") is None else _get_bin_table(e["table"], arrays))
        for e in meta.get("sources") or ()
    )
    rows = read_kept_rows(meta.get("rows"), arrays, groups)
    distinct, moments = _get_distinct(meta, arrays), _get_moments(meta, arrays)
    for part, what in ((distinct, "table of distinct confidences"), (moments, "row sums")):
        if part is not None and part.groups != groups:
            raise SummaryError(f"a damaged calibcli summary (its {what} and groups disagree)")
    missing = meta.get("missing")
    bootstrap = _get_bootstrap(meta, arrays, groups)
    summary = CalibrationSummary(
        settings,
        table,
        names,
        rows,
        sources,
        warnings,
        read_fingerprint(meta.get("fingerprint"), arrays),
        _row_ids(meta, arrays, settings, sources),
        distinct,
        moments,
        None if missing is None else str(missing),
        bootstrap,
    )
    known = "rows" in (meta.get("fingerprint") or {})
    check_calibration(summary, fingerprint_known=known, table_in_rows=table_in_rows)
    return summary


def _get_bootstrap(meta: dict[str, Any], arrays: dict[str, np.ndarray], groups: int) -> Any:
    spec = meta.get("bootstrap")
    if spec is None:
        return None
    from calibcli.metrics import PoissonState

    try:
        state = PoissonState.from_arrays({k: arrays[v] for k, v in spec.items()})
    except (KeyError, TypeError, AttributeError):
        raise SummaryError(
            "a damaged calibcli summary (its bootstrap state is incomplete)"
        ) from None
    except ValueError as e:
        raise SummaryError(
            f"a calibcli summary whose bootstrap state cannot be read: {e}"
        ) from None
    if state.groups != groups:
        raise SummaryError("a damaged calibcli summary (its bootstrap state and groups disagree)")
    return state


def _get_distinct(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    spec = meta.get("distinct")
    if spec is None:
        return None
    from calibcli.summaries.distinct import DistinctTable

    sides = []
    try:
        groups = int(spec["groups"])
        for side in ("right", "wrong"):
            entry = spec[side]
            values = arrays[entry["values"]].astype(np.float64)
            counts = arrays[entry["counts"]].astype(np.int64)
            offsets = arrays[entry["offsets"]].astype(np.int64)
            sides.append((values, counts, offsets))
    except (KeyError, TypeError, ValueError):
        raise SummaryError(
            "a damaged calibcli summary (its distinct table is incomplete)"
        ) from None
    for values, counts, offsets in sides:
        if (
            values.ndim != 1
            or counts.shape != values.shape
            or offsets.shape != (groups + 1,)
            or (offsets.shape[0] and (offsets[0] != 0 or offsets[-1] != values.shape[0]))
            or (np.diff(offsets) < 0).any()
            or not ((values >= 0.0) & (values <= 1.0)).all()
            or (counts < 1).any()
            or not _rising_within_groups(values, offsets)
        ):
            raise SummaryError("a damaged calibcli summary (a bad distinct table)")
    return DistinctTable(sides[0], sides[1], groups)


def _rising_within_groups(values: np.ndarray, offsets: np.ndarray) -> bool:
    """Each group's values strictly increasing: the canonical form tables are written in, which
    merging and the figures rely on."""
    if values.shape[0] < 2:
        return True
    rising = np.diff(values) > 0
    starts = offsets[(offsets > 0) & (offsets < values.shape[0])]
    rising[starts - 1] = True  # where one group ends and the next begins
    return bool(rising.all())


def _get_moments(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    spec = meta.get("moments")
    if spec is None:
        return None
    from calibcli.metrics import stored_grid_sizes
    from calibcli.summaries.moments import RowMoments, SparseGrids

    bad_shape = SummaryError("a damaged calibcli summary (a smooth-ECE grid has a bad shape)")
    try:
        groups = int(spec["groups"])
        infinite = arrays[spec["infinite"]].astype(np.int64)
        stored = {int(m): names for m, names in spec["grids"].items()}
        if sorted(stored) != list(stored_grid_sizes()) or infinite.shape != (groups,):
            raise SummaryError("a damaged calibcli summary (its row sums have a bad shape)")
        grids = {}
        for m, names in stored.items():
            if isinstance(names, str):  # format version 1: a dense (groups, 2, m) array
                grid = arrays[names].astype(np.float64)
                if grid.shape != (groups, 2, m):
                    raise bad_shape
                grids[m] = SparseGrids.of_dense(grid)
                continue
            cells = arrays[names["cells"]].astype(np.int64)
            values = arrays[names["values"]].astype(np.float64)
            offsets = arrays[names["offsets"]].astype(np.int64)
            if not _sparse_ok(cells, values, offsets, groups, 2 * m):
                raise bad_shape
            grids[m] = SparseGrids(m, groups, cells, values, offsets)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        if isinstance(e, SummaryError):
            raise
        raise SummaryError("a damaged calibcli summary (its row sums are incomplete)") from None
    return RowMoments(groups, _get_sums(spec.get("nll"), arrays, groups), infinite, grids)


def _sparse_ok(
    cells: np.ndarray, values: np.ndarray, offsets: np.ndarray, groups: int, width: int
) -> bool:
    """Whether sparse histograms are well formed: offsets from 0 to the entries, never
    falling; each group's cells rising and inside its (2, m) histogram; no +0.0 kept."""
    n = cells.shape[0]
    if cells.ndim != 1 or values.shape != (n,) or offsets.shape != (groups + 1,):
        return False
    if offsets[0] != 0 or offsets[-1] != n or np.any(np.diff(offsets) < 0):
        return False
    if n and (cells.min() < 0 or cells.max() >= width):
        return False
    rising = np.ones(n, bool)
    rising[1:] = cells[1:] > cells[:-1]
    rising[offsets[1:-1][offsets[1:-1] < n]] = True  # a group's first entry starts afresh
    return bool(rising.all()) and not np.any(values.view(np.uint64) == 0)
