"""What GitHub Actions hands a step, and what calibcli must write back when a run ends without a
report, shared by the tests of step outputs.

The outputs of a run without a report are written out by hand from the README's table: left
empty, GitHub's expressions read them as 0, so ``outputs.ece < 0.05`` and
``outputs.passed != 'false'`` would hold after a ``continue-on-error`` step."""

from __future__ import annotations

from pathlib import Path

WITHOUT_REPORT = {
    "calibrate": {
        "command": "calibrate",
        "n": "NaN",
        "accuracy": "NaN",
        "ece": "NaN",
        "brier": "NaN",
        "smece": "NaN",
        "nll": "NaN",
        "auroc": "NaN",
        "passed": "false",
    },
    "reliability": {
        "command": "reliability",
        "n": "NaN",
        "accuracy": "NaN",
        "ece": "NaN",
        "brier": "NaN",
        "passed": "false",
    },
    "perplexity": {
        "command": "perplexity",
        "perplexity": "NaN",
        "bits_per_token": "NaN",
        "bits_per_byte": "NaN",
        "tokens": "NaN",
        "passed": "false",
    },
    "threshold": {
        "command": "threshold",
        "threshold": "NaN",
        "coverage": "NaN",
        "accuracy": "NaN",
        "passed": "false",
    },
    "compare": {
        "command": "compare",
        "matched": "NaN",
        "ece_difference": "NaN",
        "brier_difference": "NaN",
        "accuracy_difference": "NaN",
        "auroc_difference": "NaN",
        "passed": "false",
    },
    "fit": {"command": "fit", "passed": "false"},
}


def github_env(folder: Path) -> tuple[dict[str, str], Path]:
    """The variables GitHub Actions sets for a step, its outputs file (created empty) and job
    summary in ``folder``; returns them and the outputs file."""
    outputs = folder / "github_output"
    outputs.write_text("")
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(folder / "summary.md"),
    }
    return env, outputs


def lines_of(path: Path) -> list[tuple[str, str]]:
    """The ``name=value`` lines of an outputs file, in order (a name written twice shows
    twice)."""
    return [tuple(line.split("=", 1)) for line in path.read_text().splitlines()]
