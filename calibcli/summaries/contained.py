"""Inputs that hold part of another's rows: a file read beside some of the shards it was split
into, or two files that share many of their rows. Their multiset hashes
(:mod:`calibcli.summaries.copies`) tell an input whose rows are all another's, or all of some
others' together, but not one that holds only part of them; the shared rows would count twice
all the same.

Each source keeps a sketch of its rows' distinct values
(:attr:`~calibcli.summaries.sources.Source.rows_sketch`: the ``SOURCE_SAMPLE`` smallest distinct
row hashes, :class:`~calibcli.summaries.fingerprint.SourceSketch`), and the share of one input's
distinct rows that another holds is estimated from the two sketches
(:meth:`~calibcli.summaries.fingerprint.RowFingerprint.containment`). An input is held by
another when at least ``SHARE`` of its distinct rows are estimated to be the other's, the
estimate resting on at least ``RESTS`` of its hashes; and by several others together when at
least ``SHARE`` are theirs (a large file beside many small shards of it, each too small beside
it for the estimate to rest on enough hashes). Only inputs of at least ``FLOOR`` rows whose
values tell rows apart (:meth:`~calibcli.summaries.fingerprint.RowFingerprint.tells_rows_apart`)
are compared, on both sides: coarse values (a few verbal levels, confidences of one decimal) are
shared by other rows by chance, so a shared value says nothing of a shared row. Values of a few
decimals (two, four) tell rows apart yet are shared by chance too, as often as the rows of each
input repeat them: the sketch keeps which of its hashes more than one row holds
(:meth:`~calibcli.summaries.fingerprint.SourceSketch.density`), and the share is refused when,
at the lower end of its estimate, it is ``SHARE`` above what chance gives at the upper end of
that, or when it is far more than chance could give and its estimate's upper end is ``SHARE``
above chance. Several inputs together share by chance what the sketch of their union says, whose
values repeat when one input holds them more than once or several inputs hold them, when that is
less than their densities added up: the sum counts the few values that every input ties on (0,
1, a rounded score among doubles) once for each input, where the union holds them once (thirty
shards of a file, each repeating two or three of them, would add up to half their values shared
by chance, where the file's own sketch repeats one value in 256). Even that model takes values
drawn evenly from those likely, where rounded probabilities bunch on a few (0.96 to 1.0): inputs
more than ``REPEATING`` of whose sampled values repeat are not compared at all. Doubles of a
model's probabilities never repeat, and two inputs of other rows share no hash but by a 64-bit
collision: when no sampled value of either side repeats, any sizeable overlap is refused (two
files of 600 rows sharing 200 share a third of each).

The cost is the sketches': each input's are sorted together once, so the pairs that share
hashes are found without comparing every pair (a folder of a thousand files is a few hundred
thousand hashes), and each input's share of the others together is read off the first hashes
of that sort.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from calibcli.summaries.copies import FLOOR
from calibcli.summaries.fingerprint import SOURCE_SAMPLE, SourceSketch

SHARE = 0.2
"""The least estimated share of an input's distinct rows held elsewhere that is refused."""
RESTS = 16
"""The fewest of an input's hashes an estimate must rest on (below, an input much larger than
it leaves too few of its hashes comparable)."""
REPEATING = 0.05
"""The largest share of an input's sampled distinct values that more than one of its rows may
hold for it to be compared: values that repeat more (rounded confidences) are drawn from few
likely ones, which other inputs' rows share by chance more often than even draws say."""
CROWD = 64
"""Inputs above which a hash held by all of them is passed over in the search for pairs: a
value that many inputs hold is a common value (a confidence of exactly 1), not a shared row."""
_LEAST = math.ceil(SHARE * RESTS)  # hashes two inputs must share for a pair to be refused


