"""lm-eval samples rows decoded a block at a time into typed structs, and turned into columns.

The structs hold only the fields the row functions of :mod:`calibcli.formats.lm_eval` read, with
types strict enough that a row those functions would treat in any special way (a field
missing, a response that is not a ``[loglikelihood, is_greedy]`` pair, generation settings,
``acc_mutual_info``, a rolling field in a multiple-choice row, a count given as text) fails to
decode. The column functions compute each row's values as those functions do (the same float
operations in the same order, so every bit agrees) and return None for a block holding a row
they would refuse or treat otherwise. Either way the caller then reads the block through the
row functions, which word the error or give the row its special treatment: the typed path only
ever takes rows whose values it computes exactly.
"""

from __future__ import annotations

import math
from functools import cache
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any

from calibcli.formats.lm_eval import _LOGGED_FLOAT, _MC_CORRECT_FIELD, _ROLLING_FIELDS

_FIRST = itemgetter(0)
_LL = attrgetter("ll")
_RESPS = attrgetter("resps")
_ROLLING_PAIRS = (attrgetter("p0"), attrgetter("p1"), attrgetter("p2"))


def _choice_row(name: str, mc_norm: str, responses: Any, correct: Any) -> Any:
    """The struct of a multiple-choice row read with ``mc_norm``, its ``filtered_resps`` of
    type ``responses`` and its correctness field of type ``correct``."""
    import msgspec

    absent = (msgspec.UnsetType, msgspec.UNSET)
    request = msgspec.defstruct(
        "Request", [("arg_1", str | None, None)], rename={"arg_1": "arg_1"}, gc=False
    )
    # without length normalisation only the first request's settings matter: the others'
    # texts are skipped, not decoded
    requests: Any = dict[str, request]
    if mc_norm == "none":
        requests = msgspec.defstruct(
            "Requests", [("first", request | None, None)], rename={"first": "gen_args_0"}, gc=False
        )
    fields = [
        ("doc_id", Any),
        ("resps", responses),
        ("correct", correct),
        ("args", requests | None, None),
        ("mutual", *absent),
        *((f"rolling{i}", *absent) for i in range(len(_ROLLING_FIELDS))),
    ]
    rename = {
        "resps": "filtered_resps",
        "correct": _MC_CORRECT_FIELD[mc_norm],
        "args": "arguments",
        "mutual": "acc_mutual_info",
        **{f"rolling{i}": name for i, name in enumerate(_ROLLING_FIELDS)},
    }
    return msgspec.defstruct(name, fields, rename=rename, gc=False)


@cache
def choice_decoder(mc_norm: str) -> Any:
    """A msgspec decoder of multiple-choice rows into a struct of the fields read with
    ``mc_norm``: ``doc_id`` (the row's id), ``filtered_resps``, ``arguments`` (the
    continuations, whose lengths normalise, or with ``"none"`` the first request alone; a
    request holding generation settings, an object, fails) and
    the correctness field (``acc``, ``acc_norm`` or ``acc_bytes``). ``acc_mutual_info`` and the
    rolling fields must be absent."""
    from typing import Literal

    import msgspec

    pair = tuple[str | float, Literal["True", "False"] | bool]
    return msgspec.json.Decoder(_choice_row("ChoiceRow", mc_norm, list[pair], bool | float))


@cache
def choice_number_decoder(mc_norm: str) -> Any:
    """A msgspec decoder of the rows :func:`choice_decoder` takes that reads each
    ``filtered_resps`` loglikelihood as a float, whether logged as a number or as a string, so
    that no string is built for it (msgspec's lax mode); the ``is_greedy`` flag must be the
    string ``"True"`` or ``"False"``.

    Lax mode reads other strings as numbers or booleans too (``"1"`` as a boolean), so the
    correctness field is decoded as it is (``Any``, checked by
    :func:`choice_number_columns`) and no other field's type takes a string for another type.
    It reads a string holding a JSON number as float() reads it (correctly rounded), refuses
    some that float() reads ("-1.7976931348623159e308", out of range) and takes some that the
    row function refuses ("NaN", "-Infinity"): the columns take only finite values, so a block
    holding any other is left to :func:`choice_decoder`."""
    from typing import Literal

    import msgspec

    response = msgspec.defstruct(
        "Response",
        [("ll", float), ("greedy", Literal["True", "False"])],
        array_like=True,
        gc=False,
    )
    row = _choice_row("ChoiceNumberRow", mc_norm, list[response], Any)
    return msgspec.json.Decoder(row, strict=False)


