"""`calibrate --recalibrate --by`: the maps are cross-fitted per group, and the report says so.

Data: two groups of 500 rows, every confidence 0.7; group a is right on 100 rows (accuracy 0.2,
overconfident), group b on 400 (accuracy 0.8, underconfident). The histogram map of a constant
confidence is the accuracy of its training rows, so by hand:

* before: Brier = (205 + 85) / 1000 = 0.29 (a: 100·0.3² + 400·0.7², b: 400·0.3² + 100·0.7²);
* pooled maps (no --by): every row is mapped to about 0.5, Brier ≈ 0.5·0.5 = 0.25;
* one map per group: a's rows to about 0.2, b's to about 0.8, Brier ≈ 0.2·0.8 = 0.16.

An out-of-fold map is the accuracy of 400 (per group) or 800 (pooled) training rows, off the
group's by a few hundredths; the Brier score moves by about the square of that (under 0.002
here), so TOL = 0.01 separates the two by far.
"""

from __future__ import annotations

import json

import pytest
from harness import run, write_jsonl

TOL = 0.01
PER_GROUP_HEADER = "one map per --by group (g), cross-fitted over 5 folds"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    rows = []
    for group, right in (("a", 100), ("b", 400)):
        for i in range(500):
            rows.append({"g": group, "confidence": 0.7, "correct": i % 5 < right // 100})
    path = tmp_path_factory.mktemp("mixed") / "mixed.jsonl"
    return write_jsonl(path, rows)


def report(*args):
    result = run(["calibrate", *args, "--recalibrate", "histogram", "--json", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_json_records_whose_maps(mixed):
    grouped, _ = report(mixed, "--by", "g")
    pooled, _ = report(mixed)
    # the new key comes last among the settings, after those older readers know
    settings = [k for k in grouped["recalibration"] if k not in ("before", "after", "groups")]
    assert settings == ["method", "mode", "folds", "seed", "maps"]
    assert grouped["recalibration"]["maps"] == "per_group"
    assert pooled["recalibration"]["maps"] == "pooled"


def test_pooled_figures_after_are_the_per_group_maps(mixed):
    grouped, _ = report(mixed, "--by", "g")
    pooled, _ = report(mixed)
    for body in (grouped, pooled):
        assert body["recalibration"]["before"]["brier"] == pytest.approx(0.29, abs=1e-12)
        assert body["accuracy"] == pytest.approx(0.5, abs=1e-12)
    assert grouped["brier"] == pytest.approx(0.16, abs=TOL)
    assert pooled["brier"] == pytest.approx(0.25, abs=TOL)
    for name, accuracy in (("a", 0.2), ("b", 0.8)):
        after = grouped["recalibration"]["groups"][name]["after"]
        assert after["brier"] == pytest.approx(accuracy * (1 - accuracy), abs=TOL)


def test_warning_names_the_per_group_maps_and_the_pooled_ways(mixed):
    grouped, stderr = report(mixed, "--by", "g")
    pooled, quiet = report(mixed)
    said = [w for w in grouped["warnings"] if "per-group maps" in w]
    assert len(said) == 1
    for part in (
        "--recalibrate with --by g",
        "pooled figures after recalibration",
        "differ from --recalibrate without --by",
        "--calibrator FILE --by g",
    ):
        assert part in said[0]
    assert said[0] in " ".join(stderr.split())
    assert not [w for w in pooled["warnings"] if "per-group" in w]
    assert "per-group" not in quiet


def test_gate_on_the_pooled_figures_is_that_of_the_per_group_maps(mixed):
    # Brier 0.16 with a map per group, 0.25 with pooled maps: the gate at 0.2 tells them apart
    gate = ["--max-brier", "0.2", "--recalibrate", "histogram", "-q"]
    grouped = run(["calibrate", mixed, "--by", "g", *gate])
    pooled = run(["calibrate", mixed, *gate])
    assert grouped.exit_code == 0
    assert pooled.exit_code == 1
    assert "per-group maps" in grouped.stderr
    assert "per-group" not in pooled.stderr


def test_every_renderer_header_says_one_map_per_group(mixed, tmp_path):
    md, page = tmp_path / "s.md", tmp_path / "r.html"
    args = ["calibrate", mixed, "--recalibrate", "histogram", "-q", "--summary", md]
    grouped = run([*args, "--by", "g", "--html", page])
    assert grouped.exit_code == 0
    assert PER_GROUP_HEADER in " ".join(grouped.stdout.split())
    assert PER_GROUP_HEADER in md.read_text(encoding="utf-8")
    assert PER_GROUP_HEADER in page.read_text(encoding="utf-8")
    md.unlink()
    pooled = run([*args, "--html", page])
    assert pooled.exit_code == 0
    for text in (pooled.stdout, md.read_text(encoding="utf-8"), page.read_text("utf-8")):
        assert "one map per" not in text
        assert "cross-fitted" in text


def test_a_fitted_calibrator_with_by_is_unchanged(mixed, tmp_path):
    fitted = tmp_path / "histogram.json"
    assert run(["fit", mixed, "--method", "histogram", "-o", fitted, "-q"]).exit_code == 0
    result = run(["calibrate", mixed, "--calibrator", fitted, "--by", "g", "--json", "-q"])
    assert result.exit_code == 0
    body = json.loads(result.stdout)
    assert "maps" not in body["recalibration"]
    assert body["recalibration"]["mode"] == "calibrator"
    assert not [w for w in body["warnings"] if "per-group" in w]
    # one pooled map of a constant confidence: every row to the pooled accuracy 0.5
    assert body["brier"] == pytest.approx(0.25, abs=1e-9)


def test_calibrate_by_help_says_groups_get_their_own_maps():
    shown = " ".join(run(["calibrate", "--help"]).stdout.split())
    assert "With --recalibrate each group gets its own" in shown
