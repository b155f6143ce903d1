"""`calibcli compare BASE NEW`: the JSON report, the paired and unpaired bootstrap intervals,
McNemar's and DeLong's tests, matching rows by id, the non-inferiority gate, --by / --gate-each
and the outputs.

Every number is checked against a reference computed here, independently of calibcli's numpy
code: the figures of each side from tests/reference.py (exact Fractions), the bootstrap intervals
from a plain loop over the documented recipe (replicate r draws
``default_rng(SeedSequence(seed, spawn_key=(r,))).integers(0, N, size=N)`` on the matched rows
in the order of their ids' hashes, the same indices on both sides; unpaired, side s draws from
``SeedSequence(seed, spawn_key=(r, s))``) scored with those references, McNemar's p-value from
math.comb over Fractions, DeLong's test from its O(right x wrong) structural components.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import reference
from harness import make_rows, run, write_jsonl

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"
LM_EVAL_SCIENCE = next((ROOT / "tests" / "fixtures" / "lm_eval").glob("samples_toy_mc_science_*"))
B = "200"  # bootstrap replicates: the least the CLI accepts, to keep the file fast
TOL = 1e-12
HEADLINE = ("ece", "brier", "accuracy", "mean_confidence", "auroc", "nll")
# every figure with a plain-Python reference (smece and its bandwidth have none here)
DECOMPOSITION = (
    "reliability",
    "resolution",
    "uncertainty",
    "within_bin_variance",
    "within_bin_covariance",
)
REFERENCED = (
    "accuracy",
    "mean_confidence",
    "ece",
    "brier",
    *(f"brier_decomposition.{k}" for k in DECOMPOSITION),
    "mce",
    "rmsce",
    "rmsce_debiased",
    "ece_1bin",
    "nll",
    "auroc",
)


# --------------------------------------------------------------------------- references


def close(got, want, tol=TOL):
    """Equal to ``tol`` absolutely or relatively; None (undefined) only matches None."""
    if want is None or got is None:
        return got is None and want is None
    return math.isclose(got, want, rel_tol=tol, abs_tol=tol)


def scalars(conf, corr, bins=10):
    """Every referenced figure of one sample, flat and keyed as the report's ``figures``."""
    est = reference.estimates(conf, corr, bins)
    out = {key: est.get(key) for key in REFERENCED if "." not in key}
    for key in DECOMPOSITION:
        out[f"brier_decomposition.{key}"] = est["decomposition"][key]
    return out


def align(base_rows, new_rows, id_of=lambda r: r["id"]):
    """(BASE's and NEW's (confidences, correct)) of the rows both hold, in BASE's order.

    An id's JSON type counts: the key is (type name, value)."""

    def key(r):
        v = id_of(r)
        return (type(v).__name__, v)

    position = {key(r): r for r in new_rows}
    pairs = [(r, position[key(r)]) for r in base_rows if key(r) in position]
    b = ([p["confidence"] for p, _ in pairs], [bool(p["correct"]) for p, _ in pairs])
    n = ([q["confidence"] for _, q in pairs], [bool(q["correct"]) for _, q in pairs])
    return b, n


def drawn_align(base_rows, new_rows):
    """:func:`align`'s pairs in the order the paired bootstrap draws them: by their ids'
    128-bit hashes (:mod:`calibcli.io.keys`), the high half, then the low."""
    from calibcli.io.keys import canonical_value, hash_ids

    held = {(type(r["id"]).__name__, r["id"]) for r in new_rows}
    ids = [r["id"] for r in base_rows if (type(r["id"]).__name__, r["id"]) in held]
    hi, lo = hash_ids([canonical_value(i) for i in ids])
    order = np.lexsort((lo, hi)).tolist()
    return tuple(
        tuple([side[i] for i in order] for side in pair) for pair in align(base_rows, new_rows)
    )


def replicate_differences(base, new, *, samples, seed, bins=10, paired=True):
    """NEW - BASE of every referenced figure in each replicate of the documented recipe."""
    diffs = {key: [] for key in REFERENCED}
    nb, nn = len(base[0]), len(new[0])
    for r in range(samples):
        if paired:
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r,)))
            ib = inn = [int(i) for i in rng.integers(0, nb, size=nb)]
        else:
            rb = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r, 0)))
            rn = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r, 1)))
            ib = [int(i) for i in rb.integers(0, nb, size=nb)]
            inn = [int(i) for i in rn.integers(0, nn, size=nn)]
        fb = scalars([base[0][i] for i in ib], [base[1][i] for i in ib], bins)
        fn = scalars([new[0][i] for i in inn], [new[1][i] for i in inn], bins)
        for key in REFERENCED:
            if fb[key] is not None and fn[key] is not None:
                diffs[key].append(fn[key] - fb[key])
    return diffs


def interval(values, level):
    return [float(q) for q in np.quantile(values, [(1 - level) / 2, (1 + level) / 2])]


