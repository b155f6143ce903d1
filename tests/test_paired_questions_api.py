"""A paired compare of rows that repeat their questions (an inspect-ai run's epochs) draws the
same questions on every route: the questions are numbered by what their pairs hold, so the
command and ``calibcli.compare`` of the rows ``read_predictions`` gives make the same report,
byte for byte, though they hash a question's id differently; the files' sample order does not
move the intervals, and ``compare NEW BASE`` mirrors them exactly.

The logs are the committed real inspect-ai log (20 samples) written as a run of three epochs,
each answer's single token given the log-probability log(p) of a confidence p chosen here, so
that every row's confidence (exp of that log-probability) and outcome are known without
calibcli. Samples 1 and 2 hold the same pairs (interchangeable questions); samples 3 and 4, 6
and 7, 8 and 9, 12 and 13, 14 and 15 hold each other's pairs with BASE and NEW exchanged
(mirror images, which exchanging the sides cannot tell apart by their pairs alone, and all but
the first of which the command's hashes of their ids and the API's put in other orders)."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from harness import run

ROOT = Path(__file__).resolve().parent.parent
INSPECT = Path(__file__).resolve().parent / "fixtures" / "inspect_ai"
EPOCHS = 3
GRID = (0.55, 0.65, 0.75, 0.85, 0.93)  # inside their bins: no row on a bin edge
SEED, SAMPLES, LEVEL = 7, 300, 0.9
KEYS = ("accuracy", "mean_confidence", "brier", "ece")
MIRRORED = (3, 6, 8, 12, 14)  # each sample's pairs are the next one's with BASE and NEW exchanged


def answers() -> dict[int, list[tuple[float, bool, float, bool]]]:
    """Each sample's (BASE confidence, BASE outcome, NEW confidence, NEW outcome) per epoch."""
    rng = np.random.default_rng(11)
    held = {}
    for sample in range(1, 21):
        held[sample] = [
            (
                GRID[int(rng.integers(len(GRID)))],
                bool(rng.integers(2)),
                GRID[int(rng.integers(len(GRID)))],
                bool(rng.integers(2)),
            )
            for _ in range(EPOCHS)
        ]
    held[2] = list(held[1])  # the same pairs as sample 1
    for sample in MIRRORED:  # its pairs, sides exchanged, are the next sample's
        held[sample + 1] = [(nc, no, bc, bo) for bc, bo, nc, no in held[sample]]
    return held


def write_log(path: Path, side: int, order: list[tuple[int, int]] | None = None) -> Path:
    """The committed log as a run of three epochs holding side ``side``'s answers (0: BASE,
    1: NEW), its samples in ``order`` ((sample id, epoch) pairs; default by id, then epoch)."""
    log = json.loads((INSPECT / "toy_arithmetic.json").read_text())
    log["eval"]["config"]["epochs"] = EPOCHS
    held = answers()
    given = {s["id"]: s for s in log["samples"]}
    order = order or [(i, e) for i in sorted(given) for e in range(1, EPOCHS + 1)]
    samples = []
    for sample, epoch in order:
        conf, right = held[sample][epoch - 1][2 * side : 2 * side + 2]
        s = json.loads(json.dumps(given[sample]))
        s["epoch"] = epoch
        s["scores"]["match"]["value"] = "C" if right else "I"
        token = {"token": "4", "logprob": math.log(conf), "bytes": [52]}
        s["output"]["choices"][0]["logprobs"]["content"] = [token]
        samples.append(s)
    log["samples"] = samples
    path.write_text(json.dumps(log))
    return path


def logs(tmp_path: Path) -> tuple[Path, Path]:
    return write_log(tmp_path / "base.json", 0), write_log(tmp_path / "new.json", 1)


# --------------------------------------------------------------------------- the recipe


def numbered(held: dict[int, list[tuple]]) -> dict[int, int]:
    """Each sample's question number as the README says: its pairs written BASE first and NEW
    first, each sorted, the questions in increasing order of the smaller sequence."""

    def key(sample: int) -> tuple:
        pairs = held[sample]
        forward = sorted(pairs)
        backward = sorted((nc, no, bc, bo) for bc, bo, nc, no in pairs)
        return min(forward, backward)

    ranked = sorted(held, key=key)
    keys = [key(sample) for sample in ranked]
    ties = {ranked[i] for i in range(len(ranked) - 1) if keys[i] == keys[i + 1]}
    assert ties == {1, *MIRRORED}  # and the sample after each: the ties the logs were written
    # with: samples 1 and 2 hold the same pairs (either order draws alike); 3 and 4 (6 and 7,
    # ...) are each other's mirror image, taken in the order of their ids' hashes, which the
    # caller tries both ways
    return {sample: q for q, sample in enumerate(ranked)}


def figures(conf: np.ndarray, right: np.ndarray, w: np.ndarray) -> dict[str, float]:
    """accuracy, mean confidence, Brier and ECE (10 equal-width bins) of rows weighted ``w``."""
    total = w.sum()
    bins = np.minimum((conf * 10).astype(int), 9)
    gap = np.bincount(bins, weights=w * (conf - right), minlength=10)
    return {
        "accuracy": float((w * right).sum() / total),
        "mean_confidence": float((w * conf).sum() / total),
        "brier": float((w * (conf - right) ** 2).sum() / total),
        "ece": float(np.abs(gap).sum() / total),
    }