@cache
def rolling_decoder() -> Any:
    """A msgspec decoder of loglikelihood_rolling rows: ``doc_id`` and the three
    ``[loglikelihood, count]`` pairs, each absent or a JSON number and a JSON integer."""
    import msgspec

    pair = tuple[float, int] | msgspec.UnsetType
    fields = [("doc_id", Any), *((f"p{i}", pair, msgspec.UNSET) for i in range(3))]
    rename = {f"p{i}": name for i, name in enumerate(_ROLLING_FIELDS)}
    row = msgspec.defstruct("RollingRow", fields, rename=rename, gc=False)
    return msgspec.json.Decoder(row)


# Within these bytes, a text float() reads is one lm-eval writes (``_LOGGED_FLOAT``) unless it
# opens with "+", ".", "-." or a 0 followed by a digit, or has a "." with no digit after it.
_PLAIN = b"0123456789.e+-\n"


def _plain_as_logged(data: bytes) -> bool:
    """Whether texts of ``_PLAIN`` bytes that float() reads, each after a newline and the last
    followed by one, are all written as lm-eval writes a number (see ``_PLAIN``)."""
    import numpy as np

    arr = np.frombuffer(data, np.uint8)
    starts = np.flatnonzero(arr == 10)[:-1] + 1
    first = arr[starts]
    at = starts + (first == 45)  # the integer part, after a "-"
    lead, after = arr[at], arr[at + 1]
    if ((first == 43) | (lead == 46) | ((lead == 48) & (after >= 48) & (after <= 57))).any():
        return False
    behind = arr[np.flatnonzero(arr == 46) + 1]
    return not ((behind < 48) | (behind > 57)).any()


def _loglikelihoods(values: list) -> Any:
    """The loglikelihoods as floats, or None when one is not what
    :func:`~calibcli.formats.lm_eval._loglikelihood` takes unchanged (text not written as lm-eval
    writes a number, NaN, +inf or a positive value)."""
    import numpy as np

    try:
        floats = list(map(float, values))
    except ValueError:
        return None
    if not _as_logged(values):
        return None
    x = np.array(floats, np.float64)
    if np.isnan(x).any() or (x > 0).any():  # +inf is > 0 too
        return None
    return x


def _as_logged(values: list) -> bool:
    """Whether every text among ``values`` (all read by float()) is written as lm-eval writes
    a number: checked on the block's texts at once where they hold only digits, ".", "e", "+"
    and "-", else one by one."""
    if set(map(type, values)) == {str}:
        try:
            data = ("\n" + "\n".join(values) + "\n").encode("ascii")
        except UnicodeEncodeError:
            return False  # float() reads no non-ASCII text lm-eval writes
        if data.count(b"\n") == len(values) + 1 and not data.translate(None, _PLAIN):
            return _plain_as_logged(data)
    return all(type(v) is not str or _LOGGED_FLOAT.match(v) for v in values)