def mcnemar_reference(b, c):
    """min(1, sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c - 1)); 1 when b + c = 0."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return float(min(Fraction(1), Fraction(tail, 2 ** (n - 1))))


def delong_reference(base_conf, new_conf, correct):
    """DeLong's z and p from the structural components, as plain loops over Fractions.

    V10_i = mean over wrong answers j of psi(x_i, y_j), V01_j = mean over right answers i of
    psi(x_i, y_j), psi = 1 if x > y, 1/2 if x == y, else 0; S = S10/m + S01/n (sample
    covariances, divisor k - 1); var = S00 + S11 - 2 S01; z = diff / sqrt(var);
    p = erfc(|z| / sqrt 2)."""

    def psi(x, y):
        return Fraction(1) if x > y else Fraction(1, 2) if x == y else Fraction(0)

    def components(conf):
        right = [Fraction(c) for c, y in zip(conf, correct, strict=True) if y]
        wrong = [Fraction(c) for c, y in zip(conf, correct, strict=True) if not y]
        v10 = [sum(psi(x, y) for y in wrong) / len(wrong) for x in right]
        v01 = [sum(psi(x, y) for x in right) / len(right) for y in wrong]
        return v10, v01

    def cov(a, b):
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        return sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / (len(a) - 1)

    v10b, v01b = components(base_conf)
    v10n, v01n = components(new_conf)
    m, n = len(v10b), len(v01b)
    s00 = cov(v10b, v10b) / m + cov(v01b, v01b) / n
    s11 = cov(v10n, v10n) / m + cov(v01n, v01n) / n
    s01 = cov(v10b, v10n) / m + cov(v01b, v01n) / n
    difference = sum(v10n) / m - sum(v10b) / m
    se = math.sqrt(s00 + s11 - 2 * s01)
    z = float(difference) / se
    return float(difference), se, z, math.erfc(abs(z) / math.sqrt(2.0))


# --------------------------------------------------------------------------- data


def mixed_id(i):
    """Even rows get integer ids, odd rows string ids: matching must keep both apart."""
    return i if i % 2 == 0 else f"s{i}"


def paired_rows(n=40, seed=11):
    """BASE and NEW rows on the same n questions (NEW in another order, a sixth of its answers
    flipped), plus 3 BASE-only rows and 2 NEW-only rows, one of them id "0" (BASE has 0)."""
    rng = random.Random(seed)
    base, new = [], []
    for i in range(n):
        c = 0.02 + 0.96 * rng.random()
        y = rng.random() < c
        base.append({"id": mixed_id(i), "confidence": c, "correct": y})
        c2 = min(0.98, max(0.02, c + rng.uniform(-0.2, 0.3)))
        y2 = (not y) if rng.random() < 0.17 else y
        new.append({"id": mixed_id(i), "confidence": c2, "correct": y2})
    rng.shuffle(new)
    base += [{"id": f"u{k}", "confidence": 0.5 + 0.1 * k, "correct": k % 2 == 0} for k in range(3)]
    new.insert(7, {"id": "0", "confidence": 0.3, "correct": True})
    new.append({"id": 1000, "confidence": 0.9, "correct": False})
    return base, new


@pytest.fixture(scope="module")
def paired_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("paired")
    base, new = paired_rows()
    return (
        write_jsonl(d / "base.jsonl", base),
        write_jsonl(d / "new.jsonl", new),
        base,
        new,
    )


def report(args, code=0):
    result = run(["compare", *args, "--json", "-q"])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout), result


@pytest.fixture(scope="module")
def paired_report(paired_files):
    base, new, _, _ = paired_files
    body, _ = report([base, new, "--allow-unmatched", "--bootstrap", B, "--seed", "5"])
    return body


@pytest.fixture(scope="module")
def paired_replicates(paired_files):
    _, _, base_rows, new_rows = paired_files
    base, new = drawn_align(base_rows, new_rows)
    return base, new, replicate_differences(base, new, samples=200, seed=5)


# --------------------------------------------------------------------------- JSON report


def test_json_schema_and_matching_counts(paired_report, paired_files):
    body = paired_report
    assert body["schema_version"] == 1 and body["command"] == "compare"
    assert body["paired"] is True and body["id_field"] == "id"
    assert body["format"] == {"base": "jsonl", "new": "jsonl"}
    assert body["files"] == {"base": [str(paired_files[0])], "new": [str(paired_files[1])]}
    assert (body["matched"], body["unmatched_base"], body["unmatched_new"]) == (40, 3, 2)
    assert (body["n_base"], body["n_new"]) == (40, 40)
    assert body["ci_level"] == 0.95 and body["bootstrap_samples"] == 200 and body["seed"] == 5
    assert set(REFERENCED) | {"smece", "smece_bandwidth"} == set(body["figures"])
    for row in body["figures"].values():
        assert set(row) == {"base", "new", "difference", "interval"}
    assert set(body["mcnemar"]) == {"right_to_wrong", "wrong_to_right", "discordant", "p_value"}
    assert body["auroc_test"]["test"] == "bootstrap"  # the sides differ in correctness
    assert any("3 BASE row(s) and 2 NEW row(s)" in w for w in body["warnings"])
    assert "gate" not in body


def test_figures_match_the_references_on_matched_rows(paired_report, paired_replicates):
    base, new, _ = paired_replicates
    want_base, want_new = scalars(*base), scalars(*new)
    for key in REFERENCED:
        row = paired_report["figures"][key]
        assert close(row["base"], want_base[key]), key
        assert close(row["new"], want_new[key]), key
        assert close(row["difference"], row["new"] - row["base"], 1e-15), key
        assert close(row["difference"], want_new[key] - want_base[key]), key


def test_paired_bootstrap_intervals_follow_the_documented_recipe(paired_report, paired_replicates):
    _, _, diffs = paired_replicates
    for key in REFERENCED:
        assert len(diffs[key]) == 200, key
        got = paired_report["figures"][key]["interval"]
        want = interval(diffs[key], 0.95)
        assert close(got[0], want[0]) and close(got[1], want[1]), (key, got, want)


def test_ci_level_only_moves_the_quantiles(paired_files, paired_replicates):
    base, new, _, _ = paired_files
    args = [base, new, "--allow-unmatched", "--bootstrap", B, "--seed", "5", "--ci", "0.8"]
    body, _ = report(args)
    assert body["ci_level"] == 0.8
    for key in ("ece", "brier", "accuracy", "auroc"):
        got = body["figures"][key]["interval"]
        want = interval(paired_replicates[2][key], 0.8)
        assert close(got[0], want[0]) and close(got[1], want[1]), key


def test_bins_are_equal_width_k_over_m(paired_files):
    """--bins 7: edges k/7, each side and each replicate (ECE has the same recipe)."""
    base_path, new_path, base_rows, new_rows = paired_files
    args = [base_path, new_path, "--allow-unmatched", "--bootstrap", B, "--seed", "3"]
    body, _ = report([*args, "--bins", "7"])
    base, new = drawn_align(base_rows, new_rows)
    want_b, _ = reference.ece(*base, 7)
    want_n, _ = reference.ece(*new, 7)
    ece = body["figures"]["ece"]
    assert close(ece["base"], want_b) and close(ece["new"], want_n)
    diffs = []
    for r in range(200):
        idx = np.random.default_rng(np.random.SeedSequence(3, spawn_key=(r,))).integers(0, 40, 40)
        e_b, _ = reference.ece([base[0][i] for i in idx], [base[1][i] for i in idx], 7)
        e_n, _ = reference.ece([new[0][i] for i in idx], [new[1][i] for i in idx], 7)
        diffs.append(e_n - e_b)
    want = interval(diffs, 0.95)
    assert close(ece["interval"][0], want[0]) and close(ece["interval"][1], want[1])


def test_another_seed_moves_only_the_intervals(paired_files, paired_report):
    base, new, _, _ = paired_files
    other, _ = report([base, new, "--allow-unmatched", "--bootstrap", B, "--seed", "6"])
    assert other["figures"]["ece"]["difference"] == paired_report["figures"]["ece"]["difference"]
    assert other["figures"]["ece"]["interval"] != paired_report["figures"]["ece"]["interval"]


def test_output_file_holds_the_json_report(paired_files, paired_report, tmp_path):
    """-o writes the report --json prints; a rerun with the same seed gives the same report."""
    base, new, _, _ = paired_files
    out = tmp_path / "compare.json"
    args = [base, new, "--allow-unmatched", "--bootstrap", B, "--seed", "5", "-o", out, "-q"]
    result = run(["compare", *args])
    assert result.exit_code == 0, result.output
    assert "Comparison (NEW - BASE)" in result.stdout  # -o still shows the table
    assert json.loads(out.read_text(encoding="utf-8")) == paired_report


# --------------------------------------------------------------------------- McNemar


def mcnemar_rows(b, c, both_right=20, both_wrong=11):
    """Rows with b right->wrong and c wrong->right questions (NEW written in reverse)."""
    kinds = [(True, False)] * b + [(False, True)] * c
    kinds += [(True, True)] * both_right + [(False, False)] * both_wrong
    random.Random(b * 100 + c).shuffle(kinds)
    base = [
        {"id": f"q{i}", "confidence": 0.3 + 0.4 * (i % 5) / 4, "correct": yb}
        for i, (yb, _) in enumerate(kinds)
    ]
    new = [
        {"id": f"q{i}", "confidence": 0.25 + 0.5 * (i % 7) / 6, "correct": yn}
        for i, (_, yn) in enumerate(kinds)
    ]
    return base, new[::-1]


@pytest.mark.parametrize("b, c", [(9, 3), (0, 5), (4, 4), (21, 6), (0, 0)])
def test_mcnemar_exact_binomial(tmp_path, b, c):
    base, new = mcnemar_rows(b, c)
    body, _ = report(
        [
            write_jsonl(tmp_path / "b.jsonl", base),
            write_jsonl(tmp_path / "n.jsonl", new),
            "--bootstrap",
            B,
        ]
    )
    m = body["mcnemar"]
    assert (m["right_to_wrong"], m["wrong_to_right"], m["discordant"]) == (b, c, b + c)
    assert m["p_value"] == mcnemar_reference(b, c)
    assert body["auroc_test"]["test"] == ("delong" if b + c == 0 else "bootstrap")


def test_mcnemar_on_the_paired_files(paired_report, paired_replicates):
    base, new, _ = paired_replicates
    b = sum(1 for x, y in zip(base[1], new[1], strict=True) if x and not y)
    c = sum(1 for x, y in zip(base[1], new[1], strict=True) if y and not x)
    assert b + c > 0
    m = paired_report["mcnemar"]
    assert (m["right_to_wrong"], m["wrong_to_right"]) == (b, c)
    assert m["p_value"] == mcnemar_reference(b, c)


# --------------------------------------------------------------------------- DeLong


def delong_rows(n=60, seed=23):
    """The same questions and outcomes scored two ways (confidences on a 0.01 grid: ties)."""
    rng = random.Random(seed)
    base, new = [], []
    for i in range(n):
        c = round(0.05 + 0.9 * rng.random(), 2)
        y = rng.random() < c
        base.append({"id": i, "confidence": c, "correct": y})
        c2 = round(min(0.99, max(0.01, 0.6 * c + 0.4 * rng.random())), 2)
        new.append({"id": i, "confidence": c2, "correct": y})
    rng.shuffle(new)
    return base, new


def test_delong_when_correctness_is_identical(tmp_path):
    base_rows, new_rows = delong_rows()
    base_path = write_jsonl(tmp_path / "base.jsonl", base_rows)
    new_path = write_jsonl(tmp_path / "new.jsonl", new_rows)
    body, _ = report([base_path, new_path, "--bootstrap", B])
    base, new = align(base_rows, new_rows)
    assert base[1] == new[1]
    test = body["auroc_test"]
    assert test["test"] == "delong"
    difference, se, z, p = delong_reference(base[0], new[0], base[1])
    assert abs(difference) > 0.01  # a real difference, not the degenerate se = 0 case
    assert close(test["difference"], difference, 1e-10)
    assert close(test["standard_error"], se, 1e-10)
    assert close(test["z"], z, 1e-10)
    assert close(test["p_value"], p, 1e-10)
    auroc = body["figures"]["auroc"]
    assert close(auroc["difference"], reference.auroc(*new) - reference.auroc(*base))
    # the same answers on both sides: McNemar has no discordant row
    assert body["mcnemar"]["discordant"] == 0 and body["mcnemar"]["p_value"] == 1.0


def test_delong_table_line(tmp_path):
    base_rows, new_rows = delong_rows()
    base_path = write_jsonl(tmp_path / "base.jsonl", base_rows)
    new_path = write_jsonl(tmp_path / "new.jsonl", new_rows)
    result = run(["compare", base_path, new_path, "--bootstrap", B, "-q"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Comparison (NEW - BASE)" in out and "McNemar" in out and "DeLong" in out
    assert "{" not in out  # a table, not JSON


def test_bootstrap_only_when_correctness_differs_in_the_table(paired_files):
    base, new, _, _ = paired_files
    result = run(["compare", base, new, "--allow-unmatched", "--bootstrap", B, "-q"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Comparison (NEW - BASE)" in out and "McNemar" in out and "DeLong" not in out
    assert "Paired on 40 questions" in out


# --------------------------------------------------------------------------- matching


@pytest.mark.parametrize("side", ["base", "new"])
def test_duplicate_id_names_both_lines(tmp_path, side):
    rows = [{"id": i, "confidence": 0.2 + 0.1 * i, "correct": i % 2 == 0} for i in range(6)]
    dup = [*rows[:4], {"id": 2, "confidence": 0.5, "correct": True}, *rows[4:]]
    clean = write_jsonl(tmp_path / "clean.jsonl", rows)
    dirty = write_jsonl(tmp_path / "dirty.jsonl", dup)
    args = [dirty, clean] if side == "base" else [clean, dirty]
    result = run(["compare", *args, "--bootstrap", B, "-q"])
    assert result.exit_code == 2
    err = result.stderr
    assert "duplicate id 2" in err
    assert f"{dirty}:5" in err and f"{dirty}:3" in err  # the repeat, and the first at line 3
    assert "Traceback" not in result.output


def test_ids_keep_their_json_type(tmp_path):
    rows = [{"id": i, "confidence": 0.1 + 0.08 * i, "correct": i % 3 != 0} for i in range(10)]
    as_strings = [{**r, "id": str(r["id"])} for r in rows]
    ints = write_jsonl(tmp_path / "ints.jsonl", rows)
    strings = write_jsonl(tmp_path / "strings.jsonl", as_strings)
    result = run(["compare", ints, strings, "--bootstrap", B, "-q"])
    assert result.exit_code == 2 and "no row of" in result.stderr
    # even --allow-unmatched cannot compare nothing
    result = run(["compare", ints, strings, "--allow-unmatched", "--bootstrap", B, "-q"])
    assert result.exit_code == 2 and "--id-field" in result.stderr
    # the same type on both sides matches
    body, _ = report([strings, strings, "--bootstrap", B])
    assert body["matched"] == 10


def test_unmatched_share_over_five_percent_needs_allow_unmatched(paired_files):
    base, new, _, _ = paired_files
    result = run(["compare", base, new, "--bootstrap", B, "-q"])
    assert result.exit_code == 2
    assert "3 of 43 rows of base.jsonl have no partner" in result.stderr
    assert "--allow-unmatched" in result.stderr


def test_unmatched_share_of_five_percent_is_allowed(tmp_path):
    """1 of 20 rows (exactly 5%) unmatched on each side runs without --allow-unmatched."""
    rows = [{"id": i, "confidence": 0.05 + 0.045 * i, "correct": i % 3 != 1} for i in range(20)]
    other = [*rows[:-1], {"id": 99, "confidence": 0.5, "correct": True}]
    body, _ = report(
        [
            write_jsonl(tmp_path / "a.jsonl", rows),
            write_jsonl(tmp_path / "b.jsonl", other),
            "--bootstrap",
            B,
        ]
    )
    assert (body["matched"], body["unmatched_base"], body["unmatched_new"]) == (19, 1, 1)
    # 2 of 21 NEW rows (9.5%) unmatched: the NEW side is checked too
    extra = [*other, {"id": 98, "confidence": 0.4, "correct": False}]
    result = run(["compare", tmp_path / "a.jsonl", write_jsonl(tmp_path / "c.jsonl", extra)])
    assert result.exit_code == 2 and "2 of 21 rows of c.jsonl have no partner" in result.stderr


def test_dotted_id_field(tmp_path):
    base_rows, new_rows = delong_rows(n=30, seed=5)
    nest = [
        {"meta": {"qid": f"k{r['id']}"}, "confidence": r["confidence"], "correct": r["correct"]}
        for r in new_rows
    ]
    nest_base = [
        {"meta": {"qid": f"k{r['id']}"}, "confidence": r["confidence"], "correct": r["correct"]}
        for r in base_rows
    ]
    args = [
        write_jsonl(tmp_path / "b.jsonl", nest_base),
        write_jsonl(tmp_path / "n.jsonl", nest),
        "--id-field",
        "meta.qid",
        "--bootstrap",
        B,
    ]
    body, _ = report(args)
    assert body["id_field"] == "meta.qid" and body["matched"] == 30
    base, new = align(base_rows, new_rows)
    for key in HEADLINE:
        assert close(body["figures"][key]["base"], scalars(*base)[key]), key
        assert close(body["figures"][key]["new"], scalars(*new)[key]), key
    # without --id-field the rows have no "id": an error naming the field, not a crash
    result = run(["compare", *args[:2], "--bootstrap", B, "-q"])
    assert result.exit_code == 2 and "id" in result.stderr


def test_lm_eval_file_against_itself_in_another_order(tmp_path):
    lines = LM_EVAL_SCIENCE.read_text(encoding="utf-8").splitlines(keepends=True)
    reordered = tmp_path / LM_EVAL_SCIENCE.name  # same name, so the same task
    reordered.write_text("".join(lines[::-1]), encoding="utf-8")
    body, _ = report([LM_EVAL_SCIENCE, reordered, "--bootstrap", B])
    assert body["format"] == {"base": "lm-eval", "new": "lm-eval"}
    assert body["id_field"] == "task + doc_id"
    assert (body["matched"], body["unmatched_base"], body["unmatched_new"]) == (len(lines), 0, 0)
    for key, row in body["figures"].items():
        assert row["base"] == row["new"], key
        assert row["difference"] == 0.0, key
        assert row["interval"] == [0.0, 0.0], key
    assert body["auroc_test"]["test"] == "delong"
    assert body["mcnemar"]["discordant"] == 0


def test_lm_eval_rows_of_another_task_do_not_match(tmp_path):
    other = tmp_path / LM_EVAL_SCIENCE.name.replace("toy_mc_science", "toy_mc_other")
    shutil.copy(LM_EVAL_SCIENCE, other)
    result = run(["compare", LM_EVAL_SCIENCE, other, "--bootstrap", B, "-q"])
    assert result.exit_code == 2 and "no row of" in result.stderr


# --------------------------------------------------------------------------- gate


WELL = SAMPLE / "well_calibrated.jsonl"
OVER = SAMPLE / "overconfident.jsonl"


def test_gate_fails_when_new_is_worse_calibrated():
    body, result = report([WELL, OVER, "--max-increase", "ece=0.01", "--bootstrap", B], code=1)
    assert "gate failed" in result.stderr
    assert "--max-increase ece=0.01" in result.stderr
    gate = body["gate"]
    assert gate["passed"] is False and gate["bound"] == "upper"
    (check,) = gate["checks"]
    assert check["metric"] == "ece_increase" and check["threshold"] == 0.01
    ece = body["figures"]["ece"]
    assert check["estimate"] == ece["difference"] and check["upper"] == ece["interval"][1]
    assert check["value"] == check["upper"] + check["allowance"]  # BASE's bias allowance


def test_gate_passes_the_other_way_round():
    args = [OVER, WELL, "--max-increase", "ece=0.01", "--max-decrease", "auroc=0.01"]
    body, result = report([*args, "--bootstrap", B])
    assert body["gate"]["passed"] is True and body["gate"]["bound"] == "upper"
    assert "gate failed" not in result.stderr


IDENTICAL = "NEW's rows are BASE's"


def test_identical_sides_are_named_and_the_gate_still_decides(tmp_path):
    """NEW holding BASE's rows (the same file, or a copy in another order) makes every
    difference 0, so a gate passes whatever the model: one warning says so, on stderr and in
    the report; the verdict is unchanged. A NEW that differs in one row carries no warning."""
    lines = OVER.read_text(encoding="utf-8").splitlines(keepends=True)
    copy = tmp_path / "copy.jsonl"
    copy.write_text("".join(lines[::-1]), encoding="utf-8")
    # brier: a margin on ECE would add BASE's bias allowance (about 0.012 here) to the 0
    gate = ["--max-increase", "brier=0.01", "--bootstrap", B]
    for new in (OVER, copy):
        body, result = report([OVER, new, *gate])
        assert body["gate"]["passed"] is True
        assert [w for w in body["warnings"] if IDENTICAL in w] == [body["warnings"][-1]]
        assert result.stderr.count(IDENTICAL) == 1
        table = run(["compare", OVER, new, *gate])
        assert table.exit_code == 0 and table.stderr.count(IDENTICAL) == 1
    row = json.loads(lines[0])
    row["confidence"] = 1.0 - row["confidence"]
    changed = tmp_path / "changed.jsonl"
    changed.write_text(json.dumps(row) + "\n" + "".join(lines[1:]), encoding="utf-8")
    body, result = report([OVER, changed, *gate])
    assert not any(IDENTICAL in w for w in body["warnings"]) and IDENTICAL not in result.stderr


def test_an_undefined_difference_names_its_sides(tmp_path):
    """A gate fails closed on a difference that is not a number, naming why: NLL infinite on
    both sides (a wrong answer at confidence 1 on each: inf - inf), or AUROC with one class on
    both sides."""
    rows = make_rows(200, seed=3)
    rows[0].update(confidence=1.0, correct=False)
    base = write_jsonl(tmp_path / "base.jsonl", rows)
    rows[5]["confidence"] = 0.5
    new = write_jsonl(tmp_path / "new.jsonl", rows)
    result = run(["compare", base, new, "--max-increase", "nll=0.1", "--bootstrap", B, "-q"])
    assert result.exit_code == 1
    assert "gate failed: nll_increase: nll is infinite on both sides, so the difference is " in (
        result.stderr
    )
    right = [{"id": i, "confidence": 0.3 + 0.01 * i, "correct": True} for i in range(40)]
    one = write_jsonl(tmp_path / "one.jsonl", right)
    two = write_jsonl(tmp_path / "two.jsonl", right[::-1])
    args = ["--max-decrease", "auroc=0.1", "--gate-on", "estimate", "-q"]
    result = run(["compare", one, two, *args])
    assert result.exit_code == 1
    assert "gate failed: auroc_decrease: auroc is undefined on both sides; cannot" in (
        result.stderr
    )


def test_gate_on_estimate_reads_the_difference(paired_files, paired_replicates):
    """A margin between the ECE difference and the upper end of its interval: the estimate
    passes, the upper end (the default with a margin) fails."""
    base_path, new_path, _, _ = paired_files
    base, new, diffs = paired_replicates
    difference = scalars(*new)["ece"] - scalars(*base)["ece"]
    upper = interval(diffs["ece"], 0.95)[1]
    assert difference < upper
    margin = repr((difference + upper) / 2)
    args = [base_path, new_path, "--allow-unmatched", "--bootstrap", B, "--seed", "5"]
    args += ["--max-increase", f"ece={margin}"]
    body, _ = report([*args, "--gate-on", "estimate"])
    assert body["gate"]["bound"] == "estimate" and body["gate"]["passed"] is True
    assert close(body["gate"]["checks"][0]["value"], difference)
    body, result = report(args, code=1)
    assert body["gate"]["bound"] == "upper" and body["gate"]["passed"] is False
    assert close(body["gate"]["checks"][0]["upper"], upper)
    assert f"--max-increase ece={margin}" in result.stderr


def test_max_decrease_auroc(tmp_path):
    """NEW's confidences are noise on the same outcomes: AUROC drops by far more than 0.01."""
    rng = random.Random(3)
    base_rows, new_rows = [], []
    for i in range(80):
        c = 0.05 + 0.9 * rng.random()
        y = (c > 0.5) != (rng.random() < 0.1)
        base_rows.append({"id": i, "confidence": c, "correct": y})
        new_rows.append({"id": i, "confidence": 0.05 + 0.9 * rng.random(), "correct": y})
    good = write_jsonl(tmp_path / "good.jsonl", base_rows)
    noise = write_jsonl(tmp_path / "noise.jsonl", new_rows)
    base, new = align(base_rows, new_rows)
    assert reference.auroc(*base) - reference.auroc(*new) > 0.2
    body, result = report([good, noise, "--max-decrease", "auroc=0.01", "--bootstrap", B], code=1)
    (check,) = body["gate"]["checks"]
    auroc = body["figures"]["auroc"]
    assert check["metric"] == "auroc_decrease"
    assert close(check["estimate"], reference.auroc(*base) - reference.auroc(*new))
    assert check["value"] == -auroc["interval"][0]  # the worse end: the lower end, negated
    assert "--max-decrease auroc=0.01" in result.stderr
    body, _ = report([noise, good, "--max-decrease", "auroc=0.01", "--bootstrap", B])
    assert body["gate"]["passed"] is True