def reference(held: dict[int, list[tuple]], swap: tuple[int, ...] = ()) -> dict:
    """The percentile intervals of NEW − BASE from a plain loop of the documented draw:
    replicate r draws ``integers(0, C, size=C)`` from ``SeedSequence(SEED, spawn_key=(r,))``
    and every row of question q counts as often as q was drawn. ``swap`` exchanges the numbers
    of each sample it names and the sample after it."""
    number = numbered(held)
    for a in swap:
        number[a], number[a + 1] = number[a + 1], number[a]
    rows = [(number[s], *pair) for s in sorted(held) for pair in held[s]]
    q = np.array([r[0] for r in rows])
    b_conf, n_conf = np.array([r[1] for r in rows]), np.array([r[3] for r in rows])
    b_right, n_right = np.array([r[2] for r in rows], float), np.array([r[4] for r in rows], float)
    count = len(held)
    diffs = {key: [] for key in KEYS}
    for r in range(SAMPLES):
        rng = np.random.default_rng(np.random.SeedSequence(SEED, spawn_key=(r,)))
        w = np.bincount(rng.integers(0, count, size=count), minlength=count)[q].astype(float)
        base, new = figures(b_conf, b_right, w), figures(n_conf, n_right, w)
        for key in KEYS:
            diffs[key].append(new[key] - base[key])
    lo, hi = (1 - LEVEL) / 2, (1 + LEVEL) / 2
    return {key: [float(np.quantile(v, lo)), float(np.quantile(v, hi))] for key, v in diffs.items()}


def compare(*args) -> dict:
    options = ["--seed", str(SEED), "--bootstrap", str(SAMPLES), "--ci", str(LEVEL)]
    result = run(["compare", *map(str, args), "--scorer", "match", *options, "--json", "-q"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_intervals_are_the_documented_draw_of_questions_numbered_by_their_pairs(tmp_path):
    held = answers()
    body = compare(*logs(tmp_path))
    assert body["matched"] == 20 * EPOCHS
    assert body["mcnemar"]["clustered"]["questions"] == 20
    got = [end for key in KEYS for end in body["figures"][key]["interval"]]
    # each two mirror images are numbered one way or the other by their ids' hashes
    ways = itertools.product(*([(), (a,)] for a in MIRRORED))
    options = [reference(held, sum(way, ())) for way in ways]
    wanted = [[end for key in KEYS for end in want[key]] for want in options]
    assert any(got == pytest.approx(want, rel=1e-9, abs=1e-12) for want in wanted), got


def test_the_samples_order_and_which_side_is_base_do_not_move_the_intervals(tmp_path):
    base, new = logs(tmp_path)
    first = compare(base, new)
    rng = np.random.default_rng(5)
    rows = [(i, e) for i in range(1, 21) for e in range(1, EPOCHS + 1)]
    shuffled = [[rows[k] for k in rng.permutation(len(rows))] for _ in range(2)]
    (tmp_path / "s").mkdir()
    base_s = write_log(tmp_path / "s" / "base.json", 0, shuffled[0])
    new_s = write_log(tmp_path / "s" / "new.json", 1, shuffled[1])
    other = compare(base_s, new_s)
    assert {k: v for k, v in other.items() if k != "files"} == {
        k: v for k, v in first.items() if k != "files"
    }
    swapped = compare(new_s, base)
    for key, figure in first["figures"].items():
        if "interval" in figure:
            lo, hi = figure["interval"]
            assert swapped["figures"][key]["interval"] == [-hi, -lo], key


# the API's report, in a fresh process as a notebook makes it (see test_api_cli_bytes.py)
API = """
import json, sys
import calibcli
base, new, options = json.loads(sys.argv[1])
rows = [calibcli.read_predictions(side, scorer="match") for side in (base, new)]
sys.stdout.write(calibcli.compare(*rows, **options).to_json())
"""


def _fresh(args: list) -> subprocess.CompletedProcess:
    from test_api_cli_bytes import _user_env

    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=_user_env(), cwd=ROOT
    )


def test_the_command_and_the_function_give_the_same_report(tmp_path):
    from test_epochs import epochs_log

    base, new = logs(tmp_path)
    # the committed log's three epochs, each a copy of the sample, NEW's flipped on five
    copies = epochs_log(tmp_path, "a.json", epochs=3)
    flipped = epochs_log(tmp_path, "b.json", flip=(1, 2, 5, 8, 13), epochs=3)
    gate = {"max_increase": {"brier": 0.5}, "gate_on": "upper"}
    gate_args = ["--max-increase", "brier=0.5", "--gate-on", "upper"]
    cases = [
        ((base, new), {}, []),
        ((new, base), gate, gate_args),
        ((copies, flipped), {}, []),
        ((flipped, copies), {"seed": 3}, ["--seed", "3"]),
    ]
    for (b, n), options, args in cases:
        given = {"ci": 0.95, "bootstrap": 200, **options}
        api = _fresh(["-c", API, json.dumps([str(b), str(n), given])])
        assert api.returncode == 0, api.stderr
        command = ["-m", "calibcli", "compare", b, n, "--scorer", "match", "--json", "-q"]
        cli = _fresh([*map(str, command), "--ci", "0.95", "--bootstrap", "200", *args])
        assert cli.returncode in (0, 1), cli.stderr
        assert api.stdout == cli.stdout, (b.name, n.name, args)
