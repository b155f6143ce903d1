"""Regenerate calibcli's sample data, byte for byte.

    python sample_data/generate.py [OUTDIR]      (default: this file's directory)

Three synthetic predictors answer the same 2,000 questions: each question has a true probability p
of being answered correctly and the outcome is y ~ Bernoulli(p). The predictors differ only in the
confidence they state:

- well_calibrated.jsonl  confidence = p
- overconfident.jsonl    confidence = 1 - 0.4 * (1 - p)      (pushed toward 1)
- underconfident.jsonl   confidence = 0.5 + 0.4 * (p - 0.5)  (pushed toward 0.5)

perplexity.jsonl holds 200 scored sequences with a summed NLL in nats and their token, byte and word
counts. Every row has an "id" and a grouping key ("subject" or "source") so `--by` can be shown.
Floats are written with Python's repr (shortest round-trip form), so the files are reproducible.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

SEED = 0
QUESTIONS = 2000
SEQUENCES = 200
SUBJECTS = ("algebra", "biology", "history", "law")
SOURCES = ("news", "web", "wiki")


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, allow_nan=False) + "\n")


def calibration_rows(rng: np.random.Generator) -> dict[str, list[dict]]:
    subject = rng.integers(0, len(SUBJECTS), QUESTIONS)
    # Harder subjects get lower true probabilities, so the --by breakdown shows some spread.
    difficulty = np.array([0.0, 0.05, 0.1, 0.2])[subject]
    p = np.clip(rng.uniform(0.3, 1.0, QUESTIONS) - difficulty, 0.05, 1.0)
    y = rng.random(QUESTIONS) < p
    stated = {
        "well_calibrated": p,
        "overconfident": 1.0 - 0.4 * (1.0 - p),
        "underconfident": 0.5 + 0.4 * (p - 0.5),
    }
    return {
        name: [
            {
                "id": f"q{i:04d}",
                "subject": SUBJECTS[subject[i]],
                "confidence": float(conf[i]),
                "correct": bool(y[i]),
            }
            for i in range(QUESTIONS)
        ]
        for name, conf in stated.items()
    }


def perplexity_rows(rng: np.random.Generator) -> list[dict]:
    source = rng.integers(0, len(SOURCES), SEQUENCES)
    words = rng.integers(20, 400, SEQUENCES)
    tokens = np.rint(words * rng.uniform(1.2, 1.45, SEQUENCES)).astype(np.int64)
    text_bytes = np.rint(words * rng.uniform(5.2, 6.2, SEQUENCES)).astype(np.int64)
    nll_per_token = np.clip(rng.normal(2.3, 0.35, SEQUENCES) + 0.2 * source, 0.5, None)
    nll = tokens * nll_per_token
    return [
        {
            "id": f"doc{i:03d}",
            "source": SOURCES[source[i]],
            "nll": float(nll[i]),
            "tokens": int(tokens[i]),
            "bytes": int(text_bytes[i]),
            "words": int(words[i]),
        }
        for i in range(SEQUENCES)
    ]


def generate(outdir: Path) -> list[Path]:
    """Write the four sample files into `outdir` and return their paths."""
    outdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    written = []
    for name, rows in calibration_rows(rng).items():
        path = outdir / f"{name}.jsonl"
        _write_jsonl(path, rows)
        written.append(path)
    path = outdir / "perplexity.jsonl"
    _write_jsonl(path, perplexity_rows(rng))
    written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
    for written_path in generate(target):
        print(written_path)