@pytest.mark.parametrize(
    "option, value",
    [
        ("--max-increase", "bogus=0.01"),
        ("--max-decrease", "ece=0.01"),  # lower is better for ECE: it can only increase
        ("--max-increase", "auroc=0.01"),  # higher is better for AUROC
        ("--max-increase", "ece=-0.01"),
        ("--max-increase", "ece=nan"),
        ("--max-increase", "ece=inf"),
        ("--max-increase", "ece=abc"),
        ("--max-increase", "ece"),
        ("--max-increase", "ece=0.01=2"),
    ],
)
def test_bad_margins_exit_2(paired_files, option, value):
    base, new, _, _ = paired_files
    result = run(["compare", base, new, "--allow-unmatched", option, value, "-q"])
    assert result.exit_code == 2, result.output
    assert option in result.stderr and "Traceback" not in result.output


# --------------------------------------------------------------------------- --unpaired


def test_unpaired_intervals_follow_the_documented_recipe(tmp_path):
    """Files of different sizes, ids ignored: each side resampled on its own."""
    rng = random.Random(31)
    base_rows = [
        {"id": i, "confidence": (c := 0.03 + 0.94 * rng.random()), "correct": rng.random() < c}
        for i in range(40)
    ]
    new_rows = [
        {"confidence": (c := 0.1 + 0.89 * rng.random()), "correct": rng.random() < c * c}
        for _ in range(33)
    ]
    base_path = write_jsonl(tmp_path / "b.jsonl", base_rows)
    new_path = write_jsonl(tmp_path / "n.jsonl", new_rows)
    body, result = report([base_path, new_path, "--unpaired", "--bootstrap", B, "--seed", "9"])
    assert body["paired"] is False
    assert body["matched"] is None and body["id_field"] is None
    assert (body["n_base"], body["n_new"]) == (40, 33)
    assert "mcnemar" not in body and "auroc_test" not in body
    assert any("unpaired" in w for w in body["warnings"])
    assert "unpaired" in result.stderr
    # each side's rows drawn in one order, by confidence then outcome, whatever the lines'
    ordered = [
        sorted(rows, key=lambda r: (r["confidence"], r["correct"]))
        for rows in (base_rows, new_rows)
    ]
    base, new = (
        ([r["confidence"] for r in rows], [r["correct"] for r in rows]) for rows in ordered
    )
    diffs = replicate_differences(base, new, samples=200, seed=9, paired=False)
    want_base, want_new = scalars(*base), scalars(*new)
    for key in ("ece", "brier", "accuracy", "mean_confidence", "nll", "auroc"):
        row = body["figures"][key]
        assert close(row["base"], want_base[key]) and close(row["new"], want_new[key]), key
        want = interval(diffs[key], 0.95)
        assert close(row["interval"][0], want[0]) and close(row["interval"][1], want[1]), key


