"""A fixed-size, mergeable fingerprint of a set of rows, to tell by content whether two sets
share rows (a calibrator scored on the rows it was fitted on, a file read twice).

Each row hashes to 64 bits (:func:`calibration_hashes`: the confidence's bits and the outcome,
mixed by the SplitMix64 finaliser). The fingerprint keeps the number of rows, the sum of their
hashes modulo 2**64 (a multiset hash: equal multisets give equal sums), and the ``SAMPLE``
smallest distinct hashes (a bottom-k sketch, which estimates how much two sets overlap). All
three merge exactly and in any order, and the fingerprint's size never grows with the rows.
Rows with equal values hash equally: the sketch sees distinct values, not distinct rows.
Rows written again through a float32 column, or with fewer decimals, hold other doubles: their
fingerprints under a rounding (:func:`rounded_prints`) tell them too.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

SAMPLE = 512
"""Distinct hashes kept (4 KB)."""
SOURCE_SAMPLE = 256
"""Distinct hashes a source keeps of its rows (:class:`SourceSketch`, 2 KB): half the summary's,
so that a summary file of many sources stays small."""
COPY_DISTINCT = 64
"""Distinct rows from which two inputs holding the same multiset of rows are taken for copies,
however coarse their values (:meth:`RowFingerprint.tells_copies_apart`)."""
_MASK = (1 << 64) - 1
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix(x: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser of uint64 values (a bijection that scatters every bit)."""
    x = x ^ (x >> np.uint64(30))
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def sorted_distinct(hashes: np.ndarray) -> np.ndarray:
    """The distinct values of ``hashes``, sorted: ``np.unique``'s result by a sort and one
    comparison of neighbours, which on a million 64-bit hashes takes a small fraction of the
    time of numpy 2's hash-table ``np.unique`` (a second: the in-sample check of a large
    input would cost more than reading it)."""
    ordered = np.sort(hashes)
    if ordered.shape[0] < 2:
        return ordered
    keep = np.empty(ordered.shape[0], bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def among_sorted(values: np.ndarray, ordered: np.ndarray) -> np.ndarray:
    """Whether each of ``values`` is in ``ordered`` (sorted): ``np.isin`` by binary search,
    without the sort of ``values`` that ``np.isin`` makes."""
    if not ordered.shape[0]:
        return np.zeros(values.shape[0], bool)
    at = np.minimum(np.searchsorted(ordered, values), ordered.shape[0] - 1)
    return ordered[at] == values


def calibration_hashes(conf: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """A row's hash: its confidence's bits (sign bit clear in [0, 1]) with the outcome in the
    sign bit, mixed."""
    bits = np.ascontiguousarray(conf, np.float64).view(np.uint64)
    return mix(bits | (correct.astype(np.uint64) << np.uint64(63)))


_HIGH = np.uint64(32)
_SHIFT = np.uint64(29)


def float32_hash_sum(conf: np.ndarray, correct: np.ndarray) -> int:
    """The sum modulo 2**64 of the rows' hashes with every confidence rounded to the nearest
    float32 (a value read from a float32 column rounds back to that float32): the float32's
    bits with the outcome in bit 32, mixed by two multiply-xorshift rounds (cheaper than
    :func:`mix`: it runs on every row read; a bijection of the 33 bits all the same, and the
    last xorshift keeps the sum from being linear in the rows). Equal multisets of float32 rows
    give equal sums, as :attr:`RowFingerprint.total` does for exact ones."""
    x = np.asarray(conf, np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    x |= correct.astype(np.uint64) << _HIGH
    return _mixed_sum(x)


def perplexity_float32_sum(nll: np.ndarray, tokens: np.ndarray | None) -> int:
    """:func:`float32_hash_sum` for perplexity rows: each row's NLL rounded to the nearest
    float32 (an NLL written from a float32 loss, or read from a float32 column, rounds back to
    that float32), its bits with the low 32 bits of its token count above them (-1 for a row
    without a count, as a column of missing counts holds), mixed alike. Equal multisets of
    rows with their NLLs as float32 give equal sums. An NLL beyond float32's range rounds to
    infinity."""
    with np.errstate(over="ignore"):
        x = np.asarray(nll, np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    counts = np.full(x.shape[0], -1, np.int64) if tokens is None else np.asarray(tokens)
    x |= counts.astype(np.int64).view(np.uint64) << _HIGH
    return _mixed_sum(x)


def _mixed_sum(x: np.ndarray) -> int:
    """The sum modulo 2**64 of uint64 keys, each mixed by two multiply-xorshift rounds (in
    place)."""
    x *= _M1
    x ^= x >> _SHIFT
    x *= _M2
    x ^= x >> _HIGH
    return int(x.sum(dtype=np.uint64))


ROUNDINGS = {
    "float32": "their confidences compared as float32",
    "decimals4": "their confidences compared to 4 decimals",
}
"""The roundings under which calibration rows are compared besides their exact values, and how
a message says so: the float32 nearest (rows exported through a float32 column, which that
rounding gives back exactly) and 4 decimals (rows written rounded; coarser, so it tells fewer
rows apart, and a value within float32's error of a rounding boundary may round either way)."""


def rounded(conf: np.ndarray, rounding: str) -> np.ndarray:
    """The confidences under ``rounding`` (a key of ``ROUNDINGS``), as doubles."""
    if rounding == "float32":
        return np.asarray(conf, np.float64).astype(np.float32).astype(np.float64)
    return np.round(np.asarray(conf, np.float64), 4)


def rounded_hashes(right: np.ndarray, wrong: np.ndarray, rounding: str) -> np.ndarray:
    """The hashes (:func:`calibration_hashes`) of rows given as the confidences of right and of
    wrong answers, rounded first."""
    return np.concatenate(
        [
            calibration_hashes(rounded(right, rounding), np.ones(right.shape[0], bool)),
            calibration_hashes(rounded(wrong, rounding), np.zeros(wrong.shape[0], bool)),
        ]
    )


def rounded_prints(right: np.ndarray, wrong: np.ndarray) -> dict[str, RowFingerprint]:
    """The fingerprint of the rows under each rounding of ``ROUNDINGS``."""
    prints = {}
    for name in ROUNDINGS:
        prints[name] = RowFingerprint()
        prints[name].add(rounded_hashes(right, wrong, name))
    return prints


def rounded_from_dict(value: Any) -> dict[str, RowFingerprint] | None:
    """The rounded fingerprints that a fingerprint's JSON form records under ``rounded`` (None
    when it records none, as calibrators written before them); ValueError when malformed.
    Roundings this version does not know are passed over."""
    found = value.get("rounded") if isinstance(value, dict) else None
    if found is None:
        return None
    if not isinstance(found, dict):
        raise ValueError("not a row fingerprint (its rounded fingerprints are not an object)")
    return {name: RowFingerprint.from_dict(v) for name, v in found.items() if name in ROUNDINGS}


def perplexity_hashes(nll: np.ndarray, tokens: np.ndarray | None) -> np.ndarray:
    """A perplexity row's hash: its NLL's bits, mixed, then mixed again with its token count
    (none for rows that carry no count)."""
    bits = mix(np.ascontiguousarray(nll, np.float64).view(np.uint64))
    if tokens is None:
        return bits
    return mix(bits ^ np.asarray(tokens).astype(np.uint64))


def joined_key(pieces: list[tuple[int, tuple[int, bool]]]) -> tuple[int, bool] | None:
    """The multiset hash of the rows of several pieces of one source, from each piece's row
    count and :meth:`RowFingerprint.key` (the hash sums add); None when no piece held rows.
    Whether the rows together tell a copy is :func:`joined_tells_copies`."""
    if not pieces:
        return None
    total = sum(key[0] for _, key in pieces) & _MASK
    return total, joined_tells_copies([(n, key[1]) for n, key in pieces])


def joined_tells_copies(pieces: list[tuple[int, bool]]) -> bool:
    """Whether the rows of several pieces together tell a copy
    (:meth:`RowFingerprint.tells_copies_apart`), from each piece's rows and whether its own
    values do: when every piece's values do, and also when one piece's alone show that the
    pieces together hold ``COPY_DISTINCT`` distinct rows or half of all their rows (a piece
    whose values tell a copy holds at least min(``COPY_DISTINCT``, half its rows) distinct
    rows). A coarse piece (a few levels) then takes nothing from a varied one beside it."""
    rows = sum(n for n, _ in pieces)
    if not rows:
        return False
    least = max((min(COPY_DISTINCT, (n + 1) // 2) for n, apart in pieces if apart), default=0)
    return all(apart for _, apart in pieces) or least >= COPY_DISTINCT or 2 * least >= rows


@dataclass
class RowFingerprint:
    """Rows, their hash sum modulo 2**64, and the ``size`` smallest distinct hashes (sorted)."""

    size: ClassVar[int] = SAMPLE
    rows: int = 0
    total: int = 0
    sample: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))

    def add(self, hashes: np.ndarray) -> None:
        """Fold the hashes of more rows."""
        if not hashes.shape[0]:
            return
        self.rows += int(hashes.shape[0])
        self.total = (self.total + int(hashes.sum(dtype=np.uint64))) & _MASK
        if self.sample.shape[0] >= self.size:
            hashes = hashes[hashes < self.sample[-1]]
            if not hashes.shape[0]:
                return
        self.sample = sorted_distinct(np.concatenate([self.sample, hashes]))[: self.size]

    def merge(self, other: RowFingerprint) -> RowFingerprint:
        out = RowFingerprint(self.rows, self.total, self.sample)
        out.rows += other.rows
        out.total = (out.total + other.total) & _MASK
        out.sample = np.unique(np.concatenate([self.sample, other.sample]))[: self.size]
        return out

    def contained_share(self, other: RowFingerprint) -> float:
        """Estimated share of this set's distinct rows that ``other`` holds too (0 to 1):
        among the smallest distinct hashes of the union that this set holds, the share that
        ``other`` holds (the bottom-k containment estimate)."""
        return self.containment(other)[0]

    def containment(self, other: RowFingerprint) -> tuple[float, int]:
        """:meth:`contained_share`, and how many of this set's hashes it rests on (those
        whose presence in ``other`` is known: a few when ``other`` is much larger)."""
        if not self.sample.shape[0]:
            return 0.0, 0
        union = np.unique(np.concatenate([self.sample, other.sample]))[: self.size]
        mine = np.intersect1d(union, self.sample, assume_unique=True)
        if not mine.shape[0]:
            return 0.0, 0
        # a hash above other's largest kept one may be in other without being sampled
        known = mine if other.sample.shape[0] < other.size else mine[mine <= other.sample[-1]]
        if not known.shape[0]:
            return 0.0, 0
        shared = np.intersect1d(known, other.sample, assume_unique=True)
        return shared.shape[0] / known.shape[0], int(known.shape[0])

    def distinct(self) -> float:
        """The number of distinct rows: exact below ``size``, else the bottom-k estimate."""
        k = self.sample.shape[0]
        if k < self.size:
            return float(k)
        return (k - 1) / ((float(self.sample[-1]) + 1.0) / 2.0**64)

    def tells_rows_apart(self) -> bool:
        """Whether a value shared with other rows says that a row is shared: not when these
        rows repeat their values so much (coarse confidences: two decimals, a few verbal
        levels) that other rows share them by chance, taken as fewer distinct values than half
        the rows."""
        return self.distinct() >= 0.5 * self.rows

    def tells_copies_apart(self) -> bool:
        """Whether the same multiset of rows in another input says that it is a copy: when the
        values tell rows apart (:meth:`tells_rows_apart`), and also when they hold
        ``COPY_DISTINCT`` distinct rows or more, however often each repeats. Two inputs of
        other rows then hold the same multiset only by a chance below 0.4 ** 64 (each distinct
        row's count must agree, and the likeliest count of a Poisson count is at most ~0.37
        likely, or the row's count is large and its likeliest value rarer still), where a few
        verbal levels or one confidence for every row agree often."""
        return self.tells_rows_apart() or self.distinct() >= COPY_DISTINCT

    def to_dict(self) -> dict[str, Any]:
        """A JSON form: rows, the hash sum in hex, the sample as base64 of little-endian
        uint64s."""
        return {
            "rows": self.rows,
            "total": f"{self.total:016x}",
            "sample": _hashes_text(self.sample),
        }

    @classmethod
    def from_dict(cls, value: Any) -> RowFingerprint:
        """The fingerprint of :meth:`to_dict`; ValueError when it is not one."""
        try:
            sample = _hashes_of(value["sample"], cls.size)
            return cls(int(value["rows"]), int(value["total"], 16), sample)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a row fingerprint ({exc})") from None

    def key(self) -> tuple[int, bool] | None:
        """The multiset hash and whether equal hashes tell a copy (:meth:`tells_copies_apart`:
        what a source keeps of its rows, :attr:`~calibcli.summaries.sources.Source.rows_hash`);
        None without rows."""
        return (self.total, self.tells_copies_apart()) if self.rows else None

    def same_rows(self, other: RowFingerprint) -> bool:
        """True when both hold the same multiset of rows (up to a hash collision)."""
        return (
            self.rows == other.rows
            and self.total == other.total
            and np.array_equal(self.sample, other.sample)
        )


@dataclass
class SourcePrint(RowFingerprint):
    """A source's fingerprint while it is read, with ``float32``, the multiset hash of its rows
    with every confidence, or NLL, rounded to float32 (:func:`float32_hash_sum`,
    :func:`perplexity_float32_sum`; None when a share of it did not record one), and
    ``repeats``, the hashes of its sample that more than one of its rows holds (None when a
    share of it did not record them): with the sample, its rows' :class:`SourceSketch`."""

    float32: int | None = 0
    repeats: np.ndarray | None = field(default_factory=lambda: np.zeros(0, np.uint64))

    def add_rows(self, conf: np.ndarray, correct: np.ndarray) -> None:
        """Fold one block of rows: both hashes in the same pass over the block."""
        self.add_hashes(calibration_hashes(conf, correct))
        if self.float32 is not None:
            self.float32 = (self.float32 + float32_hash_sum(conf, correct)) & _MASK

    def add_perplexity_rows(self, nll: np.ndarray, tokens: np.ndarray | None) -> None:
        """Fold one block of perplexity rows (:func:`perplexity_hashes`), and their hash with
        every NLL as float32 (:func:`perplexity_float32_sum`)."""
        self.add_hashes(perplexity_hashes(nll, tokens))
        if self.float32 is not None:
            self.float32 = (self.float32 + perplexity_float32_sum(nll, tokens)) & _MASK

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Fold one block of rows' hashes (the float32 hash is left as it is), noting those
        that repeat."""
        self._note_repeats(hashes)
        self.add(hashes)
        if self.repeats is not None and self.repeats.shape[0]:
            self.repeats = self.repeats[self.repeats <= self.sample[-1]]

    def _note_repeats(self, hashes: np.ndarray) -> None:
        """Note the hashes of a block that another row holds too (in the block, or read
        before): once the sample is full, only those at most its largest, which :meth:`add`
        looks at anyway."""
        if self.repeats is None or not hashes.shape[0]:
            return
        if self.sample.shape[0] >= self.size:
            hashes = hashes[hashes <= self.sample[-1]]
        found, count = np.unique(hashes, return_counts=True)
        again = np.union1d(found[count > 1], np.intersect1d(found, self.sample, True))
        if again.shape[0]:
            self.repeats = np.union1d(self.repeats, again)

    def absorb(self, part: Any) -> None:
        """Fold a summary of a later share of the source (its fingerprint, and its sources'
        float32 hashes, which add, and sketches, which join)."""
        mine = self.sketch()
        merged = self.merge(part.fingerprint)
        self.rows, self.total, self.sample = merged.rows, merged.total, merged.sample
        for source in part.sources:
            if source.rows and (self.float32 is None or source.float32_hash is None):
                self.float32 = None
            elif source.rows:
                self.float32 = (self.float32 + source.float32_hash) & _MASK
        theirs = [s.rows_sketch for s in part.sources if s.rows]
        if self.repeats is None or any(sketch is None for sketch in theirs):
            self.repeats = None
        elif theirs:  # repeats are known for the union's SOURCE_SAMPLE smallest hashes
            self.repeats = joined_sketch([s for s in [mine, *theirs] if s is not None])[1]

    def sketch(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The :class:`SourceSketch` of these rows (the smallest ``SOURCE_SAMPLE`` hashes of
        the sample, and those of them that more than one row holds); None without rows, or
        when a share did not record its own."""
        if not self.rows or self.repeats is None:
            return None
        sample = self.sample[:SOURCE_SAMPLE].copy()
        return sample, self.repeats[self.repeats <= sample[-1]].copy()

    def hashes(self) -> dict[str, Any]:
        """What the source records of its rows (``rows_hash``, ``float32_hash`` and
        ``rows_sketch`` of :class:`~calibcli.summaries.sources.Source`)."""
        float32 = self.float32 if self.rows else None
        return {"rows_hash": self.key(), "float32_hash": float32, "rows_sketch": self.sketch()}


@dataclass
class SourceSketch(RowFingerprint):
    """A source's rows as the containment check reads them: their count and their
    ``SOURCE_SAMPLE`` smallest distinct hashes (no hash sum), for
    :meth:`~RowFingerprint.containment` and :meth:`~RowFingerprint.tells_rows_apart` at that
    size, and ``repeats``, those of the hashes that more than one row holds."""

    size: ClassVar[int] = SOURCE_SAMPLE
    repeats: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))

    def density(self, upper: bool = False) -> float:
        """The rows each value the rows are drawn from holds, as a Poisson mean m (0 when no
        sampled value repeats, as for the doubles of a model's probabilities), from the share
        of the sampled distinct values that repeat: values drawn alike from V equally likely
        ones (m = rows / V), a distinct value repeats with chance 1 - m e^-m / (1 - e^-m).
        Another input's distinct values are then among these rows' by chance with chance
        1 - e^-m. With ``upper``, m at the upper end of what the repeats seen allow (about
        95%: a Poisson count r taken as r + 2 sqrt(r) + 2), so that a few rows' values are not
        taken for rows that never repeat."""
        seen = self.repeats.shape[0]
        if upper:
            seen = seen + 2 * math.sqrt(seen) + 2
        if not self.sample.shape[0] or not seen:
            return 0.0
        share = min(seen / self.sample.shape[0], 1.0)
        low, high = 0.0, 64.0
        for _ in range(60):  # the share that repeats rises with m
            m = (low + high) / 2
            if 1 - m * math.exp(-m) / -math.expm1(-m) < share:
                low = m
            else:
                high = m
        return low


def joined_sketch(pieces: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The :class:`SourceSketch` (sample, repeats) of the rows of several pieces together, from
    theirs: the smallest distinct hashes of a union are the smallest of the pieces' smallest,
    and one of them repeats when it does in a piece or more than one piece holds it."""
    found, count = np.unique(np.concatenate([s for s, _ in pieces]), return_counts=True)
    sample = found[:SOURCE_SAMPLE]
    again = np.union1d(found[count > 1], np.concatenate([r for _, r in pieces]))
    return sample, again[np.isin(again, sample)]


def sketch_text(sketch: tuple[np.ndarray, np.ndarray]) -> list[str]:
    """A sketch as JSON holds it: its sample and repeats, each base64 of little-endian
    uint64s (as :meth:`RowFingerprint.to_dict` writes a sample)."""
    return [_hashes_text(hashes) for hashes in sketch]


def sketch_of(value: Any) -> tuple[np.ndarray, np.ndarray]:
    """The sketch of :func:`sketch_text`; TypeError or ValueError when ``value`` is not one."""
    sample, repeats = (_hashes_of(text) for text in value)
    if sample.shape[0] > SOURCE_SAMPLE or not np.isin(repeats, sample).all():
        raise ValueError(value)
    return sample, repeats


def _hashes_text(hashes: np.ndarray) -> str:
    return base64.b64encode(hashes.astype("<u8").tobytes()).decode("ascii")


def _hashes_of(text: Any, size: int | None = None) -> np.ndarray:
    """Hashes written as base64 of little-endian uint64s, distinct and sorted (the ``size``
    smallest); TypeError or ValueError when ``text`` is not such."""
    if not isinstance(text, str):
        raise TypeError(text)
    raw = base64.b64decode(text, validate=True)
    return np.unique(np.frombuffer(raw, "<u8").astype(np.uint64))[:size]
