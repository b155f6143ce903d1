"""The naive baseline of the benchmark: ``json.loads`` per line, then plain numpy functions.

The figures computed the straightforward way once every row is in memory (Python lists, then
numpy arrays, floor(c * M) binning with np.bincount), so the benchmark can show what streaming
and typed decoding buy. Not used by calibcli.

    python bench/naive.py calibration FILE [BINS]
    python bench/naive.py perplexity FILE
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np


def _validate_probs(conf: np.ndarray, corr: np.ndarray) -> None:
    if conf.shape != corr.shape:
        raise ValueError("confidences and correct differ in length")
    if conf.size and (conf.min() < 0 or conf.max() > 1):
        raise ValueError("confidences must lie in [0, 1]")


def reliability_diagram(confidences, correct, bins=10):
    conf = np.asarray(confidences, dtype=np.float64)
    corr = np.asarray(correct, dtype=np.float64)
    _validate_probs(conf, corr)
    idx = np.minimum((conf * bins).astype(np.int64), bins - 1)
    count = np.bincount(idx, minlength=bins)
    sum_conf = np.bincount(idx, weights=conf, minlength=bins)
    sum_corr = np.bincount(idx, weights=corr, minlength=bins)
    nz = np.maximum(count, 1)
    return sum_conf / nz, sum_corr / nz, count


def expected_calibration_error(confidences, correct, bins=10):
    mean_conf, accuracy, count = reliability_diagram(confidences, correct, bins)
    n = count.sum()
    if n == 0:
        return 0.0, 0
    ece = float(np.sum(count / n * np.abs(mean_conf - accuracy)))
    return ece, int(np.count_nonzero(count))


def brier_score(confidences, correct):
    conf = np.asarray(confidences, dtype=np.float64)
    corr = np.asarray(correct, dtype=np.float64)
    _validate_probs(conf, corr)
    if conf.size == 0:
        return 0.0
    return float(np.mean((conf - corr) ** 2))


def brier_decomposition(confidences, correct, bins=10):
    mean_conf, accuracy, count = reliability_diagram(confidences, correct, bins)
    n = count.sum()
    base = float(np.sum(np.asarray(correct, dtype=np.float64))) / n if n else 0.0
    reliability = float(np.sum(count * (mean_conf - accuracy) ** 2)) / n if n else 0.0
    resolution = float(np.sum(count * (accuracy - base) ** 2)) / n if n else 0.0
    return {
        "reliability": reliability,
        "resolution": resolution,
        "uncertainty": base * (1 - base),
        "brier": brier_score(confidences, correct),
    }


def perplexity(neg_log_probs, token_counts):
    total_nll = sum(neg_log_probs)
    total_tokens = sum(token_counts)
    return math.exp(total_nll / total_tokens) if total_tokens else math.nan


def main(argv: list[str]) -> None:
    kind, path = argv[0], argv[1]
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    if kind == "calibration":
        bins = int(argv[2]) if len(argv) > 2 else 10
        conf = [r["confidence"] for r in rows]
        corr = [bool(r["correct"]) for r in rows]
        ece, populated = expected_calibration_error(conf, corr, bins)
        out = {
            "n": len(conf),
            "ece": ece,
            "populated_bins": populated,
            "brier": brier_score(conf, corr),
            "decomposition": brier_decomposition(conf, corr, bins),
            "reliability": [a.tolist() for a in reliability_diagram(conf, corr, bins)],
        }
    else:
        nll = [r["nll"] for r in rows]
        tokens = [r["tokens"] for r in rows]
        out = {"sequences": len(nll), "perplexity": perplexity(nll, tokens)}
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