def test_pairing_narrows_the_interval_on_correlated_files(tmp_path):
    """NEW = BASE's confidence plus small noise on the same questions and outcomes: the paired
    ECE-difference interval is far narrower than the unpaired one."""
    rng = random.Random(8)
    base_rows, new_rows = [], []
    for i in range(300):
        c = 0.05 + 0.9 * rng.random()
        y = rng.random() < c**1.3
        base_rows.append({"id": i, "confidence": c, "correct": y})
        c2 = min(0.99, max(0.01, c + rng.uniform(-0.02, 0.02)))
        new_rows.append({"id": i, "confidence": c2, "correct": y})
    base_path = write_jsonl(tmp_path / "b.jsonl", base_rows)
    new_path = write_jsonl(tmp_path / "n.jsonl", new_rows)
    paired, _ = report([base_path, new_path, "--bootstrap", B])
    unpaired, _ = report([base_path, new_path, "--unpaired", "--bootstrap", B])
    lo_p, hi_p = paired["figures"]["ece"]["interval"]
    lo_u, hi_u = unpaired["figures"]["ece"]["interval"]
    # the same difference; summed in another row order, to the last digits
    assert paired["figures"]["ece"]["difference"] == pytest.approx(
        unpaired["figures"]["ece"]["difference"], rel=1e-12
    )
    # about half as wide (0.40 to 0.52 of it over seeds 0-5), well below the unpaired one
    assert hi_p - lo_p < 0.6 * (hi_u - lo_u)