def held_rows(
    rows: list[int], sketches: list[Any], together: list[Any] | None = None
) -> tuple[int, list[int], float] | None:
    """The input most of whose distinct rows other inputs hold, as (its index, the indices of
    those that hold them, the estimated share), when that share is at least ``SHARE`` more
    than chance gives (:func:`_chance`); None when there is none. ``rows`` and ``sketches``
    are each input's row count and :class:`~calibcli.summaries.fingerprint.SourceSketch`
    (sample, repeats), None when unknown (not compared). Inputs of equal ``together`` keys are
    never compared (pooled on purpose); None compares every pair. One other input holding
    them is looked for first (the largest share found), then all the others together."""
    keys = list(range(len(rows))) if together is None else together
    made = {
        i: SourceSketch(n, 0, sketch[0], sketch[1])
        for i, (n, sketch) in enumerate(zip(rows, sketches, strict=True))
        if sketch is not None and n >= FLOOR
    }
    sketched = {i: s for i, s in made.items() if _tells_rows_apart(s)}
    if len({keys[i] for i in sketched}) < 2:
        return None
    hashes = np.concatenate([s.sample for s in sketched.values()])
    owners = np.concatenate([np.full(s.sample.shape[0], i, np.int64) for i, s in sketched.items()])
    order = np.argsort(hashes, kind="stable")  # each hash's holders in input order
    hashes, owners = hashes[order], owners[order]
    found = _by_one(hashes, owners, sketched, keys)
    return found if found is not None else _by_several(hashes, owners, sketched, keys)


def _tells_rows_apart(sketch: Any) -> bool:
    """Whether an input's values tell its rows apart well enough to compare: most of them are
    distinct (:meth:`~calibcli.summaries.fingerprint.RowFingerprint.tells_rows_apart`) and at
    most ``REPEATING`` of its sampled values repeat."""
    return sketch.tells_rows_apart() and (
        sketch.repeats.shape[0] <= REPEATING * sketch.sample.shape[0]
    )


def _chance(density: float) -> float:
    """The share of an input's distinct values that others of ``density`` in all
    (:meth:`~calibcli.summaries.fingerprint.SourceSketch.density`; several together,
    :func:`_union_density`) hold by chance; 0 for values that never repeat."""
    return -math.expm1(-density)


def _over(share: float, rests: int, density: float, never: bool = False) -> float:
    """How far the share of an input's distinct rows held elsewhere, estimated on ``rests`` of
    its hashes, is above chance for the holders' ``density`` (at its upper end): the share at
    the lower end of its estimate (two binomial standard errors below) less that chance. With
    ``never`` (no sampled value of the input or of its holders repeats: doubles, which other
    rows share only by a 64-bit collision) nothing is shared by chance, and a share estimated at
    half a fifth or more is read at the upper end of its estimate, so that a fifth or more is
    refused, not only a share well above it, while one well below stays read. A share half a
    fifth or more above chance and far more than chance could give (:func:`_beyond_chance`:
    doubles among which a few values tie, 0, 1 or a rounded score, that other rows share) is
    read at the upper end of its estimate too, less that chance: the few tied values then leave
    a fifth shared refused, as among doubles alone."""
    error = 2 * math.sqrt(share * (1 - share) / max(rests, 1))
    if never:
        return share + error if share >= SHARE / 2 else share
    chance = _chance(density)
    if share - chance >= SHARE / 2 and _beyond_chance(share, rests, chance):
        return share + error - chance
    return share - error - chance


def _beyond_chance(share: float, rests: int, chance: float) -> bool:
    """Whether ``share`` of ``rests`` hashes is more than ``chance`` of them could be by
    chance: the hashes shared, a count of mean ``rests * chance`` (at most, a Poisson one) when
    chance alone shares them, are more than that mean, four of its standard deviations and 4
    (a Poisson count that far above its mean is at most about 2e-5 likely, a binomial one
    less)."""
    expected = rests * chance
    return share * rests >= expected + 4 * math.sqrt(expected) + 4


def _by_one(hashes: Any, owners: Any, sketches: dict, keys: list[Any]) -> tuple | None:
    """(inner, [outer], share) for the pair of inputs of other keys where the share of one's
    distinct rows that the other holds is largest and at least ``SHARE``; looked for among the
    pairs whose sketches share at least ``_LEAST`` hashes (none, for inputs of other rows)."""
    _, start, count = np.unique(hashes, return_index=True, return_counts=True)
    pairs = []
    for m in np.unique(count[(count > 1) & (count <= CROWD)]).tolist():
        block = owners[start[count == m][:, None] + np.arange(m)]  # (hashes, holders)
        first, then = np.triu_indices(m, 1)
        pairs.append(block[:, first].ravel() * len(keys) + block[:, then].ravel())
    if not pairs:
        return None
    pair, shared = np.unique(np.concatenate(pairs), return_counts=True)
    best = None
    for code in pair[shared >= _LEAST].tolist():
        a, b = divmod(code, len(keys))
        if keys[a] == keys[b]:
            continue
        for inner, outer in ((a, b), (b, a)):
            share, rests = sketches[inner].containment(sketches[outer])
            holder = sketches[outer]
            never = not (holder.repeats.shape[0] or sketches[inner].repeats.shape[0])
            over = _over(share, rests, holder.density(upper=True), never)
            if over >= SHARE and rests >= RESTS and (best is None or over > best[3]):
                best = (inner, [outer], share, over)
    return None if best is None else best[:3]


