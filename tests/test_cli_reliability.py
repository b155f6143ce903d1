"""`calibcli reliability` and the --plot/--label options of reliability and calibrate."""

from __future__ import annotations

import json
import struct
import sys
import xml.etree.ElementTree as ET

import pytest
from harness import columns, make_rows, run, write_jsonl
from reference import estimates, wilson

TOL = {"rel": 1e-12, "abs": 1e-15}


@pytest.fixture(scope="module")
def rows():
    return make_rows(300, seed=21)


@pytest.fixture
def preds(tmp_path, rows):
    return write_jsonl(tmp_path / "preds.jsonl", rows)


def reliability_json(args, input=None, code=0):
    result = run(["reliability", *args, "--json"], input=input)
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout), result


@pytest.mark.parametrize("source", ["file", "stdin"])
@pytest.mark.parametrize("bins", [10, 4])
def test_bins_match_plain_python(preds, rows, source, bins):
    args, stdin = ([preds], None) if source == "file" else (["-"], preds.read_text())
    report, result = reliability_json([*args, "--bins", str(bins)], input=stdin)
    ref = estimates(*columns(rows), bins)
    assert list(report) == [
        "schema_version",
        "command",
        "format",
        "n",
        "bins",
        "populated_bins",
        "accuracy",
        "mean_confidence",
        "ece",
        "brier",
        "reliability",
        "warnings",
    ]
    assert report["command"] == "reliability" and report["schema_version"] == 1
    assert report["n"] == 300 and report["bins"] == bins
    assert report["populated_bins"] == ref["populated_bins"]
    assert report["accuracy"] == pytest.approx(ref["accuracy"], **TOL)
    assert report["mean_confidence"] == pytest.approx(ref["mean_confidence"], **TOL)
    assert report["ece"] == pytest.approx(ref["ece"], **TOL)
    assert report["brier"] == pytest.approx(ref["brier"], **TOL)
    rel = report["reliability"]
    assert rel["bin_lower"] == [k / bins for k in range(bins)]
    assert rel["bin_upper"] == [k / bins for k in range(1, bins + 1)]
    for i, (cbar, obar, k) in enumerate(ref["per_bin"]):
        assert rel["count"][i] == k
        assert rel["confidence"][i] == pytest.approx(cbar, **TOL)
        assert rel["accuracy"][i] == pytest.approx(obar, **TOL)
        assert rel["accuracy_ci"][i] == pytest.approx(wilson(round(obar * k), k), rel=1e-12)
    assert report["warnings"] == [] and result.stderr == ""


def test_empty_bins_are_null_not_zero(tmp_path):
    rows = [{"confidence": 0.95, "correct": i % 4 != 0} for i in range(40)]
    rows += [{"confidence": 0.55, "correct": i % 2 == 0} for i in range(40)]
    rows += [{"confidence": 0.15, "correct": i % 5 == 0} for i in range(40)]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    report, _ = reliability_json([path])
    rel = report["reliability"]
    assert rel["count"] == [0, 40, 0, 0, 0, 40, 0, 0, 0, 40]
    assert rel["accuracy"][0] is None and rel["confidence"][0] is None
    assert rel["accuracy_ci"][0] is None
    assert rel["accuracy"][9] == 0.75 and rel["accuracy"][1] == 0.2


def test_table_and_terminal_diagram(preds, rows):
    result = run(["reliability", preds])
    assert result.exit_code == 0
    out = result.stdout
    ref = estimates(*columns(rows))
    assert "[0.00, 0.10)" in out and "[0.90, 1.00]" in out
    for cbar, obar, k in ref["per_bin"]:
        assert f"{cbar - obar:+.3f}" in out and f"{k:,}" in out
    assert "95% CI" in out and "gap" in out
    assert "Reliability diagram" in out and "perfect calibration" in out
    assert "\x1b[" not in out
    # plain characters when piped: the diagram is ASCII
    diagram = out[out.index("Reliability diagram") :]
    assert diagram.isascii()
    assert max(len(line) for line in out.splitlines()) <= 80


def test_few_bins_warning_and_empty_input(tmp_path):
    rows = [{"confidence": 0.91 + 0.001 * i, "correct": i % 3 > 0} for i in range(60)]
    path = write_jsonl(tmp_path / "narrow.jsonl", rows)
    report, result = reliability_json([path])
    assert report["warnings"][0] == (
        "only 1 of 10 bins are populated (minimum 3); ECE rests on too few bins"
    )
    assert result.stderr.splitlines()[0] == f"warning: {report['warnings'][0]}"
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    report, result = reliability_json([empty])
    assert report["n"] == 0 and report["accuracy"] is None
    assert report["warnings"] == ["no rows were read; every estimate is null"]
    table = run(["reliability", empty])
    assert table.exit_code == 0 and "no predictions to draw" in table.stdout


