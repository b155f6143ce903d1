"""threshold --fit on a summary made with --by: the --fit files are read grouped by the
summary's field, so each group's threshold is chosen on its own --fit rows and the report is
the one the same rows give read from files with --by (byte for byte); a summary grouped by
another field than the other side, or grouped where the other side is not, is refused."""

from __future__ import annotations

import json
import random

import pytest
from harness import run, write_jsonl

import calibcli
from calibcli.errors import InputError

TARGET = ("--target-accuracy", "0.7")
GATE = ("--min-coverage", "0.2", "--gate-each")


def threshold(*args):
    return run(["threshold", *args, "--json", "-q"])


def summarize(source, out, *args):
    result = run(["summarize", source, *args, "-o", out, "-q"])
    assert result.exit_code == 0, result.stderr
    return out


def rows_of(group, n, confidence, right):
    """``n`` rows of ``group`` at one ``confidence``, the first ``right`` of them right."""
    return [{"g": group, "confidence": confidence, "correct": i < right} for i in range(n)]


@pytest.fixture
def one_group_fit(tmp_path):
    """--fit rows of group a only (200 rows at 0.9, all right); evaluated rows of a and b
    (100 each at 0.9, 90 right)."""
    fit = write_jsonl(tmp_path / "fit.jsonl", rows_of("a", 200, 0.9, 200))
    evaluated = rows_of("a", 100, 0.9, 90) + rows_of("b", 100, 0.9, 90)
    path = write_jsonl(tmp_path / "ev.jsonl", evaluated)
    return fit, path, summarize(path, tmp_path / "ev.cbs", "--by", "g")


def test_a_group_without_fit_rows_fails_closed_on_the_summary_route(one_group_fit):
    """Group b has no --fit rows: no threshold of its own, so --gate-each fails closed on it,
    from the summary as from the files; a takes the threshold of its own 200 rows."""
    fit, path, summary = one_group_fit
    files = threshold(path, "--by", "g", "--fit", fit, *TARGET, *GATE)
    summarized = threshold(summary, "--fit", fit, *TARGET, *GATE)
    assert (files.exit_code, summarized.exit_code) == (1, 1), summarized.stderr
    assert summarized.stdout == files.stdout
    body = json.loads(summarized.stdout)
    assert body["fit_n"] == 200
    assert body["groups"]["a"]["fit_n"] == 200  # its own rows: all of them are a's
    assert body["groups"]["b"]["guaranteed"] is None  # no threshold, for want of rows
    verdicts = {c.get("group"): (c["passed"], c.get("reason")) for c in body["gate"]["checks"]}
    assert verdicts == {
        None: (True, None),  # 200 rows all right choose a threshold accepting every row at 0.9
        "a": (True, None),
        "b": (False, "the --fit input holds no rows of this group"),
    }
    assert body["gate"]["failed_groups"] == ["b"]


def many_groups(tmp_path, groups=12, seed=3):
    """Groups whose --fit rows sit at other confidences and accuracies, so that each group's
    threshold differs from the pooled one; the evaluated rows alike, other draws."""
    rng = random.Random(seed)
    sides = {}
    for side in ("fit", "ev"):
        rows = []
        for k in range(groups):
            low = 0.3 + 0.05 * (k % 8)
            for _ in range(rng.randint(30, 90)):
                c = round(low + (1 - low) * rng.random(), 3)
                rows.append({"g": f"k{k}", "confidence": c, "correct": rng.random() < c})
        sides[side] = write_jsonl(tmp_path / f"{side}.jsonl", rows)
    return sides["fit"], sides["ev"], rows


def test_each_group_takes_its_own_fit_rows_from_a_summary(tmp_path):
    fit, path, _ = many_groups(tmp_path)
    summary = summarize(path, tmp_path / "ev.cbs", "--by", "g")
    counts = {}
    for row in map(json.loads, fit.read_text().splitlines()):
        counts[row["g"]] = counts.get(row["g"], 0) + 1
    args = ("--target-accuracy", "0.8", "--min-coverage", "0.1", "--gate-each")
    files = threshold(path, "--by", "g", "--fit", fit, *args)
    summarized = threshold(summary, "--fit", fit, *args)
    assert summarized.exit_code == files.exit_code, summarized.stderr
    assert summarized.stdout == files.stdout
    assert summarized.stderr == files.stderr
    groups = json.loads(summarized.stdout)["groups"]
    assert {g: s["fit_n"] for g, s in groups.items()} == counts
    assert len(set(counts.values())) > 1  # a pooled count in every group would show