@pytest.mark.parametrize(
    "extra, mentions",
    [
        (["--by", "subject"], "--by"),
    ],
)
def test_unpaired_refuses_matching_options(paired_files, extra, mentions):
    base, new, _, _ = paired_files
    result = run(["compare", base, new, "--unpaired", *extra, "-q"])
    assert result.exit_code == 2 and mentions in result.stderr


# --------------------------------------------------------------------------- --by


def grouped_rows():
    """Group "good": NEW is BASE exactly. Group "bad": NEW claims 0.97 on every question."""
    rng = random.Random(4)
    base, new = [], []
    for i in range(90):
        subject = "good" if i % 3 else "bad"
        c = 0.05 + 0.9 * rng.random()
        y = rng.random() < c
        base.append({"id": f"q{i}", "subject": subject, "confidence": c, "correct": y})
        c2 = c if subject == "good" else 0.97
        new.append({"id": f"q{i}", "subject": subject, "confidence": c2, "correct": y})
    return base, new[::-1]


def test_by_groups_have_their_own_figures(tmp_path):
    base_rows, new_rows = grouped_rows()
    base_path = write_jsonl(tmp_path / "b.jsonl", base_rows)
    new_path = write_jsonl(tmp_path / "n.jsonl", new_rows)
    body, _ = report([base_path, new_path, "--by", "subject", "--bootstrap", B])
    assert sorted(body["groups"]) == ["bad", "good"]
    for name, group in body["groups"].items():
        b_rows = [r for r in base_rows if r["subject"] == name]
        n_rows = [r for r in new_rows if r["subject"] == name]
        base, new = align(b_rows, n_rows)
        assert group["n_base"] == group["n_new"] == len(b_rows)
        want_base, want_new = scalars(*base), scalars(*new)
        for key in HEADLINE:
            row = group["figures"][key]
            assert close(row["base"], want_base[key]), (name, key)
            assert close(row["new"], want_new[key]), (name, key)
        assert group["mcnemar"]["discordant"] == 0
    good = body["groups"]["good"]["figures"]["ece"]
    assert good["difference"] == 0.0 and good["interval"] == [0.0, 0.0]
    # the pooled figures are those of all matched rows
    base, new = align(base_rows, new_rows)
    assert close(body["figures"]["ece"]["new"], scalars(*new)["ece"])


