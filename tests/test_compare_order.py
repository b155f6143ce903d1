"""compare's paired bootstrap draws the matched pairs in the order of their ids' hashes, not in
BASE's line order: its intervals (and a gate's verdict) are the same whatever the files' line
order, the --workers, or which file is BASE (then mirrored exactly); and a figure whose
difference is infinite or undefined has no interval."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from harness import run, write_jsonl
from numpy.random import SeedSequence, default_rng

from calibcli.io.keys import canonical_value, hash_ids
from calibcli.metrics import paired_bootstrap
from calibcli.metrics.bootstrap import replicate_generator
from calibcli.metrics.core import PredictionColumns
from calibcli.metrics.estimators import calibration_estimates

B = 200
KEYS = ("accuracy", "mean_confidence", "ece", "brier", "mce", "rmsce", "nll", "auroc")
INSPECT = Path(__file__).resolve().parent / "fixtures" / "inspect_ai"


def two_models(n=120, seed=11):
    """BASE and NEW rows on the same ids ("q0", ...): confidences on a 0.05 grid, so that many
    rows tie (each tie's rows are interchangeable only if the draw does not follow the lines),
    NEW a noisier, more confident copy of BASE; each row in group "a" or "b"."""
    rng = random.Random(seed)
    base, new = [], []
    for i in range(n):
        c = round(0.025 + rng.randint(0, 18) * 0.05, 3)  # no row on a bin's edge
        right = rng.random() < c
        d = min(0.975, round(c + rng.choice((0.0, 0.05, 0.1)), 3))
        flip = rng.random() < 0.15
        group = "a" if rng.random() < 0.5 else "b"
        base.append({"id": f"q{i}", "confidence": c, "correct": right, "g": group})
        new.append({"id": f"q{i}", "confidence": d, "correct": right != flip, "g": group})
    return base, new


def shuffled(rows, seed):
    rows = list(rows)
    random.Random(seed).shuffle(rows)
    return rows


def compare(base_path, new_path, *options):
    result = run(["compare", base_path, new_path, "-q", "--json", "--bootstrap", B, *options])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout), result.exit_code


def intervals(figures):
    return {key: row["interval"] for key, row in figures.items()}


def mirrored(figures):
    """The intervals of the same comparison with BASE and NEW swapped: each end negated and
    the ends exchanged (exact in floating point)."""
    return {key: [-row["interval"][1], -row["interval"][0]] for key, row in figures.items()}


def reference(base, new, samples, seed=0, level=0.95):
    """Percentile intervals of NEW − BASE over replicates that draw the pairs in increasing
    order of their ids' 128-bit hashes (high half, then low): replicate r's generator draws N
    positions in that order, and the pair at each position counts as often as it is drawn."""
    hi, lo = hash_ids([canonical_value(r["id"]) for r in base])
    by_hash = np.lexsort((lo, hi))
    place = np.empty(len(base), int)
    place[by_hash] = np.arange(len(base))
    sides = [
        (np.array([r["confidence"] for r in rows]), np.array([r["correct"] for r in rows]))
        for rows in (base, new)
    ]
    values = {key: [] for key in KEYS}
    for r in range(samples):
        drawn = replicate_generator(seed, r).integers(0, len(base), size=len(base))
        w = np.bincount(drawn, minlength=len(base))[place]
        got = [
            calibration_estimates(
                PredictionColumns.from_arrays(np.repeat(conf, w), np.repeat(corr, w)),
                edges=np.linspace(0.0, 1.0, 11),
            ).scalars()
            for conf, corr in sides
        ]
        for key in KEYS:
            d = got[1][key] - got[0][key]
            if not np.isnan(d):
                values[key].append(d)
    return {
        key: np.quantile(v, [(1 - level) / 2, (1 + level) / 2]).tolist()
        for key, v in values.items()
    }


def test_the_pairs_are_drawn_in_the_order_of_their_ids_hashes(tmp_path):
    base, new = two_models()
    # the lines in an order of their own on each side: the draw follows neither
    base_path = write_jsonl(tmp_path / "base.jsonl", shuffled(base, 1))
    new_path = write_jsonl(tmp_path / "new.jsonl", shuffled(new, 2))
    report, _ = compare(base_path, new_path)
    expected = reference(base, new, B)
    for key in KEYS:
        got = report["figures"][key]["interval"]
        assert got == pytest.approx(expected[key], rel=1e-9, abs=1e-12), key


def test_line_order_workers_and_sides_leave_the_intervals_exactly_as_they_are(tmp_path):
    base, new = two_models()
    paths = {
        "base": write_jsonl(tmp_path / "base.jsonl", base),
        "new": write_jsonl(tmp_path / "new.jsonl", new),
        "base_shuffled": write_jsonl(tmp_path / "base_s.jsonl", shuffled(base, 3)),
        "new_reversed": write_jsonl(tmp_path / "new_r.jsonl", new[::-1]),
    }
    first, _ = compare(paths["base"], paths["new"])
    other_lines, _ = compare(paths["base_shuffled"], paths["new_reversed"])
    two_workers, _ = compare(paths["base_shuffled"], paths["new"], "--workers", "2")
    swapped, _ = compare(paths["new_reversed"], paths["base_shuffled"])
    want = intervals(first["figures"])
    assert intervals(other_lines["figures"]) == want
    assert intervals(two_workers["figures"]) == want
    assert mirrored(swapped["figures"]) == want
    for key, row in first["figures"].items():
        other = swapped["figures"][key]
        assert (other["base"], other["new"]) == pytest.approx((row["new"], row["base"]), abs=1e-15)
        assert other["difference"] == pytest.approx(-row["difference"], abs=1e-15)
        assert row["interval"][0] <= row["interval"][1]


def test_a_gate_s_verdict_does_not_follow_the_line_order(tmp_path):
    base, new = two_models(seed=5)
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", new)
    first, _ = compare(base_path, new_path, "--max-increase", "ece=1")
    (check,) = first["gate"]["checks"]
    upper, gated = check["upper"], check["value"]  # the upper end plus BASE's allowance
    assert upper == first["figures"]["ece"]["interval"][1] and gated > upper
    for margin, code in ((gated, 0), (gated - 1e-9, 1)):  # the gated value passes, less fails
        for seed in range(3):
            lines = write_jsonl(tmp_path / f"base_{seed}.jsonl", shuffled(base, seed))
            report, got = compare(lines, new_path, "--max-increase", f"ece={margin!r}")
            check = report["gate"]["checks"][0]
            assert (got, check["upper"], check["value"]) == (code, upper, gated), seed


def test_each_by_group_is_drawn_in_the_order_of_its_ids(tmp_path):
    base, new = two_models(160, seed=8)
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", new)
    other_path = write_jsonl(tmp_path / "base_s.jsonl", shuffled(base, 9))
    first, _ = compare(base_path, new_path, "--by", "g")
    other, _ = compare(other_path, new_path, "--by", "g")
    swapped, _ = compare(new_path, other_path, "--by", "g")
    assert set(first["groups"]) == {"a", "b"}
    for name, group in first["groups"].items():
        want = intervals(group["figures"])
        assert intervals(other["groups"][name]["figures"]) == want, name
        assert mirrored(swapped["groups"][name]["figures"]) == want, name
        rows = [i for i, r in enumerate(base) if r["g"] == name]
        expected = reference([base[i] for i in rows], [new[i] for i in rows], B)
        for key in KEYS:
            assert want[key] == pytest.approx(expected[key], rel=1e-9, abs=1e-12), (name, key)


def epochs_log(path, samples_order, flip=()):
    """The committed inspect-ai log run for two epochs, its samples written in
    ``samples_order`` (indices into the log's samples), those whose id is in ``flip`` scored
    the other way."""
    log = json.loads((INSPECT / "toy_arithmetic.json").read_text())
    log["eval"]["config"]["epochs"] = 2
    given = log["samples"]
    for s in given:
        if s["id"] in flip:
            match = s["scores"]["match"]
            s["scores"]["match"] = {**match, "value": "I" if match["value"] == "C" else "C"}
    rows = [{**given[i], "epoch": e} for i in samples_order for e in (2, 1)]
    log["samples"] = rows
    path.write_text(json.dumps(log))
    return path


def test_a_run_s_epochs_are_drawn_the_same_whatever_the_samples_order(tmp_path):
    # each sample's two epochs share their confidence, so rows tie throughout
    count = len(json.loads((INSPECT / "toy_arithmetic.json").read_text())["samples"])
    forward, backward = list(range(count)), shuffled(range(count), 4)
    flip = {3, 6, 9, 12}
    base = epochs_log(tmp_path / "base.json", forward)
    new = epochs_log(tmp_path / "new.json", forward, flip)
    base_s = epochs_log(tmp_path / "base_s.json", backward)
    new_s = epochs_log(tmp_path / "new_s.json", backward[::-1], flip)
    first, _ = compare(base, new, "--scorer", "match")
    other, _ = compare(base_s, new_s, "--scorer", "match")
    swapped, _ = compare(new_s, base, "--scorer", "match")
    assert first["mcnemar"]["clustered"]["questions"] == count
    want = intervals(first["figures"])
    assert intervals(other["figures"]) == want
    assert mirrored(swapped["figures"]) == want


def test_the_metric_s_order_fixes_the_draw_and_swapping_mirrors_it():
    rng = np.random.default_rng(3)
    n = 90
    conf = np.round(rng.uniform(0.05, 0.95, n), 1)  # ties
    base = (conf, rng.uniform(size=n) < conf)
    new = (np.clip(conf + 0.1, 0, 0.95), rng.uniform(size=n) < conf)
    keys = rng.permutation(10 * n)[:n].astype(np.uint64)
    perm = rng.permutation(n)
    options = dict(samples=60, seed=4, keys=KEYS)
    got = paired_bootstrap(base, new, order=keys, **options)
    moved = paired_bootstrap(
        (base[0][perm], base[1][perm]), (new[0][perm], new[1][perm]), order=keys[perm], **options
    )
    back = paired_bootstrap(new, base, order=keys, **options)
    assert moved.intervals == got.intervals
    assert {k: (-hi, -lo) for k, (lo, hi) in back.intervals.items()} == got.intervals
    # the rows sorted by key, drawn in their order, are the same draw
    by_key = np.argsort(keys)
    plain = paired_bootstrap(
        (base[0][by_key], base[1][by_key]), (new[0][by_key], new[1][by_key]), **options
    )
    for key in KEYS:
        assert plain.intervals[key] == pytest.approx(got.intervals[key], abs=1e-15), key
    with pytest.raises(ValueError, match="distinct"):
        paired_bootstrap(base, new, order=np.zeros(n, int), **options)
    with pytest.raises(ValueError, match=f"order must hold {n} integers"):
        paired_bootstrap(base, new, order=keys[:-1], **options)


INFINITE = (
    "nll is infinite on {on}: a confidence of exactly 1 on a wrong answer (or 0 on a right "
    "one); written as null, as is the difference it leaves infinite or undefined, and that "
    "difference has no interval (the resamples that miss such a row estimate another quantity)"
)


def test_an_undefined_difference_has_no_interval(tmp_path):
    # both sides say 1.0 on the same wrong answer: NLL is infinite on both, the difference
    # inf - inf undefined, and the replicates that miss that row (about 1/e of them) measure
    # another quantity, so no interval
    base, new = two_models(seed=6)
    wrong = next(i for i, r in enumerate(base) if not r["correct"] and not new[i]["correct"])
    base[wrong]["confidence"] = new[wrong]["confidence"] = 1.0
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", new)
    report, code = compare(base_path, new_path, "--max-increase", "nll=0.01")
    nll = report["figures"]["nll"]
    assert nll == {"base": None, "new": None, "difference": None, "interval": [None, None]}
    assert INFINITE.format(on="BASE and NEW") in report["warnings"]
    assert code == 1
    check = report["gate"]["checks"][0]
    assert (check["passed"], check["upper"]) == (False, None)
    assert check["reason"] == "nll is infinite on both sides, so the difference is undefined"
    assert report["figures"]["brier"]["interval"][0] is not None  # the others keep theirs


def test_an_infinite_difference_has_no_interval(tmp_path):
    base, new = two_models(seed=7)
    wrong = next(i for i, r in enumerate(new) if not r["correct"])
    new[wrong]["confidence"] = 1.0
    base_path = write_jsonl(tmp_path / "base.jsonl", base)
    new_path = write_jsonl(tmp_path / "new.jsonl", new)
    report, code = compare(base_path, new_path, "--max-increase", "nll=0.01")
    assert report["figures"]["nll"]["interval"] == [None, None]
    assert report["non_finite"]["figures.nll.difference"] == "inf"
    assert "figures.nll.interval.1" not in report["non_finite"]
    assert INFINITE.format(on="NEW") in report["warnings"]
    assert code == 1
    check = report["gate"]["checks"][0]
    assert check["reason"] == "the bootstrap gives no upper bound for nll_increase"


def _unpaired_reference(base, new, seed=0):
    """The unpaired intervals by hand: each side's rows sorted by (confidence, outcome), side
    s of replicate r drawing ``integers(0, N_s, N_s)`` from its own generator, each draw scored
    with the estimators; the percentile interval of NEW − BASE."""

    def sorted_side(rows):
        conf = np.array([r["confidence"] for r in rows])
        corr = np.array([r["correct"] for r in rows])
        order = np.lexsort((corr, conf))
        return conf[order], corr[order]

    sides = [sorted_side(base), sorted_side(new)]
    values = {k: [] for k in ("ece", "brier")}
    for r in range(B):
        scored = []
        for s, (conf, corr) in enumerate(sides):
            draw = default_rng(SeedSequence(seed, spawn_key=(r, s))).integers(
                0, conf.shape[0], conf.shape[0]
            )
            cols = PredictionColumns.from_arrays(conf[draw], corr[draw])
            scored.append(calibration_estimates(cols, bins=10).scalars())
        for k in values:
            values[k].append(scored[1][k] - scored[0][k])
    return {k: np.sort(np.array(v)) for k, v in values.items()}


def test_unpaired_intervals_do_not_follow_line_order(tmp_path):
    """Without ids each side is drawn on its own; its rows, equal ones interchangeable, are
    drawn in one order (by confidence, then outcome) whatever the file's lines."""
    base_rows, new_rows = two_models(150, seed=5)
    for rows in (base_rows, new_rows):
        for r in rows:
            del r["id"]
    shuffled = list(base_rows)
    random.Random(1).shuffle(shuffled)
    got = []
    for name, rows in (("a", base_rows), ("b", shuffled)):
        path = write_jsonl(tmp_path / f"{name}.jsonl", rows)
        other = write_jsonl(
            tmp_path / f"n{name}.jsonl", new_rows[::-1] if name == "b" else new_rows
        )
        result = run(["compare", path, other, "--unpaired", "--bootstrap", str(B), "--json", "-q"])
        assert result.exit_code == 0, result.stderr
        got.append(json.loads(result.stdout)["figures"])
    for key in ("ece", "brier", "nll", "accuracy", "mean_confidence"):
        assert got[0][key]["interval"] == got[1][key]["interval"], key
    reference = _unpaired_reference(base_rows, new_rows)
    for key, values in reference.items():
        lo, hi = got[0][key]["interval"]
        assert values[0] <= lo <= hi <= values[-1]
        # the 2.5% and 97.5% points of the replicates, to the resolution of B draws
        assert lo == pytest.approx(np.quantile(values, 0.025), abs=np.diff(values).max())
        assert hi == pytest.approx(np.quantile(values, 0.975), abs=np.diff(values).max())
