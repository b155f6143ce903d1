"""The pandas + scikit-learn baseline of the benchmark (what many notebooks do).

python bench/pandas_sklearn.py calibration FILE [BINS]
python bench/pandas_sklearn.py perplexity FILE
"""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pandas as pd


def main(argv: list[str]) -> None:
    kind, path = argv[0], argv[1]
    df = pd.read_json(path, lines=True)
    if kind == "calibration":
        from sklearn.calibration import calibration_curve
        from sklearn.metrics import brier_score_loss

        bins = int(argv[2]) if len(argv) > 2 else 10
        y = df["correct"].astype(int).to_numpy()
        p = df["confidence"].to_numpy(dtype=np.float64)
        prob_true, prob_pred = calibration_curve(y, p, n_bins=bins, strategy="uniform")
        edges = np.linspace(0.0, 1.0, bins + 1)  # binned as calibration_curve does
        counts = np.bincount(np.searchsorted(edges[1:-1], p), minlength=bins)
        counts = counts[counts > 0]
        ece = float(np.sum(counts / len(p) * np.abs(prob_true - prob_pred)))
        out = {"n": len(p), "ece": ece, "brier": float(brier_score_loss(y, p))}
    else:
        total = float(df["nll"].sum())
        tokens = int(df["tokens"].sum())
        out = {"sequences": len(df), "perplexity": math.exp(total / tokens)}
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
