"""Questions asked several times: the rows of one question are resampled whole.

An inspect-ai run with several epochs answers each question once per epoch, one row each. Those
rows are not independent answers, so a bootstrap drawing rows one by one gives intervals too
narrow; the cluster bootstrap draws questions instead. A question is named by an integer label
per row; the C distinct labels are numbered in increasing order, and replicate r draws
``integers(0, C, size=C)`` from its generator (see :mod:`calibcli.metrics.bootstrap` and
:mod:`calibcli.metrics.paired`), every row counting as often as its question was drawn. When
every label is distinct the rows are drawn one by one, exactly as without labels.
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
    right: object, wrong: object, *, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """One row of each question, drawn at random: boolean masks over the ``right`` rows' and
    the ``wrong`` rows' labels (their rows as given) keeping exactly one row per distinct label.

    Each row gets a uniform draw from ``numpy.random.default_rng(seed)``, the wrong rows' first
    and then the right rows', and each question keeps its row with the smallest draw (ties, of
    probability zero, go to the earlier row). Since the draws ignore which rows are right, the
    row kept is a uniformly random one of its question's rows whatever their answers: for
    answers whose order is exchangeable (a run's epochs), one answer to that question, and the
    kept rows are independent across questions, as a single answer per question would be."""
    r = as_vector(right, "right clusters")
    w = as_vector(wrong, "wrong clusters")
    numbers, _ = cluster_numbers(np.concatenate([w, r]))
    draws = np.random.default_rng(seed).random(numbers.shape[0])
    order = np.lexsort((draws, numbers))  # by question, then by draw
    first = np.ones(order.shape[0], bool)
    first[1:] = numbers[order[1:]] != numbers[order[:-1]]
    keep = np.zeros(numbers.shape[0], bool)
    keep[order[first]] = True
    return keep[w.shape[0] :], keep[: w.shape[0]]


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
