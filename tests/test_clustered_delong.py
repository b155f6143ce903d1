"""DeLong's test on rows that repeat their questions: Obuchowski's (1997) covariance for
clustered ROC data, checked against the formulas written out as loops over the pairs of rows,
against DeLong's test where each cluster holds one row, and, on the command line, against the
one-epoch run whose answers the epochs copy."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from harness import run
from test_epochs import epochs_log, report_of

from calibcli.metrics import delong_clustered, delong_test


def psi(x, y):
    return 1.0 if x > y else 0.5 if x == y else 0.0


def obuchowski(base, new, correct, clusters):
    """The standard error and p-value of AUROC_NEW − AUROC_BASE, as the paper's formulas read:
    a loop over every pair of a right and a wrong answer, then over the clusters."""
    rows = list(zip(base, new, correct, clusters, strict=True))
    pos = [r for r in rows if r[2]]
    neg = [r for r in rows if not r[2]]
    big_m, big_n = len(pos), len(neg)
    names = sorted(set(clusters))
    i_all = len(names)
    i10 = len({r[3] for r in pos})
    i01 = len({r[3] for r in neg})
    theta, comps = [], []
    for s in (0, 1):
        theta.append(sum(psi(x[s], y[s]) for x in pos for y in neg) / (big_m * big_n))
        x_of = {c: 0.0 for c in names}
        y_of = {c: 0.0 for c in names}
        for x in pos:
            x_of[x[3]] += sum(psi(x[s], y[s]) for y in neg) / big_n
        for y in neg:
            y_of[y[3]] += sum(psi(x[s], y[s]) for x in pos) / big_m
        m_of = {c: sum(1 for r in pos if r[3] == c) for c in names}
        n_of = {c: sum(1 for r in neg if r[3] == c) for c in names}
        comps.append(
            (
                {c: x_of[c] - m_of[c] * theta[s] for c in names},
                {c: y_of[c] - n_of[c] * theta[s] for c in names},
            )
        )

    def cov(a, b):
        (xa, ya), (xb, yb) = comps[a], comps[b]
        s10 = i10 / ((i10 - 1) * big_m) * sum(xa[c] * xb[c] for c in names)
        s01 = i01 / ((i01 - 1) * big_n) * sum(ya[c] * yb[c] for c in names)
        s11_ab = i_all / (i_all - 1) * sum(xa[c] * yb[c] for c in names)
        s11_ba = i_all / (i_all - 1) * sum(xb[c] * ya[c] for c in names)
        return s10 / big_m + s01 / big_n + (s11_ab + s11_ba) / (big_m * big_n)

    se = math.sqrt(cov(0, 0) + cov(1, 1) - 2 * cov(0, 1))
    z = (theta[1] - theta[0]) / se
    return se, math.erfc(abs(z) / math.sqrt(2))


def clustered_rows(seed, clusters=25):
    """Clusters of 1 to 4 rows, a question's rows sharing a difficulty, some tied scores."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, size=clusters)
    labels = np.repeat(np.arange(clusters) * 7 + 3, sizes)  # labels need not be 0..C-1
    hard = np.repeat(rng.random(clusters), sizes)
    correct = rng.random(labels.shape[0]) < 1 - 0.7 * hard
    base = np.round(np.clip(1 - hard + rng.normal(0, 0.2, labels.shape[0]), 0, 1), 2)
    new = np.round(np.clip(base + rng.normal(0, 0.15, labels.shape[0]), 0, 1), 2)
    return base, new, correct, labels


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_covariance_is_obuchowski_s(seed):
    base, new, correct, labels = clustered_rows(seed)
    got = delong_clustered(base, new, correct, labels)
    se, p = obuchowski(base.tolist(), new.tolist(), correct.tolist(), labels.tolist())
    assert got.standard_error == pytest.approx(se, rel=1e-12)
    assert got.p_value == pytest.approx(p, rel=1e-10)
    assert got.questions == 25


def test_one_row_per_cluster_is_delong_s_test():
    base, new, correct, _ = clustered_rows(4, clusters=60)
    one = delong_test(base, new, correct)
    got = delong_clustered(base, new, correct, np.arange(base.shape[0]))
    assert got.standard_error == pytest.approx(one.standard_error, rel=1e-12)
    assert got.p_value == pytest.approx(one.p_value, rel=1e-12)
    assert got.difference == one.difference


def test_copies_of_each_row_give_the_test_of_one_copy():
    base, new, correct, _ = clustered_rows(5, clusters=60)
    one = delong_test(base, new, correct)
    k = 3
    labels = np.repeat(np.arange(base.shape[0]), k)
    got = delong_clustered(np.repeat(base, k), np.repeat(new, k), np.repeat(correct, k), labels)
    assert got.standard_error == pytest.approx(one.standard_error, rel=1e-12)
    assert got.p_value == pytest.approx(one.p_value, rel=1e-12)


def test_too_few_questions_of_a_class_are_refused():
    correct = np.array([True, True, False, False])
    with pytest.raises(ValueError, match="2 questions with a right answer"):
        delong_clustered([0.9, 0.8, 0.2, 0.3], [0.7, 0.6, 0.4, 0.1], correct, [1, 1, 2, 3])


def other_confidences(path, name):
    """The log with each answer's token logprobs scaled by a factor that depends on its sample:
    a second model giving the same answers with other confidences."""
    data = json.loads(path.read_text())
    for sample in data["samples"]:
        factor = 1 + (sample["id"] % 5) / 2
        for token in sample["output"]["choices"][0]["logprobs"]["content"]:
            token["logprob"] *= factor
    out = path.with_name(name)
    out.write_text(json.dumps(data))
    return out


def test_compare_of_epochs_reads_obuchowski_s_test(tmp_path):
    args = ["--scorer", "match", "--bootstrap", "200", "--json"]
    once = epochs_log(tmp_path, "once.json", copies=2, epochs=1)
    twice = epochs_log(tmp_path, "twice.json", copies=2)
    single = report_of(run(["compare", once, other_confidences(once, "once_new.json"), *args]))
    result = run(["compare", twice, other_confidences(twice, "twice_new.json"), *args])
    report = report_of(result)
    test, expected = report["auroc_test"], single["auroc_test"]
    assert test["clustered"] == {"test": "obuchowski", "questions": 40}
    assert "clustered" not in expected
    assert test["p_value"] == pytest.approx(expected["p_value"], rel=1e-9)
    assert test["standard_error"] == pytest.approx(expected["standard_error"], rel=1e-9)
    assert test["difference"] == expected["difference"] != 0
    shown = run(["compare", twice, tmp_path / "twice_new.json", "--scorer", "match"])
    assert "AUROC: DeLong's test for clustered rows (Obuchowski 1997) p = " in shown.stdout