def _softmax_max(table: Any) -> Any:
    """Per row of a table of scores (-inf where a row has fewer), max_i exp(s_i) / sum_j
    exp(s_j) = 1 / sum_j exp(s_j - max s), bit for bit as
    :func:`~calibcli.formats.lm_eval._max_softmax` computes it: libm's exp (numpy's may differ in
    the last bit) and the exactly rounded sum of math.fsum, found without it for the rows where
    an error-free summation shows the rounded sum, with it for the others."""
    import numpy as np

    m, width = table.shape
    top = table.max(axis=1)
    shifted = (table - top[:, None]).ravel().tolist()
    exps = np.fromiter(map(math.exp, shifted), np.float64, len(shifted)).reshape(m, width)
    total = exps[:, 0].copy()
    error = np.zeros(m)
    bound = np.zeros(m)
    for j in range(1, width):
        # TwoSum: total + e == old total + exps[:, j] exactly
        term = exps[:, j]
        new = total + term
        back = new - total
        e = (total - (new - back)) + (term - back)
        total = new
        error += e
        bound += np.abs(e)
    # the exact sum is total + error + the rounding of error's own sum, which is under
    # width * u * bound (u = 2**-53; a margin of 8 times that): where that sum is nearer to
    # `rounded` than half the smaller spacing around it, `rounded` is the exactly rounded sum
    rounded = total + error
    back = rounded - total
    rest = (total - (rounded - back)) + (error - back)
    below = rounded - np.nextafter(rounded, 0.0)
    sure = np.abs(rest) + bound * (width * 2.0**-50) < below * 0.4999
    if not sure.all():
        unsure = np.flatnonzero(~sure)
        rounded[unsure] = list(map(math.fsum, exps[unsure].tolist()))
    return 1.0 / rounded


def choice_columns(rows: list, mc_norm: str, target_delimiter: str = " ") -> tuple | None:
    """(confidence, correct) columns of multiple-choice rows decoded by
    :func:`choice_decoder`, as :func:`~calibcli.formats.lm_eval.lm_eval_choice_row` computes
    each row's; None when a row needs the row function (see the module docstring)."""
    import numpy as np

    m = len(rows)
    resps = list(map(_RESPS, rows))
    counts = np.fromiter(map(len, resps), np.int64, m)
    if m and counts.min() < 2:
        return None
    scores = _loglikelihoods(list(map(_FIRST, chain.from_iterable(resps))))
    if scores is None:
        return None
    correct = np.fromiter([r.correct for r in rows], np.float64, m)
    return _confidences(rows, counts, scores, correct, mc_norm, target_delimiter)


def choice_number_columns(rows: list, mc_norm: str, target_delimiter: str = " ") -> tuple | None:
    """(confidence, correct) columns of multiple-choice rows decoded by
    :func:`choice_number_decoder`, as :func:`choice_columns` gives them; None for a block
    holding a loglikelihood that is not finite or is positive, or a correctness value that is
    not a JSON number or boolean (a string that lax mode could have read as a number is kept
    as a string, and refused here)."""
    import numpy as np

    m = len(rows)
    resps = list(map(_RESPS, rows))
    counts = np.fromiter(map(len, resps), np.int64, m)
    if not m or counts.min() < 2:
        return None
    scores = np.fromiter(map(_LL, chain.from_iterable(resps)), np.float64, int(counts.sum()))
    # NaN fails both tests. A zero's sign, which lax mode does not keep for "-0", changes no
    # confidence: it only ever reaches exp(s - max s) as exp(±0) = 1
    if not ((scores <= 0) & (scores > -math.inf)).all():
        return None
    flags = [r.correct for r in rows]
    if not set(map(type, flags)) <= _FLAG_TYPES:
        return None
    correct = np.array(flags, np.float64)
    return _confidences(rows, counts, scores, correct, mc_norm, target_delimiter)


# the types of the correctness values _row_flag takes as numbers (bool, 0, 1, 0.0, 1.0)
_FLAG_TYPES = {bool, int, float}


