"""lm-eval re-runs reached through summary files are chosen as re-runs among files are: of a
task's runs in one folder only the newest is counted, whether the runs come as files, as
summaries merged (``merge``), as summaries given together, or as a summary beside a file. A
summary holding only older runs is left out with the files' warning; one holding an older run
beside other rows cannot be left out whole and is refused; ``--all-runs`` pools them all.

The references are the newest run's rows measured by hand (numpy) and the command reading
the files themselves."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from harness import run, write_jsonl

TASK = "toy_qa"
OLD, NEW = "2024-06-17T10-00-00.000000", "2024-06-17T11-00-00.000000"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lm_eval"
WIKITEXT = FIXTURES / "samples_toy_wikitext_2026-11-29T18-50-52.260809.jsonl"
WARNING = f"re-runs of 1 task(s) ('{TASK}') in one folder: reading each task's newest run"


def lm_eval_row(doc_id: int, scores: list[float], gold: int) -> dict:
    """A multiple-choice lm-eval row: each choice's loglikelihood, the gold choice, and ``acc``
    as the harness sets it (the best-scored choice is the gold one)."""
    resps = [[[str(s), "False"]] for s in scores]
    return {
        "doc_id": doc_id,
        "doc": {"question": f"question {doc_id}"},
        "target": gold,
        "arguments": {
            f"gen_args_{k}": {"arg_0": f"question {doc_id}", "arg_1": f" choice {k}"}
            for k in range(len(scores))
        },
        "resps": resps,
        "filtered_resps": [r[0] for r in resps],
        "filter": "none",
        "metrics": ["acc"],
        "acc": 1.0 if scores.index(max(scores)) == gold else 0.0,
    }


def runs(folder: Path) -> tuple[Path, Path, list[dict]]:
    """(older, newer) runs of one task in ``folder``, of other documents (the first 40 and the
    next 60, as one run's file cut in two), and the newer run's rows. The newer run is
    overconfident (about 0.9 sure, right half the time), the older one calibrated, so that
    pooling them lowers the ECE."""
    rng = random.Random(5)
    older = []
    for doc in range(40):
        scores = [rng.uniform(-3.0, -0.2) for _ in range(3)]
        weights = [math.exp(s) for s in scores]
        older.append(lm_eval_row(doc, scores, rng.choices(range(3), weights)[0]))
    newer = []
    for doc in range(40, 100):
        best = rng.randrange(3)
        scores = [0.0 if k == best else -3.0 + rng.uniform(-0.3, 0.3) for k in range(3)]
        gold = best if rng.random() < 0.5 else (best + 1) % 3
        newer.append(lm_eval_row(doc, scores, gold))
    folder.mkdir(parents=True, exist_ok=True)
    old = write_jsonl(folder / f"samples_{TASK}_{OLD}.jsonl", older)
    new = write_jsonl(folder / f"samples_{TASK}_{NEW}.jsonl", newer)
    return old, new, newer


def by_hand(rows: list[dict], bins: int = 10) -> tuple[int, float]:
    """(n, ECE over ``bins`` uniform bins) of lm-eval rows: each row's confidence is its
    choices' largest softmax probability, its outcome its ``acc``."""
    scores = np.array([[float(r[0]) for r in row["filtered_resps"]] for row in rows])
    probs = np.exp(scores - scores.max(axis=1, keepdims=True))
    confidence = 1.0 / probs.sum(axis=1)
    correct = np.array([row["acc"] for row in rows])
    which = np.minimum((confidence * bins).astype(int), bins - 1)
    ece = 0.0
    for b in range(bins):
        held = which == b
        if held.any():
            ece += held.sum() / len(rows) * abs(confidence[held].mean() - correct[held].mean())
    return len(rows), ece


def report(*args, code: int = 0) -> tuple[dict, str]:
    result = run([*map(str, args), "--json", "-q"])
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result.stderr


def summarize(source: Path, output: Path, *extra: str) -> Path:
    result = run(["summarize", str(source), *extra, "-q", "-o", str(output)])
    assert result.exit_code == 0, result.stderr
    return output


@pytest.fixture
def folder(tmp_path):
    old, new, newer = runs(tmp_path / "out")
    old_cbs = summarize(old, tmp_path / "old.cbs")
    new_cbs = summarize(new, tmp_path / "new.cbs")
    return tmp_path, old, new, newer, old_cbs, new_cbs


def _routes(tmp_path, old, new, old_cbs, new_cbs) -> dict[str, list[Path]]:
    """Each route to the two runs, as the inputs of one ``calibrate`` run."""
    merged = tmp_path / "merged.cbs"
    result = run(["merge", str(old_cbs), str(new_cbs), "-o", str(merged)])
    assert result.exit_code == 0, result.stderr
    assert WARNING in result.stderr and "older file(s): old.cbs" in result.stderr
    summarized = tmp_path / "summarized.cbs"
    result = run(["summarize", str(old_cbs), str(new_cbs), "-q", "-o", str(summarized)])
    assert result.exit_code == 0, result.stderr
    assert WARNING in result.stderr
    return {
        "merged": [merged],
        "summaries together": [old_cbs, new_cbs],
        "summaries in reverse": [new_cbs, old_cbs],
        "older summary beside the newer file": [old_cbs, new],
        "newer summary beside the older file": [new_cbs, old],
        "summaries summarized": [summarized],
    }


def test_every_route_counts_the_newest_run_alone(folder):
    tmp_path, old, new, newer, old_cbs, new_cbs = folder
    n, ece = by_hand(newer)
    direct, _ = report("calibrate", old, new)
    assert direct["n"] == n and direct["ece"] == pytest.approx(ece, rel=1e-12)
    for route, inputs in _routes(tmp_path, old, new, old_cbs, new_cbs).items():
        body, _ = report("calibrate", *inputs)
        assert body["n"] == n, route
        assert body["ece"] == pytest.approx(ece, rel=1e-12), route
        assert body["accuracy"] == direct["accuracy"], route
        (said,) = [w for w in body["warnings"] if w.startswith("re-runs of")]
        assert said.startswith(WARNING) and said.endswith("(pass --all-runs to pool them)")


def test_the_gate_fails_on_every_route_as_on_the_files(folder):
    tmp_path, old, new, newer, old_cbs, new_cbs = folder
    _, newest = by_hand(newer)
    pooled, _ = report("calibrate", old, new, "--all-runs")
    assert pooled["ece"] < newest  # pooled, the older run would pass the gate
    limit = f"{(pooled['ece'] + newest) / 2:.6f}"
    assert run(["calibrate", old, new, "--max-ece", limit, "-q"]).exit_code == 1
    for route, inputs in _routes(tmp_path, old, new, old_cbs, new_cbs).items():
        result = run(["calibrate", *inputs, "--max-ece", limit, "-q"])
        assert result.exit_code == 1, (route, result.stderr)
        assert "re-runs of 1 task(s)" in result.stderr, route


def test_all_runs_pools_every_route_as_it_pools_the_files(folder):
    tmp_path, old, new, _, old_cbs, new_cbs = folder
    pooled, _ = report("calibrate", old, new, "--all-runs")
    assert pooled["n"] == 100
    merged = tmp_path / "pooled.cbs"
    result = run(["merge", str(old_cbs), str(new_cbs), "--all-runs", "-q", "-o", str(merged)])
    assert result.exit_code == 0, result.stderr
    assert "re-runs of" not in result.stderr
    for inputs in ([old_cbs, new_cbs], [old_cbs, new], [new_cbs, old]):
        body, _ = report("calibrate", *inputs, "--all-runs")
        assert (body["n"], body["ece"]) == (pooled["n"], pytest.approx(pooled["ece"], rel=1e-12))
        assert not [w for w in body["warnings"] if w.startswith("re-runs of")]
    # a summary pooling the runs holds them both: read alone, its runs are not judged again
    body, _ = report("calibrate", merged)
    assert (body["n"], body["ece"]) == (pooled["n"], pytest.approx(pooled["ece"], rel=1e-12))


def test_a_summary_of_an_older_run_beside_other_rows_is_refused(folder):
    tmp_path, old, _, _, _, new_cbs = folder
    other = write_jsonl(tmp_path / "other.jsonl", [{"confidence": 0.7, "correct": True}] * 5)
    mixed = tmp_path / "mixed.cbs"
    result = run(["summarize", str(old), str(other), "-q", "-o", str(mixed)])
    assert result.exit_code == 0, result.stderr
    for args in (
        ["merge", mixed, new_cbs, "-o", tmp_path / "m.cbs"],
        ["calibrate", mixed, new_cbs],
    ):
        result = run([*map(str, args), "-q"])
        assert result.exit_code == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith(f"Error: {mixed}: holds samples_{TASK}_{OLD}.jsonl, an older run")
        assert f"than samples_{TASK}_{NEW}.jsonl (in {new_cbs})" in line
        assert "summarize the newest run alone, or pass --all-runs" in line
        assert "Traceback" not in result.output
    assert not (tmp_path / "m.cbs").exists()
    body, _ = report("calibrate", mixed, new_cbs, "--all-runs")
    assert body["n"] == 105


def test_an_older_file_read_with_other_files_beside_a_newer_summary_is_refused(folder):
    tmp_path, old, _, _, _, new_cbs = folder
    other = write_jsonl(tmp_path / "other.jsonl", [{"confidence": 0.7, "correct": True}] * 5)
    result = run(["calibrate", str(new_cbs), str(old), str(other), "-q"])
    assert result.exit_code == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {old}: an older run of task '{TASK}'")
    assert f"(in {new_cbs})" in line and "pass --all-runs" in line


def test_runs_of_one_task_in_other_folders_are_both_counted(tmp_path):
    # the same task in two folders (two models' runs): neither is a re-run of the other
    first, _, _ = runs(tmp_path / "model_a")
    _, second, _ = runs(tmp_path / "model_b")
    direct, _ = report("calibrate", first, second)
    parts = [summarize(first, tmp_path / "a.cbs"), summarize(second, tmp_path / "b.cbs")]
    body, _ = report("calibrate", *parts)
    assert body["n"] == direct["n"] == 100
    assert not [w for w in body["warnings"] if w.startswith("re-runs of")]


def test_perplexity_summaries_count_the_newest_run_alone(tmp_path):
    lines = WIKITEXT.read_text().splitlines(keepends=True)
    folder = tmp_path / "out"
    folder.mkdir()
    old = folder / f"samples_toy_wikitext_{OLD}.jsonl"
    new = folder / f"samples_toy_wikitext_{NEW}.jsonl"
    old.write_text("".join(lines[:8]))
    new.write_text("".join(lines[8:]))
    direct, _ = report("perplexity", old, new)
    alone, _ = report("perplexity", new)
    assert direct["sequences"] == alone["sequences"] == 12
    parts = [summarize(old, tmp_path / "old.cbs"), summarize(new, tmp_path / "new.cbs")]
    for inputs in (parts, [parts[0], new]):
        body, _ = report("perplexity", *inputs)
        assert body["sequences"] == 12
        assert body["total_nll"] == pytest.approx(direct["total_nll"], rel=1e-12)
        assert body["total_bytes"] == direct["total_bytes"]
        assert any(w.startswith("re-runs of 1 task(s) ('toy_wikitext')") for w in body["warnings"])


def test_the_realworld_reruns_read_as_the_files(tmp_path):
    source = Path(
        "/work/shared/realworld/lmeval-pr1974-llama3-8b-bias/"
        "samples_bias_classification_2024-06-17T16-06-39.458097.json"
    )
    if not source.exists():
        pytest.skip("the real-world lm-eval run is not here")
    lines = source.read_text().splitlines(keepends=True)
    folder = tmp_path / "rr"
    folder.mkdir()
    old = folder / "samples_bias_classification_2024-06-17T10-00-00.000000.json"
    new = folder / "samples_bias_classification_2024-06-17T11-00-00.000000.json"
    old.write_text("".join(lines[:300]))
    new.write_text("".join(lines[300:]))
    direct, _ = report("calibrate", old, new, "--max-ece", "0.2", code=1)
    parts = [summarize(old, tmp_path / "old.cbs"), summarize(new, tmp_path / "new.cbs")]
    for inputs in (parts, [parts[0], new]):
        body, _ = report("calibrate", *inputs, "--max-ece", "0.2", code=1)
        assert (body["n"], body["ece"]) == (direct["n"], direct["ece"])