def test_small_bins_warning(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", make_rows(50, seed=5))
    report, _ = reliability_json([path])
    assert any("median populated bin holds" in w for w in report["warnings"])


def test_reliability_output_file(preds, tmp_path):
    out = tmp_path / "rel.json"
    result = run(["reliability", preds, "-o", out])
    assert result.exit_code == 0 and "Reliability" in result.stdout
    assert json.loads(out.read_text())["command"] == "reliability"


def test_logprobs_format_is_refused_for_calibration(preds):
    for command in ("reliability", "calibrate"):
        result = run([command, preds, "--format", "logprobs"])
        assert result.exit_code == 2
        assert "'logprobs' is not one of 'auto', 'jsonl', 'lm-eval'" in result.stderr


# --------------------------------------------------------------------------- --plot


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def svg_ids(path):
    return {el.get("id") for el in ET.parse(path).iter() if el.get("id")}


def test_plot_png(preds, tmp_path):
    pytest.importorskip("matplotlib")
    target = tmp_path / "rel.png"
    result = run(["reliability", preds, "--plot", target])
    assert result.exit_code == 0, result.stderr
    assert png_size(target) == (960, 960)
    assert "Reliability" in result.stdout  # the table still shows


def test_plot_overlays_files_with_labels(tmp_path, rows):
    pytest.importorskip("matplotlib")
    a = write_jsonl(tmp_path / "a.jsonl", rows[:150])
    b = write_jsonl(tmp_path / "b.jsonl", make_rows(200, seed=8, skew=3.0))
    target = tmp_path / "cmp.svg"
    result = run(
        ["reliability", a, b, "--plot", target, "--label", "base", "--label", "tuned", "--json"]
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["n"] == 350  # the report pools both files
    text = target.read_text()
    assert "base" in text or "tuned" in text or svg_ids(target)  # text may be drawn as paths
    ids = svg_ids(target)
    assert "diagonal" in ids and "legend" in ids
    assert "accuracy-points-0" in ids and "accuracy-points-1" in ids
    again = tmp_path / "again.svg"
    run(["reliability", a, b, "--plot", again, "--label", "base", "--label", "tuned"])
    assert again.read_bytes() == target.read_bytes()


def test_calibrate_plot_draws_bars_one_series_per_group(tmp_path, rows):
    pytest.importorskip("matplotlib")
    grouped = [{**r, "split": "odd" if r["id"] % 2 else "even"} for r in rows]
    path = write_jsonl(tmp_path / "g.jsonl", grouped)
    target = tmp_path / "groups.svg"
    result = run(["calibrate", path, "--by", "split", "--plot", target])
    assert result.exit_code == 0, result.stderr
    ids = svg_ids(target)
    assert any(i.startswith("accuracy-bar-0-") for i in ids)
    assert any(i.startswith("accuracy-bar-1-") for i in ids)
    assert not any(i.startswith("accuracy-bar-2-") for i in ids)


def test_label_count_must_match_series(preds, tmp_path):
    pytest.importorskip("matplotlib")
    result = run(
        ["reliability", preds, "--plot", tmp_path / "x.png", "--label", "a", "--label", "b"]
    )
    assert result.exit_code == 2
    assert result.stderr == "Error: --label given 2 time(s) but the plot has 1 series\n"
    assert not (tmp_path / "x.png").exists()


def test_plot_without_matplotlib_exits_2_and_writes_nothing(preds, tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "report.json"
    out.write_text("old\n")
    for command in ("reliability", "calibrate"):
        result = run([command, preds, "--plot", tmp_path / "r.png", "-o", out])
        assert result.exit_code == 2
        (line,) = result.stderr.splitlines()
        assert line.startswith("Error: --plot: ") and "pip install" in line
        assert result.stdout == ""
    assert out.read_text() == "old\n"
    assert not (tmp_path / "r.png").exists()


def test_plot_into_missing_directory_exits_2(preds, tmp_path):
    pytest.importorskip("matplotlib")
    result = run(["reliability", preds, "--plot", tmp_path / "no" / "r.png"])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ") and "cannot write the plot" in result.stderr
