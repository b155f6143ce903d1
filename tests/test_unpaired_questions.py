"""The unpaired bootstrap draws each side's questions whole when that side's rows repeat them
(an inspect-ai run's epochs, lm-eval re-runs pooled with --all-runs): side s of replicate r
numbers its C_s distinct labels in increasing order, draws ``integers(0, C_s, size=C_s)`` from
``default_rng(SeedSequence(seed, spawn_key=(r, s)))`` and counts every row of question q as
often as q was drawn; a side without labels draws its rows as before. The intervals are pinned
to a plain numpy loop of that recipe. ``compare --unpaired`` numbers a side's questions by the
rows they hold (their sorted (confidence, outcome) pairs), so that neither the ids' hashes nor
the files' order changes the draws; it no longer fails an upper-end gate closed on such rows:
it gates the interval drawn by question, and closes the gate on too few questions, counted as
calibrate counts them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from harness import run
from test_compare_unpaired_repeats import DOCUMENTS, DRAWN, GATE, checks, runs_folder
from test_epochs import epochs_log

import calibcli
from calibcli.metrics.paired import unpaired_bootstrap

KEYS = ("accuracy", "brier")


def weights(rng: np.random.Generator, n: int, labels: np.ndarray | None) -> np.ndarray:
    """How often each of n rows is drawn: by row, or (labels) each question's rows together."""
    if labels is None:
        return np.bincount(rng.integers(0, n, size=n), minlength=n)
    distinct, number = np.unique(labels, return_inverse=True)  # numbered by increasing label
    c = distinct.shape[0]
    return np.bincount(rng.integers(0, c, size=c), minlength=c)[number]


def reference(base, new, labels, *, samples, seed, level):
    """The documented recipe in a plain loop: each replicate's NEW − BASE of accuracy and of
    Brier's score (weighted means), and the percentile interval of each."""
    diffs = {key: [] for key in KEYS}
    for r in range(samples):
        values = []
        for s, ((conf, corr), asked) in enumerate(zip((base, new), labels, strict=True)):
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r, s)))
            w = weights(rng, conf.shape[0], asked)
            y = corr.astype(float)
            values.append(
                {
                    "accuracy": np.sum(w * y) / np.sum(w),
                    "brier": np.sum(w * (conf - y) ** 2) / w.sum(),
                }
            )
        for key in KEYS:
            diffs[key].append(values[1][key] - values[0][key])
    q = [(1 - level) / 2, (1 + level) / 2]
    return {key: tuple(np.quantile(np.array(d), q, method="linear")) for key, d in diffs.items()}


def by_rows(conf: np.ndarray, corr: np.ndarray, partition: np.ndarray) -> np.ndarray:
    """Each row's question numbered in increasing order of its rows' sorted (confidence,
    outcome) pairs, as compare numbers an unpaired side's questions (``partition``: any label
    naming each row's question)."""
    held: dict = {}
    for c, y, q in zip(conf.tolist(), corr.tolist(), partition.tolist(), strict=True):
        held.setdefault(q, []).append((c, y))
    number = {q: i for i, q in enumerate(sorted(held, key=lambda q: sorted(held[q])))}
    return np.array([number[q] for q in partition.tolist()])


def side(n_questions: int, seed: int):
    """A side of ``n_questions`` questions answered 1 to 4 times each, rows shuffled, labelled
    by large integers whose order is not the rows' order."""
    rng = np.random.default_rng(seed)
    repeats = rng.integers(1, 5, size=n_questions)
    names = rng.choice(2**62, size=n_questions, replace=False).astype(np.uint64)
    labels = np.repeat(names, repeats)
    conf = rng.uniform(0.05, 0.95, size=labels.shape[0])
    corr = rng.uniform(size=labels.shape[0]) < conf
    order = rng.permutation(labels.shape[0])
    return (conf[order], corr[order]), labels[order]


def plain(n: int, seed: int):
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.05, 0.95, size=n)
    return conf, rng.uniform(size=n) < conf


@pytest.mark.parametrize("clustered", [0, 1])
def test_a_side_s_questions_are_drawn_whole_as_the_recipe_says(clustered):
    rows, labels = side(23, seed=5)
    other = plain(57, seed=6)
    sides = [other, other]
    sides[clustered] = rows
    given = [None, None]
    given[clustered] = labels
    got = unpaired_bootstrap(
        *sides, clusters=tuple(given), samples=300, seed=11, level=0.9, keys=KEYS
    )
    want = reference(*sides, given, samples=300, seed=11, level=0.9)
    for key in KEYS:
        assert got.intervals[key] == pytest.approx(want[key], rel=1e-12, abs=1e-12), key
    assert (got.n_base, got.n_new) == (sides[0][0].shape[0], sides[1][0].shape[0])


def test_both_sides_clustered_and_workers_give_the_recipe():
    (b, b_labels), (n, n_labels) = side(31, seed=1), side(19, seed=2)
    want = reference(b, n, (b_labels, n_labels), samples=200, seed=3, level=0.95)
    for workers in (1, 2):
        got = unpaired_bootstrap(
            b, n, clusters=(b_labels, n_labels), samples=200, seed=3, keys=KEYS, workers=workers
        )
        for key in KEYS:
            assert got.intervals[key] == pytest.approx(want[key], rel=1e-12, abs=1e-12), key


def test_distinct_labels_draw_the_rows_as_without_labels():
    base, new = plain(40, seed=8), plain(33, seed=9)
    plain_result = unpaired_bootstrap(base, new, samples=200, seed=4)
    distinct = (np.arange(40, dtype=np.uint64)[::-1] * 7, np.arange(33))
    for clusters in ((None, None), distinct, (distinct[0], None), (None, distinct[1])):
        assert unpaired_bootstrap(base, new, clusters=clusters, samples=200, seed=4) == (
            plain_result
        )


