"""Every output of ``calibcli fit`` carries the fit's warnings: stderr, --summary, the
calibrator file (-o) and --json (its ``warnings`` list, when there are any), the page
``calibcli render`` draws of the file, and the file ``calibcli.fit`` gives. A calibrator file
without the key (written before it existed) still loads."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import calibcli
from calibcli.cli import app

ROOT = Path(__file__).resolve().parent.parent
# 200 answers, 5 wrong; beta fits 3 parameters, so 10 per parameter asks for 30 of each class
FEW_WRONG = (
    "only 5 of the 200 answers are wrong, fewer than 30 (10 per parameter the map fits): "
    "the beta map rests on them and may not hold on other rows"
)


def _few_wrong(tmp_path: Path) -> Path:
    """200 rows with confidences 0.0025, 0.0075, ..., 0.9975 (20 in each tenth); the rows at
    0.0025, 0.2025, 0.4025, 0.6025 and 0.8025 are the wrong answers."""
    path = tmp_path / "few.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(200):
            row = {"confidence": (2 * i + 1) / 400, "correct": i % 40 != 0}
            f.write(json.dumps(row) + "\n")
    return path


def _invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_calibrator_file_and_json_carry_the_warning(tmp_path):
    rows = _few_wrong(tmp_path)
    cal, md = tmp_path / "few.cal", tmp_path / "few.md"
    result = _invoke("fit", str(rows), "--method", "beta", "-o", str(cal), "--summary", str(md))
    assert result.exit_code == 0, result.output
    assert f"warning: {FEW_WRONG}" in result.stderr.splitlines()
    assert FEW_WRONG in md.read_text(encoding="utf-8")
    body = json.loads(cal.read_text(encoding="utf-8"))
    assert body["warnings"] == [FEW_WRONG]
    # the key sits before the long fingerprint, after the map and its groups
    assert list(body)[list(body).index("groups") + 1] == "warnings"
    printed = _invoke("fit", str(rows), "--method", "beta", "--json")
    assert printed.exit_code == 0, printed.output
    assert printed.stdout == cal.read_text(encoding="utf-8")


def test_render_shows_the_calibrator_files_warnings(tmp_path):
    rows = _few_wrong(tmp_path)
    cal, page = tmp_path / "few.cal", tmp_path / "few.html"
    assert _invoke("fit", str(rows), "--method", "beta", "-o", str(cal)).exit_code == 0
    result = _invoke("render", str(cal), "--html", str(page))
    assert result.exit_code == 0, result.output
    shown = page.read_text(encoding="utf-8")
    assert '<h2 id="s1">Warnings (1)</h2><ul class="warnings">' in shown
    assert f"<li>{FEW_WRONG}</li>" in shown


def test_the_api_gives_the_commands_file(tmp_path):
    rows = _few_wrong(tmp_path)
    printed = _invoke("fit", str(rows), "--method", "beta", "--json")
    assert printed.exit_code == 0, printed.output
    fitted = calibcli.fit(calibcli.read_predictions(str(rows)), method="beta")
    assert fitted.to_json() == printed.stdout
    assert json.loads(fitted.to_json())["warnings"] == [FEW_WRONG]
    saved = tmp_path / "api.cal"
    fitted.save(saved)
    from calibcli.summaries.recalibrate import load

    assert load(saved).warnings == (FEW_WRONG,)  # read back, and written again alike
    assert load(saved).to_json() == printed.stdout


def test_no_warning_no_key_and_an_old_file_still_loads(tmp_path):
    well = ROOT / "sample_data" / "well_calibrated.jsonl"
    cal = tmp_path / "well.cal"
    result = _invoke("fit", str(well), "--method", "platt", "-o", str(cal))
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr
    assert "warnings" not in json.loads(cal.read_text(encoding="utf-8"))
    # a file written before the key existed: the few-wrong fit's file without it
    rows = _few_wrong(tmp_path)
    old = tmp_path / "old.cal"
    assert _invoke("fit", str(rows), "--method", "beta", "-o", str(old)).exit_code == 0
    body = json.loads(old.read_text(encoding="utf-8"))
    del body["warnings"]
    old.write_text(json.dumps(body) + "\n", encoding="utf-8")
    scored = _invoke("calibrate", str(well), "--calibrator", str(old), "--json")
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["recalibration"]["method"] == "beta"


def test_warnings_that_are_not_texts_are_refused(tmp_path):
    rows = _few_wrong(tmp_path)
    cal = tmp_path / "bad.cal"
    assert _invoke("fit", str(rows), "--method", "beta", "-o", str(cal)).exit_code == 0
    body = json.loads(cal.read_text(encoding="utf-8"))
    body["warnings"] = [3]
    cal.write_text(json.dumps(body) + "\n", encoding="utf-8")
    result = _invoke("calibrate", str(rows), "--calibrator", str(cal))
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == (
        f'Error: {cal}: not a calibcli calibrator file: "warnings" is not a list of texts'
    )