def _by_several(hashes: Any, owners: Any, sketches: dict, keys: list[Any]) -> tuple | None:
    """(input, the others that hold any of its sketch's hashes, share) for the input where the
    share of its distinct rows that the inputs of other keys hold together is largest and at
    least ``SHARE``. The sketch of their union is the ``SOURCE_SAMPLE`` smallest of their
    hashes, read off the sorted hashes once for each key, and what they share by chance is
    read off its repeats (:func:`_union_density`)."""
    distinct, count = np.unique(hashes, return_counts=True)
    groups: dict[Any, list[int]] = {}
    for i in sketches:
        groups.setdefault(keys[i], []).append(i)
    unions: dict[Any, tuple[np.ndarray, float, bool]] = {}
    density = {i: s.density() for i, s in sketches.items()}
    every = sum(density.values())
    margin = {i: s.density(upper=True) - density[i] for i, s in sketches.items()}
    repeats = np.concatenate([np.zeros(0, np.uint64), *(s.repeats for s in sketches.values())])
    repeating = np.concatenate(
        [np.zeros(0, np.int64), *(np.full(s.repeats.shape[0], i) for i, s in sketches.items())]
    )
    best = None
    for a, sketch in sketches.items():
        alike = groups[keys[a]]
        if keys[a] not in unions:
            again = repeats[~np.isin(repeating, alike)]
            union = _union_of_others(hashes, owners, distinct, count, sketches, alike, again)
            added = every - sum(density[i] for i in alike)
            noise = max((m for i, m in margin.items() if keys[i] != keys[a]), default=0.0)
            chance = _union_density(union, added + noise)  # each one's noise is not added up
            unions[keys[a]] = union.sample, chance, not again.shape[0]
        sample, chance, never = unions[keys[a]]
        share, rests = sketch.containment(SourceSketch(0, 0, sample))
        over = _over(share, rests, chance, never and not sketch.repeats.shape[0])
        if over >= SHARE and rests >= RESTS and (best is None or over > best[3]):
            best = (a, alike, share, over)
    if best is None:
        return None
    a, alike, share, _ = best
    holders = owners[np.isin(hashes, sketches[a].sample) & ~np.isin(owners, alike)]
    return a, np.unique(holders).tolist(), share


def _union_density(union: SourceSketch, added: float) -> float:
    """The density of the values of several inputs together, at its upper end: the lesser of
    their union's (:meth:`~calibcli.summaries.fingerprint.SourceSketch.density` of its sketch,
    whose values repeat when one input holds them more than once or several inputs hold them)
    and ``added``, their densities added up. The sum is right for values drawn evenly from
    many likely ones (four decimals: the more inputs, the more of the same values), but counts
    again in each input the few values every input ties on (0, 1, a rounded score among
    doubles: thirty shards of a file, each repeating two or three of them, would add up to
    half their values shared by chance), which the union holds once, as the file does; the
    union's counts a row two of the inputs both hold as a value repeated, which the sum
    does not."""
    return min(union.density(upper=True), added)


def _union_of_others(
    hashes: Any,
    owners: Any,
    distinct: Any,
    count: Any,
    sketches: dict,
    alike: list[int],
    again: Any,
) -> SourceSketch:
    """The sketch (sample and repeats) of the union of the inputs not ``alike``, ``again``
    the hashes those repeat. They hold at most their sketches' hashes, so the union's smallest
    ``SOURCE_SAMPLE`` are among that many more of the smallest hashes of all (``distinct``,
    each held by ``count`` inputs); one repeats when more than one of them holds it, or one
    holds it more than once."""
    held = sum(sketches[i].sample.shape[0] for i in alike)
    reach = min(distinct.shape[0], SOURCE_SAMPLE + held)
    upto = int(np.searchsorted(hashes, distinct[reach - 1], side="right"))
    place = np.searchsorted(distinct[:reach], hashes[:upto])
    own = np.bincount(place[np.isin(owners[:upto], alike)], minlength=reach)
    theirs = count[:reach] - own
    sample = distinct[:reach][theirs > 0][:SOURCE_SAMPLE]
    repeated = np.union1d(distinct[:reach][theirs > 1], again)
    return SourceSketch(0, 0, sample, repeated[np.isin(repeated, sample)])