def _confidences(
    rows: list, counts: Any, scores: Any, correct: Any, mc_norm: str, target_delimiter: str
) -> tuple | None:
    """The confidence and correct columns from each row's choice count, the flat
    loglikelihoods and the correctness values (None for a row the row function words)."""
    import numpy as np

    m = len(rows)
    if mc_norm != "none":
        lengths = _lengths(rows, counts.tolist(), mc_norm, target_delimiter)
        if lengths is None:
            return None
        scores = scores / lengths
    if not np.all((correct == 0) | (correct == 1)):
        return None
    width = int(counts.max()) if m else 0
    if m and counts.min() == width:
        table = scores.reshape(m, width)  # every row has as many choices: no -inf padding
    else:
        table = np.full((m, width), -np.inf)
        starts = np.cumsum(counts) - counts
        at = np.arange(scores.shape[0]) - np.repeat(starts, counts)
        table[np.repeat(np.arange(m), counts), at] = scores
    if m and table.max(axis=1).min() == -math.inf:
        return None  # every choice -inf: the row function words it
    return _softmax_max(table), correct.astype(np.bool_)


def _lengths(rows: list, counts: list[int], mc_norm: str, delimiter: str) -> Any:
    """Each choice's length in characters or UTF-8 bytes, as
    :func:`~calibcli.formats.lm_eval._choice_lengths` counts it, flat; None for a row it would
    refuse or read otherwise (requests not named gen_args_0, 1, ... in order, a continuation
    missing, all continuations alike, an empty choice)."""
    import numpy as np

    out: list[int] = []
    names = [f"gen_args_{i}" for i in range(max(counts, default=0))]
    encode = mc_norm == "bytes"
    for row, n in zip(rows, counts, strict=True):
        args = row.args
        if args is None or len(args) < n:
            return None
        keys = list(args)
        if keys != names[: len(keys)]:
            return None
        conts = [args[k].arg_1 for k in keys[:n]]
        if None in conts or len(set(conts)) == 1:
            return None
        if delimiter and all(c.startswith(delimiter) for c in conts):
            conts = [c[len(delimiter) :] for c in conts]
        lengths = [len(c.encode("utf-8")) for c in conts] if encode else list(map(len, conts))
        if 0 in lengths:
            return None
        out.extend(lengths)
    return np.asarray(out, np.float64)


def rolling_columns(rows: list) -> tuple | None:
    """The perplexity columns (nll, tokens, bytes, words, and three zero columns) of decoded
    loglikelihood_rolling rows, as :func:`~calibcli.formats.lm_eval.lm_eval_rolling_row` and
    the perplexity row spec make them (-1 for a count not logged); None when a row needs the
    row function."""
    import numpy as np

    m = len(rows)
    if m == 0:
        return None
    unset = _unset()
    cols, lls, counts = [], [], []
    for i, field in enumerate(_ROLLING_PAIRS):
        pairs = list(map(field, rows))
        absent = pairs.count(unset)
        if absent == m:
            continue
        if absent:
            return None  # a pattern that changes: the row function and the builder word it
        # each pair's loglikelihood and count side by side, the counts as floats: exact below
        # 2**53, and any count from 2**53 up stays at or above it, so it is refused below
        try:
            both = np.fromiter(chain.from_iterable(pairs), np.float64, 2 * m).reshape(m, 2)
        except OverflowError:
            return None
        cols.append(i)
        lls.append(both[:, 0])
        counts.append(both[:, 1])
    if not cols:
        return None
    ll = lls[0]
    if np.isnan(ll).any() or (ll > 0).any():
        return None
    if any(not np.array_equal(other, ll) for other in lls[1:]):
        return None
    for values in counts:
        if not ((values >= 0) & (values < 2.0**53)).all():
            return None
    by_field = dict(zip(cols, counts, strict=True))
    if 1 in by_field and 2 in by_field and not np.array_equal(by_field[1], by_field[2]):
        return None
    minus = np.full(m, -1, np.int64)
    words = by_field[0].astype(np.int64) if 0 in by_field else minus
    nbytes_counts = by_field.get(1, by_field.get(2))
    nbytes = minus if nbytes_counts is None else nbytes_counts.astype(np.int64)
    nll = np.where(ll == 0, 0.0, -ll)
    zeros = np.zeros(m, np.int64)
    return nll, minus.copy(), nbytes, words, zeros, zeros.copy(), zeros.copy()


def _unset() -> Any:
    import msgspec

    return msgspec.UNSET