def test_clusters_are_checked():
    base, new = plain(10, seed=1), plain(12, seed=2)
    with pytest.raises(ValueError, match=r"clusters\[1\] hold 10 labels, not 12"):
        unpaired_bootstrap(base, new, clusters=(None, np.arange(10)), samples=10)
    with pytest.raises(ValueError, match="must be a pair"):
        unpaired_bootstrap(base, new, clusters=(np.arange(10),), samples=10)
    with pytest.raises(ValueError, match="must be integers"):
        unpaired_bootstrap(base, new, clusters=(np.linspace(0, 1, 10), None), samples=10)


def compare(args: list, code: int) -> dict:
    result = run(["compare", *args, "--unpaired", "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def test_an_upper_gate_on_pooled_re_runs_reads_the_interval_drawn_by_question(tmp_path):
    base, new = runs_folder(tmp_path, "base", 3), runs_folder(tmp_path, "new", 2)
    body = compare([base, new, "--all-runs", *GATE], 0)
    assert (body["n_base"], body["n_new"]) == (3 * DOCUMENTS, 2 * DOCUMENTS)
    said = [w for w in body["warnings"] if w.startswith("lm-eval re-runs")]
    assert len(said) == 2 and all(w.endswith(DRAWN) for w in said)
    # the interval is the recipe's, each side's 40 documents drawn whole, numbered by their rows
    rows = [calibcli.read_predictions(str(f), all_runs=True) for f in (base, new)]
    sides = [(p.confidence, p.correct) for p in rows]
    assert [np.unique(p.questions).shape[0] for p in rows] == [DOCUMENTS, DOCUMENTS]
    labels = [by_rows(p.confidence, p.correct, p.questions) for p in rows]
    want = reference(*sides, labels, samples=200, seed=0, level=0.95)
    for key in KEYS:
        got = body["figures"][key]["interval"]
        assert got == pytest.approx(want[key], rel=1e-12, abs=1e-12), key
    brier = checks(body)["brier_increase"]
    assert brier["passed"] and "reason" not in brier
    assert brier["value"] == body["figures"]["brier"]["interval"][1]
    # the same answers on both sides: a margin of 0 fails on the upper end (the recipe's is > 0)
    assert want["brier"][1] > 0
    strict = ["--max-increase", "brier=0", "--gate-on", "upper", "--bootstrap", "200"]
    failed = checks(compare([base, new, "--all-runs", *strict], 1))["brier_increase"]
    assert not failed["passed"] and "reason" not in failed
    assert failed["value"] == pytest.approx(want["brier"][1], rel=1e-12)


def test_an_upper_gate_fails_closed_on_too_few_questions_of_an_inspect_run(tmp_path):
    # 20 samples of 3 epochs: 60 rows, but the bootstrap draws 20 questions (fewer than 30)
    base = epochs_log(tmp_path, "base.json", epochs=3)
    new = epochs_log(tmp_path, "new.json", flip=(1, 2), epochs=3)
    body = compare([base, new, "--scorer", "match", *GATE], 1)
    reason = checks(body)["brier_increase"]["reason"]
    assert reason == (
        "only 20 questions (the bootstrap draws each with all its rows): the upper end of a "
        "bootstrap interval needs at least 30 to show how brier varies"
    )
    # 2 copies of each sample, 40 questions of 3 epochs: the gate reads the interval
    base = epochs_log(tmp_path, "base40.json", epochs=3, copies=2)
    new = epochs_log(tmp_path, "new40.json", flip=(1, 2), epochs=3, copies=2)
    passed = checks(compare([base, new, "--scorer", "match", *GATE], 0))["brier_increase"]
    assert passed["passed"] and "reason" not in passed


def test_the_intervals_do_not_depend_on_the_order_of_the_samples(tmp_path):
    # the same runs with their samples in another order: the questions are drawn alike
    base = epochs_log(tmp_path, "base.json", epochs=3, copies=2)
    new = epochs_log(tmp_path, "new.json", flip=(1, 2), epochs=3, copies=2)
    log = json.loads(new.read_text())
    log["samples"] = log["samples"][::-1]
    shuffled = tmp_path / "other" / "new.json"
    shuffled.parent.mkdir()
    shuffled.write_text(json.dumps(log))
    first, second = (compare([base, f, "--scorer", "match"], 0) for f in (new, shuffled))
    assert first["figures"] == second["figures"]


def test_compare_numbers_a_side_s_questions_by_their_rows():
    from calibcli.reports.compare_sides import numbered_by_rows

    conf = np.array([0.5, 0.2, 0.5, 0.9, 0.1, 0.2, 0.2, 0.2])
    corr = np.array([True, False, True, False, True, False, False, False])
    labels = np.array([7, 7, 3, 3, 9, 5, 8, 8], dtype=np.uint64)
    # by their sorted rows: 9 [(0.1, T)], 5 [(0.2, F)] (a prefix of 8's), 8 [(0.2, F) twice],
    # 7 [(0.2, F), (0.5, T)], 3 [(0.5, T), (0.9, F)]
    assert numbered_by_rows(conf, corr, labels).tolist() == [3, 3, 4, 4, 0, 1, 2, 2]
    # questions holding the same rows keep their labels' order; distinct labels: none
    same = numbered_by_rows(np.full(4, 0.3), np.zeros(4, bool), np.array([9, 9, 2, 2]))
    assert same.tolist() == [1, 1, 0, 0]
    assert numbered_by_rows(conf, corr, np.arange(8)) is None