def test_gate_each_fails_only_the_bad_group(tmp_path):
    base_rows, new_rows = grouped_rows()
    base_path = write_jsonl(tmp_path / "b.jsonl", base_rows)
    new_path = write_jsonl(tmp_path / "n.jsonl", new_rows)
    args = [base_path, new_path, "--by", "subject", "--gate-each", "--bootstrap", B]
    # "good" (NEW is BASE on 60 questions) reads its discordance floor: four NEW-only errors
    # at its highest confidences, about 0.06, cannot be ruled out
    body, result = report([*args, "--max-increase", "brier=0.1"], code=1)
    gate = body["gate"]
    assert gate["failed_groups"] == ["bad"]
    by_group = {c.get("group"): c for c in gate["checks"]}
    assert by_group["good"]["passed"] is True and by_group["good"]["upper"] == 0.0
    assert 0 < by_group["good"]["floor"] < 0.1 and by_group["good"]["floor_kind"] == "discordant"
    assert by_group["bad"]["passed"] is False
    assert "in group 'bad'" in result.stderr and "in group 'good'" not in result.stderr


@pytest.mark.parametrize(
    "extra",
    [
        ["--by", "subject", "--gate-each"],  # no margin
        ["--gate-each", "--max-increase", "ece=0.01"],  # no --by
    ],
)
def test_gate_each_needs_by_and_a_margin(tmp_path, extra):
    base_rows, new_rows = grouped_rows()
    base_path = write_jsonl(tmp_path / "b.jsonl", base_rows)
    new_path = write_jsonl(tmp_path / "n.jsonl", new_rows)
    result = run(["compare", base_path, new_path, *extra, "-q"])
    assert result.exit_code == 2 and "--gate-each" in result.stderr


