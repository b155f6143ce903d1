"""HELM runs with several train trials: HELM scores each instance once per trial (an
independent draw of in-context examples) and writes one entry per (instance, trial), so the
rows repeat their questions as an inspect-ai run's epochs do. They are said, keyed by instance
and drawn, counted and chosen on as epochs are.

The files follow the layout of the committed ``tests/fixtures/helm/mmlu`` file (HELM's
``PerInstanceStats``), 40 instances; a run of k trials holds k copies of each instance's entry,
so the expected figures are those of the one-trial file, known without calibcli's epochs code."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from harness import run

from calibcli.io import helm_run
from calibcli.io.helm_run import helm_trials

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "helm" / "mmlu" / "per_instance_stats.json"
SAID = (
    "HELM runs scored each instance several times: per_instance_stats.json (3 train trials): "
    "the figures weigh every answer, and the bootstrap draws each question's answers together"
)


def entry(i, trial):
    """Instance ``id{i}``'s unperturbed entry of the committed fixture's shape, its max_prob
    and exact_match varied with i (right the more often the higher max_prob)."""
    (first, *_) = json.loads(FIXTURE.read_text())
    confidence = 0.25 + 0.75 * ((i * 37) % 40) / 40
    right = 1 if ((i * 13) % 40 + 0.5) / 40 < confidence else 0  # likelier when confident
    stats = []
    for stat in first["stats"]:
        name = stat["name"]["name"]
        if name in ("max_prob", "exact_match") and not stat["name"].get("perturbation"):
            value = confidence if name == "max_prob" else right
            stat = {**stat, "sum": value, "sum_squared": value * value, "min": value}
            stat.update(max=value, mean=value)
        stats.append(stat)
    return {"instance_id": f"id{i}", "train_trial_index": trial, "stats": stats}


def helm_file(tmp_path, trials, name="run", instances=40, packed=False):
    folder = tmp_path / name
    folder.mkdir()
    entries = [entry(i, t) for t in range(trials) for i in range(instances)]
    text = json.dumps(entries, indent=2).encode()
    path = folder / ("per_instance_stats.json" + (".gz" if packed else ""))
    path.write_bytes(gzip.compress(text) if packed else text)
    return path


def report_of(args):
    result = run([*map(str, args), "--json"])
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout), result


def test_the_trials_are_found_before_the_rows_are_read(tmp_path, monkeypatch):
    assert helm_trials(str(helm_file(tmp_path, 1, "one"))) is None
    assert helm_trials(str(helm_file(tmp_path, 3, "three"))) == 3
    assert helm_trials(str(helm_file(tmp_path, 2, "packed", packed=True))) == 2
    assert helm_trials(str(FIXTURE)) is None  # the committed fixture: one trial
    assert helm_trials(str(HERE.parent / "sample_data" / "well_calibrated.jsonl")) is None
    # an index cut by the end of a block is still found
    monkeypatch.setattr(helm_run, "_BLOCK", 7)
    monkeypatch.setattr(helm_run, "HEAD_BYTES", 7000)
    helm_run.forget_trials()
    assert helm_trials(str(helm_file(tmp_path, 4, "small"))) == 4
    helm_run.forget_trials()


def test_calibrate_says_so_and_draws_each_instance_s_trials_together(tmp_path):
    args = ["--ci", "0.95", "--bootstrap-scheme", "poisson", "--bootstrap", "200"]
    once, _ = report_of(["calibrate", helm_file(tmp_path, 1, "one"), *args])
    thrice, _ = report_of(["calibrate", helm_file(tmp_path, 3, "three"), *args])
    assert thrice["n"] == 3 * once["n"] == 120
    assert SAID in thrice["warnings"]
    assert not [w for w in once["warnings"] if "several times" in w]
    # three copies of a row weigh its instance three times: the one-trial intervals
    for key, (lo, hi) in once["ci"].items():
        if key in ("rmsce_debiased", "smece", "smece_bandwidth"):
            continue
        if lo is None:
            assert thrice["ci"][key] == [None, None], key
        else:
            assert thrice["ci"][key] == pytest.approx([lo, hi], rel=1e-9, abs=1e-12), key
    assert thrice["reliability"]["accuracy_ci"] == once["reliability"]["accuracy_ci"]


def test_min_rows_counts_instances(tmp_path):
    path = helm_file(tmp_path, 3, "three")
    report, result = report_of(["calibrate", path, "--min-rows", "41"])
    assert result.exit_code == 1
    assert [c.get("reason") for c in report["gate"]["checks"]] == [
        "the 120 rows repeat their questions (see the warning) and hold 40, fewer than 41; each "
        "question counts once"
    ]
    assert run(["calibrate", path, "--min-rows", "40"]).exit_code == 0


def test_threshold_is_chosen_on_one_answer_per_instance(tmp_path):
    target = ["--target-accuracy", "0.7", "--delta", "0.2"]
    once, _ = report_of(["threshold", helm_file(tmp_path, 1, "one"), *target])
    thrice, _ = report_of(["threshold", helm_file(tmp_path, 3, "three"), *target])
    keys = ("threshold", "accepted", "errors", "accuracy_lower_bound", "p_value", "tests_run")
    assert once["guaranteed"]["threshold"] is not None
    assert {k: thrice["guaranteed"][k] for k in keys} == {k: once["guaranteed"][k] for k in keys}
    assert thrice["guaranteed"]["one_per_question"] == {"questions": 40, "rows": 120, "seed": 0}


def test_a_summary_records_the_trials(tmp_path):
    path = helm_file(tmp_path, 3, "three")
    summary = tmp_path / "three.cbs"
    made = run(["summarize", path, "-o", summary])
    assert made.exit_code == 0, made.stderr
    path.unlink()  # read where the file is not: the summary's record says 3 trials
    report, result = report_of(["calibrate", summary, "--min-rows", "41"])
    assert result.exit_code == 1
    assert "hold as few as 40, fewer than 41" in report["gate"]["checks"][0]["reason"]
    assert any(w.startswith("HELM runs scored each instance") for w in report["warnings"])


def test_one_trial_is_read_as_before(tmp_path):
    report, result = report_of(["calibrate", FIXTURE, "--min-rows", "6"])
    assert result.exit_code == 0, result.stderr
    assert not [w for w in report["warnings"] if "several times" in w]
