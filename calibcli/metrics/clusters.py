"""Questions asked several times: the rows of one question are resampled whole.

An inspect-ai run with several epochs answers each question once per epoch, one row each. Those
rows are not independent answers, so a bootstrap drawing rows one by one gives intervals too
narrow; the cluster bootstrap draws questions instead. A question is named by an integer label
per row; the C distinct labels are numbered in increasing order, and replicate r draws
``integers(0, C, size=C)`` from its generator (see :mod:`calibcli.metrics.bootstrap` and
:mod:`calibcli.metrics.paired`), every row counting as often as its question was drawn. When
every label is distinct the rows are drawn one by one, exactly as without labels.

:func:`one_per_question` keeps one answer of each question instead (what a test needing
independent answers reads), drawn by a hash of the question's key, whatever the rows' order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibcli.metrics.bootstrap import ReplicateEngine
from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.validation import as_vector

__all__ = [
    "QuestionCounts",
    "cluster_numbers",
    "clustered_engine",
    "one_per_question",
    "question_counts",
]


def cluster_numbers(labels: object, name: str = "clusters") -> tuple[np.ndarray, int]:
    """Each row's question numbered 0..C-1 in increasing label order, and C."""
    arr = as_vector(labels, name)
    if arr.size and (arr.dtype == bool or arr.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    distinct, numbers = np.unique(arr, return_inverse=True)
    index = np.int32 if distinct.shape[0] < 2**31 else np.intp
    return numbers.reshape(-1).astype(index, copy=False), int(distinct.shape[0])


@dataclass(frozen=True)
class QuestionCounts:
    """The distinct questions some labelled rows answer: all of them, those with at least one
    right answer among their rows, and those with at least one wrong answer (a question
    answered both ways counts in both)."""

    questions: int
    right: int
    wrong: int


def question_counts(right: object, wrong: object) -> QuestionCounts:
    """How many distinct questions the ``right`` rows' labels and the ``wrong`` rows' labels
    name: what a bootstrap drawing whole questions can vary."""
    r = np.unique(as_vector(right, "right clusters"))
    w = np.unique(as_vector(wrong, "wrong clusters"))
    # an empty side's dtype (int64) would promote 64-bit keys to float in the union
    both = np.union1d(r, w).shape[0] if r.size and w.size else r.shape[0] + w.shape[0]
    return QuestionCounts(int(both), int(r.shape[0]), int(w.shape[0]))


def one_per_question(
    right: object,
    wrong: object,
    *,
    seed: int = 0,
    columns: PredictionColumns | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One answer of each question, drawn at random: boolean masks over the ``right`` rows' and
    the ``wrong`` rows' question keys (64-bit integers, the rows as given) keeping exactly one
    row per distinct key.

    The draw depends on the rows as a multiset and on ``seed``, never on their order: a question
    of k rows lists them wrong answers first, then right ones, each by increasing confidence
    (``columns``: the rows' confidences, aligned with ``right`` and ``wrong``; without them a
    question's answers of one outcome are alike), and keeps row number ``h mod k`` of that list,
    where, on unsigned 64-bit integers (``mix``: splitmix64's finaliser, as the Poisson weights
    of :mod:`calibcli.metrics.poisson` hash their keys; the constant spells ``one-perq``)::

        h = mix(key ^ mix(seed ^ 0x6F6E652D70657271))

    Rows alike in key, outcome and confidence are interchangeable: which of them is marked does
    not change the answers kept. Each of a question's rows is kept with probability 1/k (to
    within k/2**64) whatever its answer, and distinct keys give unrelated draws: for answers
    whose order is exchangeable (a run's epochs), the kept rows are one answer to each question,
    independent across questions, as a single answer per question would be."""
    r = _question_keys(right, "right clusters")
    w = _question_keys(wrong, "wrong clusters")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    keys = np.concatenate([w, r])
    n = keys.shape[0]
    if columns is None:
        conf = np.zeros(n)
    elif (columns.conf_correct.shape[0], columns.conf_wrong.shape[0]) != (r.shape[0], w.shape[0]):
        raise ValueError(
            f"columns hold {columns.conf_correct.shape[0]} right and {columns.conf_wrong.shape[0]} "
            f"wrong rows, not {r.shape[0]} and {w.shape[0]}"
        )
    else:
        conf = np.concatenate([columns.conf_wrong, columns.conf_correct])
    keep = np.zeros(n, bool)
    if n:
        order = np.lexsort((conf, np.arange(n) >= w.shape[0], keys))  # key, outcome, confidence
        listed = keys[order]
        start = np.flatnonzero(np.r_[True, listed[1:] != listed[:-1]])
        sizes = np.diff(np.r_[start, n]).astype(np.uint64)
        salt = _mix(np.array([seed], np.uint64) ^ _ONE_ANSWER)
        keep[order[start + (_mix(listed[start] ^ salt) % sizes).astype(np.intp)]] = True
    return keep[w.shape[0] :], keep[: w.shape[0]]


_ONE_ANSWER = np.uint64(0x6F6E652D70657271)
_MIX = (
    (np.uint64(30), np.uint64(0xBF58476D1CE4E5B9)),
    (np.uint64(27), np.uint64(0x94D049BB133111EB)),
)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array (wrapping arithmetic)."""
    for shift, multiplier in _MIX:
        z = (z ^ (z >> shift)) * multiplier
    return z ^ (z >> np.uint64(31))


def _question_keys(values: object, name: str) -> np.ndarray:
    """Question keys as uint64 (signed ones by their bits)."""
    arr = as_vector(values, name)
    if not arr.size:
        return np.zeros(0, np.uint64)
    if arr.dtype == bool or arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    wide = np.int64 if arr.dtype.kind == "i" else np.uint64
    return arr.astype(wide, copy=False).view(np.uint64)


def clustered_engine(
    columns: PredictionColumns,
    edges: np.ndarray,
    wanted: frozenset[str] | None,
    clusters: tuple[object, object] | None,
) -> ReplicateEngine:
    """The replicate engine of ``columns``, drawing whole questions when ``clusters`` (right
    labels, wrong labels, aligned with ``conf_correct`` and ``conf_wrong``) names some question
    more than once."""
    if clusters is None:
        return ReplicateEngine(columns, edges, wanted)
    right, wrong = clusters
    n_right, n_wrong = columns.conf_correct.shape[0], columns.conf_wrong.shape[0]
    for name, labels, n in (("right", right, n_right), ("wrong", wrong, n_wrong)):
        got = as_vector(labels, f"{name} clusters").shape[0]
        if got != n:
            raise ValueError(f"{name} clusters hold {got} labels, not {n}")
    numbers, count = cluster_numbers(np.concatenate([np.asarray(wrong), np.asarray(right)]))
    if count == columns.n:  # every question once: the rows are drawn one by one
        return ReplicateEngine(columns, edges, wanted)
    # the engine's layout (each class sorted by confidence), with each row's question
    order = [np.argsort(c, kind="stable") for c in (columns.conf_wrong, columns.conf_correct)]
    conf = np.concatenate([columns.conf_wrong[order[0]], columns.conf_correct[order[1]]])
    engine = ReplicateEngine.from_layout(conf, n_wrong, edges, wanted)
    engine.cluster_of = np.concatenate([numbers[:n_wrong][order[0]], numbers[n_wrong:][order[1]]])
    engine.clusters = count
    return engine