def test_a_calibrator_per_group_maps_the_fit_rows_by_their_groups(tmp_path):
    """A calibrator fitted per --by group maps each --fit row by its group's map, from the
    summary as from the files (the pooled map would move the --fit rows elsewhere)."""
    fit, path, _ = many_groups(tmp_path, groups=3, seed=9)
    cal_rows = tmp_path / "cal.jsonl"
    rng = random.Random(11)
    rows = []
    for k, skew in enumerate((0.6, 1.0, 1.4)):
        for _ in range(300):
            c = rng.random()
            rows.append({"g": f"k{k}", "confidence": c, "correct": rng.random() < c**skew})
    write_jsonl(cal_rows, rows)
    calibrator = tmp_path / "cal.json"
    made = run(["fit", cal_rows, "--by", "g", "--method", "platt", "-o", calibrator, "-q"])
    assert made.exit_code == 0, made.stderr
    summary = summarize(path, tmp_path / "ev.cbs", "--by", "g")
    args = ("--target-accuracy", "0.75", "--calibrator", calibrator)
    files = threshold(path, "--by", "g", "--fit", fit, *args)
    summarized = threshold(summary, "--fit", fit, *args)
    assert (files.exit_code, summarized.exit_code) == (0, 0), summarized.stderr
    assert summarized.stdout == files.stdout
    assert summarized.stderr == files.stderr


REFUSED = {
    "fit ungrouped, evaluated summary by g": (
        ("fit_nob", "ev_g"),
        "{fit_nob}: the --fit rows are not grouped, the evaluated rows grouped by --by g: each "
        "group's threshold would be chosen on the --fit rows of every group; summarize the "
        "--fit inputs again with --by g, or the evaluated ones without --by",
    ),
    "fit summary by g, evaluated files": (
        ("fit_g", "ev"),
        "{fit_g}: the --fit rows are grouped by --by g, the evaluated rows not grouped: the "
        "threshold would be chosen on groups the evaluated rows are not split into; give --by "
        "g to read the evaluated files so too, or summarize the --fit inputs again without --by",
    ),
    "fit summary by g, evaluated summary ungrouped": (
        ("fit_g", "ev_nob"),
        "{fit_g}: the --fit rows are grouped by --by g, the evaluated rows not grouped: the "
        "threshold would be chosen on groups the evaluated rows are not split into; summarize "
        "the --fit inputs again without --by, or the evaluated ones with --by g",
    ),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_summary_grouped_otherwise_than_the_other_side_is_refused(tmp_path, case):
    fit, path, _ = many_groups(tmp_path, groups=2)
    made = {
        "fit_nob": summarize(fit, tmp_path / "fit_nob.cbs"),
        "fit_g": summarize(fit, tmp_path / "fit_g.cbs", "--by", "g"),
        "ev_nob": summarize(path, tmp_path / "ev_nob.cbs"),
        "ev_g": summarize(path, tmp_path / "ev_g.cbs", "--by", "g"),
        "ev": path,
    }
    (fit_side, evaluated), message = REFUSED[case]
    out = tmp_path / "report.json"
    result = threshold(made[evaluated], "--fit", made[fit_side], *TARGET, "-o", out)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["Error: " + message.format(**made)]
    assert not out.exists()


def test_the_remedies_named_are_taken(tmp_path):
    """Each refusal's first remedy runs: --by g on the evaluated files; summaries of both
    sides with one --by."""
    fit, path, _ = many_groups(tmp_path, groups=2)
    fit_g = summarize(fit, tmp_path / "fit_g.cbs", "--by", "g")
    ev_g = summarize(path, tmp_path / "ev_g.cbs", "--by", "g")
    assert threshold(path, "--by", "g", "--fit", fit_g, *TARGET).exit_code == 0
    assert threshold(ev_g, "--fit", fit_g, *TARGET).exit_code == 0
    fit_nob = summarize(fit, tmp_path / "fit_nob.cbs")
    ev_nob = summarize(path, tmp_path / "ev_nob.cbs")
    assert threshold(ev_nob, "--fit", fit_nob, *TARGET).exit_code == 0


def test_the_api_refuses_held_out_rows_grouped_otherwise(tmp_path):
    fit, path, _ = many_groups(tmp_path, groups=2)
    grouped = calibcli.read_predictions(str(path), by="g")
    pooled = calibcli.read_predictions(str(fit))
    with pytest.raises(InputError, match="grouped by None, the evaluated rows by 'g'"):
        calibcli.threshold(grouped, fit=pooled, target_accuracy=0.7)
    with pytest.raises(InputError, match="grouped by 'g', the evaluated rows by None"):
        calibcli.threshold(
            pooled, fit=calibcli.read_predictions(str(fit), by="g"), target_accuracy=0.7
        )
    with pytest.raises(InputError) as raised:
        calibcli.threshold(grouped, fit=(pooled.confidence, pooled.correct), target_accuracy=0.7)
    assert str(raised.value) == (
        "threshold: fit: the evaluated rows are grouped by 'g': give the held-out rows' groups "
        "too, as (confidence, correct, group)"
    )