# --------------------------------------------------------------------------- outputs


def test_plot_writes_a_png(paired_files, tmp_path):
    pytest.importorskip("matplotlib")
    base, new, _, _ = paired_files
    png = tmp_path / "compare.png"
    args = [base, new, "--allow-unmatched", "--bootstrap", B, "--plot", png]
    body, _ = report([*args, "--label", "old model", "--label", "new model"])
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert body["command"] == "compare"


@pytest.mark.parametrize(
    "extra",
    [
        ["--label", "a", "--label", "b"],  # --label without --plot
        ["--plot", "x.png", "--label", "only one"],
    ],
)
def test_label_usage_errors(paired_files, tmp_path, extra):
    base, new, _, _ = paired_files
    extra = [str(tmp_path / e) if e.endswith(".png") else e for e in extra]
    result = run(["compare", base, new, "--allow-unmatched", *extra, "-q"])
    assert result.exit_code == 2 and "--label" in result.stderr
    assert not (tmp_path / "x.png").exists()


def test_summary_appends_the_gate(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n", encoding="utf-8")
    args = [WELL, OVER, "--max-increase", "ece=0.01", "--bootstrap", B, "--summary", summary]
    report(args, code=1)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# earlier step\n")
    rest = text[len("# earlier step\n") :]
    assert rest.startswith("### calibcli compare: ")
    assert f"`{WELL}`" in rest and f"`{OVER}`" in rest and "gate FAILED" in rest
    assert "| ece_increase | 0.01 |" in rest and "| **no** |" in rest  # the margin as given
    assert "upper end of the bootstrap interval" in rest


def test_summary_shows_the_figures(tmp_path):
    summary = tmp_path / "summary.md"
    report([WELL, OVER, "--bootstrap", B, "--summary", summary])
    assert "ECE" in summary.read_text(encoding="utf-8")
